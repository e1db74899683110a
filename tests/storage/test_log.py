"""Log: appends (leader and follower), rolls, reads, offset for timestamp, truncation,
retention, the flush policy and reopening, on a MockClock and a ManualScheduler."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from odradek.errors import (
    CorruptRecordError,
    InvalidRecordError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    UnsupportedForMessageFormatError,
)
from odradek.records.batch import BatchHeader, TimestampType, validate_batch
from odradek.records.codec import decode_batch_records
from odradek.storage.log import Log
from odradek.storage.segment import TimestampAndOffset

if TYPE_CHECKING:
    from tests.storage.conftest import BatchFactory, LogHarness

START = 1_700_000_000_000


def stored_batches(log: Log) -> list[tuple[BatchHeader, bytes]]:
    """Every stored batch of every segment, CRC-checked, with its bytes."""
    out = []
    for segment in log.segments():
        data = segment.log.read(0, segment.size)
        position = 0
        while position < len(data):
            header = validate_batch(data, position)
            out.append((header, data[position : position + header.size]))
            position += header.size
    return out


def fill(log: Log, make_batch: BatchFactory, batches: int, records: int = 2, **kw: object) -> None:
    for _ in range(batches):
        log.append(make_batch(records, **kw))  # type: ignore[arg-type]


# -- append -------------------------------------------------------------------------------


def test_append_assigns_offsets_from_the_log_end_offset(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open()
    first = log.append(make_batch(3, base_offset=999))
    assert (first.first_offset, first.last_offset, first.records_count) == (0, 2, 3)
    two = make_batch(2, base_offset=5) + make_batch(4, base_offset=5)
    second = log.append(two)
    assert (second.first_offset, second.last_offset, second.records_count) == (3, 8, 6)
    assert second.size_bytes == len(two)
    assert log.log_end_offset == 9
    headers = [header for header, _ in stored_batches(log)]  # CRCs still valid
    assert [h.base_offset for h in headers] == [0, 3, 5]
    assert [r.offset for r in logs.read_all(log)] == list(range(9))


def test_append_rewrites_a_bytearray_in_place(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = logs.open()
    log.append(make_batch(2))
    data = bytearray(make_batch(1, base_offset=77))
    log.append(data, leader_epoch=4)
    assert int.from_bytes(data[:8], "big") == 2
    assert validate_batch(data).partition_leader_epoch == 4


def test_a_bytes_batch_is_stored_with_its_offset_and_left_untouched(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open()
    log.append(make_batch(2))
    data = make_batch(3, base_offset=77)  # bytes: the zero-copy path (header patched apart)
    original = bytes(data)
    info = log.append(data, leader_epoch=6)
    assert data == original
    assert (info.first_offset, info.last_offset) == (2, 4)
    header, stored = stored_batches(log)[-1]
    assert (header.base_offset, header.partition_leader_epoch) == (2, 6)
    assert stored[61:] == original[61:]
    assert [r.offset for r in logs.read_all(log)] == list(range(5))


def test_leader_epoch_is_written(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = logs.open()
    log.append(make_batch(2))
    log.append(make_batch(2), leader_epoch=7)
    log.append(make_batch(2, base_offset=4), assign_offsets=False, leader_epoch=9)
    epochs = [header.partition_leader_epoch for header, _ in stored_batches(log)]
    assert epochs == [-1, 7, 9]


def test_create_time_topic_keeps_producer_timestamps(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open()
    info = log.append(make_batch(timestamps=[START + 5, START + 9, START + 1]))
    assert info.log_append_time_ms == -1
    assert info.max_timestamp == START + 9
    header, data = stored_batches(log)[0]
    assert header.timestamp_type is TimestampType.CREATE_TIME
    assert [r.timestamp for r in decode_batch_records(data)] == [START + 5, START + 9, START + 1]


def test_log_append_time_topic_stamps_batches(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = logs.open(message_timestamp_type="LogAppendTime")
    logs.clock.advance(12_345)
    now = START + 12_345
    info = log.append(make_batch(timestamps=[START - 100, START - 50]))
    assert (info.max_timestamp, info.log_append_time_ms) == (now, now)
    header, data = stored_batches(log)[0]  # CRC recomputed
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == now
    assert [r.timestamp for r in decode_batch_records(data)] == [now, now]
    assert log.offset_for_timestamp(now) == TimestampAndOffset(now, 0)
    assert log.offset_for_timestamp(now + 1) is None


def test_message_too_large_is_rejected_and_the_log_unchanged(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open(max_message_bytes=200)
    log.append(make_batch(1))
    big = make_batch(1, value_bytes=300)
    with pytest.raises(MessageTooLargeError):
        log.append(big)
    with pytest.raises(MessageTooLargeError):
        log.append(make_batch(1) + big)  # no batch of the request is appended
    assert log.log_end_offset == 1
    assert len(stored_batches(log)) == 1
    # The limit is the leader's: a follower copies what the leader accepted.
    log.append(_with_base_offset(big, 1), assign_offsets=False)
    assert log.log_end_offset == 2


def _with_base_offset(data: bytes, base_offset: int) -> bytes:
    return base_offset.to_bytes(8, "big") + data[8:]


def test_record_batch_larger_than_a_segment_is_rejected(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open(segment_bytes=300)
    data = make_batch(1, value_bytes=150) + make_batch(1, value_bytes=150)
    assert len(data) > 300
    with pytest.raises(RecordBatchTooLargeError):
        log.append(data)
    with pytest.raises(RecordBatchTooLargeError):
        log.append(data, assign_offsets=False)
    assert log.log_end_offset == 0
    assert log.size_bytes == 0


@pytest.mark.parametrize("where", ["crc", "truncated", "length"])
def test_corrupt_batch_is_rejected_and_the_log_unchanged(
    logs: LogHarness, make_batch: BatchFactory, where: str
) -> None:
    log = logs.open()
    log.append(make_batch(2))
    good = make_batch(2)
    bad = bytearray(make_batch(2))
    if where == "crc":
        bad[-1] ^= 0x01
    elif where == "truncated":
        bad = bad[:-3]
    else:
        bad[8:12] = (10**6).to_bytes(4, "big")
    before = (log.log_end_offset, log.size_bytes)
    with pytest.raises(CorruptRecordError):
        log.append(good + bytes(bad))
    with pytest.raises(CorruptRecordError):
        log.append(bytes(bad), assign_offsets=False)
    assert (log.log_end_offset, log.size_bytes) == before
    assert [r.offset for r in logs.read_all(log)] == [0, 1]


def test_empty_append_is_rejected(logs: LogHarness) -> None:
    log = logs.open()
    with pytest.raises(InvalidRecordError):
        log.append(b"")


@pytest.mark.parametrize("magic", [0, 1])
def test_message_format_v0_and_v1_are_rejected(
    logs: LogHarness, make_batch: BatchFactory, magic: int
) -> None:
    log = logs.open()
    data = bytearray(make_batch(1))
    data[16] = magic
    with pytest.raises(UnsupportedForMessageFormatError):
        log.append(data)
    assert log.log_end_offset == 0
    assert log.size_bytes == 0


def test_follower_append_keeps_offsets_and_checks_them(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open()
    info = log.append(make_batch(3, base_offset=0), assign_offsets=False)
    assert (info.first_offset, info.last_offset) == (0, 2)
    # A gap is allowed (compacted leader logs have them); offsets must not go backwards.
    log.append(make_batch(2, base_offset=10), assign_offsets=False)
    assert log.log_end_offset == 12
    with pytest.raises(InvalidRecordError):
        log.append(make_batch(1, base_offset=11), assign_offsets=False)
    overlapping = make_batch(2, base_offset=12) + make_batch(1, base_offset=13)
    with pytest.raises(InvalidRecordError):
        log.append(overlapping, assign_offsets=False)
    assert log.log_end_offset == 12
    assert [h.base_offset for h, _ in stored_batches(log)] == [0, 10]
    assert [r.offset for r in logs.read_all(log)] == [0, 1, 2, 10, 11]


def test_append_to_a_closed_log_fails(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = logs.open()
    log.close()
    with pytest.raises(InvalidRecordError):
        log.append(make_batch(1))


# -- roll ----------------------------------------------------------------------------------


def test_roll_by_segment_bytes(logs: LogHarness, make_batch: BatchFactory) -> None:
    size = len(make_batch(2))
    log = logs.open(segment_bytes=3 * size, index_interval_bytes=0)
    fill(log, make_batch, 10)
    segments = log.segments()
    assert [s.base_offset for s in segments] == [0, 6, 12, 18]
    assert [s.size for s in segments] == [3 * size] * 3 + [size]
    for older in segments[:-1]:  # trimmed on roll
        assert os.path.getsize(older.offset_index.path) == older.offset_index.entries * 8
        assert os.path.getsize(older.time_index.path) == older.time_index.entries * 12
    assert os.path.getsize(segments[-1].offset_index.path) > segments[-1].offset_index.size_bytes
    assert [r.offset for r in logs.read_all(log)] == list(range(20))


def test_roll_by_segment_ms(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = logs.open(segment_ms=1_000)
    log.append(make_batch(timestamp_ms=START))
    log.append(make_batch(timestamp_ms=START + 1_000))
    assert len(log.segments()) == 1
    log.append(make_batch(timestamp_ms=START + 1_001))
    assert [s.base_offset for s in log.segments()] == [0, 2]
    # Without timestamps the segment's age on the clock decides.
    log.append(make_batch(timestamp_ms=-1))
    logs.clock.advance(1_000)
    log.append(make_batch(timestamp_ms=-1))
    assert len(log.segments()) == 2
    logs.clock.advance(1)
    log.append(make_batch(timestamp_ms=-1))
    assert [s.base_offset for s in log.segments()] == [0, 2, 5]


def test_explicit_roll(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = logs.open()
    fill(log, make_batch, 2)
    assert log.active_base_offset == 0
    active = log.roll()
    assert active.base_offset == 4 == log.active_base_offset
    assert log.roll() is active  # an empty active segment does not roll again
    assert [s.base_offset for s in log.segments()] == [0, 4]
    fill(log, make_batch, 1)
    assert [r.offset for r in logs.read_all(log)] == list(range(6))


# -- read ----------------------------------------------------------------------------------


def test_read_out_of_range(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = logs.open()
    fill(log, make_batch, 3)
    log.maybe_increment_log_start_offset(2)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1, 1000)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(7, 1000)
    info = log.read(2, 1000)
    assert (info.log_start_offset, info.log_end_offset, info.fetch_offset) == (2, 6, 2)
    # The batch holding the log start offset is returned whole.
    assert next(r.offset for r in make_batch.records(info.read_bytes())) == 2


def test_read_at_the_log_end_offset_is_empty(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = logs.open()
    empty = log.read(0, 1000)
    assert empty.records is None
    assert empty.read_bytes() == b""
    fill(log, make_batch, 2)
    info = log.read(4, 1000)
    assert info.records is None
    assert info.log_end_offset == 4


def test_read_honours_max_bytes_with_a_partial_batch_at_the_end(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open()
    fill(log, make_batch, 4)
    size = len(make_batch(2))
    data = log.read(0, size + size // 2).read_bytes()
    assert len(data) == size + size // 2
    assert [r.offset for r in make_batch.records(data)] == [0, 1]
    # From the middle of a batch: the read starts at that batch.
    data = log.read(3, 2 * size).read_bytes()
    assert [r.offset for r in make_batch.records(data)] == [2, 3, 4, 5]


def test_min_one_message_returns_a_batch_larger_than_max_bytes(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open()
    log.append(make_batch(5, value_bytes=100))
    fill(log, make_batch, 2)
    size = stored_batches(log)[0][0].size
    info = log.read(0, 10)
    assert len(info.read_bytes()) == size
    assert [r.offset for r in make_batch.records(info.read_bytes())] == [0, 1, 2, 3, 4]
    cut = log.read(0, 10, min_one_message=False)
    assert len(cut.read_bytes()) == 10  # as Kafka: a partial batch the client discards
    assert make_batch.records(cut.read_bytes()) == []


def test_max_offset_bounds_the_read(logs: LogHarness, make_batch: BatchFactory) -> None:
    size = len(make_batch(2))
    log = logs.open(segment_bytes=3 * size)
    fill(log, make_batch, 8)  # segments at 0, 6, 12
    high_watermark = 10
    data = log.read(6, 10**6, max_offset=high_watermark).read_bytes()
    assert [r.offset for r in make_batch.records(data)] == [6, 7, 8, 9]
    assert len(data) == 2 * size
    assert log.read(10, 10**6, max_offset=high_watermark).records is None
    # A high watermark in a later segment does not cut the earlier one.
    data = log.read(0, 10**6, max_offset=high_watermark).read_bytes()
    assert [r.offset for r in make_batch.records(data)] == [0, 1, 2, 3, 4, 5]
    # A high watermark at a segment's base offset: nothing from that segment.
    assert log.read(6, 10**6, max_offset=6).records is None


def test_read_skips_to_the_next_segment_past_a_gap(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open()
    log.append(make_batch(2, base_offset=0), assign_offsets=False)
    log.roll()
    log.append(make_batch(2, base_offset=10), assign_offsets=False)
    data = log.read(5, 1000).read_bytes()
    assert [r.offset for r in make_batch.records(data)] == [10, 11]


# -- offset for timestamp ----------------------------------------------------------------------


def test_offset_for_timestamp_across_segments(logs: LogHarness, make_batch: BatchFactory) -> None:
    size = len(make_batch(2))
    log = logs.open(segment_bytes=2 * size, index_interval_bytes=0)
    for t in range(8):  # batches at START+0, +10, ... two per segment
        log.append(make_batch(timestamps=[START + 10 * t, START + 10 * t + 5]))
    assert len(log.segments()) == 4
    assert log.offset_for_timestamp(0) == TimestampAndOffset(START, 0)
    assert log.offset_for_timestamp(START + 6) == TimestampAndOffset(START + 10, 2)
    assert log.offset_for_timestamp(START + 41) == TimestampAndOffset(START + 45, 9)
    assert log.offset_for_timestamp(START + 75) == TimestampAndOffset(START + 75, 15)
    assert log.offset_for_timestamp(START + 76) is None


def test_offset_for_timestamp_respects_the_log_start_offset(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open()
    log.append(make_batch(timestamps=[START + 100, START + 10, START + 20, START + 200]))
    log.append(make_batch(timestamps=[START + 30, START + 300]))
    log.maybe_increment_log_start_offset(1)
    # Offset 0 (100) is gone: the first record at or after offset 1 with a timestamp >= 50
    # is offset 3 (200), not offset 1 (10).
    assert log.offset_for_timestamp(START + 50) == TimestampAndOffset(START + 200, 3)
    assert log.offset_for_timestamp(START + 15) == TimestampAndOffset(START + 20, 2)
    assert log.offset_for_timestamp(0) == TimestampAndOffset(START + 10, 1)
    log.maybe_increment_log_start_offset(5)
    assert log.offset_for_timestamp(START + 50) == TimestampAndOffset(START + 300, 5)
    log.truncate_fully_and_start_at(6)
    assert log.offset_for_timestamp(0) is None


# -- truncation ----------------------------------------------------------------------------


def _three_segments(logs: LogHarness, make_batch: BatchFactory, **overrides: object) -> Log:
    size = len(make_batch(2))
    log = logs.open(segment_bytes=3 * size, index_interval_bytes=0, **overrides)
    fill(log, make_batch, 8)  # segments at 0, 6, 12; LEO 16
    assert [s.base_offset for s in log.segments()] == [0, 6, 12]
    return log


def test_truncate_to_mid_log(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = _three_segments(logs, make_batch)
    log.flush()
    assert log.recovery_point == 16
    assert log.truncate_to(8)
    assert log.log_end_offset == 8
    assert log.recovery_point == 8
    assert [s.base_offset for s in log.segments()] == [0, 6]
    assert [r.offset for r in logs.read_all(log)] == list(range(8))
    assert any(name.endswith(".log.deleted") for name in logs.files())
    info = log.append(make_batch(2))
    assert info.first_offset == 8
    assert [r.offset for r in logs.read_all(log)] == list(range(10))
    assert log.segments()[-1].offset_index.last_entry().offset == 8
    assert not log.truncate_to(10)  # at the log end offset: nothing to do


def test_truncate_to_a_segment_boundary(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = _three_segments(logs, make_batch)
    assert log.truncate_to(6)
    assert log.log_end_offset == 6
    active = log.segments()[-1]
    assert (active.base_offset, active.size) == (6, 0)
    assert log.read(6, 1000).records is None
    fill(log, make_batch, 4)  # the emptied segment fills and rolls again
    assert [s.base_offset for s in log.segments()] == [0, 6, 12]
    assert [r.offset for r in logs.read_all(log)] == list(range(14))


def test_truncate_below_the_log_start_offset_empties_the_log(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = _three_segments(logs, make_batch)
    log.maybe_increment_log_start_offset(7)
    assert log.truncate_to(4)
    assert (log.log_start_offset, log.log_end_offset) == (4, 4)
    assert [s.base_offset for s in log.segments()] == [4]
    assert log.segments()[0].size == 0
    assert log.append(make_batch(1)).first_offset == 4


def test_truncate_fully_and_start_at(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = _three_segments(logs, make_batch)
    log.truncate_fully_and_start_at(50)
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (50, 50, 50)
    assert [s.base_offset for s in log.segments()] == [50]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 1000)
    assert log.append(make_batch(2)).first_offset == 50
    logs.clock.advance(log.config.file_delete_delay_ms)
    logs.scheduler.run_due()
    live = [name for name in logs.files() if not name.endswith(".deleted")]
    assert sorted(live) == sorted(f"{50:020d}{s}" for s in (".index", ".log", ".timeindex"))
    assert [name for name in logs.files() if name.endswith(".deleted")] == []


# -- retention -----------------------------------------------------------------------------


def test_retention_by_time_uses_the_largest_timestamp(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    size = len(make_batch(1))
    log = logs.open(segment_bytes=2 * size, retention_ms=1_000, file_delete_delay_ms=500)
    log.append(make_batch(timestamp_ms=START))
    log.append(make_batch(timestamp_ms=START + 100))  # segment 0: largest START+100
    log.append(make_batch(timestamp_ms=START + 50))
    log.append(make_batch(timestamp_ms=START + 2_000))  # segment 2: first old, largest new
    log.append(make_batch(timestamp_ms=START + 2_001))  # active
    assert [s.base_offset for s in log.segments()] == [0, 2, 4]
    logs.clock.advance(1_100)  # START+1100: segment 0 is 1000 ms old, not more
    assert log.delete_old_segments() == 0
    logs.clock.advance(1)
    assert log.delete_old_segments() == 1
    assert [s.base_offset for s in log.segments()] == [2, 4]
    assert log.log_start_offset == 2
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 1000)
    logs.clock.advance(10_000)  # everything is old: all but the active segment go
    assert log.delete_old_segments() == 1
    assert [s.base_offset for s in log.segments()] == [4]
    assert log.log_start_offset == 4
    assert log.delete_old_segments() == 0  # never the active segment


def test_deleted_segments_are_renamed_then_removed_after_the_delay(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    size = len(make_batch(1))
    log = logs.open(segment_bytes=size, retention_ms=10, file_delete_delay_ms=60_000)
    fill(log, make_batch, 3, records=1)
    logs.clock.advance(1_000)
    assert log.delete_old_segments() == 2
    deleted = [name for name in logs.files() if name.endswith(".deleted")]
    assert sorted(deleted) == sorted(
        f"{base:020d}{suffix}.deleted"
        for base in (0, 1)
        for suffix in (".log", ".index", ".timeindex")
    )
    assert not any(
        name.startswith(f"{0:020d}") and not name.endswith(".deleted") for name in logs.files()
    )
    logs.clock.advance(59_999)
    logs.scheduler.run_due()
    assert len([n for n in logs.files() if n.endswith(".deleted")]) == 6
    logs.clock.advance(1)
    logs.scheduler.run_due()
    assert logs.files() == sorted(f"{2:020d}{s}" for s in (".index", ".log", ".timeindex"))


def test_a_base_offset_deleted_twice_within_the_delay_is_cleaned_up(
    logs: LogHarness, make_batch: BatchFactory, caplog: pytest.LogCaptureFixture
) -> None:
    size = len(make_batch(1))
    log = logs.open(segment_bytes=2 * size, file_delete_delay_ms=60_000)
    fill(log, make_batch, 3, records=1)
    assert log.truncate_to(1)  # segment 2 goes
    fill(log, make_batch, 2, records=1)  # and comes back at the same base offset
    again = log.segments()[-1]
    assert again.base_offset == 2
    assert log.truncate_to(1)  # its .deleted files replace the pending ones
    logs.clock.advance(60_000)
    logs.scheduler.run_due()
    assert "failed" not in caplog.text
    assert again.offset_index.closed
    assert again.time_index.closed
    assert not [name for name in logs.files() if name.endswith(".deleted")]


def test_retention_by_size(logs: LogHarness, make_batch: BatchFactory) -> None:
    size = len(make_batch(1))
    log = logs.open(segment_bytes=2 * size, retention_bytes=5 * size)
    fill(log, make_batch, 9, records=1)  # segments of 2, 2, 2, 2 and an active one of 1
    assert log.size_bytes == 9 * size
    # Deleting two segments leaves 5 batches; deleting a third would leave 3 < 5.
    assert log.delete_old_segments() == 2
    assert log.size_bytes == 5 * size
    assert [s.base_offset for s in log.segments()] == [4, 6, 8]
    assert log.log_start_offset == 4
    assert log.delete_old_segments() == 0


def test_retention_by_log_start_offset(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = _three_segments(logs, make_batch, cleanup_policy="compact", retention_bytes=1)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(17)
    assert log.maybe_increment_log_start_offset(9)
    assert not log.maybe_increment_log_start_offset(9)
    assert not log.maybe_increment_log_start_offset(3)
    assert log.log_start_offset == 9
    with pytest.raises(OffsetOutOfRangeError):
        log.read(8, 1000)
    # compact: no size retention, but segments wholly below the log start offset go.
    assert log.delete_old_segments() == 1
    assert [s.base_offset for s in log.segments()] == [6, 12]
    assert log.log_start_offset == 9
    assert [r.offset for r in logs.read_all(log)] == list(range(9, 16))


def test_a_read_snapshot_survives_retention(logs: LogHarness, make_batch: BatchFactory) -> None:
    size = len(make_batch(1))
    log = logs.open(segment_bytes=2 * size, retention_ms=10, file_delete_delay_ms=1_000)
    fill(log, make_batch, 5, records=1)
    before = log.read(0, 10**6)
    expected = make_batch.records(before.read_bytes())
    segments = log.segments()
    logs.clock.advance(100)
    assert log.delete_old_segments() == 2
    assert make_batch.records(before.read_bytes()) == expected
    # The snapshot of the segment list still reads the removed segments.
    old = segments[0].read(0, 10**6)
    assert old is not None
    assert make_batch.records(old.read()) == expected
    logs.clock.advance(999)
    logs.scheduler.run_due()
    assert make_batch.records(before.read_bytes()) == expected


# -- flush ---------------------------------------------------------------------------------


def test_flush_messages_schedules_a_flush_to_the_log_end_offset(
    logs: LogHarness, make_batch: BatchFactory
) -> None:
    log = logs.open(flush_messages=3)
    log.append(make_batch(2))
    assert logs.scheduler.pending() == []
    assert log.unflushed_messages == 2
    log.append(make_batch(1))
    log.append(make_batch(1))
    assert logs.scheduler.pending() == ["flush orders-0"]  # requested once
    assert log.recovery_point == 0
    assert logs.scheduler.run_due() == 1
    assert log.recovery_point == log.log_end_offset == 4
    assert log.unflushed_messages == 0
    assert not log.flush_due()


def test_flush_ms_makes_a_flush_due(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = logs.open(flush_ms=1_000)
    logs.clock.advance(5_000)
    assert not log.flush_due()  # nothing to flush
    log.append(make_batch(1))
    assert log.flush_due()  # the last flush was long ago
    assert log.flush() == 1
    log.append(make_batch(1))
    logs.clock.advance(999)
    assert not log.flush_due()
    logs.clock.advance(1)
    assert log.flush_due()
    assert log.flush() == 2
    assert log.recovery_point == 2
    logs.clock.advance(10_000)
    assert not log.flush_due()


@pytest.mark.parametrize("fully", [False, True])
def test_a_truncation_during_a_flush_does_not_advance_the_recovery_point(
    logs: LogHarness, make_batch: BatchFactory, fully: bool
) -> None:
    log = logs.open()
    fill(log, make_batch, 4)
    segment = log.segments()[-1]
    fsync = segment.flush

    def flush_while_truncating() -> None:
        fsync()
        # The replica fetcher truncates while the scheduler's flush is in its fsyncs.
        if fully:
            log.truncate_fully_and_start_at(4)
        else:
            log.truncate_to(4)

    segment.flush = flush_while_truncating  # type: ignore[method-assign]
    log.flush()
    assert log.log_end_offset == 4
    assert log.recovery_point <= 4
    fill(log, make_batch, 2)  # offsets 4-7 again, not flushed
    assert log.recovery_point <= 4
    assert log.unflushed_messages == 4
    segment.flush = fsync  # type: ignore[method-assign]
    assert log.flush() == 8


def test_roll_flushes_the_finished_segment(logs: LogHarness, make_batch: BatchFactory) -> None:
    size = len(make_batch(1))
    log = logs.open(segment_bytes=size)
    fill(log, make_batch, 2, records=1)
    assert logs.scheduler.pending() == ["flush orders-0"]
    assert log.recovery_point == 0
    logs.scheduler.run_due()
    assert log.recovery_point == 2


def test_without_a_scheduler_flushes_run_inline(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = logs.open(flush_messages=2, inline=True)
    log.append(make_batch(2))
    assert log.recovery_point == 2


# -- close and reopen ----------------------------------------------------------------------


def _state(log: Log, *, indexes: bool) -> tuple:
    return (
        log.log_start_offset,
        log.log_end_offset,
        [
            (s.base_offset, s.next_offset, s.size, s.largest_timestamp)
            + ((s.offset_index.entries, s.time_index.entries) if indexes else ())
            for s in log.segments()
        ],
    )


@pytest.mark.parametrize("clean", [True, False])
def test_close_and_reopen_keeps_everything(
    logs: LogHarness, make_batch: BatchFactory, clean: bool
) -> None:
    size = len(make_batch(2))
    log = logs.open(segment_bytes=4 * size, index_interval_bytes=size)
    for n in range(11):
        log.append(make_batch(timestamps=[START + (n * 37) % 100, START + (n * 53) % 100]))
    log.maybe_increment_log_start_offset(3)
    records = logs.read_all(log)
    answers = [log.offset_for_timestamp(START + t) for t in range(0, 101, 7)]
    log.close()
    # After an unclean shutdown the active segment's indexes are rebuilt, without the entry
    # that close() adds; a clean shutdown keeps them as they are.
    state = _state(log, indexes=clean)
    assert log.recovery_point == 22
    again = logs.open(
        segment_bytes=4 * size,
        index_interval_bytes=size,
        clean=clean,
        recovery_point=log.recovery_point,
        log_start_offset=log.log_start_offset,
    )
    assert _state(again, indexes=clean) == state
    assert again.recovery_point == 22
    assert logs.read_all(again) == records
    assert [again.offset_for_timestamp(START + t) for t in range(0, 101, 7)] == answers
    assert again.append(make_batch(2)).first_offset == 22
    assert [r.offset for r in logs.read_all(again)] == list(range(3, 24))


def test_statistics(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = logs.open()
    fill(log, make_batch, 2)
    stats = log.statistics()
    assert stats["log_end_offset"] == 4
    assert stats["segments"] == 1
    assert stats["size_bytes"] == log.size_bytes == 2 * len(make_batch(2))
    assert stats["unflushed_messages"] == 4
