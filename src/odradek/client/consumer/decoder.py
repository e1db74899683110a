"""From a partition's Fetch response bytes to ``ConsumerRecord``s, and where to fetch next.

This module owns the consumer's record decoding (it reuses ``records.codec`` for each batch:
CRC check, decompression, the record loop) and the rules the simple consumer keeps too:

- records before the fetch offset are skipped (a compressed batch, or a batch fetched whole,
  may start before it);
- control batches (transaction markers) are skipped, and so are aborted-transaction filtering's
  concerns: ``read_uncommitted`` only;
- a batch cut off at the end of the bytes (the broker stops at the size limit) is ignored: the
  next fetch starts at the offset after the last whole batch and gets it whole. A record larger
  than ``max.partition.fetch.bytes`` still arrives whole (KIP-74), so progress never stops.

Pure functions; called on the application thread (``decode``) and on the fetcher thread
(``scan``).
"""

from __future__ import annotations

from typing import Any

from odradek.client.consumer.record import ConsumerRecord
from odradek.records.batch import LOG_OVERHEAD, TimestampType, parse_header, read_prefix
from odradek.records.codec import decode_batch, decode_records

__all__ = ["decode", "scan"]

_new_record = tuple.__new__


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
        Exception: whatever a deserializer raises (``SerializationError`` and kin).
    """
    out: list[ConsumerRecord] = []
    append = out.append
    end = len(records)
    pos = 0
    key_fn = key_deserializer.deserialize if key_deserializer is not None else None
    value_fn = value_deserializer.deserialize if value_deserializer is not None else None
    cls = ConsumerRecord
    new = _new_record
    while end - pos >= LOG_OVERHEAD:
        _base, size = read_prefix(records, pos)
        if size <= LOG_OVERHEAD or pos + size > end:
            break
        if check_crcs:
            batch = decode_batch(records, pos)
            header, decoded = batch.header, batch.records
        else:
            header = parse_header(records, pos)
            decoded = decode_records(records, header, pos)
        pos += size
        if header.is_control or header.last_offset < fetch_offset:
            continue
        timestamp_type: TimestampType = header.timestamp_type
        epoch = header.partition_leader_epoch
        for record in decoded:
            offset = record.offset
            if offset < fetch_offset:
                continue
            key = record.key
            value = record.value
            headers = record.headers
            header_size = -1
            if headers:
                header_size = sum(len(k) + (len(v) if v is not None else 0) for k, v in headers)
            append(
                new(
                    cls,
                    (
                        topic,
                        partition,
                        offset,
                        record.timestamp,
                        timestamp_type,
                        key if key_fn is None else key_fn(topic, key),
                        value if value_fn is None else value_fn(topic, value),
                        headers,
                        -1 if key is None else len(key),
                        -1 if value is None else len(value),
                        header_size,
                        epoch,
                    ),
                )
            )
    return out
