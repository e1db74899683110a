"""LogSegment: append, read and offset translation, the sparse indexes, the roll rules,
offset-for-timestamp, truncation, recovery, and falling back to a scan when an index entry
turns out not to match the log."""

from __future__ import annotations

import dataclasses
import logging
import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from odradek.records.batch import (
    BatchHeader,
    TimestampType,
    compute_crc,
    parse_header,
    set_log_append_time,
)
from odradek.records.codec import decode_batch_records
from odradek.storage.config import LogConfig
from odradek.storage.index_errors import CorruptIndexError
from odradek.storage.naming import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_path
from odradek.storage.offset_index import IndexEntry
from odradek.storage.segment import BatchPosition, LogSegment, TimestampAndOffset

if TYPE_CHECKING:
    from tests.storage.conftest import BatchFactory

NOW = 1_700_000_000_000
BASE = 100

SegmentFactory = Callable[..., LogSegment]


@pytest.fixture
def new_segment(tmp_path: Path) -> Iterator[SegmentFactory]:
    """Creates segments in ``tmp_path`` (config overrides by field name); closes them after."""
    made: list[LogSegment] = []

    def make(base_offset: int = BASE, created_ms: int = NOW, **overrides: object) -> LogSegment:
        config = dataclasses.replace(LogConfig(), **overrides)  # type: ignore[arg-type]
        segment = LogSegment.create(str(tmp_path), base_offset, config, created_ms)
        made.append(segment)
        return segment

    yield make
    for segment in made:
        if not segment.log._closed:
            segment.close()


def append(segment: LogSegment, data: bytes) -> BatchHeader:
    """Appends one batch at the segment's next offset (as the log would)."""
    buffer = bytearray(data)
    struct.pack_into(">q", buffer, 0, segment.next_offset)
    header = parse_header(buffer)
    segment.append(buffer, [BatchPosition(0, header)])
    return header


def fill(segment: LogSegment, make_batch: BatchFactory, batches: int, **kwargs: object) -> list:
    """Appends ``batches`` batches of 3 records; returns [(position, header)]."""
    out = []
    for _ in range(batches):
        position = segment.size
        out.append((position, append(segment, make_batch(3, **kwargs))))  # type: ignore[arg-type]
    return out


def reopen(segment: LogSegment, **overrides: object) -> LogSegment:
    """Closes the segment (trimming its indexes) and opens its files again, unchecked."""
    segment.close()
    config = dataclasses.replace(LogConfig(), **overrides)  # type: ignore[arg-type]
    return LogSegment.open_existing(segment.directory, segment.base_offset, config, NOW)


# -- append, read, translate ------------------------------------------------------------------


def test_new_segment_is_empty(new_segment: SegmentFactory) -> None:
    segment = new_segment()
    assert segment.is_empty
    assert segment.size == 0
    assert segment.next_offset == BASE
    assert segment.largest_timestamp == -1
    assert segment.read(BASE, 1000) is None
    assert segment.translate_offset(BASE) is None
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        assert os.path.exists(segment_path(segment.directory, BASE, suffix))


