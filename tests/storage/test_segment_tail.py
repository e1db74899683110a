"""The active segment's tail: batches appended since the last index-interval point are looked
up from memory with one header read, and answer exactly what the scan answers."""

from __future__ import annotations

import dataclasses
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from odradek.records.batch import BatchHeader, parse_header
from odradek.storage.config import LogConfig
from odradek.storage.file_records import FileRecords
from odradek.storage.segment import BatchPosition, LogSegment
from odradek.storage.segment_tail import TAIL_MAX_BATCHES

if TYPE_CHECKING:
    from tests.storage.conftest import BatchFactory, LogHarness

NOW = 1_700_000_000_000
BASE = 100

SegmentFactory = Callable[..., LogSegment]


@pytest.fixture
def new_segment(tmp_path: Path) -> Iterator[SegmentFactory]:
    made: list[LogSegment] = []

    def make(**overrides: object) -> LogSegment:
        config = dataclasses.replace(LogConfig(), **overrides)  # type: ignore[arg-type]
        segment = LogSegment.create(str(tmp_path), BASE, config, NOW)
        made.append(segment)
        return segment

    yield make
    for segment in made:
        if not segment.log._closed:
            segment.close()


@pytest.fixture
def header_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts ``FileRecords.header_at`` calls (each one a ``pread``)."""
    calls: list[int] = []
    original = FileRecords.header_at

    def counting(self: FileRecords, position: int) -> BatchHeader:
        calls.append(position)
        return original(self, position)

    monkeypatch.setattr(FileRecords, "header_at", counting)
    return calls


def append(segment: LogSegment, data: bytes) -> tuple[int, BatchHeader]:
    """Appends one batch at the segment's next offset (the general path)."""
    buffer = bytearray(data)
    struct.pack_into(">q", buffer, 0, segment.next_offset)
    header = parse_header(buffer)
    position = segment.size
    segment.append(buffer, [BatchPosition(0, header)])
    return position, header


def append_fast(segment: LogSegment, data: bytes) -> tuple[int, BatchHeader]:
    """Appends one batch through the leader's fast path (as ``Log.append`` does)."""
    position = segment.size
    fields = segment.append_batch(data, segment.next_offset, 0, LogConfig())
    assert fields is not None
    return position, segment.log.header_at(position)


def check_every_offset(
    segment: LogSegment, written: list[tuple[int, BatchHeader]], *, reads: bool = True
) -> None:
    """Every offset translates to its batch and (``reads``) reads from it: one whole batch
    with ``max_bytes`` 1, everything to the end with more, nothing past the last offset."""
    for position, header in written:
        for offset in range(header.base_offset, header.next_offset):
            found = segment.translate_offset(offset)
            assert found is not None
            assert found.position == position
            assert found.header == header
            if not reads:
                continue
            one = segment.read(offset, 1)
            assert one is not None
            assert (one.position, one.length) == (position, header.size)
            assert parse_header(one.read()) == header
            rest = segment.read(offset, 10**9)
            assert rest is not None
            assert (rest.position, rest.length) == (position, segment.size - position)
            bounded = segment.read(offset, 10**9, max_position=position + 1)
            assert bounded is not None
            assert (bounded.position, bounded.length) == (position, 1)
            assert segment.read(offset, 10**9, max_position=position) is None
    assert segment.translate_offset(segment.next_offset) is None
    assert segment.translate_offset(segment.next_offset + 1000) is None
    if reads:
        assert segment.read(segment.next_offset, 10**9) is None


@pytest.mark.parametrize("add", [append, append_fast], ids=["general", "fast"])
def test_tail_lookups_answer_what_the_batches_are_and_read_one_header(
    new_segment: SegmentFactory,
    make_batch: BatchFactory,
    header_reads: list[int],
    add: Callable[[LogSegment, bytes], tuple[int, BatchHeader]],
) -> None:
    # A first batch through the general path (the fast path declines an empty segment), then
    # enough batches to cross several index-interval points.
    segment = new_segment(index_interval_bytes=1000)
    written = [append(segment, make_batch(3))]
    written += [add(segment, make_batch(3)) for _ in range(40)]
    assert segment.offset_index.entries >= 3
    check_every_offset(segment, written)
    # The last batch and the one before the last index entry's: the tail reads one header.
    header_reads.clear()
    assert segment.translate_offset(written[-1][1].base_offset + 1) is not None
    assert len(header_reads) == 1
    last_entry = segment.offset_index.last_entry()
    header_reads.clear()
    assert segment.translate_offset(last_entry.offset) is not None
    assert len(header_reads) == 1


def test_a_read_from_the_tail_reads_no_header(
    new_segment: SegmentFactory, make_batch: BatchFactory, header_reads: list[int]
) -> None:
    segment = new_segment(index_interval_bytes=300)
    written = [append(segment, make_batch(3)) for _ in range(40)]
    header_reads.clear()
    for position, header in written[-30:]:
        sliced = segment.read(header.base_offset + 1, 1)
        assert sliced is not None
        assert (sliced.position, sliced.length) == (position, header.size)
    assert header_reads == []


