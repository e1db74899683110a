"""Encoding a run of records straight from Arrow buffers: ``encode_arrow_records``, the compiled
one from ``odradek._record_encoder`` when it is built, else ``encode_arrow_records_py`` (the
reference, which gives the same bytes, counts and errors; tests hold the two together).

The run is ``rows`` records whose key and value are rows ``base..base+rows`` of Arrow binary
columns, given as their buffers: int32 little-endian offsets (``rows + 1`` of them from
``base``), the data, and the validity bitmap (``None``: no nulls); an absent key column
(``key_offsets`` None) makes every key null. ``timestamps`` is ``None`` (every record at
``base_timestamp``) or ``rows`` int64 little-endian milliseconds.

What comes back is ``(records, count, max_timestamp)``: the records section of a v2 batch for the
first ``count`` rows (each record with its length prefix, attributes 0, timestamp delta from
``base_timestamp``, offset delta 0..count-1, key, value and no headers — the layout of
``records.record_format``), as many rows as keep the batch (61-byte header plus records)
within ``limit_bytes`` (the first row always), and the largest timestamp among them
(``base_timestamp`` at least).

Raises ``ValueError`` for buffers shorter than the rows or offsets outside the data (bad input
is an error, never a read out of bounds).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from odradek._compiled import compiled_attr
from odradek.records.batch import HEADER_SIZE
from odradek.records.record_format import encode_record

__all__ = ["EncodeArrowRecords", "encode_arrow_records", "encode_arrow_records_py"]

#: ``(rows, limit_bytes, base_timestamp, timestamps, key_offsets, key_data, key_validity,
#: key_base, value_offsets, value_data, value_validity, value_base) -> (records, count,
#: max_timestamp)``.
EncodeArrowRecords = Callable[
    [
        int,
        int,
        int,
        object,
        object,
        object,
        object,
        int,
        object,
        object,
        object,
        int,
    ],
    tuple[bytes, int, int],
]

_INT32_MAX: Final = 2**31 - 1


class _Column:
    """One binary column's views (see the module docstring)."""

    __slots__ = ("base", "data", "offsets", "validity")

    def __init__(
        self, offsets: object, data: object, validity: object, base: int, rows: int, name: str
    ) -> None:
        if base < 0:
            raise ValueError(f"{name}: negative array offset")
        raw_offsets = memoryview(offsets).cast("B")  # type: ignore[arg-type]
        self.data = memoryview(data).cast("B")  # type: ignore[arg-type]
        self.validity = None if validity is None else memoryview(validity).cast("B")  # type: ignore[arg-type]
        self.base = base
        if (base + rows + 1) * 4 > len(raw_offsets) or (
            self.validity is not None and (base + rows + 7) // 8 > len(self.validity)
        ):
            raise ValueError(f"{name}: the buffers are shorter than the rows")
        self.offsets = raw_offsets[: len(raw_offsets) // 4 * 4].cast("i")

    def field(self, row: int) -> bytes | None:
        at = self.base + row
        validity = self.validity
        if validity is not None and not (validity[at >> 3] >> (at & 7)) & 1:
            return None
        begin, end = self.offsets[at], self.offsets[at + 1]
        if begin < 0 or end < begin or end > len(self.data):
            raise ValueError("Arrow offsets outside the data buffer")
        return bytes(self.data[begin:end])


def encode_arrow_records_py(
    rows: int,
    limit_bytes: int,
    base_timestamp: int,
    timestamps: object,
    key_offsets: object,
    key_data: object,
    key_validity: object,
    key_base: int,
    value_offsets: object,
    value_data: object,
    value_validity: object,
    value_base: int,
) -> tuple[bytes, int, int]:
    """The reference ``encode_arrow_records`` (see the module docstring)."""
    if not 1 <= rows <= _INT32_MAX:
        raise ValueError("rows: 1 to 2**31-1 records")
    stamps = None
    if timestamps is not None:
        raw = memoryview(timestamps).cast("B")  # type: ignore[arg-type]
        if len(raw) < rows * 8:
            raise ValueError("timestamps: the buffer is shorter than the rows")
        stamps = raw[: rows * 8].cast("q")
    keys = (
        None
        if key_offsets is None
        else _Column(key_offsets, key_data, key_validity, key_base, rows, "key")
    )
    values = (
        None
        if value_offsets is None
        else _Column(value_offsets, value_data, value_validity, value_base, rows, "value")
    )
    encoded: list[bytes] = []
    total = 0
    max_timestamp = base_timestamp
    for row in range(rows):
        key = None if keys is None else keys.field(row)
        value = None if values is None else values.field(row)
        timestamp = base_timestamp if stamps is None else stamps[row]
        record = encode_record(row, timestamp - base_timestamp, key, value, ())
        if row and HEADER_SIZE + total + len(record) > limit_bytes:
            break
        encoded.append(record)
        total += len(record)
        max_timestamp = max(max_timestamp, timestamp)
    return b"".join(encoded), len(encoded), max_timestamp


def _encoder() -> EncodeArrowRecords:
    compiled: EncodeArrowRecords | None = compiled_attr(
        "odradek._record_encoder", "encode_arrow_records"
    )
    return compiled if compiled is not None else encode_arrow_records_py


#: The compiled encoder when built, else the reference.
encode_arrow_records: Final[EncodeArrowRecords] = _encoder()