def test_append_then_read_and_translate_every_offset(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(index_interval_bytes=200)
    written = fill(segment, make_batch, 8)
    assert segment.next_offset == BASE + 24
    assert segment.size == sum(header.size for _, header in written)
    for position, header in written:
        for offset in range(header.base_offset, header.next_offset):
            found = segment.translate_offset(offset)
            assert found is not None
            assert (found.position, found.header.base_offset) == (position, header.base_offset)
            sliced = segment.read(offset, header.size, min_one_message=False)
            assert sliced is not None
            assert (sliced.position, sliced.length) == (position, header.size)
            records = decode_batch_records(sliced.read())
            assert [r.offset for r in records] == list(
                range(header.base_offset, header.next_offset)
            )
    assert segment.translate_offset(segment.next_offset) is None
    assert segment.read(segment.next_offset, 1000) is None
    # An offset below the segment translates to its first batch.
    first = segment.translate_offset(0)
    assert first is not None
    assert first.position == 0


def test_read_honours_max_bytes_max_position_and_min_one_message(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment()
    written = fill(segment, make_batch, 4)
    size = written[0][1].size
    partial = segment.read(BASE, size + 10)
    assert partial is not None
    assert (partial.position, partial.length) == (0, size + 10)
    one = segment.read(BASE, 1)
    assert one is not None
    assert one.length == size
    cut = segment.read(BASE, 1, min_one_message=False)
    assert cut is not None
    assert cut.length == 1
    bounded = segment.read(BASE, 10_000, max_position=written[2][0])
    assert bounded is not None
    assert bounded.length == written[2][0]
    assert segment.read(written[2][1].base_offset, 10_000, max_position=written[2][0]) is None
    # min_one_message never reads past max_position.
    clipped = segment.read(BASE, 1, max_position=10)
    assert clipped is not None
    assert clipped.length == 10


@pytest.mark.parametrize("exact", [False, True])
def test_index_entry_every_index_interval_bytes(
    new_segment: SegmentFactory, make_batch: BatchFactory, exact: bool
) -> None:
    size = len(make_batch(3))
    # Two and a half batches, or exactly three: an entry goes to the batch appended once
    # *more* than index.interval.bytes went in since the last entry (Kafka's rule).
    interval = 3 * size if exact else 2 * size + size // 2
    segment = new_segment(index_interval_bytes=interval)
    written = fill(segment, make_batch, 13)
    assert {header.size for _, header in written} == {size}
    indexed = (4, 8, 12) if exact else (3, 6, 9, 12)
    expected = [IndexEntry(written[i][1].base_offset, written[i][0]) for i in indexed]
    assert [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)] == (
        expected
    )
    assert segment.time_index.entries == 1  # one timestamp: only the first entry is a new max


def test_index_interval_zero_indexes_every_batch_but_the_first(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(index_interval_bytes=0)
    written = fill(segment, make_batch, 5, timestamps=None)
    entries = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    assert entries == [IndexEntry(h.base_offset, p) for p, h in written[1:]]


def test_time_index_records_running_max_and_its_batch(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(index_interval_bytes=0)
    for timestamps in ([10, 30], [20, 25], [50, 40], [45, 45], [60, 1]):
        append(segment, make_batch(timestamps=[NOW + t for t in timestamps]))
    entries = [segment.time_index.entry(i) for i in range(segment.time_index.entries)]
    # Indexed at batches 1..4; the max so far is 30 (batch 0), 50 (batch 2), 60 (batch 4).
    assert [(e.timestamp - NOW, e.offset - BASE) for e in entries] == [(30, 0), (50, 4), (60, 8)]
    assert segment.largest_timestamp == NOW + 60


# -- should_roll -------------------------------------------------------------------------------


def test_empty_segment_rolls_only_for_offsets_or_full_index(new_segment: SegmentFactory) -> None:
    segment = new_segment(created_ms=NOW)
    huge = 10**9
    assert not segment.should_roll(huge, NOW + huge, BASE, 1, 100, NOW + huge)
    assert segment.should_roll(100, NOW, BASE + 2**31, 10**6, 10**6, NOW)


def test_should_roll_by_size(new_segment: SegmentFactory, make_batch: BatchFactory) -> None:
    segment = new_segment()
    size = append(segment, make_batch()).size
    last = segment.next_offset
    assert not segment.should_roll(size, NOW, last, 10**9, 2 * size, NOW)
    assert segment.should_roll(size + 1, NOW, last, 10**9, 2 * size, NOW)


def test_should_roll_by_segment_ms_between_batch_timestamps(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(created_ms=NOW)
    append(segment, make_batch(timestamps=[NOW + 5_000, NOW + 1_000]))
    assert segment.first_batch_timestamp == NOW + 5_000
    last = segment.next_offset
    # Measured from the first batch's (max) timestamp to the new batch's, not by the clock.
    assert not segment.should_roll(10, NOW + 5_000 + 1_000, last, 1_000, 10**6, NOW + 10**9)
    assert segment.should_roll(10, NOW + 5_000 + 1_001, last, 1_000, 10**6, NOW)


def test_should_roll_by_segment_ms_from_creation_without_timestamps(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(created_ms=NOW)
    append(segment, make_batch(timestamps=[-1]))
    assert segment.first_batch_timestamp == -1
    last = segment.next_offset
    assert not segment.should_roll(10, -1, last, 1_000, 10**6, NOW + 1_000)
    assert segment.should_roll(10, -1, last, 1_000, 10**6, NOW + 1_001)
    # The new batch carries no timestamp: creation time again, even with a timestamped first.
    other = new_segment(base_offset=BASE + 1000, created_ms=NOW)
    append(other, make_batch(timestamps=[NOW]))
    assert other.should_roll(10, -1, other.next_offset, 1_000, 10**6, NOW + 1_001)


def test_should_roll_when_the_offset_index_is_full(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    # 48 bytes: 6 offset entries; one timestamp keeps the time index at one entry.
    segment = new_segment(index_interval_bytes=0, segment_index_bytes=48)
    fill(segment, make_batch, 6)
    assert segment.offset_index.entries == 5
    assert not segment.should_roll(10, NOW, segment.next_offset, 10**9, 10**6, NOW)
    append(segment, make_batch())
    assert segment.offset_index.is_full
    assert not segment.time_index.is_full
    assert segment.should_roll(10, NOW, segment.next_offset, 10**9, 10**6, NOW)


def test_should_roll_when_the_time_index_is_full(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    # 48 bytes: 4 time entries, the last one kept for the roll: full at 3.
    segment = new_segment(index_interval_bytes=0, segment_index_bytes=48)
    for t in range(3):
        append(segment, make_batch(timestamps=[NOW + t]))
    assert not segment.should_roll(10, NOW, segment.next_offset, 10**9, 10**6, NOW)
    append(segment, make_batch(timestamps=[NOW + 3]))
    assert segment.time_index.is_full
    assert not segment.offset_index.is_full
    assert segment.should_roll(10, NOW, segment.next_offset, 10**9, 10**6, NOW)


def test_should_roll_when_offsets_overflow_the_relative_offset(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment()
    append(segment, make_batch())
    assert not segment.should_roll(10, NOW, BASE + 2**31 - 1, 10**9, 10**6, NOW)
    assert segment.should_roll(10, NOW, BASE + 2**31, 10**9, 10**6, NOW)
    assert not segment.fits_relative_offset(BASE - 1)


# -- find_offset_by_timestamp -----------------------------------------------------------------


def _scan(segment: LogSegment, target: int) -> TimestampAndOffset | None:
    data = segment.log.read(0, segment.size)
    for position, _ in segment.log.batches_from(0):
        for record in decode_batch_records(data, position):
            if record.timestamp >= target:
                return TimestampAndOffset(record.timestamp, record.offset)
    return None


@pytest.mark.parametrize("interval", [0, 300, 10**6])
def test_find_offset_by_timestamp_with_out_of_order_create_times(
    new_segment: SegmentFactory, make_batch: BatchFactory, interval: int
) -> None:
    segment = new_segment(index_interval_bytes=interval)
    batches = [[100, 300, 200], [150, 400, 250], [50, 60, 70], [500, 450, 480], [10, 20, 30]]
    for timestamps in batches:
        append(segment, make_batch(timestamps=[NOW + t for t in timestamps]))
    assert segment.find_offset_by_timestamp(NOW + 250) == TimestampAndOffset(NOW + 300, BASE + 1)
    assert segment.find_offset_by_timestamp(NOW + 301) == TimestampAndOffset(NOW + 400, BASE + 4)
    assert segment.find_offset_by_timestamp(NOW + 460) == TimestampAndOffset(NOW + 500, BASE + 9)
    assert segment.find_offset_by_timestamp(NOW + 490) == TimestampAndOffset(NOW + 500, BASE + 9)
    assert segment.find_offset_by_timestamp(NOW + 501) is None
    assert segment.find_offset_by_timestamp(0) == TimestampAndOffset(NOW + 100, BASE)
    for target in range(0, 520, 5):
        assert segment.find_offset_by_timestamp(NOW + target) == _scan(segment, NOW + target)


def test_find_offset_by_timestamp_with_log_append_time_batches(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(index_interval_bytes=0)
    append(segment, make_batch(timestamps=[NOW + 10, NOW + 90]))  # CreateTime, offsets 100-101
    for offset_count, append_time in ((3, NOW + 50), (2, NOW + 200)):
        data = bytearray(make_batch(timestamps=[NOW + 1_000_000] * offset_count))
        set_log_append_time(data, 0, append_time)
        header = append(segment, bytes(data))
        assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
    # LogAppendTime: every record has the batch's max timestamp; the batch's base offset wins.
    assert segment.find_offset_by_timestamp(NOW + 50) == TimestampAndOffset(NOW + 90, BASE + 1)
    assert segment.find_offset_by_timestamp(NOW + 91) == TimestampAndOffset(NOW + 200, BASE + 5)
    assert segment.find_offset_by_timestamp(NOW + 200) == TimestampAndOffset(NOW + 200, BASE + 5)
    assert segment.find_offset_by_timestamp(NOW + 201) is None
    assert segment.largest_timestamp == NOW + 200


# -- truncate_to -----------------------------------------------------------------------------


def test_truncate_to_a_batch_boundary(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(index_interval_bytes=0)
    written = []
    for t in (10, 20, 30, 40, 50, 60):
        position = segment.size
        written.append((position, append(segment, make_batch(2, timestamp_ms=NOW + t))))
    cut_position, cut_header = written[3]
    removed = segment.truncate_to(cut_header.base_offset)
    assert removed == sum(h.size for _, h in written[3:])
    assert segment.size == cut_position
    assert segment.log.file_size() == cut_position
    assert segment.next_offset == cut_header.base_offset
    assert segment.largest_timestamp == NOW + 30
    assert segment.offset_index.last_entry().offset < cut_header.base_offset
    assert segment.time_index.last_entry().timestamp == NOW + 30
    assert segment.translate_offset(cut_header.base_offset) is None
    assert segment.find_offset_by_timestamp(NOW + 31) is None
    # Appending continues at the truncation point, indexes included.
    again = append(segment, make_batch(2, timestamp_ms=NOW + 35))
    assert again.base_offset == cut_header.base_offset
    assert segment.offset_index.last_entry() == IndexEntry(again.base_offset, cut_position)
    assert segment.find_offset_by_timestamp(NOW + 31) == TimestampAndOffset(
        NOW + 35, again.base_offset
    )
    # Past the end: nothing to remove.
    assert segment.truncate_to(segment.next_offset + 10) == 0


def test_truncate_to_the_base_offset_empties_the_segment(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(index_interval_bytes=0)
    fill(segment, make_batch, 4)
    assert segment.truncate_to(BASE) > 0
    assert segment.is_empty
    assert segment.next_offset == BASE
    assert segment.offset_index.entries == 0
    assert segment.time_index.entries == 0
    assert segment.first_batch_timestamp == -1
    assert segment.largest_timestamp == -1


# -- loading and recovery ---------------------------------------------------------------------


def _entries(segment: LogSegment) -> tuple[list, list]:
    offsets = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    times = [segment.time_index.entry(i) for i in range(segment.time_index.entries)]
    return offsets, times


def test_recover_rebuilds_indexes_and_cuts_garbage(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(index_interval_bytes=100)
    for t in range(12):
        append(segment, make_batch(2, timestamp_ms=NOW + (t * 7) % 50))
    size, next_offset, largest = segment.size, segment.next_offset, segment.largest_timestamp
    segment.close()
    expected = _entries(segment)
    with open(segment.log.path, "ab") as handle:
        handle.write(os.urandom(300))
    for path in (segment.offset_index.path, segment.time_index.path):
        with open(path, "r+b") as handle:
            handle.write(b"\x7f" * 24)
    loaded = LogSegment.open_existing(
        segment.directory, BASE, LogConfig(index_interval_bytes=100), 0
    )
    try:
        with pytest.raises(CorruptIndexError):
            loaded.offset_index.sanity_check()
        with pytest.raises(CorruptIndexError):
            loaded.time_index.sanity_check()
        assert loaded.recover() == 300
        assert (loaded.size, loaded.log.file_size()) == (size, size)
        assert (loaded.next_offset, loaded.largest_timestamp) == (next_offset, largest)
        offsets, times = _entries(loaded)
        assert offsets == expected[0]
        assert times == expected[1]
        assert loaded.translate_offset(next_offset - 1) is not None
    finally:
        loaded.close()


def test_recover_cuts_at_the_first_corrupt_batch(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(index_interval_bytes=0)
    written = fill(segment, make_batch, 6)
    segment.close()
    bad_position, bad_header = written[3]
    with open(segment.log.path, "r+b") as handle:
        handle.seek(bad_position + 70)  # inside the records: the CRC no longer matches
        byte = handle.read(1)
        handle.seek(bad_position + 70)
        handle.write(bytes([byte[0] ^ 0xFF]))
    loaded = LogSegment.open_existing(segment.directory, BASE, LogConfig(), 0)
    try:
        cut = loaded.recover()
        assert cut == sum(h.size for _, h in written[3:])
        assert loaded.size == bad_position
        assert loaded.next_offset == bad_header.base_offset
        assert loaded.offset_index.last_entry().offset < bad_header.base_offset
    finally:
        loaded.close()


def test_load_trusting_indexes_after_close(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(index_interval_bytes=150)
    for t in (5, 1, 9, 3, 7, 2):
        append(segment, make_batch(2, timestamp_ms=NOW + t))
    state = (segment.size, segment.next_offset, segment.largest_timestamp)
    loaded = reopen(segment, index_interval_bytes=150)
    try:
        assert loaded.load_trusting_indexes() == 0
        assert (loaded.size, loaded.next_offset, loaded.largest_timestamp) == state
        assert loaded.first_batch_timestamp == NOW + 5
        assert _entries(loaded) == _entries(segment)
    finally:
        loaded.close()


def test_load_trusting_indexes_rejects_an_untrimmed_index(
    new_segment: SegmentFactory, make_batch: BatchFactory, tmp_path: Path
) -> None:
    segment = new_segment(index_interval_bytes=0, segment_index_bytes=4096)
    fill(segment, make_batch, 4)
    segment.flush()
    # A crash leaves the preallocated index: its zero tail fails the sanity check.
    copy = tmp_path / "copy"
    copy.mkdir()
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        source = segment_path(segment.directory, BASE, suffix)
        (copy / os.path.basename(source)).write_bytes(Path(source).read_bytes())
    config = LogConfig(segment_index_bytes=4096, index_interval_bytes=0)
    loaded = LogSegment.open_existing(str(copy), BASE, config, 0)
    try:
        with pytest.raises(CorruptIndexError):
            loaded.load_trusting_indexes()
        assert loaded.recover() == 0
        assert loaded.offset_index.entries == 3
    finally:
        loaded.close()


def _rewrite_offset_entry(path: str, slot: int, relative_offset: int, position: int) -> None:
    with open(path, "r+b") as handle:
        handle.seek(slot * 8)
        handle.write(struct.pack(">ii", relative_offset, position))


def test_corrupt_index_position_falls_back_to_scanning(
    new_segment: SegmentFactory, make_batch: BatchFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Every wrong position between the neighbouring entries (into headers, records, zero
    bytes, other batches) is caught when used, and reads still return the right batch."""
    segment = new_segment(index_interval_bytes=0)
    written = []
    for n in range(6):
        position = segment.size
        # Values of zero bytes: a position inside them reads as magic 0 (message format v0).
        data = make_batch(3, value_bytes=40 + n)
        data = data.replace(b"." * 30, b"\x00" * 30)
        header = parse_header(data)
        data = bytearray(data)
        # Keep the CRC valid: rebuild it over the changed records.
        struct.pack_into(">I", data, 17, compute_crc(data, 0, header.size))
        written.append((position, append(segment, bytes(data))))
    segment.close()
    index_path = segment.offset_index.path
    original = Path(index_path).read_bytes()
    slot = 2  # entry of batch 3 (batch 0 has none)
    target_position, target_header = written[3]
    low, high = written[2][0], written[4][0]
    for bad_position in range(low + 1, high):
        if bad_position == target_position:
            continue
        Path(index_path).write_bytes(original)
        _rewrite_offset_entry(index_path, slot, target_header.base_offset - BASE, bad_position)
        loaded = LogSegment.open_existing(segment.directory, BASE, LogConfig(), 0)
        try:
            loaded.load_trusting_indexes()  # the last entry is intact: the index is trusted
            with caplog.at_level(logging.ERROR, logger="odradek.storage.segment"):
                caplog.clear()
                for offset in range(target_header.base_offset, target_header.next_offset):
                    found = loaded.translate_offset(offset)
                    assert found is not None, bad_position
                    assert found.position == target_position, bad_position
                assert "does not match" in caplog.text
                later = loaded.read(written[4][1].base_offset + 1, 1)
                assert later is not None
                assert later.position == written[4][0]
                records = decode_batch_records(later.read())
                assert records[0].offset == written[4][1].base_offset
        finally:
            loaded.close()


def test_corrupt_index_offset_falls_back_to_scanning(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(index_interval_bytes=0)
    written = fill(segment, make_batch, 5)
    segment.close()
    # Entry 1 names batch 2 (offsets 106-108) but now claims offset 105, which batch 1 holds:
    # still ordered, so only the check against the batch header catches it.
    _rewrite_offset_entry(segment.offset_index.path, 1, 5, written[2][0])
    loaded = LogSegment.open_existing(segment.directory, BASE, LogConfig(), 0)
    try:
        loaded.load_trusting_indexes()
        found = loaded.translate_offset(BASE + 5)
        assert found is not None
        assert found.position == written[1][0]
        sliced = loaded.read(BASE + 5, 1)
        assert sliced is not None
        assert [r.offset for r in decode_batch_records(sliced.read())] == [103, 104, 105]
        found = loaded.translate_offset(BASE + 7)
        assert found is not None
        assert found.position == written[2][0]
    finally:
        loaded.close()


def test_corrupt_time_index_entry_falls_back_to_scanning(
    new_segment: SegmentFactory, make_batch: BatchFactory
) -> None:
    segment = new_segment(index_interval_bytes=0)
    for t in (10, 50, 20, 30, 60):
        append(segment, make_batch(2, timestamp_ms=NOW + t))
    segment.close()
    assert [segment.time_index.entry(i) for i in range(2)] == [(NOW + 50, 102), (NOW + 60, 108)]
    # Entry 0 now claims every batch before offset 106 is below 25: still ordered, but batch
    # 1 holds 50. Trusting it would answer 106 (timestamp 30) for 30.
    with open(segment.time_index.path, "r+b") as handle:
        handle.write(struct.pack(">qi", NOW + 25, 6))
    loaded = LogSegment.open_existing(segment.directory, BASE, LogConfig(), 0)
    try:
        loaded.load_trusting_indexes()
        assert loaded.find_offset_by_timestamp(NOW + 30) == TimestampAndOffset(NOW + 50, BASE + 2)
        assert loaded.find_offset_by_timestamp(NOW + 55) == TimestampAndOffset(NOW + 60, BASE + 8)
    finally:
        loaded.close()


def test_statistics_and_mark_deleted(new_segment: SegmentFactory, make_batch: BatchFactory) -> None:
    segment = new_segment(index_interval_bytes=0)
    fill(segment, make_batch, 3)
    stats = segment.statistics()
    assert stats["base_offset"] == BASE
    assert stats["next_offset"] == BASE + 9
    assert stats["size_bytes"] == segment.size
    assert stats["index_entries"] == 2
    segment.mark_deleted()
    names = sorted(os.listdir(segment.directory))
    assert all(name.endswith(".deleted") for name in names)
    assert len(names) == 3
    # Files stay readable until deleted.
    sliced = segment.read(BASE, 10_000)
    assert sliced is not None
    assert len(decode_batch_records(sliced.read())) == 3
    segment.delete_files()
    assert os.listdir(segment.directory) == []
