"""Log.append's fast path (one batch, no roll due, validated, patched and written in one call)
against its general path: the compiled helper, its Python reference and the general path alone
leave byte-identical segment, index and time-index files and answer every append identically,
errors included, on random runs of appends, clock moves, truncations and config changes; and
the fast path is taken where it should be and declines everything else."""

from __future__ import annotations

import dataclasses
import os
import struct
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from odradek._clock import MockClock
from odradek._compiled import compiled_attr
from odradek._types import TopicPartition
from odradek.errors import (
    CorruptRecordError,
    InvalidRecordError,
    MessageTooLargeError,
    UnsupportedForMessageFormatError,
)
from odradek.records.batch import CRC_OFFSET, HEADER_SIZE, compute_crc, parse_header
from odradek.records.codec import build_batch, decode_batch_records
from odradek.records.record import Record, SimpleRecord
from odradek.storage import append_state, file_records
from odradek.storage.append_state import PyAppendState
from odradek.storage.config import LogConfig
from odradek.storage.file_records import compiled_append_batch, py_append_batch
from odradek.storage.log import Log

TP = TopicPartition("orders", 0)
START = 1_700_000_000_000
compiled = compiled_append_batch()


def _general_only(*_args: Any) -> None:
    """An ``append_batch`` that declines everything: every append takes the general path."""


class _GeneralOnlyState(PyAppendState):
    """An append state whose fast path declines everything."""

    __slots__ = ()

    def append(self, *_args: Any) -> None:
        return None


#: A fast path: the segment's helper (``file_records.append_batch_impl``, used when an index
#: entry is due) and its append state's class (``append_state``, every other append).
FastPath = tuple[Callable[..., Any], type[Any]]
PATHS: dict[str, FastPath] = {
    "general": (_general_only, _GeneralOnlyState),
    "python": (py_append_batch, PyAppendState),
}
if compiled is not None:
    PATHS["compiled"] = (compiled, compiled_attr(file_records.COMPILED_MODULE, "AppendState"))
#: What the log uses when nothing is patched.
DEFAULT_PATH: FastPath = (file_records.append_batch_impl, append_state._IMPLEMENTATION)  # type: ignore[assignment]


class Counting:
    """A fast path (helper and append state) that counts the appends it accepts."""

    def __init__(self, path: FastPath) -> None:
        self.implementation, state_class = path
        self.accepted = 0
        self.declined = 0
        counter = self

        class CountingState(state_class):  # type: ignore[valid-type,misc]
            __slots__ = ()

            def append(self, *args: Any) -> Any:
                # Counted as the helper's calls are: only what passes the state's own checks
                # (its declines before the helper are the segment's, not the batch's).
                answer = super().append(*args)
                tail = self.tail
                if (
                    self.first_batch_timestamp < 0
                    or args[2] < self.base_offset
                    or self.indexes_full
                    or self.bytes_since_last_index_entry > self.index_interval_bytes
                    or tail is None
                    or len(tail[1]) >= self.tail_max_batches
                ) and answer is None:
                    return None
                return counter.count(answer)

        self.state_class = CountingState

    def count(self, answer: Any) -> Any:
        if answer is None:
            self.declined += 1
        else:
            self.accepted += 1
        return answer

    def __call__(self, *args: Any) -> Any:
        return self.count(self.implementation(*args))


@contextmanager
def using(counting: Counting) -> Iterator[None]:
    with (
        mock.patch.object(file_records, "append_batch_impl", counting),
        mock.patch.object(append_state, "_IMPLEMENTATION", counting.state_class),
    ):
        yield


def make_batch(
    count: int = 2, *, timestamp_ms: int = START, value: bytes = b"v" * 30, key: bytes = b"k"
) -> bytes:
    return build_batch(
        [SimpleRecord(timestamp_ms + i, key, value) for i in range(count)], base_offset=0
    )


def directory_bytes(directory: str) -> dict[str, bytes]:
    return {name: Path(directory, name).read_bytes() for name in sorted(os.listdir(directory))}


# ---- the same files and answers, on random runs ----

