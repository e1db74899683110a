"""Tests for odradek.records.batch: the v2 header view, validation and in-place updates."""

from __future__ import annotations

import pytest

from odradek.errors import CorruptRecordError, UnsupportedForMessageFormatError
from odradek.records.batch import (
    HEADER_SIZE,
    BatchHeader,
    CompressionType,
    TimestampType,
    compute_crc,
    encode_header,
    iter_batches,
    make_attributes,
    parse_header,
    read_prefix,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate_batch,
)
from odradek.records.codec import build_batch, decode_batch_records
from odradek.records.record import SimpleRecord


def independent_crc32c(data: bytes) -> int:
    """CRC32C by a second implementation: kafka-python's pure-Python one."""
    crc32c_py = pytest.importorskip("kafka.record._crc32c")
    return int(crc32c_py.crc(data))


#: A header written out field by field (hand-assembled, see test_codec.py for its records).
GOLDEN_HEADER = bytes.fromhex(
    "0000000000000007"  # base_offset 7
    "00000048"  # batch_length 72 (49 header bytes after this field + 23 of records)
    "00000005"  # partition_leader_epoch 5
    "02"  # magic
    "df5fa6db"  # crc (parse_header does not check it)
    "001b"  # attributes: lz4 (3) | transactional (0x10) | log append time (0x08)
    "00000001"  # last_offset_delta 1
    "00000000000003e8"  # base_timestamp 1000
    "0000000000000514"  # max_timestamp 1300
    "0000000000003039"  # producer_id 12345
    "0002"  # producer_epoch 2
    "0000000a"  # base_sequence 10
    "00000002"  # records_count 2
)


def test_parse_golden_header() -> None:
    header = parse_header(GOLDEN_HEADER)
    assert header == BatchHeader(
        base_offset=7,
        batch_length=72,
        partition_leader_epoch=5,
        magic=2,
        crc=0xDF5FA6DB,
        attributes=0x1B,
        last_offset_delta=1,
        base_timestamp=1000,
        max_timestamp=1300,
        producer_id=12345,
        producer_epoch=2,
        base_sequence=10,
        records_count=2,
    )
    assert header.size == 84
    assert header.last_offset == 8
    assert header.next_offset == 9
    assert header.compression is CompressionType.LZ4
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert header.is_transactional
    assert not header.is_control
    assert not header.has_delete_horizon
    assert encode_header(header) == GOLDEN_HEADER
    assert header.attributes == make_attributes(
        CompressionType.LZ4, TimestampType.LOG_APPEND_TIME, transactional=True
    )


def batch(base_offset: int = 0, count: int = 3, start_ms: int = 1_700_000_000_000) -> bytes:
    records = [SimpleRecord(start_ms + i, b"k%d" % i, b"value %d" % i) for i in range(count)]
    return build_batch(records, base_offset=base_offset)


def test_crc_matches_an_independent_crc32c() -> None:
    data = batch()
    header = validate_batch(data)
    assert header.crc == independent_crc32c(data[21:])
    assert compute_crc(data, 0, header.size) == header.crc


def test_bit_flip_anywhere_under_the_crc_is_detected() -> None:
    data = batch()
    for position in range(21, len(data)):
        for bit in (0x01, 0x80):
            flipped = bytearray(data)
            flipped[position] ^= bit
            # A flip in a header field may be caught by that field's own check first.
            with pytest.raises(CorruptRecordError, match=r"CRC mismatch|negative"):
                validate_batch(flipped)


def test_bit_flip_in_crc_field_is_detected() -> None:
    flipped = bytearray(batch())
    flipped[17] ^= 0x04
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        validate_batch(flipped)


@pytest.mark.parametrize("cut", [1, 10, 40])
def test_truncated_batch_raises(cut: int) -> None:
    data = batch()
    with pytest.raises(CorruptRecordError, match="truncated"):
        validate_batch(data[:-cut])


