"""Column-wise decoding of v2 record batches: fetched bytes → Arrow-layout buffers.

A ``ColumnBuilder`` takes whole record batches (as fetched: possibly compressed, possibly
starting before the wanted range, control batches included) and appends the records whose
offsets lie in ``[min_offset, end_offset)`` to growing column buffers laid out the way Apache
Arrow lays out its arrays — so a caller can wrap them as Arrow arrays without touching a record
again (``odradek.spark`` does, through ``pyarrow.Array.from_buffers``). No pyarrow here: this
module is pure, and ``columns_builder()`` hands out the compiled builder (``odradek._columns``)
when it is built, else the Python one below, which is the reference for its behaviour.

``Columns`` (what ``finish()`` returns; every integer little-endian, as Arrow wants):

- ``count``: records decoded;
- ``offsets``, ``timestamps``: int64 × count (timestamps in ms: CreateTime from the batch's base
  timestamp + the record's delta; LogAppendTime batches give every record the batch's max
  timestamp); ``timestamp_types``: int32 × count (0 CreateTime, 1 LogAppendTime);
- ``key_validity``, ``key_offsets``, ``key_data``: a binary column — validity bitmap (bit i,
  least-significant first, set = not null; ``None`` when no key is null), int32 × (count + 1)
  offsets into ``key_data``; the same three for ``value``;
- with headers: ``header_offsets`` int32 × (count + 1) (each record's first header's index),
  ``header_count``, ``header_key_offsets`` / ``header_key_data`` (UTF-8 strings; never null),
  ``header_value_validity`` / ``header_value_offsets`` / ``header_value_data``.
  Without headers those fields are ``None``/0.

Rules kept (the same as the consumers'): control batches are skipped; records before
``min_offset`` or at/after ``end_offset`` are skipped; a batch cut off at the end of the bytes
stops decoding (``add_batches`` returns the offset to fetch next). Records are decoded by the
record format's reference loop (``records.record_format``), so malformed records raise its
errors (``CorruptRecordError``; ``UnsupportedCompressionTypeError`` for codec bits 5–7); the
compiled builder hands a batch it finds malformed to ``reference_error``, which raises the
reference's error for it. CRCs are checked when asked.
"""

from __future__ import annotations

import functools
import sys
from array import array
from dataclasses import dataclass, replace
from typing import Any, Protocol

from odradek._compiled import compiled_attr
from odradek._types import ReadableBuffer
from odradek.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    TimestampType,
    parse_header,
    read_prefix,
    validate_batch,
)
from odradek.records.record import Header
from odradek.records.record_format import RecordVisitor, read_batch_records

__all__ = [
    "ColumnBuilder",
    "Columns",
    "PyColumnBuilder",
    "columns_builder",
    "reference_error",
]


@dataclass(frozen=True, slots=True)
class Columns:
    """Arrow-layout buffers of the decoded records (see the module docstring)."""

    count: int
    offsets: bytes
    timestamps: bytes
    timestamp_types: bytes
    key_validity: bytes | None
    key_offsets: bytes
    key_data: bytes
    value_validity: bytes | None
    value_offsets: bytes
    value_data: bytes
    header_offsets: bytes | None = None
    header_count: int = 0
    header_key_offsets: bytes | None = None
    header_key_data: bytes | None = None
    header_value_validity: bytes | None = None
    header_value_offsets: bytes | None = None
    header_value_data: bytes | None = None


class ColumnBuilder(Protocol):
    """Accumulates records column-wise (see the module docstring)."""

    def add_batches(
        self, data: ReadableBuffer, min_offset: int, end_offset: int, check_crcs: bool
    ) -> int:
        """Decodes the batches in ``data`` (a Fetch response's records bytes), keeping the
        records with offsets in ``[min_offset, end_offset)``; returns the offset after the
        last whole batch read (``min_offset`` when there is none), i.e. where to fetch next.

        Raises:
            CorruptRecordError: a CRC mismatch (when ``check_crcs``) or a malformed record.
        """
        ...

    @property
    def count(self) -> int:
        """Records accumulated so far."""
        ...

    def finish(self) -> Columns:
        """The buffers; the builder must not be used afterwards."""
        ...


def columns_builder(include_headers: bool) -> ColumnBuilder:
    """The fastest builder available: compiled when ``odradek._columns`` is built."""
    compiled = _compiled()
    if compiled is None:
        return PyColumnBuilder(include_headers)
    builder: ColumnBuilder = compiled(include_headers)
    return builder


@functools.cache
def _compiled() -> Any:
    """The compiled builder class, or None (looked up once; by name, as it is optional)."""
    return compiled_attr(COMPILED_MODULE, "ColumnBuilder")


#: The optional extension module holding the compiled ``ColumnBuilder``.
COMPILED_MODULE = "odradek._columns"