_append = st.tuples(
    st.just("append"),
    st.lists(
        st.tuples(
            st.integers(-3, 3_000),  # timestamp delta from the clock; -3: no timestamp
            st.sampled_from([b"a", b"b", b"c", None]),
            st.binary(max_size=90),
        ),
        min_size=1,
        max_size=5,
    ),
    st.sampled_from(["bytes", "bytearray", "memoryview", "memoryview of bytearray"]),
    st.one_of(st.none(), st.integers(0, 5), st.just(2**31 - 1)),
    # damage: none (mostly), a flipped CRC-covered byte, a trailing second batch, a cut
    st.sampled_from(["none"] * 12 + ["flip", "two batches", "cut", "old magic"]),
)
_other = st.one_of(
    st.tuples(st.just("advance"), st.integers(0, 20_000)),
    st.tuples(st.just("truncate"), st.integers(0, 100)),
    st.tuples(st.just("config"), st.sampled_from(["CreateTime", "LogAppendTime"])),
    st.tuples(st.just("roll")),
)
# Mostly appends, with now and then something else before one.
_operations = st.lists(
    st.tuples(st.one_of(st.none(), st.none(), st.none(), _other), _append),
    min_size=8,
    max_size=40,
).map(lambda pairs: [op for pair in pairs for op in pair if op is not None])
_configs = st.builds(
    LogConfig,
    segment_bytes=st.sampled_from([1024**3, 1024**3, 3_000, 1_000, 300]),
    segment_index_bytes=st.sampled_from([48, 96, 4_096]),
    index_interval_bytes=st.sampled_from([0, 100, 400, 4_096]),
    segment_ms=st.sampled_from([7 * 24 * 3_600_000] * 3 + [5_000, 1]),
    max_message_bytes=st.sampled_from([1024 * 1024] * 3 + [400, 150]),
    cleanup_policy=st.sampled_from(["delete", "delete", "delete", "compact", "compact,delete"]),
    message_timestamp_type=st.sampled_from(["CreateTime"] * 3 + ["LogAppendTime"]),
    flush_messages=st.sampled_from([3, 2**63 - 1]),
)


def _buffer(raw: bytes, kind: str) -> Any:
    if kind == "bytes":
        return raw
    if kind == "bytearray":
        return bytearray(raw)
    if kind == "memoryview":
        return memoryview(raw)
    return memoryview(bytearray(raw))


