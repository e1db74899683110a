"""Record batch v2 header: parse, validate (size, magic, CRC32C) and update in place.

This is all the broker ever needs to know about records: it never decodes the records inside
a batch (ARCHITECTURE.md, "The broker never decodes records").

Byte layout of a v2 record batch (all integers big-endian)::

    offset  size  field
         0     8  base_offset              int64   (not covered by the CRC)
         8     4  batch_length             int32   bytes after this field
        12     4  partition_leader_epoch   int32   (not covered by the CRC)
        16     1  magic                    int8    = 2
        17     4  crc                      uint32  CRC32C of bytes 21 .. end
        21     2  attributes               int16   bits 0-2 compression codec,
                                                   bit 3 timestamp type (1 = LogAppendTime),
                                                   bit 4 transactional, bit 5 control,
                                                   bit 6 delete horizon set
        23     4  last_offset_delta        int32
        27     8  base_timestamp           int64
        35     8  max_timestamp            int64
        43     8  producer_id              int64
        51     2  producer_epoch           int16
        53     4  base_sequence            int32
        57     4  records_count            int32
        61        records ...

The whole batch takes ``batch_length + 12`` bytes. Message formats v0 and v1 keep their magic
byte at the same position (16), which is how they are recognised and rejected.

The seeds' message fields map onto v2 as: CRC → the batch CRC32C; magic → 2; attributes with
codec bits 0–2 and timestamp-type bit 3 → the batch attributes (same bits); timestamp → base /
max timestamp plus each record's timestamp delta; key and value → each record's key and value.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterator
from typing import NamedTuple

from odradek._types import ReadableBuffer, WritableBuffer
from odradek.errors import CorruptRecordError, UnsupportedForMessageFormatError
from odradek.records.crc import crc32c

HEADER_SIZE = 61
#: Bytes before ``batch_length`` counts: base offset (8) + batch length (4).
LOG_OVERHEAD = 12
MAGIC_V2 = 2
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
PARTITION_LEADER_EPOCH_OFFSET = 12
#: Where ``batch_length`` (int32) follows the base offset.
_BATCH_LENGTH_OFFSET = 8
#: Where the producer id (int64) starts; the producer epoch (int16) and the base sequence
#: (int32) follow it.
PRODUCER_ID_OFFSET = 43
#: The smallest legal ``batch_length`` (a header with no records).
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_PREFIX = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
#: Attribute bits of a transactional batch and of a control batch (a transaction marker).
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
_DELETE_HORIZON_BIT = 0x40


class CompressionType(enum.IntEnum):
    """The codec in attribute bits 0–2."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(enum.IntEnum):
    """Kafka's timestamp types (NO_TIMESTAMP_TYPE only appears for magic 0)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class BatchHeader(NamedTuple):
    """The decoded 61-byte header of one record batch (see the module docstring).

    A NamedTuple rather than a frozen dataclass: one is built per batch on the produce path,
    and a tuple is several times cheaper to build.
    """

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch takes, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """The offset right after this batch."""
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> CompressionType:
        """The codec; raises ValueError for codec bits 5–7, which no Kafka version defines."""
        return CompressionType(self.attributes & _COMPRESSION_MASK)

    @property
    def compression_bits(self) -> int:
        return self.attributes & _COMPRESSION_MASK

    @property
    def timestamp_type(self) -> TimestampType:
        if self.attributes & _TIMESTAMP_TYPE_BIT:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & _DELETE_HORIZON_BIT)


def read_prefix(buf: ReadableBuffer, pos: int = 0) -> tuple[int, int]:
    """Returns ``(base_offset, size)`` of the batch at ``pos`` from its first 12 bytes.

    ``size`` is the whole batch (``batch_length + 12``). Raises CorruptRecordError when fewer
    than 12 bytes remain.
    """
    if len(buf) - pos < LOG_OVERHEAD:
        raise CorruptRecordError(f"truncated batch at position {pos}: fewer than 12 bytes")
    base_offset, batch_length = _PREFIX.unpack_from(buf, pos)
    return base_offset, batch_length + LOG_OVERHEAD


def parse_header(buf: ReadableBuffer, pos: int = 0) -> BatchHeader:
    """Decodes the header at ``pos`` without checking the CRC or that the batch is whole.

    Raises:
        UnsupportedForMessageFormatError: the magic byte is 0 or 1 (message formats v0/v1).
        CorruptRecordError: fewer than 61 bytes, an unknown magic, or an impossible length.
    """
    available = len(buf) - pos
    if available > MAGIC_OFFSET:
        magic = buf[pos + MAGIC_OFFSET]
        if magic in (0, 1):
            raise UnsupportedForMessageFormatError(
                f"message format v{magic} (magic {magic}) is not supported: odradek stores "
                "record batch v2 only (clients from Kafka 0.11 on)"
            )
        if magic != MAGIC_V2:
            raise CorruptRecordError(f"unknown magic byte {magic} at position {pos}")
    if available < HEADER_SIZE:
        raise CorruptRecordError(
            f"truncated batch at position {pos}: {available} bytes, a header needs {HEADER_SIZE}"
        )
    header = BatchHeader._make(_HEADER.unpack_from(buf, pos))
    if header.batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(
            f"batch at position {pos} declares length {header.batch_length}, "
            f"below the minimum {MIN_BATCH_LENGTH}"
        )
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise CorruptRecordError(f"batch at position {pos} has a negative offset delta or count")
    return header


def has_transactional_batch(buf: ReadableBuffer) -> bool:
    """Whether ``buf`` (whole batches back to back) holds a transactional batch or marker,
    read from each batch's length and attributes fields only (no header is parsed)."""
    position = 0
    end = len(buf)
    while position + HEADER_SIZE <= end:
        (length,) = _INT32.unpack_from(buf, position + _BATCH_LENGTH_OFFSET)
        (attributes,) = _INT16.unpack_from(buf, position + ATTRIBUTES_OFFSET)
        if attributes & TRANSACTIONAL_BIT:
            return True
        position += LOG_OVERHEAD + length
    return False


