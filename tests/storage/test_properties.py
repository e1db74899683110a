"""Properties of the log against simple models: append/read round trips across rolls, index
lookups against a linear scan of the batches, and offset-for-timestamp against a linear scan of
every record. Each example works in its own temporary directory."""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import given, settings
from hypothesis import strategies as st

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.records.batch import CompressionType, parse_header, set_log_append_time
from odradek.records.codec import build_batch, decode_batch_records
from odradek.records.record import SimpleRecord
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.scheduler import ManualScheduler
from odradek.storage.segment import LogSegment, TimestampAndOffset

TP = TopicPartition("orders", 0)
START = 1_700_000_000_000
PROPERTY = settings(deadline=None, max_examples=50)

Model = list[tuple[int, int, bytes | None, bytes | None]]  # offset, timestamp, key, value

records = st.tuples(
    st.integers(0, 1_000),
    st.one_of(st.none(), st.binary(max_size=8)),
    st.one_of(st.none(), st.binary(max_size=80)),
)
batches = st.lists(st.lists(records, min_size=1, max_size=6), min_size=1, max_size=40)
layouts = st.fixed_dictionaries(
    {
        "segment_bytes": st.integers(100, 2_000),
        "index_interval_bytes": st.integers(0, 400),
        # 48 bytes: 6 offset entries, 3 time entries before the index is full and the
        # segment rolls.
        "segment_index_bytes": st.sampled_from([48, 96, 4_096]),
    }
)


@contextmanager
def temporary_log(config: LogConfig) -> Iterator[tuple[Log, str, MockClock]]:
    with tempfile.TemporaryDirectory() as root:
        clock = MockClock(START)
        scheduler = ManualScheduler(clock)
        directory = os.path.join(root, "orders-0")
        log = Log.open(directory, TP, config, clock=clock, scheduler=scheduler)
        try:
            yield log, directory, clock
        finally:
            log.close()
            scheduler.shutdown()


def build(batch: list[tuple[int, bytes | None, bytes | None]], **kwargs: object) -> bytes:
    return build_batch(
        [SimpleRecord(START + t, key, value) for t, key, value in batch],
        **kwargs,  # type: ignore[arg-type]
    )


def config_for(built: list[bytes], layout: dict[str, int]) -> LogConfig:
    # Every batch must fit in a segment.
    segment_bytes = max(layout["segment_bytes"], *(len(data) for data in built))
    return LogConfig(
        segment_bytes=segment_bytes,
        index_interval_bytes=layout["index_interval_bytes"],
        segment_index_bytes=layout["segment_index_bytes"],
    )


def read_back(log: Log) -> Model:
    """Reads from the log start offset to the end, one batch per read."""
    offset = log.log_start_offset
    out: Model = []
    while offset < log.log_end_offset:
        data = log.read(offset, 1).read_bytes()
        header = parse_header(data)
        assert header.size == len(data)
        assert header.base_offset <= offset <= header.last_offset
        for record in decode_batch_records(data):
            if record.offset >= offset:
                out.append((record.offset, record.timestamp, record.key, record.value))
        offset = header.next_offset
    assert log.read(offset, 1).records is None
    return out


def reopen(log: Log, directory: str, clock: MockClock) -> Log:
    log.close()
    return Log.open(
        directory,
        TP,
        log.config,
        recovery_point=log.recovery_point,
        log_start_offset=log.log_start_offset,
        had_clean_shutdown=True,
        clock=clock,
        scheduler=ManualScheduler(clock),
    )


