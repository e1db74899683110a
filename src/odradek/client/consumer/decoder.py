"""From a partition's Fetch response bytes to ``ConsumerRecord``s, and where to fetch next.

This module owns the consumer's record decoding: batch checks and decompression come from
``records`` (``batch.validate_batch``, ``compression.decompress``), and the record loop is the
consumer's own, decoding straight into ``ConsumerRecord`` tuples (one object per record, not a
``Record`` then a copy: the consumer's fast path). It keeps the rules the simple consumer keeps:

- records before the fetch offset are skipped (a compressed batch, or a batch fetched whole,
  may start before it);
- control batches (transaction markers) are skipped, and so are aborted-transaction filtering's
  concerns: ``read_uncommitted`` only;
- a batch cut off at the end of the bytes (the broker stops at the size limit) is ignored: the
  next fetch starts at the offset after the last whole batch and gets it whole. A record larger
  than ``max.partition.fetch.bytes`` still arrives whole (KIP-74), so progress never stops.

Two record loops: ``py_decode`` in Python, the reference, and ``decode``, which runs the
compiled loop of ``odradek._records`` (optional: built by setuptools where a C compiler is)
over as many batches as it accepts and hands each batch it declines to the reference — a
malformed batch (which the reference then rejects with its own error), or a valid but unusual
one (offsets or timestamps past int64). So both raise the same errors and return the same
records; ``decode`` is ``py_decode`` when the extension is missing, and with deserializers
(the fetcher decodes without them).

Pure functions; called on the fetcher thread (``decode``, ``scan``).
"""

from __future__ import annotations

import functools
from typing import Any, Final

from odradek._compiled import compiled_attr
from odradek.client.consumer.record import ConsumerRecord
from odradek.errors import CorruptRecordError, UnsupportedCompressionTypeError
from odradek.records._pyrecords import _decode_headers
from odradek.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    CompressionType,
    TimestampType,
    parse_header,
    read_prefix,
    validate_batch,
)
from odradek.records.compression import decompress
from odradek.records.record import Header
from odradek.records.varint import decode_varint, decode_varlong

__all__ = ["COMPILED_MODULE", "compiled_decoder", "decode", "py_decode", "scan"]

#: The optional extension module holding the compiled record loop.
COMPILED_MODULE: Final = "odradek._records"

_new_record = tuple.__new__
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


@functools.cache
def compiled_decoder() -> Any:
    """``odradek._records.decode_batches``, or None when it is not built (looked up once; by
    name, as it is optional)."""
    return compiled_attr(COMPILED_MODULE, "decode_batches")


def scan(records: bytes, fetch_offset: int) -> int:
    """The offset to fetch from after these bytes: one past the last whole batch's last offset
    (``fetch_offset`` when there is none). Reads batch headers only."""
    end = len(records)
    pos = 0
    next_offset = fetch_offset
    while end - pos >= LOG_OVERHEAD:
        _base, size = read_prefix(records, pos)
        if size <= LOG_OVERHEAD or pos + size > end:
            break
        header = parse_header(records, pos)
        next_offset = max(next_offset, header.last_offset + 1)
        pos += size
    return next_offset


def decode(
    topic: str,
    partition: int,
    records: bytes,
    fetch_offset: int,
    *,
    check_crcs: bool,
    key_deserializer: Any,
    value_deserializer: Any,
) -> list[ConsumerRecord]:
    """The records at or after ``fetch_offset`` in ``records`` (see the module docstring).

    ``key_deserializer`` / ``value_deserializer``: an object with ``deserialize(topic, data)``
    or ``None`` for bytes unchanged.

    Raises:
        CorruptRecordError: a whole batch fails its checks (its CRC when ``check_crcs``).
        UnsupportedForMessageFormatError: a batch of message format v0/v1.
        UnsupportedCompressionTypeError: codec bits 5-7.
        Exception: whatever a deserializer raises (``SerializationError`` and kin).
    """
    compiled = compiled_decoder()
    if (
        compiled is None
        or key_deserializer is not None
        or value_deserializer is not None
        or not _INT64_MIN <= fetch_offset <= _INT64_MAX
    ):
        return py_decode(
            topic,
            partition,
            records,
            fetch_offset,
            check_crcs=check_crcs,
            key_deserializer=key_deserializer,
            value_deserializer=value_deserializer,
        )
    out: list[ConsumerRecord] = []
    end = len(records)
    pos = 0
    while True:
        pos = compiled(
            out, records, pos, fetch_offset, check_crcs, topic, partition, ConsumerRecord
        )
        if end - pos < LOG_OVERHEAD:
            break
        _base, size = read_prefix(records, pos)
        if size <= LOG_OVERHEAD or pos + size > end:
            break
        # Declined: the reference raises its error, or decodes this unusual batch.
        _decode_batch(out, records, pos, topic, partition, fetch_offset, check_crcs, None, None)
        pos += size
    return out