def compute_crc(buf: ReadableBuffer, pos: int, size: int) -> int:
    """CRC32C of the batch at ``pos`` of ``size`` bytes, over attributes .. end."""
    with memoryview(buf) as view:
        return crc32c(view[pos + ATTRIBUTES_OFFSET : pos + size])


def validate_batch(buf: ReadableBuffer, pos: int = 0) -> BatchHeader:
    """Parses the batch at ``pos`` and checks that it is whole and its CRC32C matches.

    Returns:
        The header.
    Raises:
        UnsupportedForMessageFormatError: magic 0 or 1.
        CorruptRecordError: truncated batch, bad length, or CRC mismatch.
    """
    header = parse_header(buf, pos)
    if len(buf) - pos < header.size:
        raise CorruptRecordError(
            f"truncated batch at position {pos}: needs {header.size} bytes, {len(buf) - pos} remain"
        )
    actual = compute_crc(buf, pos, header.size)
    if actual != header.crc:
        raise CorruptRecordError(
            f"CRC mismatch in batch at position {pos} (base offset {header.base_offset}): "
            f"stored {header.crc:#010x}, computed {actual:#010x}"
        )
    return header


def iter_batches(buf: ReadableBuffer) -> Iterator[tuple[int, BatchHeader]]:
    """Validates every batch of a buffer that holds whole batches back to back.

    Yields ``(position, header)``; raises as ``validate_batch`` does on the first bad batch,
    including a partial batch at the end.
    """
    pos = 0
    end = len(buf)
    while pos < end:
        header = validate_batch(buf, pos)
        yield pos, header
        pos += header.size


def set_base_offset(buf: WritableBuffer, pos: int, base_offset: int) -> None:
    """Overwrites the base offset in place (the CRC does not cover it)."""
    _INT64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: WritableBuffer, pos: int, epoch: int) -> None:
    """Overwrites the partition leader epoch in place (the CRC does not cover it)."""
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_log_append_time(buf: WritableBuffer, pos: int, timestamp_ms: int) -> None:
    """Marks the batch at ``pos`` LogAppendTime with ``timestamp_ms`` and recomputes its CRC.

    Consumers then read ``max_timestamp`` as every record's timestamp.
    """
    header = parse_header(buf, pos)
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, header.attributes | _TIMESTAMP_TYPE_BIT)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    _UINT32.pack_into(buf, pos + CRC_OFFSET, compute_crc(buf, pos, header.size))


def make_attributes(
    compression: CompressionType = CompressionType.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    *,
    transactional: bool = False,
    control: bool = False,
) -> int:
    """Builds the attributes field from its parts."""
    attributes = int(compression)
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= _TIMESTAMP_TYPE_BIT
    if transactional:
        attributes |= TRANSACTIONAL_BIT
    if control:
        attributes |= CONTROL_BIT
    return attributes


def encode_header(header: BatchHeader) -> bytes:
    """Encodes a header as its 61 bytes, exactly as stored (the CRC is taken as given)."""
    return _HEADER.pack(
        header.base_offset,
        header.batch_length,
        header.partition_leader_epoch,
        header.magic,
        header.crc,
        header.attributes,
        header.last_offset_delta,
        header.base_timestamp,
        header.max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        header.records_count,
    )