@PROPERTY
@given(
    batches=batches,
    layout=layouts,
    compression=st.sampled_from([CompressionType.NONE, CompressionType.GZIP]),
)
def test_append_then_read_round_trips_across_rolls(
    batches: list[list[tuple[int, bytes | None, bytes | None]]],
    layout: dict[str, int],
    compression: CompressionType,
) -> None:
    built = [build(batch, compression=compression) for batch in batches]
    with temporary_log(config_for(built, layout)) as (log, directory, clock):
        model: Model = []
        for batch, data in zip(batches, built, strict=True):
            info = log.append(data)
            assert info.first_offset == len(model)
            model += [
                (info.first_offset + n, START + t, key, value)
                for n, (t, key, value) in enumerate(batch)
            ]
        assert log.log_end_offset == len(model)
        segments = log.segments()
        for older, newer in itertools.pairwise(segments):
            assert older.next_offset == newer.base_offset
            assert older.size <= log.config.segment_bytes
        assert read_back(log) == model
        again = reopen(log, directory, clock)
        try:
            assert read_back(again) == model
        finally:
            again.close()


def linear_scan(segment: LogSegment) -> list[tuple[int, int, int, int]]:
    """(position, base offset, last offset, size) of each batch, from the raw file bytes."""
    data = segment.log.read(0, segment.size)
    out = []
    position = 0
    while position < len(data):
        header = parse_header(data, position)
        out.append((position, header.base_offset, header.last_offset, header.size))
        position += header.size
    assert position == len(data)
    return out


def check_index_lookups(log: Log) -> None:
    for segment in log.segments():
        scanned = linear_scan(segment)
        starts = {position: base for position, base, _, _ in scanned}
        for slot in range(segment.offset_index.entries):
            entry = segment.offset_index.entry(slot)
            assert starts.get(entry.position) == entry.offset
        for target in range(segment.base_offset - 1, segment.next_offset + 1):
            expected = next(
                ((position, base) for position, base, last, _ in scanned if last >= target), None
            )
            found = segment.translate_offset(target)
            actual = None if found is None else (found.position, found.header.base_offset)
            assert actual == expected, (segment, target)


@PROPERTY
@given(batches=batches, layout=layouts)
def test_index_lookups_agree_with_a_linear_scan(
    batches: list[list[tuple[int, bytes | None, bytes | None]]], layout: dict[str, int]
) -> None:
    built = [build(batch) for batch in batches]
    with temporary_log(config_for(built, layout)) as (log, directory, clock):
        for data in built:
            log.append(data)
        check_index_lookups(log)
        again = reopen(log, directory, clock)  # indexes loaded from the files
        try:
            check_index_lookups(again)
        finally:
            again.close()


@PROPERTY
@given(
    batches=batches,
    layout=layouts,
    log_append_time=st.lists(st.booleans(), max_size=40),
    start=st.floats(0, 1),
    delete=st.booleans(),
)
def test_offset_for_timestamp_agrees_with_a_linear_scan(
    batches: list[list[tuple[int, bytes | None, bytes | None]]],
    layout: dict[str, int],
    log_append_time: list[bool],
    start: float,
    delete: bool,
) -> None:
    built = []
    for n, batch in enumerate(batches):
        data = bytearray(build(batch))
        if n < len(log_append_time) and log_append_time[n]:
            # A batch stamped by a leader with LogAppendTime, copied as it is.
            set_log_append_time(data, 0, START + batch[0][0])
        built.append(bytes(data))
    with temporary_log(config_for(built, layout)) as (log, _directory, _clock):
        for data in built:
            log.append(data)
        log_start_offset = int(start * log.log_end_offset)
        log.maybe_increment_log_start_offset(log_start_offset)
        if delete:
            log.delete_old_segments()
        assert log.log_start_offset == log_start_offset
        everything = [
            (record.offset, record.timestamp)
            for segment in log.segments()
            for position, _base, _last, _size in linear_scan(segment)
            for record in decode_batch_records(segment.log.read(0, segment.size), position)
        ]
        visible = [(o, t) for o, t in everything if o >= log_start_offset]
        timestamps = {t for _, t in everything}
        targets = {t + d for t in timestamps for d in (-1, 0, 1)} | {0, START + 2_000}
        for target in sorted(targets):
            expected = next((TimestampAndOffset(t, o) for o, t in visible if t >= target), None)
            assert log.offset_for_timestamp(target) == expected, target