def _damaged(raw: bytes, damage: str) -> bytes:
    data = bytearray(raw)
    if damage == "flip":
        data[len(data) // 2 + 10] ^= 0x04
    elif damage == "two batches":
        data += raw
    elif damage == "cut":
        del data[-3:]
    elif damage == "old magic":
        data[16] = 1
        struct.pack_into(">I", data, CRC_OFFSET, compute_crc(data, 0, len(data)))
    return bytes(data)


def replay(path: FastPath, config: LogConfig, operations: list[Any]) -> dict[str, Any]:
    """Runs ``operations`` on a new log with ``path`` as the fast path;
    everything observable: answers, files while open, segment statistics, files after close
    (and, under "accepted", how many appends the helper took)."""
    counting = Counting(path)
    answers: list[Any] = []
    with tempfile.TemporaryDirectory() as parent, using(counting):
        directory = os.path.join(parent, "orders-0")
        clock = MockClock(START)
        log = Log.open(directory, TP, config, clock=clock)
        base_offsets: list[int] = []
        for operation in operations:
            if operation[0] == "append":
                _, records, kind, leader_epoch, damage = operation
                raw = build_batch(
                    [
                        SimpleRecord(-1 if delta == -3 else clock.now_ms() + delta, key, value)
                        for delta, key, value in records
                    ]
                )
                data = _buffer(_damaged(raw, damage), kind)
                try:
                    info = log.append(data, leader_epoch=leader_epoch)
                except Exception as error:
                    answers.append(("error", type(error), str(error), bytes(data)))
                else:
                    answers.append(("ok", tuple(info), type(info), bytes(data)))
                    base_offsets.append(info.first_offset)
            elif operation[0] == "advance":
                clock.advance(operation[1])
            elif operation[0] == "truncate" and base_offsets:
                offset = base_offsets[operation[1] % len(base_offsets)]
                answers.append(("truncate", log.truncate_to(offset)))
                base_offsets = [base for base in base_offsets if base < offset]
            elif operation[0] == "config":
                log.update_config(
                    dataclasses.replace(log.config, message_timestamp_type=operation[1])
                )
            elif operation[0] == "roll":
                log.roll()
        observed = {
            "answers": answers,
            "log": (log.log_end_offset, log.statistics()),
            "segments": [
                (segment.statistics(), segment.first_batch_timestamp, segment.created_ms)
                for segment in log.segments()
            ],
            "files": directory_bytes(directory),
        }
        log.close()
        observed["closed files"] = directory_bytes(directory)
    observed["accepted"] = counting.accepted
    return observed


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(config=_configs, operations=_operations)
def test_every_path_leaves_the_same_log(config: LogConfig, operations: list[Any]) -> None:
    reference = replay(PATHS["general"], config, operations)
    assert reference.pop("accepted") == 0
    accepted = set()
    for name, path in PATHS.items():
        if name != "general":
            observed = replay(path, config, operations)
            accepted.add(observed.pop("accepted"))
            assert observed == reference, name
    assert len(accepted) == 1  # the Python and compiled helpers took the same appends
    (count,) = accepted
    event(f"fast path: {'none' if count == 0 else '1-4' if count < 5 else '5 or more'}")


# ---- where the fast path is taken ----


@pytest.fixture
def counting(tmp_path: Path) -> Iterator[Counting]:
    counter = Counting(DEFAULT_PATH)
    with using(counter):
        yield counter


def open_log(tmp_path: Path, clock: MockClock | None = None, **overrides: Any) -> Log:
    config = dataclasses.replace(LogConfig(), **overrides)
    return Log.open(str(tmp_path / "orders-0"), TP, config, clock=clock or MockClock(START))


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview"])
@pytest.mark.parametrize("leader_epoch", [None, 4])
def test_an_ordinary_produce_append_takes_the_fast_path(
    tmp_path: Path, counting: Counting, kind: str, leader_epoch: int | None
) -> None:
    log = open_log(tmp_path)
    first = log.append(make_batch(), leader_epoch=leader_epoch)  # the segment's first batch
    assert counting.accepted == 0  # an empty segment declines: its first timestamp to record
    raw = make_batch(3, timestamp_ms=START + 10)
    data = _buffer(raw, kind)
    info = log.append(data, leader_epoch=leader_epoch)
    assert counting.accepted == 1
    assert (first.first_offset, first.last_offset) == (0, 1)
    assert tuple(info) == (2, 4, START + 12, -1, 3, len(raw), 0)
    assert log.log_end_offset == 5
    stored = log.read(2, 1 << 20).read_bytes()
    header = parse_header(stored)
    assert (header.base_offset, header.last_offset, header.max_timestamp) == (2, 4, START + 12)
    assert header.partition_leader_epoch == (-1 if leader_epoch is None else leader_epoch)
    assert stored[HEADER_SIZE:] == raw[HEADER_SIZE:]
    assert (bytes(data) != raw) == (kind == "bytearray")  # only a bytearray is patched


def test_the_general_path_takes_the_rest(tmp_path: Path, counting: Counting) -> None:
    clock = MockClock(START)
    log = open_log(tmp_path, clock, segment_ms=60_000, max_message_bytes=400)
    log.append(make_batch())
    assert counting.accepted == counting.declined == 0  # the segment's first batch
    log.append(make_batch() + make_batch())  # two batches: declined
    with pytest.raises(MessageTooLargeError):
        log.append(make_batch(value=b"x" * 400))
    with pytest.raises(CorruptRecordError):
        log.append(_damaged(make_batch(), "flip"))
    with pytest.raises(UnsupportedForMessageFormatError):
        log.append(_damaged(make_batch(), "old magic"))
    with pytest.raises(InvalidRecordError):
        log.append(b"")
    assert counting.accepted == 0
    assert counting.declined == 5
    # A roll by time: declined by the helper, rolled by the general path.
    log.append(make_batch(timestamp_ms=START + 60_001))
    assert len(log.segments()) == 2
    assert counting.accepted == 0
    log.append(make_batch(timestamp_ms=START + 60_002))
    assert counting.accepted == 1
    # Followers never take it.
    follower = build_batch([SimpleRecord(START, b"k", b"v")], base_offset=log.log_end_offset)
    log.append(follower, assign_offsets=False)
    assert counting.accepted == 1


@pytest.mark.parametrize(
    "overrides",
    [{"message_timestamp_type": "LogAppendTime"}, {"cleanup_policy": "compact"}],
)
def test_topics_that_rewrite_or_decode_batches_never_take_it(
    tmp_path: Path, counting: Counting, overrides: dict[str, str]
) -> None:
    log = open_log(tmp_path, **overrides)
    for _ in range(3):
        log.append(make_batch())
    assert counting.accepted == counting.declined == 0
    log.update_config(LogConfig())
    log.append(make_batch())
    assert counting.accepted == 1
    log.update_config(dataclasses.replace(LogConfig(), **overrides))
    log.append(make_batch())
    assert counting.accepted == 1


def test_a_closed_log_refuses_appends(tmp_path: Path, counting: Counting) -> None:
    log = open_log(tmp_path)
    log.append(make_batch())
    log.close()
    log.update_config(LogConfig())  # does not reopen the fast path
    with pytest.raises(InvalidRecordError, match="closed"):
        log.append(make_batch())
    assert counting.accepted == counting.declined == 0


def test_a_full_index_rolls_as_on_the_general_path(tmp_path: Path, counting: Counting) -> None:
    # 48 bytes: six offset-index entries; an entry per batch (interval 0).
    log = open_log(tmp_path, segment_index_bytes=48, index_interval_bytes=0)
    for _ in range(12):
        log.append(make_batch())
    assert counting.accepted > 0
    first = log.segments()[0]
    assert first.offset_index.entries == first.offset_index.max_entries
    assert log.log_end_offset == 24
    assert [record.offset for record in _read_all(log)] == list(range(24))


def _read_all(log: Log) -> list[Record]:
    records: list[Record] = []
    offset = 0
    while offset < log.log_end_offset:
        raw = log.read(offset, 1 << 20).read_bytes()
        position = 0
        while position + HEADER_SIZE <= len(raw):
            header = parse_header(raw, position)
            if position + header.size > len(raw):
                break
            records += decode_batch_records(raw, position)
            position += header.size
            offset = header.next_offset
    return records


def _fill_index(log: Log) -> None:
    """Appends until the active segment's offset index is full (no roll yet)."""
    while not log.segments()[-1].offset_index.is_full:
        log.append(make_batch())


def _reopen_clean(tmp_path: Path, end: int, segment_index_bytes: int) -> Log:
    """The log reopened after a clean shutdown (its indexes trusted, not rebuilt)."""
    config = dataclasses.replace(
        LogConfig(), segment_index_bytes=segment_index_bytes, index_interval_bytes=0
    )
    return Log.open(
        str(tmp_path / "orders-0"),
        TP,
        config,
        clock=MockClock(START),
        recovery_point=end,
        had_clean_shutdown=True,
    )


def test_room_made_in_a_full_index_gives_the_fast_path_back(
    tmp_path: Path, counting: Counting
) -> None:
    """The segment caches whether an index is full (the roll check of every fast append,
    refreshed where entries or index sizes change): a truncation that drops entries, and a
    reopen with a larger segment.index.bytes, let the fast path take appends again, without
    a roll; a reopen with the same size rolls at the next append, as the general path does."""
    log = open_log(tmp_path, segment_index_bytes=48, index_interval_bytes=0)
    _fill_index(log)
    last = log.segments()[-1].offset_index.last_entry().offset
    log.truncate_to(last)
    assert not log.segments()[-1].offset_index.is_full
    accepted = counting.accepted
    log.append(make_batch())
    assert counting.accepted == accepted + 1
    assert len(log.segments()) == 1

    _fill_index(log)
    end = log.log_end_offset
    log.close()
    log = _reopen_clean(tmp_path, end, segment_index_bytes=4_096)
    accepted = counting.accepted
    log.append(make_batch())
    assert counting.accepted == accepted + 1
    assert len(log.segments()) == 1
    assert log.log_end_offset == end + 2

    log.close()
    log = _reopen_clean(tmp_path, end + 2, segment_index_bytes=48)
    _fill_index(log)
    accepted = counting.accepted
    log.append(make_batch())
    assert counting.accepted == accepted  # full: declined before the helper, rolled
    assert len(log.segments()) == 2
    assert [record.offset for record in _read_all(log)] == list(range(log.log_end_offset))