def py_decode(
    topic: str,
    partition: int,
    records: bytes,
    fetch_offset: int,
    *,
    check_crcs: bool,
    key_deserializer: Any,
    value_deserializer: Any,
) -> list[ConsumerRecord]:
    """``decode`` in Python only: the reference (see the module docstring)."""
    out: list[ConsumerRecord] = []
    end = len(records)
    pos = 0
    key_fn = key_deserializer.deserialize if key_deserializer is not None else None
    value_fn = value_deserializer.deserialize if value_deserializer is not None else None
    while end - pos >= LOG_OVERHEAD:
        _base, size = read_prefix(records, pos)
        if size <= LOG_OVERHEAD or pos + size > end:
            break
        _decode_batch(
            out, records, pos, topic, partition, fetch_offset, check_crcs, key_fn, value_fn
        )
        pos += size
    return out


def _decode_batch(
    out: list[ConsumerRecord],
    records: bytes,
    pos: int,
    topic: str,
    partition: int,
    fetch_offset: int,
    check_crcs: bool,
    key_fn: Any,
    value_fn: Any,
) -> None:
    """Appends the records at or after ``fetch_offset`` of the whole batch at ``pos``."""
    header = validate_batch(records, pos) if check_crcs else parse_header(records, pos)
    if header.is_control or header.last_offset < fetch_offset:
        return
    codec = header.compression_bits
    if codec == CompressionType.NONE:
        data, start, stop = records, pos + HEADER_SIZE, pos + header.size
    else:
        if codec > CompressionType.ZSTD:
            raise UnsupportedCompressionTypeError(
                f"{topic}-{partition}: batch at offset {header.base_offset} uses unknown "
                f"compression codec {codec}"
            )
        with memoryview(records) as view:
            data = decompress(codec, view[pos + HEADER_SIZE : pos + header.size])
        start, stop = 0, len(data)
    timestamp_type = header.timestamp_type
    _decode_batch_records(
        out,
        data,
        start,
        stop,
        header.records_count,
        header.base_offset,
        header.base_timestamp,
        header.max_timestamp if timestamp_type is TimestampType.LOG_APPEND_TIME else None,
        (topic, partition, timestamp_type, header.partition_leader_epoch),
        fetch_offset,
        key_fn,
        value_fn,
    )


def _decode_batch_records(
    out: list[ConsumerRecord],
    data: bytes,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    where: tuple[str, int, TimestampType, int],
    fetch_offset: int,
    key_fn: Any,
    value_fn: Any,
) -> None:
    """Appends the batch's records at or after ``fetch_offset`` to ``out``.

    The consumer's hot loop: the record layout of ``records._pyrecords``, decoded straight into
    ``ConsumerRecord`` tuples, with one- and two-byte varints inline (record lengths, offset
    deltas and value lengths up to 8 KB take the inline path). Every length is checked against
    the record's own length, as ``records._pyrecords`` does.
    """
    topic, partition, timestamp_type, epoch = where
    append = out.append
    new = _new_record
    cls = ConsumerRecord
    varint = decode_varint
    varlong = decode_varlong
    no_headers: tuple[Header, ...] = ()
    index = 0
    try:
        for index in range(count):
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
                    f"{topic}-{partition}: record {index} declares {length} bytes, "
                    f"{end - pos} remain in the batch"
                )
            b0 = data[pos + 1]  # skip the attributes byte
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
                raise CorruptRecordError(f"{topic}-{partition}: key length {key_length}")
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
                raise CorruptRecordError(f"{topic}-{partition}: value length {value_length}")
            if data[pos] == 0:
                headers = no_headers
                header_size = -1
                pos += 1
            else:
                headers, pos = _decode_headers(data, pos, record_end)
                # Serialized bytes (UTF-8 keys), as kafka-python counts them; -1 for none.
                header_size = (
                    sum(len(k.encode()) + (len(v) if v is not None else 0) for k, v in headers)
                    if headers
                    else -1
                )
            if pos != record_end:
                raise CorruptRecordError(
                    f"{topic}-{partition}: record {index} declares {length} bytes but its "
                    f"fields take {length + pos - record_end}"
                )
            offset = base_offset + offset_delta
            if offset < fetch_offset:
                continue
            append(
                new(
                    cls,
                    (
                        topic,
                        partition,
                        offset,
                        base_timestamp + timestamp_delta
                        if log_append_time is None
                        else log_append_time,
                        timestamp_type,
                        key if key_fn is None else key_fn(topic, key),
                        value if value_fn is None else value_fn(topic, value),
                        headers,
                        -1 if key is None else key_length,
                        -1 if value is None else value_length,
                        header_size,
                        epoch,
                    ),
                )
            )
    except IndexError:
        raise CorruptRecordError(
            f"{topic}-{partition}: truncated record {index} ({count} declared)"
        ) from None
    if pos != end:
        raise CorruptRecordError(
            f"{topic}-{partition}: {end - pos} bytes remain after the {count} records declared"
        )
