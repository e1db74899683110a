"""The record codec of batch v2: decode a batch into records, build a batch from records.

This module is the one facade clients and tools call (it re-exports the value types of
``records.record``). The per-record work is the record format's (``records.record_format``):
decoding runs its loop with a visitor that builds ``Record`` values; encoding runs
``_encode_record``, the compiled twin from ``odradek._record_encoder`` (an optional C
extension) when it is built — the same bytes, answers and errors, about six times faster —
else the Python ``record_format.encode_record``. Everything else here (batch header, CRC,
compression, offsets and timestamps) stays in Python: it runs once per batch.

Batch layout: see ``records.batch``; record layout: see ``records.record_format``. The records of
a compressed batch are compressed together as one payload after the 61-byte header
(``records.compression``).

Contracts:

- Decoding validates the batch header and CRC32C first (``batch.validate_batch``), then
  decompresses, then decodes exactly ``records_count`` records. Any inconsistency raises
  CorruptRecordError; magic 0/1 raises UnsupportedForMessageFormatError; codec bits 5–7 raise
  UnsupportedCompressionTypeError.
- Building writes offset deltas 0..n-1, ``base_timestamp`` = the first record's timestamp and
  ``max_timestamp`` = the largest, and a correct CRC. Invalid arguments (no records, a varint
  out of range) raise ValueError.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from odradek._compiled import compiled_attr
from odradek._types import ReadableBuffer
from odradek.errors import UnsupportedCompressionTypeError
from odradek.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchHeader,
    CompressionType,
    TimestampType,
    encode_header,
    make_attributes,
    validate_batch,
)
from odradek.records.compression import compress
from odradek.records.crc import crc32c
from odradek.records.record import Header, Record, SimpleRecord
from odradek.records.record_format import encode_record, read_batch_records, record_appender

__all__ = [
    "DEFAULT_BATCH_SIZE_BYTES",
    "BatchBuilder",
    "DecodedBatch",
    "Header",
    "Record",
    "SimpleRecord",
    "build_batch",
    "decode_batch",
    "decode_batch_records",
    "decode_records",
]

#: Kafka's default ``batch.size``.
DEFAULT_BATCH_SIZE_BYTES = 16384
NO_PRODUCER_EPOCH = -1
NO_PARTITION_LEADER_EPOCH = -1
_UNLIMITED = 1 << 62

#: The optional extension module holding the compiled ``encode_record``.
COMPILED_ENCODER_MODULE: Final = "odradek._record_encoder"


def compiled_encode_record() -> Callable[..., bytes] | None:
    """The compiled ``encode_record``, or None when ``odradek._record_encoder`` is not built
    (looked up by name: the extension is optional)."""
    function: Callable[..., bytes] | None = compiled_attr(COMPILED_ENCODER_MODULE, "encode_record")
    return function


# The per-record encoder (see the module docstring).
_encode_record = compiled_encode_record() or encode_record


@dataclass(frozen=True, slots=True)
class DecodedBatch:
    """One decoded batch: its header and its records, in offset order."""

    header: BatchHeader
    records: list[Record]

    @property
    def timestamp_type(self) -> TimestampType:
        return self.header.timestamp_type


def decode_batch(buf: ReadableBuffer, pos: int = 0) -> DecodedBatch:
    """Validates and decodes the batch at ``pos`` (the buffer may hold more after it).

    Raises:
        CorruptRecordError: truncated batch, CRC mismatch, undecodable compressed data or
            inconsistent records.
        UnsupportedForMessageFormatError: magic 0 or 1.
        UnsupportedCompressionTypeError: codec bits 5–7.
    """
    header = validate_batch(buf, pos)
    return DecodedBatch(header, decode_records(buf, header, pos))


def decode_batch_records(buf: ReadableBuffer, pos: int = 0) -> list[Record]:
    """The records of the batch at ``pos``, validated as ``decode_batch`` does."""
    header = validate_batch(buf, pos)
    return decode_records(buf, header, pos)


def decode_records(buf: ReadableBuffer, header: BatchHeader, pos: int = 0) -> list[Record]:
    """Decodes the records of a batch whose ``header`` the caller already validated.

    For callers that checked the CRC themselves (a log dump that reports it); it checks
    neither the CRC nor the magic again.

    Raises:
        CorruptRecordError, UnsupportedCompressionTypeError: as ``decode_batch``.
    """
    records: list[Record] = []
    read_batch_records(buf, header, pos, record_appender(records))
    return records


def build_batch(
    records: Iterable[SimpleRecord],
    *,
    base_offset: int = 0,
    compression: CompressionType = CompressionType.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    transactional: bool = False,
    control: bool = False,
) -> bytes:
    """Builds one complete v2 batch holding ``records`` with offset deltas 0..n-1.

    Raises:
        ValueError: no records, or a value outside its field's range.
        UnsupportedCompressionTypeError: an unknown ``compression``.
    """
    builder = BatchBuilder(
        batch_size_bytes=_UNLIMITED,
        base_offset=base_offset,
        compression=compression,
        timestamp_type=timestamp_type,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
        transactional=transactional,
        control=control,
    )
    for record in records:
        builder.append(record.timestamp_ms, record.key, record.value, record.headers)
    if not builder.record_count:
        raise ValueError("a record batch needs at least one record")
    return builder.build()


class BatchBuilder:
    """Accumulates records for one batch, up to a size limit, and builds it.

    Each ``append`` encodes its record at once (offset delta = records so far, timestamp delta
    from the first record's timestamp), so appending is O(record) and ``build`` is one join,
    one compression and one CRC. ``estimated_size`` is the uncompressed size of the batch
    (header plus records), exact for uncompressed batches and an upper bound in practice for
    compressed ones. ``build`` may be called any number of times; each call returns the batch
    of all records appended so far. Not thread-safe: one owner (the producer accumulator)
    appends and builds.
    """

    __slots__ = (
        "_attributes",
        "_base_offset",
        "_base_sequence",
        "_base_timestamp",
        "_batch_size_bytes",
        "_compression",
        "_count",
        "_encoded",
        "_max_timestamp",
        "_partition_leader_epoch",
        "_producer_epoch",
        "_producer_id",
        "_records_bytes",
    )

    def __init__(
        self,
        *,
        batch_size_bytes: int = DEFAULT_BATCH_SIZE_BYTES,
        base_offset: int = 0,
        compression: CompressionType = CompressionType.NONE,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        transactional: bool = False,
        control: bool = False,
    ) -> None:
        """Args:
        batch_size_bytes: ``append`` refuses a record that would take the estimated size
            past this (Kafka's ``batch.size``); the first record is always taken.
        compression: the codec ``build`` compresses the records with.
        Others: the batch header fields of the same names (see ``records.batch``).
        """
        try:
            self._compression = CompressionType(compression)
        except ValueError:
            raise UnsupportedCompressionTypeError(
                f"unknown compression codec {compression}"
            ) from None
        self._batch_size_bytes = batch_size_bytes
        self._base_offset = base_offset
        self._attributes = make_attributes(
            self._compression, timestamp_type, transactional=transactional, control=control
        )
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence
        self._partition_leader_epoch = partition_leader_epoch
        self._encoded: list[bytes] = []
        self._count = 0
        self._records_bytes = 0
        self._base_timestamp = 0
        self._max_timestamp = 0

    @property
    def record_count(self) -> int:
        return self._count

    @property
    def estimated_size(self) -> int:
        """Bytes of the batch if built now, uncompressed (see the class docstring)."""
        return HEADER_SIZE + self._records_bytes

    @property
    def max_timestamp(self) -> int:
        """The largest timestamp appended so far (0 before the first record)."""
        return self._max_timestamp

    def append(
        self,
        timestamp_ms: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
    ) -> bool:
        """Adds one record unless it would take the batch past its size limit.

        Returns:
            True when the record was added; False when the batch is full (the record was
            not added). The first record is always added, whatever its size.
        Raises:
            ValueError: a timestamp delta or length outside its varint range.
        """
        count = self._count
        if count == 0:
            self._base_timestamp = self._max_timestamp = timestamp_ms
        encoded = _encode_record(count, timestamp_ms - self._base_timestamp, key, value, headers)
        if count and HEADER_SIZE + self._records_bytes + len(encoded) > self._batch_size_bytes:
            return False
        self._encoded.append(encoded)
        self._count = count + 1
        self._records_bytes += len(encoded)
        self._max_timestamp = max(self._max_timestamp, timestamp_ms)
        return True

    def append_encoded(
        self, records: bytes, count: int, base_timestamp_ms: int, max_timestamp_ms: int
    ) -> None:
        """Takes ``count`` records encoded elsewhere (their length prefixes included, offset
        deltas 0..count-1, timestamp deltas from ``base_timestamp_ms``) as the whole batch:
        the way a caller that encodes whole runs of records at once (the Spark sink, from Arrow
        columns) hands them over. The size limit is the caller's to keep.

        Raises:
            ValueError: the builder already holds records, or ``count`` is below 1.
        """
        if self._count:
            raise ValueError("append_encoded takes the records of an empty batch")
        if count < 1:
            raise ValueError("a record batch needs at least one record")
        self._encoded.append(records)
        self._count = count
        self._records_bytes = len(records)
        self._base_timestamp = base_timestamp_ms
        self._max_timestamp = max_timestamp_ms

    def build(self) -> bytes:
        """Returns the complete batch (header, compressed records, CRC32C).

        Raises:
            ValueError: no record was appended.
        """
        count = self._count
        if count == 0:
            raise ValueError("a record batch needs at least one record")
        payload = b"".join(self._encoded)
        if self._compression is not CompressionType.NONE:
            payload = compress(self._compression, payload)
        header = BatchHeader(
            base_offset=self._base_offset,
            batch_length=HEADER_SIZE - LOG_OVERHEAD + len(payload),
            partition_leader_epoch=self._partition_leader_epoch,
            magic=MAGIC_V2,
            crc=0,
            attributes=self._attributes,
            last_offset_delta=count - 1,
            base_timestamp=self._base_timestamp,
            max_timestamp=self._max_timestamp,
            producer_id=self._producer_id,
            producer_epoch=self._producer_epoch,
            base_sequence=self._base_sequence,
            records_count=count,
        )
        encoded_header = encode_header(header)
        covered = encoded_header[ATTRIBUTES_OFFSET:]
        crc = crc32c(payload, crc32c(covered))
        return b"".join((encoded_header[:CRC_OFFSET], crc.to_bytes(4, "big"), covered, payload))
