"""From a partition's Fetch response bytes to ``ConsumerRecord``s, and where to fetch next.

This module owns the consumer's record decoding: batch checks come from ``records.batch``, and
the records are decoded by the record format's reference loop (``records.record_format``) with
a visitor that builds ``ConsumerRecord`` tuples straight away (one object per record, not a
``Record`` then a copy: the consumer's fast path). It keeps the rules the simple consumer keeps:

- records before the fetch offset are skipped (a compressed batch, or a batch fetched whole,
  may start before it);
- control batches (transaction markers) are skipped; a read_committed fetcher has already
  dropped the batches of aborted transactions (``records.aborted``);
- a batch cut off at the end of the bytes (the broker stops at the size limit) is ignored: the
  next fetch starts at the offset after the last whole batch and gets it whole. A record larger
  than ``max.partition.fetch.bytes`` still arrives whole (KIP-74), so progress never stops.

Two record loops: ``py_decode``, the reference loop with that visitor, and ``decode``, which
runs the compiled loop of ``odradek._records`` (optional: built by setuptools where a C
compiler is) over as many batches as it accepts and hands each batch it declines to the
reference — a malformed batch (which the reference then rejects with its own error), or a
valid but unusual one (offsets or timestamps past int64). So both raise the same errors and
return the same records; ``decode`` is ``py_decode`` when the extension is missing. Keys and
values stay bytes: the fetcher applies the deserializers when ``poll`` hands records out. The
errors of batches and records name the partition: ``"<topic>-<partition>: "`` before the
message of ``records``' own error.

Pure functions; called on the fetcher thread (``decode``, ``scan``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any, Final

from odradek._compiled import compiled_attr
from odradek.client.consumer.record import ConsumerRecord
from odradek.errors import (
    CorruptRecordError,
    UnsupportedCompressionTypeError,
    UnsupportedForMessageFormatError,
)
from odradek.records.batch import (
    LOG_OVERHEAD,
    TimestampType,
    parse_header,
    read_prefix,
    validate_batch,
)
from odradek.records.record import Header
from odradek.records.record_format import RecordVisitor, read_batch_records

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
) -> list[ConsumerRecord]:
    """The records at or after ``fetch_offset`` in ``records`` (see the module docstring).

    Raises:
        CorruptRecordError: a whole batch fails its checks (its CRC when ``check_crcs``).
        UnsupportedForMessageFormatError: a batch of message format v0/v1.
        UnsupportedCompressionTypeError: codec bits 5-7.
    """
    compiled = compiled_decoder()
    if compiled is None or not _INT64_MIN <= fetch_offset <= _INT64_MAX:
        return py_decode(topic, partition, records, fetch_offset, check_crcs=check_crcs)
    out: list[ConsumerRecord] = []
    end = len(records)
    pos = 0
    with _naming_the_partition(topic, partition):
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
            _decode_batch(out, records, pos, topic, partition, fetch_offset, check_crcs)
            pos += size
    return out


def py_decode(
    topic: str,
    partition: int,
    records: bytes,
    fetch_offset: int,
    *,
    check_crcs: bool,
) -> list[ConsumerRecord]:
    """``decode`` in Python only: the reference (see the module docstring)."""
    out: list[ConsumerRecord] = []
    end = len(records)
    pos = 0
    with _naming_the_partition(topic, partition):
        while end - pos >= LOG_OVERHEAD:
            _base, size = read_prefix(records, pos)
            if size <= LOG_OVERHEAD or pos + size > end:
                break
            _decode_batch(out, records, pos, topic, partition, fetch_offset, check_crcs)
            pos += size
    return out


@contextlib.contextmanager
def _naming_the_partition(topic: str, partition: int) -> Iterator[None]:
    """Puts ``"<topic>-<partition>: "`` before the message of a batch's or record's error."""
    try:
        yield
    except (
        CorruptRecordError,
        UnsupportedCompressionTypeError,
        UnsupportedForMessageFormatError,
    ) as error:
        raise type(error)(f"{topic}-{partition}: {error}") from None


def _decode_batch(
    out: list[ConsumerRecord],
    records: bytes,
    pos: int,
    topic: str,
    partition: int,
    fetch_offset: int,
    check_crcs: bool,
) -> None:
    """Appends the records at or after ``fetch_offset`` of the whole batch at ``pos``."""
    header = validate_batch(records, pos) if check_crcs else parse_header(records, pos)
    if header.is_control or header.last_offset < fetch_offset:
        return
    visit = _record_builder(
        out, topic, partition, header.timestamp_type, header.partition_leader_epoch
    )
    read_batch_records(records, header, pos, visit, min_offset=fetch_offset)


def _record_builder(
    out: list[ConsumerRecord],
    topic: str,
    partition: int,
    timestamp_type: TimestampType,
    epoch: int,
) -> RecordVisitor:
    """The visitor that appends one batch's records to ``out`` as ``ConsumerRecord`` tuples
    (built with ``tuple.__new__``: the named tuple's own ``__new__`` is a Python call)."""
    append = out.append
    new = _new_record
    cls = ConsumerRecord
    size = len  # a closure variable: found faster than the builtin

    def visit(
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[Header, ...],
    ) -> None:
        append(
            new(
                cls,
                (
                    topic,
                    partition,
                    offset,
                    timestamp,
                    timestamp_type,
                    key,
                    value,
                    headers,
                    -1 if key is None else size(key),
                    -1 if value is None else size(value),
                    _header_size(headers) if headers else -1,
                    epoch,
                ),
            )
        )

    return visit


def _header_size(headers: tuple[Header, ...]) -> int:
    """Serialized bytes of the headers' keys (UTF-8) and values, as kafka-python counts them."""
    return sum(len(key.encode()) + (0 if value is None else len(value)) for key, value in headers)
