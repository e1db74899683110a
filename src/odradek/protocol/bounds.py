"""Checks every length and count in a request body against the bytes present, before kio reads.

Why this exists: kio 0.6.5's native readers reserve memory for an array from its declared
count before reading any element. A 12-byte Metadata request declaring 2**31 - 1 topics makes
it ask for 16 GiB, and when the allocation fails the Rust runtime aborts the whole process.
A peer must never be able to do that, so ``check_request_body`` walks the body first, driven by
the same kio schema, and rejects any array count (and any string, bytes or tagged-field size)
larger than the bytes left in the frame. Each array element takes at least one byte, so a
count that passes bounds kio's reservation by the frame size.

This module owns that walk. It builds no objects: it only moves an offset, and the checker
for each schema is compiled once into closures. The byte forms follow Kafka's protocol guide:
non-flexible strings have an int16 length, bytes and records an int32 length, arrays an int32
count (-1 = null); flexible versions use uvarint ``n + 1`` for all three (0 = null), nullable
structs a leading int8 (-1 = null), and end every struct with tagged fields.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from dataclasses import Field, fields
from typing import Any, Final, TypeAlias

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from kio.static.protocol import Entity

from odradek.protocol.wire import read_uvarint

#: Moves over one value in ``buffer[offset:end]`` and returns the offset after it.
#: Raises ValueError when the value does not fit.
Checker: TypeAlias = Callable[[bytes, int, int], int]

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")

_FIXED_SIZES: Final = {
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}


def check_request_body(schema: type[Entity], buffer: bytes, offset: int) -> int:
    """Walks a body of ``schema`` in ``buffer`` from ``offset``; returns the offset after it.

    Raises:
        ValueError: a length, count or size runs past the end of ``buffer``, or is invalid.
    """
    return _entity_checker(schema)(buffer, offset, len(buffer))


def _fixed(size: int) -> Checker:
    def check(buffer: bytes, offset: int, end: int) -> int:
        offset += size
        if offset > end:
            raise ValueError("buffer is exhausted")
        return offset

    return check


def _sized(length: int, offset: int, end: int, what: str) -> int:
    if length < -1:
        raise ValueError(f"negative {what} length {length}")
    if length > 0:
        offset += length
        if offset > end:
            raise ValueError(f"{what} of {length} bytes runs past the end")
    return offset


def _legacy_string(buffer: bytes, offset: int, end: int) -> int:
    if offset + 2 > end:
        raise ValueError("buffer is exhausted")
    (length,) = _INT16.unpack_from(buffer, offset)
    return _sized(length, offset + 2, end, "string")


def _legacy_bytes(buffer: bytes, offset: int, end: int) -> int:
    if offset + 4 > end:
        raise ValueError("buffer is exhausted")
    (length,) = _INT32.unpack_from(buffer, offset)
    return _sized(length, offset + 4, end, "bytes")


def _compact_bytes(buffer: bytes, offset: int, end: int) -> int:
    length_plus_one, offset = read_uvarint(buffer, offset)
    return _sized(length_plus_one - 1, offset, end, "compact bytes")


def _primitive(kafka_type: str, flexible: bool) -> Checker:
    size = _FIXED_SIZES.get(kafka_type)
    if size is not None:
        return _fixed(size)
    if kafka_type == "string":
        return _compact_bytes if flexible else _legacy_string
    if kafka_type in ("bytes", "records"):
        return _compact_bytes if flexible else _legacy_bytes
    raise TypeError(f"no bounds checker for kafka type {kafka_type!r}")


def _array(element: Checker, flexible: bool) -> Checker:
    # Every element takes at least one byte: a larger count cannot be honest, and is exactly
    # what would make kio reserve memory for it.
    def check_compact(buffer: bytes, offset: int, end: int) -> int:
        count_plus_one, offset = read_uvarint(buffer, offset)
        if count_plus_one - 1 > end - offset:
            raise ValueError(f"array count {count_plus_one - 1} exceeds the bytes left")
        for _ in range(count_plus_one - 1):
            offset = element(buffer, offset, end)
        return offset

    def check_legacy(buffer: bytes, offset: int, end: int) -> int:
        if offset + 4 > end:
            raise ValueError("buffer is exhausted")
        (count,) = _INT32.unpack_from(buffer, offset)
        offset += 4
        if count > end - offset or count < -1:
            raise ValueError(f"array count {count} does not fit the {end - offset} bytes left")
        for _ in range(count):
            offset = element(buffer, offset, end)
        return offset

    return check_compact if flexible else check_legacy


def _nullable_entity(entity: Checker) -> Checker:
    def check(buffer: bytes, offset: int, end: int) -> int:
        if offset >= end:
            raise ValueError("buffer is exhausted")
        (marker,) = _INT8.unpack_from(buffer, offset)
        if marker < 0:
            return offset + 1
        return entity(buffer, offset + 1, end)

    return check


def _fixed_array(element_size: int, flexible: bool) -> Checker:
    # Elements of one fixed size (int32 arrays, Fetch's partition structs): checked in O(1).
    # A (hypothetical) empty struct still counts as one byte, to keep counts bounded.
    element_size = max(element_size, 1)

    def check_compact(buffer: bytes, offset: int, end: int) -> int:
        count_plus_one, offset = read_uvarint(buffer, offset)
        if count_plus_one > 1:
            offset += (count_plus_one - 1) * element_size
            if offset > end:
                raise ValueError(f"array of {count_plus_one - 1} runs past the end")
        return offset

    def check_legacy(buffer: bytes, offset: int, end: int) -> int:
        if offset + 4 > end:
            raise ValueError("buffer is exhausted")
        (count,) = _INT32.unpack_from(buffer, offset)
        offset += 4
        if count < -1:
            raise ValueError(f"negative array count {count}")
        if count > 0:
            offset += count * element_size
            if offset > end:
                raise ValueError(f"array of {count} runs past the end")
        return offset

    return check_compact if flexible else check_legacy


def _field_checker(field: Field[Any], flexible: bool, tagged: bool) -> Checker:
    field_class = classify_field(field)
    if isinstance(field_class, PrimitiveTupleField):
        kafka_type = get_schema_field_type(field)
        size = _FIXED_SIZES.get(kafka_type)
        if size is not None:
            return _fixed_array(size, flexible)
        return _array(_primitive(kafka_type, flexible), flexible)
    if isinstance(field_class, PrimitiveField):
        return _primitive(get_schema_field_type(field), flexible)
    if isinstance(field_class, EntityTupleField):
        size = _fixed_entity_size(field_class.type_)
        if size is not None:
            return _fixed_array(size, flexible)
        return _array(_entity_checker(field_class.type_), flexible)
    checker = _entity_checker(field_class.type_)
    if not tagged and is_optional(field):
        checker = _nullable_entity(checker)
    return checker


@functools.cache
def _fixed_size_field(field: Field[Any]) -> int | None:
    if get_field_tag(field) is not None:
        return None
    field_class = classify_field(field)
    if isinstance(field_class, PrimitiveField):
        return _FIXED_SIZES.get(get_schema_field_type(field))
    if isinstance(field_class, EntityField) and not is_optional(field):
        return _fixed_entity_size(field_class.type_)
    return None


@functools.cache
def _fixed_entity_size(schema: type[Entity]) -> int | None:
    """The encoded size of ``schema`` if every value has the same size, else ``None``."""
    if schema.__flexible__:
        return None  # tagged fields make every flexible struct variable
    total = 0
    for field in fields(schema):
        size = _fixed_size_field(field)
        if size is None:
            return None
        total += size
    return total


def _run_all(checkers: tuple[Checker, ...]) -> Checker:
    # Unrolled for the common short structs: a loop costs more than the calls it makes.
    if len(checkers) == 2:
        first, second = checkers

        def check_two(buffer: bytes, offset: int, end: int) -> int:
            return second(buffer, first(buffer, offset, end), end)

        return check_two
    if len(checkers) == 3:
        first, second, third = checkers

        def check_three(buffer: bytes, offset: int, end: int) -> int:
            return third(buffer, second(buffer, first(buffer, offset, end), end), end)

        return check_three

    def check(buffer: bytes, offset: int, end: int) -> int:
        for checker in checkers:
            offset = checker(buffer, offset, end)
        return offset

    return check


def _tagged_fields(known: dict[int, Checker]) -> Checker:
    def check(buffer: bytes, offset: int, end: int) -> int:
        count, offset = read_uvarint(buffer, offset)
        if count > end - offset:
            raise ValueError(f"{count} tagged fields exceed the {end - offset} bytes left")
        for _ in range(count):
            tag, offset = read_uvarint(buffer, offset)
            size, offset = read_uvarint(buffer, offset)
            value_end = offset + size
            if value_end > end:
                raise ValueError(f"tagged field {tag} of {size} bytes runs past the end")
            checker = known.get(tag)
            if checker is not None:
                checker(buffer, offset, value_end)
            offset = value_end
        return offset

    return check


@functools.cache
def _entity_checker(schema: type[Entity]) -> Checker:
    flexible = bool(schema.__flexible__)
    checkers: list[Checker] = []
    fixed_run = 0
    tagged: dict[int, Checker] = {}
    for field in fields(schema):
        tag = get_field_tag(field)
        if tag is not None:
            tagged[int(tag)] = _field_checker(field, flexible, tagged=True)
            continue
        kafka_type = field.metadata.get("kafka_type")
        size = _FIXED_SIZES.get(kafka_type) if isinstance(kafka_type, str) else None
        if size is not None and not isinstance(classify_field(field), PrimitiveTupleField):
            fixed_run += size  # merge runs of fixed-size fields into one bounds check
            continue
        if fixed_run:
            checkers.append(_fixed(fixed_run))
            fixed_run = 0
        checkers.append(_field_checker(field, flexible, tagged=False))
    if fixed_run:
        checkers.append(_fixed(fixed_run))
    if flexible:
        checkers.append(_tagged_fields(tagged))
    if len(checkers) == 1:
        return checkers[0]
    return _run_all(tuple(checkers))
