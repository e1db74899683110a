"""Which records of a batch survive cleaning, and the batch rewritten around them.

Rules for one record of an ordinary (non-control, non-transactional) batch:

- no key: removed (a compacted log keeps records by key; produce refuses keyless records, so
  these only come from a topic whose policy changed to ``compact``);
- a later record of the same key is in the offset map: removed;
- a tombstone (null value): kept until its batch's **delete horizon** has passed. The horizon
  is written the first time a pass keeps the tombstone: ``now + delete.retention.ms`` (KIP-534,
  below). A consumer that reads the log from the start within ``delete.retention.ms`` of that
  pass therefore still sees the delete;
- otherwise kept.

Control batches (transaction markers) and transactional batches are copied unchanged, and
their records stay out of the offset map (an aborted record must not hide a committed one).

Delete horizon, KIP-534 style, rather than per-segment bookkeeping: attribute bit 6 of the
batch says the batch's ``base_timestamp`` holds the horizon, and record timestamp deltas are
taken from it. The horizon travels with the batch through merges and restarts, needs no state
beside the log, and is exactly "``delete.retention.ms`` after the pass that first kept the
tombstone". (Kafka before KIP-534 derived it from segment modification times, which merges
and copies disturb.)

Rewriting keeps the batch's base offset, ``last_offset_delta`` (the batch still spans its
original offsets: removed records leave gaps, and a consumer's next fetch offset, last offset
+ 1, stays the same), producer fields, codec and ``max_timestamp`` (retention by time is not
moved by compaction); it recomputes ``records_count``, the length, the records (each with its
original offset delta) and the CRC32C. A batch whose records all go disappears — unless the
caller asks to keep it (the last batch of a cleaned segment, see ``Cleaner``): then it stays as
a header with no records and no compression, as Kafka keeps empty batches.

Record layout (see ``records.record_format``; varints are zigzag)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint, key | valueLength varint, value | headerCount varint, headers
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from odradek.records.batch import (
    CRC_OFFSET,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    CompressionType,
    compute_crc,
    encode_header,
)
from odradek.records.codec import decode_records
from odradek.records.compression import compress
from odradek.records.record import Header, Record
from odradek.records.varint import encode_varint, encode_varlong

#: Attribute bit 6: ``base_timestamp`` is the delete horizon (KIP-534).
DELETE_HORIZON_BIT = 0x40
_COMPRESSION_MASK = 0x07
_MAX_TIMESTAMP = 2**63 - 1
_NULL = encode_varint(-1)
_UINT32 = struct.Struct(">I")

#: The offset-map lookup: the latest offset of a key, or -1.
LatestOffset = Callable[[bytes], int]


class Outcome(enum.Enum):
    KEPT = "kept"  # every record survives: the original bytes are kept
    REWRITTEN = "rewritten"  # some records go, or a delete horizon is set
    EMPTIED = "emptied"  # no record survives; kept as an empty batch (keep_empty)
    REMOVED = "removed"  # no record survives; the batch disappears


@dataclass(frozen=True, slots=True)
class FilteredBatch:
    """The result of filtering one batch."""

    outcome: Outcome
    #: The bytes to write (None when removed).
    data: bytes | None
    #: Its header (None when removed).
    header: BatchHeader | None
    records_removed: int
    #: The delete horizon of kept tombstones, -1 when the batch keeps none.
    tombstone_horizon_ms: int


def delete_horizon(header: BatchHeader) -> int | None:
    """The batch's delete horizon, or None when it has none."""
    return header.base_timestamp if header.attributes & DELETE_HORIZON_BIT else None