@pytest.mark.parametrize("size", [0, 5, 11, 12, 16, 17, 60])
def test_truncated_header_raises(size: int) -> None:
    with pytest.raises(CorruptRecordError, match="truncated"):
        validate_batch(batch()[:size])


def test_read_prefix() -> None:
    data = batch(base_offset=42)
    assert read_prefix(data) == (42, len(data))
    with pytest.raises(CorruptRecordError, match="fewer than 12"):
        read_prefix(data[:11])


def test_impossible_length_raises() -> None:
    data = bytearray(batch())
    data[8:12] = (HEADER_SIZE - 13).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError, match="below the minimum"):
        parse_header(data)


@pytest.mark.parametrize("magic", [0, 1])
def test_old_message_formats_are_rejected(magic: int) -> None:
    data = bytearray(batch())
    data[16] = magic
    with pytest.raises(UnsupportedForMessageFormatError, match=f"v{magic}"):
        validate_batch(data)
    # Even when only the first 17 bytes arrived.
    with pytest.raises(UnsupportedForMessageFormatError):
        parse_header(bytes(data[:17]))


def test_unknown_magic_is_corrupt() -> None:
    data = bytearray(batch())
    data[16] = 3
    with pytest.raises(CorruptRecordError, match="unknown magic"):
        validate_batch(data)


def test_set_base_offset_keeps_crc_valid() -> None:
    data = bytearray(batch(base_offset=0))
    crc = validate_batch(data).crc
    set_base_offset(data, 0, 1_000_000)
    header = validate_batch(data)
    assert header.base_offset == 1_000_000
    assert header.crc == crc
    assert [record.offset for record in decode_batch_records(bytes(data))] == [
        1_000_000,
        1_000_001,
        1_000_002,
    ]


def test_set_partition_leader_epoch_keeps_crc_valid() -> None:
    data = bytearray(batch())
    set_partition_leader_epoch(data, 0, 17)
    assert validate_batch(data).partition_leader_epoch == 17


def test_set_log_append_time_recomputes_crc() -> None:
    data = bytearray(batch())
    old_crc = validate_batch(data).crc
    set_log_append_time(data, 0, 1_800_000_000_000)
    header = validate_batch(data)  # would raise on a stale CRC
    assert header.crc != old_crc
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == 1_800_000_000_000
    assert header.crc == independent_crc32c(bytes(data[21:]))
    records = decode_batch_records(bytes(data))
    assert [record.timestamp for record in records] == [1_800_000_000_000] * 3


def test_in_place_updates_at_a_position_inside_a_buffer() -> None:
    first, second = batch(count=2), batch(count=4)
    data = bytearray(first + second)
    set_base_offset(data, len(first), 2)
    set_log_append_time(data, len(first), 99)
    positions = [(position, header.base_offset) for position, header in iter_batches(data)]
    assert positions == [(0, 0), (len(first), 2)]
    assert validate_batch(data, len(first)).max_timestamp == 99
    assert validate_batch(data).timestamp_type is TimestampType.CREATE_TIME


def test_iter_batches_over_concatenated_batches() -> None:
    batches = [batch(base_offset=offset, count=offset % 4 + 1) for offset in (0, 10, 20, 30)]
    data = b"".join(batches)
    found = list(iter_batches(memoryview(data)))
    expected_positions = [sum(len(b) for b in batches[:i]) for i in range(len(batches))]
    assert [position for position, _ in found] == expected_positions
    assert [header.base_offset for _, header in found] == [0, 10, 20, 30]
    assert [header.records_count for _, header in found] == [1, 3, 1, 3]
    assert list(iter_batches(b"")) == []


@pytest.mark.parametrize("tail", [1, 12, 61, 70])
def test_iter_batches_with_a_partial_tail(tail: int) -> None:
    whole = batch(base_offset=0) + batch(base_offset=3)
    data = whole + batch(base_offset=6, count=5)[:tail]
    batches = iter_batches(data)
    assert [header.base_offset for _, header in (next(batches), next(batches))] == [0, 3]
    with pytest.raises(CorruptRecordError, match="truncated"):
        next(batches)
