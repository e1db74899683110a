"""LogLoader: clean and unclean loads, leftovers of interrupted operations, missing and damaged
indexes, and crash recovery of the log files (truncated tail, garbage, damage in the middle)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from odradek.storage.config import LogConfig
from odradek.storage.loader import LoadedLog, LogLoader
from odradek.storage.log import Log
from odradek.storage.naming import segment_file_name

if TYPE_CHECKING:
    from tests.storage.conftest import BatchFactory, LogHarness

START = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=1024, index_interval_bytes=200, segment_index_bytes=4096)


@pytest.fixture
def loads() -> Iterator[list[LoadedLog]]:
    """Loaded logs to close after the test."""
    loaded: list[LoadedLog] = []
    yield loaded
    for result in loaded:
        for segment in result.segments:
            segment.close()


def load(
    directory: str,
    loaded: list[LoadedLog],
    *,
    clean: bool,
    recovery_point: int = 0,
    log_start_offset: int = 0,
    config: LogConfig = CONFIG,
) -> LoadedLog:
    result = LogLoader(
        directory,
        config,
        recovery_point=recovery_point,
        log_start_offset=log_start_offset,
        had_clean_shutdown=clean,
        now_ms=START,
        name="orders-0",
    ).load()
    loaded.append(result)
    return result


def build(logs: LogHarness, make_batch: BatchFactory, batches: int = 30) -> Log:
    """A log of several 1 KiB segments, batches of 3 records with varied timestamps."""
    log = logs.open(CONFIG)
    for n in range(batches):
        log.append(make_batch(timestamps=[START + (n * 31) % 97 + k for k in range(3)]))
    return log


def crash_copy(log: Log, root: Path, name: str = "crashed") -> str:
    """The log's files as a crash would leave them (everything written reached the page
    cache; nothing was trimmed or closed)."""
    target = root / name / "orders-0"
    shutil.copytree(log.directory, target)
    return str(target)


def path(directory: str, base_offset: int, suffix: str) -> str:
    return os.path.join(directory, segment_file_name(base_offset, suffix))


def summary(result: LoadedLog | Log) -> list[tuple[int, int, int, int]]:
    segments = result.segments if isinstance(result, LoadedLog) else result.segments()
    return [(s.base_offset, s.next_offset, s.size, s.largest_timestamp) for s in segments]


def index_entries(result: LoadedLog | Log) -> list[tuple[list, list]]:
    segments = result.segments if isinstance(result, LoadedLog) else result.segments()
    return [
        (
            [s.offset_index.entry(i) for i in range(s.offset_index.entries)],
            [s.time_index.entry(i) for i in range(s.time_index.entries)],
        )
        for s in segments
    ]


def flip_byte(file: str, position: int) -> None:
    with open(file, "r+b") as handle:
        handle.seek(position)
        byte = handle.read(1)[0]
        handle.seek(position)
        handle.write(bytes([byte ^ 0x55]))


# -- clean and unclean loads --------------------------------------------------------------------


def test_empty_directory_starts_at_the_log_start_offset(
    tmp_path: Path, loads: list[LoadedLog]
) -> None:
    result = load(str(tmp_path / "orders-0"), loads, clean=False, log_start_offset=42)
    assert [s.base_offset for s in result.segments] == [42]
    assert (result.log_start_offset, result.log_end_offset, result.recovery_point) == (42, 42, 42)


@pytest.mark.parametrize("clean", [True, False])
def test_reload_after_close_keeps_everything(
    logs: LogHarness, make_batch: BatchFactory, loads: list[LoadedLog], clean: bool
) -> None:
    log = build(logs, make_batch)
    log.close()
    before = summary(log)
    result = load(log.directory, loads, clean=clean, recovery_point=log.recovery_point)
    assert summary(result) == before
    assert (result.truncated_bytes, result.removed_segments) == (0, 0)
    assert result.recovery_point == result.log_end_offset == log.log_end_offset
    # Every segment but the active one keeps its trimmed indexes exactly.
    assert index_entries(result)[:-1] == index_entries(log)[:-1]


def test_clean_load_trusts_what_unclean_load_checks(
    logs: LogHarness, make_batch: BatchFactory, loads: list[LoadedLog], tmp_path: Path
) -> None:
    log = build(logs, make_batch)
    log.close()
    segments = log.segments()
    middle = segments[1]
    first_entry = middle.offset_index.entry(0)
    # Damage the first batch of the middle segment, well before its last index entry.
    flip_byte(middle.log.path, 70)
    shutil.copytree(log.directory, tmp_path / "copy")
    clean = load(log.directory, loads, clean=True, recovery_point=log.log_end_offset)
    assert clean.truncated_bytes == 0
    assert clean.log_end_offset == log.log_end_offset
    # Unclean, with the recovery point before that segment: it is checked and cut.
    unclean = load(str(tmp_path / "copy"), loads, clean=False, recovery_point=middle.base_offset)
    assert unclean.log_end_offset == middle.base_offset
    assert unclean.truncated_bytes == middle.size
    assert unclean.removed_segments == len(segments) - 2
    assert first_entry.offset > middle.base_offset


def test_unclean_load_checks_from_the_recovery_point(
    logs: LogHarness, make_batch: BatchFactory, loads: list[LoadedLog]
) -> None:
    log = build(logs, make_batch)
    log.close()
    first, second = log.segments()[:2]
    # Damage below the recovery point is not looked for (it was fsynced).
    flip_byte(first.log.path, 70)
    result = load(log.directory, loads, clean=False, recovery_point=second.next_offset)
    assert result.truncated_bytes == 0
    assert result.log_end_offset == log.log_end_offset
    assert result.recovery_point == result.log_end_offset


def test_recovery_point_is_clamped_to_the_log(
    logs: LogHarness, make_batch: BatchFactory, loads: list[LoadedLog]
) -> None:
    log = build(logs, make_batch, batches=3)
    log.close()
    result = load(log.directory, loads, clean=True, recovery_point=10**6)
    assert result.recovery_point == result.log_end_offset == 9


# -- leftovers ------------------------------------------------------------------------------------


def test_leftover_files_of_interrupted_operations_are_removed(
    logs: LogHarness, make_batch: BatchFactory, loads: list[LoadedLog]
) -> None:
    log = build(logs, make_batch, batches=3)
    log.close()
    directory = log.directory
    leftovers = [
        segment_file_name(0, ".log.deleted"),
        segment_file_name(0, ".index.deleted"),
        segment_file_name(500, ".log.deleted"),
        segment_file_name(0, ".log.cleaned"),
        segment_file_name(0, ".timeindex.cleaned"),
        segment_file_name(0, ".log.swap"),
        segment_file_name(0, ".index.swap"),
        "recovery-point-offset-checkpoint.tmp",
        segment_file_name(9, ".log.tmp"),
    ]
    for name in leftovers:
        Path(directory, name).write_bytes(b"junk")
    Path(directory, "leader-epoch-checkpoint").write_text("0\n0\n")
    result = load(directory, loads, clean=True, recovery_point=9)
    assert sorted(os.listdir(directory)) == sorted(
        [segment_file_name(0, s) for s in (".log", ".index", ".timeindex")]
        + ["leader-epoch-checkpoint"]
    )
    assert result.log_end_offset == 9
    assert summary(result) == summary(log)


def test_orphan_index_files_are_removed(
    logs: LogHarness, make_batch: BatchFactory, loads: list[LoadedLog]
) -> None:
    log = build(logs, make_batch, batches=3)
    log.close()
    for suffix in (".index", ".timeindex"):
        Path(path(log.directory, 9, suffix)).write_bytes(b"\x00" * 16)
        Path(path(log.directory, 3000, suffix)).write_bytes(b"")
    result = load(log.directory, loads, clean=True, recovery_point=9)
    assert [s.base_offset for s in result.segments] == [0]
    assert sorted(os.listdir(log.directory)) == sorted(
        segment_file_name(0, s) for s in (".log", ".index", ".timeindex")
    )


# -- indexes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".index", ".timeindex", "both"])
@pytest.mark.parametrize("clean", [True, False])
def test_missing_index_files_are_rebuilt(
    logs: LogHarness, make_batch: BatchFactory, loads: list[LoadedLog], suffix: str, clean: bool
) -> None:
    log = build(logs, make_batch)
    answers = {t: log.offset_for_timestamp(START + t) for t in range(0, 100, 3)}
    log.close()
    expected_entries = index_entries(log)
    bases = [s.base_offset for s in log.segments()]
    for base in bases[:2]:
        for one in (".index", ".timeindex") if suffix == "both" else (suffix,):
            os.remove(path(log.directory, base, one))
    result = load(log.directory, loads, clean=clean, recovery_point=log.log_end_offset)
    assert summary(result) == summary(log)
    assert index_entries(result)[:2] == expected_entries[:2]
    for base in bases[:2]:  # rebuilt, trimmed
        assert os.path.getsize(path(log.directory, base, ".index")) > 0
        assert os.path.getsize(path(log.directory, base, ".timeindex")) > 0
    for segment in result.segments:
        segment.close()
    loads.clear()
    reopened = logs.open(CONFIG, clean=True, recovery_point=log.log_end_offset)
    assert {t: reopened.offset_for_timestamp(START + t) for t in answers} == answers


@pytest.mark.parametrize("clean", [True, False])
def test_untrimmed_index_after_a_crash_is_rebuilt(
    logs: LogHarness, make_batch: BatchFactory, loads: list[LoadedLog], tmp_path: Path, clean: bool
) -> None:
    log = build(logs, make_batch, batches=34)
    active = log.segments()[-1]
    assert active.offset_index.entries > 0
    assert os.path.getsize(active.offset_index.path) == 4096  # preallocated
    expected = index_entries(log)
    directory = crash_copy(log, tmp_path)
    # clean=True as if the marker were stale: the zero tail still gives the index away.
    result = load(directory, loads, clean=clean, recovery_point=active.base_offset)
    assert summary(result) == summary(log)
    assert index_entries(result)[:-1] == expected[:-1]
    offsets, times = index_entries(result)[-1]
    assert offsets == expected[-1][0]
    assert times[: len(expected[-1][1])] == expected[-1][1]


def test_corrupt_index_of_an_old_segment_is_rebuilt(
    logs: LogHarness, make_batch: BatchFactory, loads: list[LoadedLog]
) -> None:
    log = build(logs, make_batch)
    log.close()
    expected = index_entries(log)
    first = log.segments()[0]
    Path(first.offset_index.path).write_bytes(b"\x00\x00\x00\x05\x00\x00\x00\x07" * 2)
    Path(first.time_index.path).write_bytes(b"\x01" * 13)
    result = load(log.directory, loads, clean=True, recovery_point=log.log_end_offset)
    assert summary(result) == summary(log)
    assert index_entries(result)[0] == expected[0]


@pytest.mark.parametrize("clean", [True, False])
def test_time_index_cut_to_whole_entries_is_rebuilt(
    logs: LogHarness, make_batch: BatchFactory, tmp_path: Path, clean: bool
) -> None:
    """A time index of an old segment cut back to a whole number of entries passes the
    structural checks; its last entry must still be checked against the log's largest
    timestamp, or the segment's largest timestamp is derived too low and
    ``offset_for_timestamp`` skips the segment (crash-recovery fuzz, run 499 of 1500)."""
    config = LogConfig(segment_bytes=4096, index_interval_bytes=0, segment_index_bytes=4096)
    log = logs.open(config, directory=str(tmp_path / "written" / "orders-0"))
    # The first segment's largest timestamp is reached mid-segment, and later entries exist.
    timestamps = [0, 40, 80, 120, 300, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120]
    for n, timestamp in enumerate(timestamps * 2):
        log.append(make_batch(timestamps=[START + timestamp + n // len(timestamps)] * 3))
    log.roll()
    first = log.segments()[0]
    entries = first.time_index.entries
    expected_times = [first.time_index.entry(i) for i in range(entries)]
    largest = first.largest_timestamp
    last_batch = list(first.log.batches_from())[-1][1]
    # Even a cut to all but the last entry leaves a last entry above the last batch's.
    assert entries >= 3
    assert last_batch.max_timestamp < expected_times[-2].timestamp < largest
    target = log.offset_for_timestamp(largest)
    assert target is not None
    assert target.offset < first.next_offset
    recovery_point = log.log_end_offset
    before = summary(log)
    log.close()
    for kept in range(entries):
        directory = tmp_path / f"cut-{kept}" / "orders-0"
        shutil.copytree(log.directory, directory)
        os.truncate(path(str(directory), first.base_offset, ".timeindex"), kept * 12)
        reopened = logs.open(
            config, directory=str(directory), clean=clean, recovery_point=recovery_point
        )
        assert summary(reopened) == before, f"{kept} entries kept"
        segment = reopened.segments()[0]
        assert segment.largest_timestamp == largest
        assert [segment.time_index.entry(i) for i in range(entries)] == expected_times
        assert reopened.offset_for_timestamp(largest) == target
        reopened.close()


# -- crash recovery of the .log ----------------------------------------------------------------


@pytest.mark.parametrize("clean", [True, False])
def test_truncated_tail(
    logs: LogHarness, make_batch: BatchFactory, loads: list[LoadedLog], tmp_path: Path, clean: bool
) -> None:
    log = build(logs, make_batch)
    active = log.segments()[-1]
    last_batch_size = len(make_batch(3))
    keep = active.size - last_batch_size + 20  # a torn write: 20 bytes of the last batch
    directory = crash_copy(log, tmp_path)
    os.truncate(path(directory, active.base_offset, ".log"), keep)
    result = load(directory, loads, clean=clean, recovery_point=active.base_offset)
    assert result.truncated_bytes == 20
    assert result.log_end_offset == log.log_end_offset - 3
    assert result.segments[-1].size == keep - 20
    assert os.path.getsize(path(directory, active.base_offset, ".log")) == keep - 20


@pytest.mark.parametrize(
    "garbage",
    [b"\x00" * 4096, b"\xff" * 100, b"\x00" * 7 + b"\x01", "header"],
    ids=["zeros", "ones", "short", "batch-like"],
)
@pytest.mark.parametrize("clean", [True, False])
def test_garbage_tail(
    logs: LogHarness,
    make_batch: BatchFactory,
    loads: list[LoadedLog],
    tmp_path: Path,
    garbage: bytes | str,
    clean: bool,
) -> None:
    log = build(logs, make_batch)
    active = log.segments()[-1]
    directory = crash_copy(log, tmp_path)
    if garbage == "header":
        # A whole batch whose CRC does not match, with the right next offset.
        data = bytearray(make_batch(3, base_offset=log.log_end_offset))
        data[-1] ^= 0xFF
        garbage = bytes(data)
    assert isinstance(garbage, bytes)
    with open(path(directory, active.base_offset, ".log"), "ab") as handle:
        handle.write(garbage)
    result = load(directory, loads, clean=clean, recovery_point=active.base_offset)
    assert result.truncated_bytes == len(garbage)
    assert summary(result) == summary(log)
    reopened = Log.open(
        directory, log.topic_partition, CONFIG, recovery_point=result.log_end_offset
    )
    try:
        assert logs.read_all(reopened) == logs.read_all(log)
        assert reopened.append(make_batch(1)).first_offset == log.log_end_offset
    finally:
        reopened.close()


@pytest.mark.parametrize("damage", ["flip", "garbage"])
@pytest.mark.parametrize("clean", [True, False])
def test_damage_in_a_middle_segment_removes_later_segments(
    logs: LogHarness,
    make_batch: BatchFactory,
    loads: list[LoadedLog],
    tmp_path: Path,
    damage: str,
    clean: bool,
) -> None:
    log = build(logs, make_batch)
    log.close()
    segments = log.segments()
    middle = segments[1]
    batch_size = len(make_batch(3))
    if damage == "flip":
        # The last batch of the middle segment: after its last index entry, so a clean
        # load checks it too.
        cut_at = middle.size - batch_size
        flip_byte(middle.log.path, cut_at + 70)
    else:
        cut_at = middle.size
        with open(middle.log.path, "ab") as handle:
            handle.write(b"\x00" * 100)
    result = load(log.directory, loads, clean=clean, recovery_point=middle.base_offset)
    assert [s.base_offset for s in result.segments] == [s.base_offset for s in segments[:2]]
    assert result.removed_segments == len(segments) - 2
    expected_end = middle.next_offset - (3 if damage == "flip" else 0)
    assert result.log_end_offset == expected_end
    assert result.segments[-1].size == cut_at
    for later in segments[2:]:
        for suffix in (".log", ".index", ".timeindex"):
            assert not os.path.exists(path(log.directory, later.base_offset, suffix))
    for segment in result.segments:
        segment.close()
    loads.clear()
    # The shortened middle segment is the active one now: appends go on from its end.
    reopened = logs.open(CONFIG, clean=True, recovery_point=expected_end)
    assert reopened.append(make_batch(1)).first_offset == expected_end
    assert [r.offset for r in logs.read_all(reopened)] == list(range(expected_end + 1))


def test_log_start_offset_above_the_log_end_offset(
    logs: LogHarness, make_batch: BatchFactory, loads: list[LoadedLog]
) -> None:
    log = build(logs, make_batch, batches=5)
    log.close()
    result = load(log.directory, loads, clean=True, recovery_point=15, log_start_offset=100)
    assert [s.base_offset for s in result.segments] == [100]
    assert (result.log_start_offset, result.log_end_offset, result.recovery_point) == (
        100,
        100,
        100,
    )
    assert sorted(os.listdir(log.directory)) == sorted(
        segment_file_name(100, s) for s in (".log", ".index", ".timeindex")
    )


def test_log_start_offset_inside_the_log(
    logs: LogHarness, make_batch: BatchFactory, loads: list[LoadedLog]
) -> None:
    log = build(logs, make_batch)
    log.close()
    result = load(log.directory, loads, clean=True, recovery_point=0, log_start_offset=13)
    assert result.log_start_offset == 13
    assert result.recovery_point == 13  # never below the log start offset
    assert summary(result) == summary(log)


# -- scenarios found by the crash-recovery fuzz (odradek.testing.faults.storage_crash) ----------


def _batch_ends(file: str) -> list[int]:
    """The end position of every batch of a ``.log`` file."""
    with open(file, "rb") as handle:
        data = handle.read()
    ends, position = [], 0
    while position < len(data):
        position += int.from_bytes(data[position + 8 : position + 12], "big") + 12
        ends.append(position)
    return ends


def _epoch_log(logs: LogHarness, make_batch: BatchFactory, config: LogConfig = CONFIG) -> Log:
    """30 batches of 3 records, timestamps rising, epoch 3 for the first 10 and 4 after."""
    log = logs.open(config)
    for n in range(30):
        timestamps = [START + n * 10 + k for k in range(3)]
        log.append(make_batch(timestamps=timestamps), leader_epoch=3 if n < 10 else 4)
    return log


@pytest.mark.parametrize("clean", [False, True])
def test_segment_cut_at_a_batch_boundary_removes_the_segments_after_the_gap(
    logs: LogHarness, make_batch: BatchFactory, clean: bool
) -> None:
    # A file cut exactly at a batch boundary shows no bad CRC: recovery kept the short
    # segment and the next ones, leaving offsets missing in between (a read in the gap
    # returned a later batch).
    log = build(logs, make_batch)
    log.close()
    first = path(log.directory, 0, ".log")
    os.truncate(first, _batch_ends(first)[1])  # two batches of 3 records kept
    reopened = logs.open(CONFIG, clean=clean)
    assert [s.base_offset for s in reopened.segments()] == [0]
    assert reopened.log_end_offset == 6
    assert [r.offset for r in logs.read_all(reopened)] == list(range(6))
    assert reopened.append(make_batch()).first_offset == 6


def test_clean_load_of_an_empty_segment_given_a_zero_filled_tail_recovers_it(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    # The empty active segment of a clean shutdown has no index entries; zeros written to
    # it were read as its first batch header before the invalid bytes were cut:
    # UnsupportedForMessageFormatError out of Log.open.
    log = build(logs, make_batch)
    end = log.log_end_offset
    log.roll()
    log.close()
    with open(path(log.directory, end, ".log"), "ab") as handle:
        handle.write(bytes(300))
    reopened = logs.open(CONFIG, clean=True)
    assert reopened.log_end_offset == end
    assert reopened.segments()[-1].size == 0
    assert reopened.append(make_batch()).first_offset == end


def test_leader_epoch_checkpoint_cut_to_a_wrong_start_offset_is_rebuilt_from_the_log(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    # "0\n2\n3 0\n4 30\n" cut after "4 3" still parses: epoch 4 seemed to start at offset 3,
    # inside epoch 3's batches, and OffsetForLeaderEpoch answered from it.
    log = _epoch_log(logs, make_batch)
    assert log.leader_epoch_entries() == [(3, 0), (4, 30)]
    log.close()
    checkpoint = os.path.join(log.directory, "leader-epoch-checkpoint")
    with open(checkpoint, "w") as handle:
        handle.write("0\n2\n3 0\n4 3")
    reopened = logs.open(CONFIG, clean=True)
    assert reopened.leader_epoch_entries() == [(3, 0), (4, 30)]


def test_rebuilding_leader_epochs_across_a_corrupt_header_at_rest_still_opens_the_log(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    # A bit flipped in a batch length below the last index entry of a cleanly shut-down
    # segment is not checked at load (Kafka trusts flushed data); rebuilding a missing
    # leader-epoch checkpoint read that header and raised CorruptRecordError out of
    # Log.open.
    log = _epoch_log(logs, make_batch)
    log.close()
    os.remove(os.path.join(log.directory, "leader-epoch-checkpoint"))
    first = path(log.directory, 0, ".log")
    second_batch = _batch_ends(first)[0]
    flip_byte(first, second_batch + 8)  # the high byte of its length
    reopened = logs.open(CONFIG, clean=True)
    assert reopened.leader_epoch_entries()[0] == (3, 0)