def filter_batch(
    data: bytes,
    header: BatchHeader,
    latest_offset: LatestOffset,
    *,
    now_ms: int,
    delete_retention_ms: int,
    keep_empty: bool = False,
) -> FilteredBatch:
    """Applies the rules of the module docstring to one whole, CRC-checked batch.

    Args:
        data: exactly the batch's bytes.
        latest_offset: the offset map's lookup.
        keep_empty: keep the batch as an empty header when every record goes.

    Raises:
        CorruptRecordError, UnsupportedCompressionTypeError: undecodable records.
    """
    if header.is_control or header.is_transactional:
        return FilteredBatch(Outcome.KEPT, data, header, 0, -1)
    records = decode_records(data, header)
    horizon = delete_horizon(header)
    kept: list[Record] = []
    kept_tombstone = False
    for record in records:
        key = record.key
        if key is None or latest_offset(key) > record.offset:
            continue
        if record.value is None:
            if horizon is not None and now_ms >= horizon:
                continue
            kept_tombstone = True
        kept.append(record)
    removed = len(records) - len(kept)
    if kept_tombstone and horizon is None:
        horizon = min(now_ms + max(delete_retention_ms, 0), _MAX_TIMESTAMP)
        new_horizon = True
    else:
        new_horizon = False
    tombstone_horizon = horizon if kept_tombstone and horizon is not None else -1
    if removed == 0 and not new_horizon:
        return FilteredBatch(Outcome.KEPT, data, header, 0, tombstone_horizon)
    if not kept:
        if not keep_empty:
            return FilteredBatch(Outcome.REMOVED, None, None, removed, -1)
        empty, empty_header = empty_batch(header)
        return FilteredBatch(Outcome.EMPTIED, empty, empty_header, removed, -1)
    rebuilt, rebuilt_header = rebuild_batch(header, kept, horizon)
    return FilteredBatch(Outcome.REWRITTEN, rebuilt, rebuilt_header, removed, tombstone_horizon)


def rebuild_batch(
    header: BatchHeader, records: Sequence[Record], horizon: int | None
) -> tuple[bytes, BatchHeader]:
    """A batch with ``header``'s offsets, producer fields, codec and max timestamp holding
    ``records``; with a horizon, bit 6 is set and ``base_timestamp`` is the horizon."""
    attributes = header.attributes & ~DELETE_HORIZON_BIT
    base_timestamp = header.base_timestamp
    if horizon is not None:
        attributes |= DELETE_HORIZON_BIT
        base_timestamp = horizon
    base_offset = header.base_offset
    payload = b"".join(
        encode_record(
            record.offset - base_offset,
            record.timestamp - base_timestamp,
            record.key,
            record.value,
            record.headers,
        )
        for record in records
    )
    codec = header.compression_bits
    if codec != CompressionType.NONE:
        payload = compress(codec, payload)
    new_header = header._replace(
        batch_length=HEADER_SIZE - LOG_OVERHEAD + len(payload),
        attributes=attributes,
        base_timestamp=base_timestamp,
        records_count=len(records),
        crc=0,
    )
    return _sealed(new_header, payload)


def empty_batch(header: BatchHeader) -> tuple[bytes, BatchHeader]:
    """``header`` with no records (and so no codec and no horizon)."""
    new_header = header._replace(
        batch_length=HEADER_SIZE - LOG_OVERHEAD,
        attributes=header.attributes & ~(DELETE_HORIZON_BIT | _COMPRESSION_MASK),
        records_count=0,
        crc=0,
    )
    return _sealed(new_header, b"")


def _sealed(header: BatchHeader, payload: bytes) -> tuple[bytes, BatchHeader]:
    batch = bytearray(encode_header(header))
    batch += payload
    crc = compute_crc(batch, 0, len(batch))
    _UINT32.pack_into(batch, CRC_OFFSET, crc)
    return bytes(batch), header._replace(crc=crc)


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header],
) -> bytes:
    """One record, length prefix included (layout in the module docstring)."""
    parts = [b"\x00", encode_varlong(timestamp_delta), encode_varint(offset_delta)]
    for field in (key, value):
        if field is None:
            parts.append(_NULL)
        else:
            parts += (encode_varint(len(field)), field)
    parts.append(encode_varint(len(headers)))
    for header_key, header_value in headers:
        name = header_key.encode()
        parts += (encode_varint(len(name)), name)
        if header_value is None:
            parts.append(_NULL)
        else:
            parts += (encode_varint(len(header_value)), header_value)
    body = b"".join(parts)
    return encode_varint(len(body)) + body