def test_a_lookup_a_few_index_intervals_back_reads_one_header(
    new_segment: SegmentFactory, make_batch: BatchFactory, header_reads: list[int]
) -> None:
    segment = new_segment(index_interval_bytes=300)
    written = [append(segment, make_batch(3)) for _ in range(40)]
    assert segment.offset_index.entries >= 5
    header_reads.clear()
    assert segment.translate_offset(written[-30][1].base_offset + 2) is not None
    assert len(header_reads) == 1


def test_a_reloaded_segment_scans_until_an_interval_point_starts_a_tail(
    new_segment: SegmentFactory, make_batch: BatchFactory, header_reads: list[int]
) -> None:
    segment = new_segment(index_interval_bytes=1000)
    written = [append(segment, make_batch(3)) for _ in range(40)]
    segment.close()
    config = dataclasses.replace(LogConfig(), index_interval_bytes=1000)
    loaded = LogSegment.open_existing(segment.directory, BASE, config, NOW)
    loaded.load_trusting_indexes()
    header_reads.clear()
    found = loaded.translate_offset(written[1][1].base_offset)
    assert found is not None
    assert found.position == written[1][0]
    assert len(header_reads) == 2  # from the start of the segment: no index entry before it
    written += [append(loaded, make_batch(3)) for _ in range(20)]
    header_reads.clear()
    assert loaded.translate_offset(written[-1][1].base_offset) is not None
    assert len(header_reads) == 1
    loaded.close()


def test_tail_follows_truncation_and_new_appends(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(index_interval_bytes=1000)
    written = [append(segment, make_batch(3)) for _ in range(30)]
    cut = written[-3][1].base_offset
    segment.truncate_to(cut)
    written = written[:-3]
    check_every_offset(segment, written)
    written += [append(segment, make_batch(2)) for _ in range(20)]
    check_every_offset(segment, written)


def test_reloaded_and_recovered_segments_answer_the_same(
    new_segment: SegmentFactory, make_batch: BatchFactory, header_reads: list[int]
) -> None:
    segment = new_segment(index_interval_bytes=1000)
    written = [append(segment, make_batch(3)) for _ in range(30)]
    segment.close()
    config = dataclasses.replace(LogConfig(), index_interval_bytes=1000)
    loaded = LogSegment.open_existing(segment.directory, BASE, config, NOW)
    loaded.load_trusting_indexes()
    check_every_offset(loaded, written)
    # Appends after the load: once an interval point passes, the tail answers again.
    written += [append(loaded, make_batch(3)) for _ in range(30)]
    check_every_offset(loaded, written)
    loaded.close()
    recovered = LogSegment.open_existing(segment.directory, BASE, config, NOW)
    recovered.recover()
    check_every_offset(recovered, written)
    header_reads.clear()
    assert recovered.translate_offset(written[-1][1].base_offset) is not None
    assert len(header_reads) == 1
    recovered.close()


def test_a_full_tail_keeps_its_newer_half(
    new_segment: SegmentFactory, make_batch: BatchFactory, header_reads: list[int]
) -> None:
    segment = new_segment(index_interval_bytes=10**9)
    written = [append(segment, make_batch(1)) for _ in range(TAIL_MAX_BATCHES * 3 + 5)]
    check_every_offset(segment, written)
    header_reads.clear()
    assert segment.translate_offset(written[-TAIL_MAX_BATCHES // 2][1].base_offset) is not None
    assert len(header_reads) == 1
    header_reads.clear()
    assert segment.translate_offset(written[5][1].base_offset) is not None
    assert len(header_reads) == 6  # older: scanned from the start (no index entry)


def test_a_header_that_does_not_match_the_tail_falls_back_to_the_scan(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(index_interval_bytes=1000)
    written = [append(segment, make_batch(3)) for _ in range(10)]
    tail = segment._state.tail
    assert tail is not None
    tail[2][-1] += 1  # what a bug in the bookkeeping would look like
    check_every_offset(segment, written, reads=False)


def test_readers_on_another_thread_always_find_what_was_appended(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open(index_interval_bytes=600, segment_bytes=40_000)
    log.append(make_batch(2))
    stop = threading.Event()
    failures: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            end = log.log_end_offset
            for offset in (end - 1, end - 7, end - 30):
                if offset < log.log_start_offset:
                    continue
                data = log.read(offset, 1).read_bytes()
                header = parse_header(data) if data else None
                if header is None or not header.base_offset <= offset <= header.last_offset:
                    failures.append(f"offset {offset} below {end}: {header}")

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for _ in range(600):
            log.append(make_batch(2))
    finally:
        stop.set()
        thread.join()
    assert failures == []
    assert len(log.segments()) > 1
    assert [r.offset for r in logs.read_all(log)] == list(range(log.log_end_offset))
