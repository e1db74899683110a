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
stops decoding (``add_batches`` returns the offset to fetch next). Malformed records raise
``CorruptRecordError``; CRCs are checked when asked.
"""

from __future__ import annotations

import functools
import sys
from array import array
from dataclasses import dataclass, replace
from typing import Any, Protocol

from odradek._compiled import compiled_attr
from odradek._types import ReadableBuffer
from odradek.errors import CorruptRecordError
from odradek.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    CompressionType,
    TimestampType,
    parse_header,
    read_prefix,
    validate_batch,
)
from odradek.records.compression import decompress
from odradek.records.varint import decode_varint, decode_varlong

__all__ = ["ColumnBuilder", "Columns", "PyColumnBuilder", "columns_builder"]


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
                self._add_batch(view, pos, size, header, min_offset, end_offset)
            pos += size
            if next_offset >= end_offset:
                break
        return next_offset

    def _add_batch(
        self,
        view: memoryview,
        pos: int,
        size: int,
        header: BatchHeader,
        min_offset: int,
        end_offset: int,
    ) -> None:
        body = view[pos + HEADER_SIZE : pos + size]
        if header.compression != CompressionType.NONE:
            data: bytes = decompress(header.compression, body)
        else:
            data = bytes(body)
        log_append = header.timestamp_type == TimestampType.LOG_APPEND_TIME
        timestamp_type = 1 if log_append else 0
        base_offset = header.base_offset
        base_timestamp = header.base_timestamp
        pos = 0
        limit = len(data)
        for _ in range(header.records_count):
            try:
                length, pos = decode_varint(data, pos)
                record_end = pos + length
                if length < 0 or record_end > limit:
                    raise CorruptRecordError(f"record length {length} overruns its batch")
                pos += 1  # attributes
                ts_delta, pos = decode_varlong(data, pos)
                offset_delta, pos = decode_varint(data, pos)
                key_len, pos = decode_varint(data, pos)
                key = None if key_len < 0 else data[pos : pos + key_len]
                pos += max(key_len, 0)
                value_len, pos = decode_varint(data, pos)
                value = None if value_len < 0 else data[pos : pos + value_len]
                pos += max(value_len, 0)
                count, pos = decode_varint(data, pos)
                headers: list[tuple[bytes, bytes | None]] = []
                for _h in range(count):
                    hk_len, pos = decode_varint(data, pos)
                    if hk_len < 0:
                        raise CorruptRecordError("a record header has a null key")
                    hk = data[pos : pos + hk_len]
                    pos += hk_len
                    hv_len, pos = decode_varint(data, pos)
                    hv = None if hv_len < 0 else data[pos : pos + hv_len]
                    pos += max(hv_len, 0)
                    headers.append((hk, hv))
                if pos != record_end:
                    raise CorruptRecordError("a record's fields do not fill its length")
            except (IndexError, ValueError) as error:
                raise CorruptRecordError(f"malformed record in batch {base_offset}") from error
            offset = base_offset + offset_delta
            if offset < min_offset or offset >= end_offset:
                continue
            self._offsets.append(offset)
            self._timestamps.append(
                header.max_timestamp if log_append else base_timestamp + ts_delta
            )
            self._types.append(timestamp_type)
            self._keys.append(key)
            self._values.append(value)
            if self._headers:
                for hk, hv in headers:
                    self._header_keys.append(hk)
                    self._header_values.append(hv)
                self._header_starts.append(len(self._header_keys))

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
