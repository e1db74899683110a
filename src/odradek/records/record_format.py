"""The v2 record format in Python: encode one record, decode the records of a batch.

This module is the one reference for the bytes of a record. Every reader of records goes
through ``read_records`` — the codec (``records.codec``, ``Record`` values), the consumer
(``client.consumer.decoder``, ``ConsumerRecord`` tuples) and the column builder
(``records.columns``, Arrow-layout buffers) — each with its own *visitor*: a callable that the
loop calls once per record with the decoded fields, and that builds what its caller wants. The
compiled twins (``odradek._records`` for the consumer, ``odradek._columns`` for the column
builder, ``odradek._record_encoder`` for ``encode_record``) are held to this module by tests:
the same records, the same errors.

Byte layout of one record (varints are zigzag, see ``records.varint``)::

    length          varint   bytes after this field
    attributes      int8     unused, 0
    timestampDelta  varlong  timestamp - batch base_timestamp
    offsetDelta     varint   offset - batch base_offset
    keyLength       varint   -1 = null key
    key             bytes
    valueLength     varint   -1 = null value
    value           bytes
    headerCount     varint
    headers         headerCount times:
        headerKeyLength    varint   >= 0
        headerKey          bytes    UTF-8
        headerValueLength  varint   -1 = null value
        headerValue        bytes

Decoding trusts nothing. A record is decoded whole and checked before it is visited, and
CorruptRecordError is raised for: a record length below 1 or past the end of the records; a
field, varint or header that is truncated, overlong or runs past its record; a key, value or
header value length below -1; a negative header count or header key length; a header key that
is not UTF-8; fields that do not fill their record exactly; fewer than ``count`` records in
the range, or bytes left after them. So a caller never gets a short or shifted record; the
records visited before the error stay visited.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Final, TypeAlias

from odradek._types import ReadableBuffer
from odradek.errors import CorruptRecordError, UnsupportedCompressionTypeError
from odradek.records.batch import HEADER_SIZE, BatchHeader, CompressionType, TimestampType
from odradek.records.compression import decompress
from odradek.records.record import Header, Record
from odradek.records.varint import decode_varint, decode_varlong, encode_varint, encode_varlong

__all__ = [
    "RecordVisitor",
    "batch_records_bytes",
    "encode_record",
    "read_batch_records",
    "read_records",
    "record_appender",
]

#: Called once per decoded record, in offset order, with
#: ``(offset, timestamp, key, value, headers)``; what it returns is ignored.
RecordVisitor: TypeAlias = Callable[
    [int, int, bytes | None, bytes | None, tuple[Header, ...]], object
]

#: Bounds past any offset a batch can hold (an int64 base offset plus an int32 delta).
NO_MIN_OFFSET: Final = -(1 << 64)
NO_END_OFFSET: Final = 1 << 64

_NULL_LENGTH = encode_varint(-1)
_NO_HEADERS = encode_varint(0)
_ATTRIBUTES = b"\x00"
_NONE: tuple[Header, ...] = ()

# Record is frozen: its generated __init__ routes every field through object.__setattr__,
# which costs as much as decoding the record. ``record_appender`` writes the slots through
# their descriptors instead (decoding runs ~1.2x faster); the check keeps this in step.
_RECORD_FIELDS = ("offset", "timestamp", "key", "value", "headers")
if tuple(field.name for field in fields(Record)) != _RECORD_FIELDS:  # pragma: no cover
    raise ImportError("records.record_format is out of step with the fields of Record")
_new_object = object.__new__
_set_offset, _set_timestamp, _set_key, _set_value, _set_headers = (
    Record.__dict__[name].__set__ for name in _RECORD_FIELDS
)


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header],
) -> bytes:
    """Encodes one record, its length prefix included.

    Raises:
        ValueError: a delta or length outside its varint range.
        UnicodeEncodeError: a header key that is not encodable as UTF-8 (lone surrogates).
    """
    parts = [_ATTRIBUTES, encode_varlong(timestamp_delta), encode_varint(offset_delta)]
    if key is None:
        parts.append(_NULL_LENGTH)
    else:
        parts.append(encode_varint(len(key)))
        parts.append(key)
    if value is None:
        parts.append(_NULL_LENGTH)
    else:
        parts.append(encode_varint(len(value)))
        parts.append(value)
    if headers:
        parts.append(encode_varint(len(headers)))
        for header_key, header_value in headers:
            key_bytes = header_key.encode()
            parts.append(encode_varint(len(key_bytes)))
            parts.append(key_bytes)
            if header_value is None:
                parts.append(_NULL_LENGTH)
            else:
                parts.append(encode_varint(len(header_value)))
                parts.append(header_value)
    else:
        parts.append(_NO_HEADERS)
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def record_appender(out: list[Record]) -> RecordVisitor:
    """A visitor that appends each record to ``out`` as a ``Record``."""
    append = out.append
    new = _new_object
    set_offset, set_timestamp, set_key, set_value, set_headers = (
        _set_offset, _set_timestamp, _set_key, _set_value, _set_headers
    )  # fmt: skip

    def visit(
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[Header, ...],
    ) -> None:
        record: Record = new(Record)
        set_offset(record, offset)
        set_timestamp(record, timestamp)
        set_key(record, key)
        set_value(record, value)
        set_headers(record, headers)
        append(record)

    return visit


def batch_records_bytes(buf: ReadableBuffer, header: BatchHeader, pos: int = 0) -> bytes:
    """The records of the batch at ``pos``, decompressed when the batch is compressed.

    Always a copy of their own (positions in decoding errors count from the first record),
    never the caller's buffer. Checks neither the CRC nor the magic: ``header`` is the
    caller's, parsed or validated.

    Raises:
        UnsupportedCompressionTypeError: codec bits 5–7.
        CorruptRecordError: undecodable compressed records.
    """
    start = pos + HEADER_SIZE
    end = pos + header.size
    codec = header.compression_bits
    if codec == CompressionType.NONE:
        if isinstance(buf, bytes):
            return buf[start:end]
        with memoryview(buf) as view:
            return bytes(view[start:end])
    if codec > CompressionType.ZSTD:
        raise UnsupportedCompressionTypeError(
            f"batch at base offset {header.base_offset} uses unknown compression codec {codec}"
        )
    with memoryview(buf) as view:
        return decompress(codec, view[start:end])


def read_batch_records(
    buf: ReadableBuffer,
    header: BatchHeader,
    pos: int,
    visit: RecordVisitor,
    *,
    min_offset: int = NO_MIN_OFFSET,
    end_offset: int = NO_END_OFFSET,
) -> None:
    """Decodes the records of the batch at ``pos`` (``header`` is its parsed or validated
    header) and visits those with offsets in ``[min_offset, end_offset)``; see ``read_records``.

    Raises:
        CorruptRecordError, UnsupportedCompressionTypeError: as ``batch_records_bytes`` and
            ``read_records``.
    """
    data = batch_records_bytes(buf, header, pos)
    read_records(
        data,
        0,
        len(data),
        count=header.records_count,
        base_offset=header.base_offset,
        base_timestamp=header.base_timestamp,
        log_append_time=(
            header.max_timestamp if header.timestamp_type is TimestampType.LOG_APPEND_TIME else None
        ),
        visit=visit,
        min_offset=min_offset,
        end_offset=end_offset,
    )


def read_records(
    data: bytes,
    pos: int,
    end: int,
    *,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    visit: RecordVisitor,
    min_offset: int = NO_MIN_OFFSET,
    end_offset: int = NO_END_OFFSET,
) -> None:
    """Decodes exactly ``count`` records that fill ``data[pos:end]``, in order, and calls
    ``visit(offset, timestamp, key, value, headers)`` for each one whose offset is in
    ``[min_offset, end_offset)``, as soon as that record is decoded and checked.

    Args:
        data: the bytes holding the records (a whole batch, or decompressed records).
        pos: where the first record starts.
        end: where the last record must end.
        count: the batch's ``records_count``.
        base_offset: the batch's base offset.
        base_timestamp: the batch's base timestamp (CreateTime deltas are added to it).
        log_append_time: for a LogAppendTime batch its max timestamp, which every record
            takes; None for CreateTime.
        visit: builds what the caller wants of a record (see ``RecordVisitor``).
        min_offset, end_offset: the offsets visited; the other records are decoded and
            checked all the same.
    Raises:
        CorruptRecordError: malformed records (see the module docstring).
        Exception: whatever ``visit`` raises, unchanged.
    """
    varint = decode_varint
    varlong = decode_varlong
    for index in range(count):
        # Each field takes the one-byte path inline (record lengths, offset deltas and value
        # lengths up to 8 KB the two-byte path too); longer varints call the decoder. Fields
        # are read past record_end only when a length lied; the check after them then rejects
        # the record before it is visited.
        try:
            b0 = data[pos]
            if b0 < 0x80:
                length = (b0 >> 1) ^ -(b0 & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                raw = (b0 & 0x7F) | (data[pos + 1] << 7)
                length = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                length, pos = varint(data, pos)
            record_end = pos + length
            if length <= 0 or record_end > end:
                raise CorruptRecordError(
                    f"record {index} declares {length} bytes, {end - pos} remain in the batch"
                )
            b0 = data[pos + 1]  # pos is on the unused attributes byte: skip it
            if b0 < 0x80:
                timestamp_delta = (b0 >> 1) ^ -(b0 & 1)
                pos += 2
            else:
                timestamp_delta, pos = varlong(data, pos + 1)
            b0 = data[pos]
            if b0 < 0x80:
                offset_delta = (b0 >> 1) ^ -(b0 & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                raw = (b0 & 0x7F) | (data[pos + 1] << 7)
                offset_delta = (raw >> 1) ^ -(raw & 1)
                pos += 2
            elif data[pos + 2] < 0x80:  # deltas up to 2**20 (batches of over 8,192 records)
                raw = (b0 & 0x7F) | ((data[pos + 1] & 0x7F) << 7) | (data[pos + 2] << 14)
                offset_delta = (raw >> 1) ^ -(raw & 1)
                pos += 3
            else:
                offset_delta, pos = varint(data, pos)
            b0 = data[pos]
            if b0 < 0x80:
                key_length = (b0 >> 1) ^ -(b0 & 1)
                pos += 1
            else:
                key_length, pos = varint(data, pos)
            if key_length >= 0:
                key: bytes | None = data[pos : pos + key_length]
                pos += key_length
            elif key_length == -1:
                key = None
            else:
                raise CorruptRecordError(f"record {index} has key length {key_length}")
            b0 = data[pos]
            if b0 < 0x80:
                value_length = (b0 >> 1) ^ -(b0 & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                raw = (b0 & 0x7F) | (data[pos + 1] << 7)
                value_length = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                value_length, pos = varint(data, pos)
            if value_length >= 0:
                value: bytes | None = data[pos : pos + value_length]
                pos += value_length
            elif value_length == -1:
                value = None
            else:
                raise CorruptRecordError(f"record {index} has value length {value_length}")
            if data[pos] == 0:
                headers = _NONE
                pos += 1
            else:
                headers, pos = _read_headers(data, pos, record_end)
        except IndexError:
            raise CorruptRecordError(
                f"truncated record {index}: the data ends inside it ({count} declared)"
            ) from None
        if pos != record_end:
            raise CorruptRecordError(
                f"record {index} declares {length} bytes but its fields take "
                f"{length + pos - record_end}"
            )
        offset = base_offset + offset_delta
        if min_offset <= offset < end_offset:
            visit(
                offset,
                base_timestamp + timestamp_delta if log_append_time is None else log_append_time,
                key,
                value,
                headers,
            )
    if pos != end:
        raise CorruptRecordError(
            f"{end - pos} bytes remain after the {count} records the batch declares"
        )


def _read_headers(data: bytes, pos: int, record_end: int) -> tuple[tuple[Header, ...], int]:
    """Decodes a header count and the headers; returns ``(headers, next_pos)``."""
    count, pos = decode_varint(data, pos)
    if count < 0:
        raise CorruptRecordError(f"invalid header count {count}")
    headers: list[Header] = []
    for _ in range(count):
        key_length, pos = decode_varint(data, pos)
        key_end = pos + key_length
        if key_length < 0 or key_end > record_end:
            raise CorruptRecordError(f"invalid header key length {key_length}")
        try:
            key = data[pos:key_end].decode()
        except UnicodeDecodeError:
            raise CorruptRecordError("a header key is not valid UTF-8") from None
        value_length, pos = decode_varint(data, key_end)
        if value_length >= 0:
            value: bytes | None = data[pos : pos + value_length]
            pos += value_length
        elif value_length == -1:
            value = None
        else:
            raise CorruptRecordError(f"invalid header value length {value_length}")
        if pos > record_end:
            raise CorruptRecordError("a header runs past the end of its record")
        headers.append((key, value))
    return tuple(headers), pos