class PyColumnBuilder:
    """The reference ``ColumnBuilder``, in Python."""

    def __init__(self, include_headers: bool) -> None:
        self._headers = include_headers
        self._offsets = array("q")
        self._timestamps = array("q")
        self._types = array("i")
        self._keys: list[bytes | None] = []
        self._values: list[bytes | None] = []
        self._header_starts = array("i", [0])
        self._header_keys: list[bytes] = []
        self._header_values: list[bytes | None] = []

    @property
    def count(self) -> int:
        return len(self._offsets)

    def add_batches(
        self, data: ReadableBuffer, min_offset: int, end_offset: int, check_crcs: bool
    ) -> int:
        view = memoryview(data)
        end = len(view)
        pos = 0
        next_offset = min_offset
        while end - pos >= LOG_OVERHEAD:
            _base, size = read_prefix(view, pos)
            if size < HEADER_SIZE or pos + size > end:
                break  # cut off at the end of the fetch (or too short to be a batch)
            header = validate_batch(view, pos) if check_crcs else parse_header(view, pos)
            next_offset = max(next_offset, header.last_offset + 1)
            if (
                not header.is_control
                and header.last_offset >= min_offset
                and header.base_offset < end_offset
            ):
                self._add_batch(view, pos, header, min_offset, end_offset)
            pos += size
            if next_offset >= end_offset:
                break
        return next_offset

    def _add_batch(
        self,
        view: memoryview,
        pos: int,
        header: BatchHeader,
        min_offset: int,
        end_offset: int,
    ) -> None:
        read_batch_records(
            view,
            header,
            pos,
            self._visitor(1 if header.timestamp_type is TimestampType.LOG_APPEND_TIME else 0),
            min_offset=min_offset,
            end_offset=end_offset,
        )

    def _visitor(self, timestamp_type: int) -> RecordVisitor:
        """The visitor that appends a record of one batch to the columns."""
        add_offset = self._offsets.append
        add_timestamp = self._timestamps.append
        add_type = self._types.append
        add_key = self._keys.append
        add_value = self._values.append
        include_headers = self._headers
        header_keys = self._header_keys
        header_values = self._header_values
        add_header_start = self._header_starts.append

        def visit(
            offset: int,
            timestamp: int,
            key: bytes | None,
            value: bytes | None,
            headers: tuple[Header, ...],
        ) -> None:
            add_offset(offset)
            add_timestamp(timestamp)
            add_type(timestamp_type)
            add_key(key)
            add_value(value)
            if include_headers:
                for header_key, header_value in headers:
                    header_keys.append(header_key.encode())
                    header_values.append(header_value)
                add_header_start(len(header_keys))

        return visit

    def finish(self) -> Columns:
        key_validity, key_offsets, key_data = _binary(self._keys)
        value_validity, value_offsets, value_data = _binary(self._values)
        columns = Columns(
            count=len(self._offsets),
            offsets=_le(self._offsets),
            timestamps=_le(self._timestamps),
            timestamp_types=_le(self._types),
            key_validity=key_validity,
            key_offsets=key_offsets,
            key_data=key_data,
            value_validity=value_validity,
            value_offsets=value_offsets,
            value_data=value_data,
        )
        if not self._headers:
            return columns
        _none, hk_offsets, hk_data = _binary(list(self._header_keys))
        hv_validity, hv_offsets, hv_data = _binary(self._header_values)
        return replace(
            columns,
            header_offsets=_le(self._header_starts),
            header_count=len(self._header_keys),
            header_key_offsets=hk_offsets,
            header_key_data=hk_data,
            header_value_validity=hv_validity,
            header_value_offsets=hv_offsets,
            header_value_data=hv_data,
        )


def reference_error(buf: ReadableBuffer, pos: int) -> None:
    """Raises what the reference raises for the records of the batch at ``pos`` (its header
    parsed, its CRC not checked), keeping no record. The compiled builder calls it for a batch
    whose records it finds malformed, so that its errors are the reference's own; it returns
    only if the reference accepts the batch (the compiled builder then raises a
    CorruptRecordError of its own, and the tests fail on it)."""
    read_batch_records(buf, parse_header(buf, pos), pos, _keep_none)


def _keep_none(*_record: object) -> None:
    """A visitor that keeps nothing."""


def _le(values: array) -> bytes:  # type: ignore[type-arg]
    if sys.byteorder != "little":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _binary(items: list[bytes | None]) -> tuple[bytes | None, bytes, bytes]:
    """(validity bitmap or None, int32 offsets, data) of a binary column."""
    offsets = array("i", [0])
    total = 0
    nulls = False
    for item in items:
        if item is None:
            nulls = True
        else:
            total += len(item)
        offsets.append(total)
    data = b"".join(item for item in items if item is not None)
    validity = None
    if nulls:
        bits = bytearray((len(items) + 7) // 8)
        for index, item in enumerate(items):
            if item is not None:
                bits[index >> 3] |= 1 << (index & 7)
        validity = bytes(bits)
    return validity, _le(offsets), data
