"""The leader-epoch cache (KIP-101/279): its rules on plain values, its checkpoint file, and the
log keeping it in step with appends, truncations, log start moves and reopening."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from odradek.records.batch import set_partition_leader_epoch
from odradek.storage.leader_epoch_cache import (
    CHECKPOINT_FILE_NAME,
    UNDEFINED,
    EpochEndOffset,
    EpochEntry,
    LeaderEpochCache,
    parse_checkpoint,
    render_checkpoint,
)

if TYPE_CHECKING:
    from tests.storage.conftest import BatchFactory, LogHarness


def _cache(pairs: dict[int, int], path: str | None = None) -> LeaderEpochCache:
    return LeaderEpochCache(path, [EpochEntry(e, o) for e, o in pairs.items()])


def _pairs(cache: LeaderEpochCache) -> dict[int, int]:
    return {entry.epoch: entry.start_offset for entry in cache.entries()}


# -- rules ---------------------------------------------------------------------------------


def test_assign_adds_only_a_new_epoch_or_an_earlier_start() -> None:
    cache = _cache({})
    assert cache.latest_epoch == -1
    assert cache.assign(0, 0)
    assert not cache.assign(0, 7)  # the same epoch going on
    assert cache.assign(2, 5)
    assert _pairs(cache) == {0: 0, 2: 5}
    assert cache.latest_epoch == 2
    assert not cache.assign(-1, 9)  # producers' "no epoch"


def test_a_non_monotonic_assign_removes_the_entries_it_contradicts() -> None:
    cache = _cache({0: 0, 2: 5, 3: 9})
    assert cache.assign(2, 4)  # epoch 2 starts earlier: entries at or past it go
    assert _pairs(cache) == {0: 0, 2: 4}
    assert cache.assign(1, 10)  # an older epoch later in the log: the newer ones go
    assert _pairs(cache) == {0: 0, 1: 10}


def test_end_offset_for_follows_kafka() -> None:
    cache = _cache({1: 0, 3: 5, 6: 12})
    log_end_offset = 20
    assert cache.end_offset_for(6, log_end_offset) == EpochEndOffset(6, 20)  # latest: the LEO
    assert cache.end_offset_for(3, log_end_offset) == EpochEndOffset(3, 12)
    # Unknown epoch between known ones: the largest epoch below it, ending where the next
    # known one starts.
    assert cache.end_offset_for(4, log_end_offset) == EpochEndOffset(3, 12)
    assert cache.end_offset_for(5, log_end_offset) == EpochEndOffset(3, 12)
    # Older than every entry: it ended where the oldest known epoch began.
    assert cache.end_offset_for(0, log_end_offset) == EpochEndOffset(0, 0)
    assert cache.end_offset_for(7, log_end_offset) == UNDEFINED  # newer than anything here
    assert cache.end_offset_for(-1, log_end_offset) == UNDEFINED
    assert _cache({}).end_offset_for(0, 0) == UNDEFINED
    assert UNDEFINED.undefined
    assert not EpochEndOffset(0, 0).undefined


def test_truncate_from_end_drops_entries_at_or_past_the_offset() -> None:
    cache = _cache({0: 0, 2: 5, 4: 9})
    assert cache.truncate_from_end(9)
    assert _pairs(cache) == {0: 0, 2: 5}
    assert not cache.truncate_from_end(6)  # epoch 2 still has records below 6
    assert cache.truncate_from_end(0)
    assert _pairs(cache) == {}
    assert cache.latest_epoch == -1


def test_truncate_from_start_moves_the_covering_entry() -> None:
    cache = _cache({0: 0, 2: 5, 4: 9})
    assert not cache.truncate_from_start(0)
    assert cache.truncate_from_start(7)
    assert _pairs(cache) == {2: 7, 4: 9}
    assert cache.truncate_from_start(9)
    assert _pairs(cache) == {4: 9}
    assert not cache.truncate_from_start(9)
    assert cache.truncate_from_start(30)
    assert _pairs(cache) == {4: 30}


# -- the checkpoint file ---------------------------------------------------------------------


def test_checkpoint_layout_is_kafkas() -> None:
    entries = [EpochEntry(0, 0), EpochEntry(2, 5)]
    assert render_checkpoint(entries) == b"0\n2\n0 0\n2 5\n"
    assert parse_checkpoint("0\n2\n0 0\n2 5\n") == entries
    assert parse_checkpoint("0\n0\n") == []


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1\n0\n",  # unknown version
        "0\n2\n0 0\n",  # count says 2
        "0\n1\nzero 0\n",
        "0\n2\n3 0\n2 5\n",  # epochs going back
        "0\n2\n0 5\n1 4\n",  # offsets going back
        "0\n1\n-1 0\n",
    ],
)
def test_a_malformed_checkpoint_is_refused(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - each case has its own message
        parse_checkpoint(text)


def test_every_change_is_written_and_read_back(tmp_path: Path) -> None:
    path = str(tmp_path / CHECKPOINT_FILE_NAME)
    cache = LeaderEpochCache(path)
    cache.assign(0, 0)
    cache.assign(3, 10)
    assert (tmp_path / CHECKPOINT_FILE_NAME).read_text() == "0\n2\n0 0\n3 10\n"
    loaded = LeaderEpochCache.load(str(tmp_path))
    assert loaded is not None
    assert _pairs(loaded) == {0: 0, 3: 10}
    cache.truncate_from_end(10)
    assert (tmp_path / CHECKPOINT_FILE_NAME).read_text() == "0\n1\n0 0\n"
    assert not os.path.exists(path + ".tmp")


def test_a_missing_or_malformed_file_loads_as_none(tmp_path: Path) -> None:
    assert LeaderEpochCache.load(str(tmp_path)) is None
    (tmp_path / CHECKPOINT_FILE_NAME).write_text("0\n5\n1 1\n")
    assert LeaderEpochCache.load(str(tmp_path)) is None


# -- in the log ------------------------------------------------------------------------------


def _with_epoch(data: bytes, epoch: int) -> bytes:
    buffer = bytearray(data)
    set_partition_leader_epoch(buffer, 0, epoch)
    return bytes(buffer)


def test_leader_appends_record_each_new_epoch_on_both_paths(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open()
    log.append(make_batch(2), leader_epoch=0)  # fast path
    log.append(make_batch(3), leader_epoch=0)
    log.append(make_batch(1) + make_batch(1), leader_epoch=2)  # general path (two batches)
    log.append(make_batch(2), leader_epoch=5)
    assert log.leader_epoch_entries() == [(0, 0), (2, 5), (5, 7)]
    assert log.latest_epoch == 5
    assert log.end_offset_for_epoch(2) == EpochEndOffset(2, 7)
    assert log.end_offset_for_epoch(5) == EpochEndOffset(5, 9)
    text = Path(logs.directory, CHECKPOINT_FILE_NAME).read_text()
    assert text == "0\n3\n0 0\n2 5\n5 7\n"


def test_a_log_without_epochs_writes_no_file(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = logs.open()
    log.append(make_batch(2))  # no leader epoch given (tools, tests)
    assert log.leader_epoch_entries() == []
    assert CHECKPOINT_FILE_NAME not in logs.files()


def test_follower_appends_record_the_batches_epochs(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open()
    fetched = (
        _with_epoch(make_batch(2, base_offset=0), 0)
        + _with_epoch(make_batch(3, base_offset=2), 0)
        + _with_epoch(make_batch(1, base_offset=5), 3)
    )
    log.append(fetched, assign_offsets=False)
    assert log.leader_epoch_entries() == [(0, 0), (3, 5)]


def test_truncation_and_log_start_moves_trim_the_cache(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open()
    for epoch in (0, 0, 1, 1, 4, 4):
        log.append(make_batch(2), leader_epoch=epoch)
    assert log.leader_epoch_entries() == [(0, 0), (1, 4), (4, 8)]
    assert log.truncate_to(8)
    assert log.leader_epoch_entries() == [(0, 0), (1, 4)]
    log.maybe_increment_log_start_offset(5)
    assert log.leader_epoch_entries() == [(1, 5)]
    log.truncate_fully_and_start_at(20)
    assert log.leader_epoch_entries() == []
    assert Path(logs.directory, CHECKPOINT_FILE_NAME).read_text() == "0\n0\n"


def test_reopening_loads_the_file_or_rebuilds_it(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open(inline=True)
    for epoch in (0, 2, 2, 7):
        log.append(make_batch(2), leader_epoch=epoch)
    log.close()
    checkpoint = Path(logs.directory, CHECKPOINT_FILE_NAME)
    checkpoint.write_text("0\n1\n0 0\n")  # differs from the batches: proves it is read
    reopened = logs.open(inline=True, clean=True)
    assert reopened.leader_epoch_entries() == [(0, 0)]
    reopened.close()
    checkpoint.unlink()
    rebuilt = logs.open(inline=True, clean=True)
    assert rebuilt.leader_epoch_entries() == [(0, 0), (2, 2), (7, 6)]
    assert checkpoint.read_text() == "0\n3\n0 0\n2 2\n7 6\n"


def test_entries_past_the_recovered_log_end_are_dropped_at_open(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open(inline=True)
    log.append(make_batch(2), leader_epoch=0)
    log.close()
    # The file names an epoch whose records a crash lost.
    Path(logs.directory, CHECKPOINT_FILE_NAME).write_text("0\n2\n0 0\n1 2\n")
    reopened = logs.open(inline=True, clean=True)
    assert reopened.leader_epoch_entries() == [(0, 0)]


def test_a_new_leaders_epoch_is_answered_at_once_and_written_with_its_first_records(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open()
    log.append(make_batch(3), leader_epoch=0)
    checkpoint = Path(logs.directory, CHECKPOINT_FILE_NAME)
    assert log.assign_epoch_start(4)  # becoming the leader at epoch 4
    assert not log.assign_epoch_start(4)
    assert log.end_offset_for_epoch(0) == EpochEndOffset(0, 3)  # a follower asking is told
    assert checkpoint.read_text() == "0\n1\n0 0\n"  # no records of epoch 4 yet: not written
    log.append(make_batch(1), leader_epoch=4)
    assert checkpoint.read_text() == "0\n2\n0 0\n4 3\n"
    assert log.leader_epoch_entries() == [(0, 0), (4, 3)]


def test_garbage_checkpoint_that_is_not_utf8_is_rebuilt(tmp_path: Path) -> None:
    # Found by the crash-recovery fuzz: a non-UTF-8 file raised UnicodeDecodeError at load.
    (tmp_path / CHECKPOINT_FILE_NAME).write_bytes(b"0\n1\n\x9e\xc4 0\n")
    assert LeaderEpochCache.load(str(tmp_path)) is None
