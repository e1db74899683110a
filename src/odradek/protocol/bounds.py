"""Checks every length and count in a request body against the bytes present, before kio reads.

Why this exists: kio 0.6.5's native readers reserve memory for an array from its declared
count before reading any element. A 12-byte Metadata request declaring 2**31 - 1 topics makes
it ask for 16 GiB, and when the allocation fails the Rust runtime aborts the whole process.
A peer must never be able to do that, so ``check_request_body`` walks the body first, driven by
the same kio schema, and rejects any array count (and any string, bytes or tagged-field size)
larger than the bytes left in the frame. Each array element takes at least one byte, so a
count that passes bounds kio's reservation by the frame size.

The same walk refuses what kio would let through but no handler can use: a null (length or
count -1, compact 0) where the schema says the field is not nullable — kio reads it as ``None``
whatever the schema says — and negative lengths and counts other than -1. Which fields are
nullable comes from the schema's types (``str | None``, ``tuple[...] | None``), the same types
kio generates from Kafka's ``nullableVersions``.

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
from types import NoneType, UnionType
from typing import Any, Final, TypeAlias, Union, get_args, get_origin

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


def _null_refused(name: str) -> ValueError:
    return ValueError(f"null {name} where the schema says it is not nullable")


def _variable(kafka_type: str, flexible: bool, nullable: bool, name: str) -> Checker:
    """A string, bytes or records value: a length (or compact ``length + 1``), then bytes."""
    what = f"{kafka_type} {name}"
    if flexible:

        def check_compact(buffer: bytes, offset: int, end: int) -> int:
            length_plus_one, offset = read_uvarint(buffer, offset)
            if length_plus_one == 0 and not nullable:
                raise _null_refused(what)
            return _sized(length_plus_one - 1, offset, end, what)

        return check_compact
    prefix = _INT16 if kafka_type == "string" else _INT32
    prefix_size = prefix.size

    def check_legacy(buffer: bytes, offset: int, end: int) -> int:
        if offset + prefix_size > end:
            raise ValueError("buffer is exhausted")
        (length,) = prefix.unpack_from(buffer, offset)
        if length == -1 and not nullable:
            raise _null_refused(what)
        return _sized(length, offset + prefix_size, end, what)

    return check_legacy


def _primitive(kafka_type: str, flexible: bool, nullable: bool, name: str) -> Checker:
    size = _FIXED_SIZES.get(kafka_type)
    if size is not None:
        return _fixed(size)
    if kafka_type in ("string", "bytes", "records"):
        return _variable(kafka_type, flexible, nullable, name)
    raise TypeError(f"no bounds checker for kafka type {kafka_type!r}")


def _array(element: Checker, flexible: bool, nullable: bool, name: str) -> Checker:
    # Every element takes at least one byte: a larger count cannot be honest, and is exactly
    # what would make kio reserve memory for it.
    def check_compact(buffer: bytes, offset: int, end: int) -> int:
        count_plus_one, offset = read_uvarint(buffer, offset)
        if count_plus_one == 0 and not nullable:
            raise _null_refused(f"array {name}")
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
        if count == -1 and not nullable:
            raise _null_refused(f"array {name}")
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


def _fixed_array(element_size: int, flexible: bool, nullable: bool, name: str) -> Checker:
    # Elements of one fixed size (int32 arrays, Fetch's partition structs): checked in O(1).
    # A (hypothetical) empty struct still counts as one byte, to keep counts bounded.
    element_size = max(element_size, 1)

    def check_compact(buffer: bytes, offset: int, end: int) -> int:
        count_plus_one, offset = read_uvarint(buffer, offset)
        if count_plus_one == 0 and not nullable:
            raise _null_refused(f"array {name}")
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
        if count == -1 and not nullable:
            raise _null_refused(f"array {name}")
        if count < -1:
            raise ValueError(f"negative array count {count}")
        if count > 0:
            offset += count * element_size
            if offset > end:
                raise ValueError(f"array of {count} runs past the end")
        return offset

    return check_compact if flexible else check_legacy


def _is_nullable(annotation: Any) -> bool:
    """Whether a field's type admits ``None`` at the top (``X | None``), as kio writes it for
    Kafka's ``nullableVersions``. (kio's ``is_optional`` also answers True for a tuple whose
    elements are optional, which says nothing about the array itself.)"""
    return get_origin(annotation) in (UnionType, Union) and NoneType in get_args(annotation)


def _element_type(annotation: Any) -> Any:
    """The element type of ``tuple[X, ...]`` or ``tuple[X, ...] | None``."""
    if _is_nullable(annotation):
        (annotation,) = (arg for arg in get_args(annotation) if arg is not NoneType)
    return get_args(annotation)[0]


def _field_checker(field: Field[Any], flexible: bool, tagged: bool) -> Checker:
    field_class = classify_field(field)
    name = field.name
    nullable = _is_nullable(field.type)
    if isinstance(field_class, PrimitiveTupleField):
        kafka_type = get_schema_field_type(field)
        size = _FIXED_SIZES.get(kafka_type)
        if size is not None:
            return _fixed_array(size, flexible, nullable, name)
        element_nullable = _is_nullable(_element_type(field.type))
        element = _primitive(kafka_type, flexible, element_nullable, f"element of {name}")
        return _array(element, flexible, nullable, name)
    if isinstance(field_class, PrimitiveField):
        return _primitive(get_schema_field_type(field), flexible, nullable, name)
    if isinstance(field_class, EntityTupleField):
        size = _fixed_entity_size(field_class.type_)
        if size is not None:
            return _fixed_array(size, flexible, nullable, name)
        return _array(_entity_checker(field_class.type_), flexible, nullable, name)
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
