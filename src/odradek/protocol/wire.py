"""Kafka wire primitives that the hand-written header parser and hot encoders share.

This module owns the byte forms of strings, arrays and varints (Kafka's protocol guide,
"Protocol Primitive Types"). All integers are big-endian; "compact" forms (flexible versions,
KIP-482) store ``length + 1`` as an unsigned varint so that 0 means null.
"""

from __future__ import annotations

import struct
from typing import Final

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")

#: An empty tagged-field section (count 0), written after every flexible struct.
NO_TAGGED_FIELDS: Final = b"\x00"

_NULL_STRING: Final = _INT16.pack(-1)
_NULL_COMPACT: Final = b"\x00"

# uvarint bytes for small values, precomputed: lengths and counts are nearly always < 128.
_SMALL_UVARINTS: Final = tuple(bytes((value,)) for value in range(128))


def read_uvarint(buffer: bytes, offset: int) -> tuple[int, int]:
    """Reads an unsigned varint (at most 5 bytes, as Kafka's ``readUnsignedVarint``).

    Returns:
        The value and the offset after it.

    Raises:
        ValueError: the varint is truncated or longer than 5 bytes.
    """
    value = 0
    shift = 0
    end = len(buffer)
    while True:
        if offset >= end:
            raise ValueError("truncated varint")
        byte = buffer[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, offset
        shift += 7
        if shift > 28:
            raise ValueError("varint longer than 5 bytes")


def uvarint(value: int) -> bytes:
    """Returns ``value`` (>= 0) as an unsigned varint."""
    if value < 128:
        return _SMALL_UVARINTS[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def string(value: str) -> bytes:
    """A non-compact string: int16 length, then UTF-8 bytes."""
    data = value.encode()
    return _INT16.pack(len(data)) + data


def nullable_string(value: str | None) -> bytes:
    """A non-compact nullable string: int16 length (-1 = null), then UTF-8 bytes."""
    if value is None:
        return _NULL_STRING
    return string(value)


def compact_string(value: str) -> bytes:
    """A compact string: uvarint ``length + 1``, then UTF-8 bytes."""
    data = value.encode()
    return uvarint(len(data) + 1) + data


def compact_nullable_string(value: str | None) -> bytes:
    """A compact nullable string: uvarint ``length + 1`` (0 = null), then UTF-8 bytes."""
    if value is None:
        return _NULL_COMPACT
    return compact_string(value)


def array_length(count: int | None) -> bytes:
    """A non-compact array length: int32 (-1 = null)."""
    return _INT32.pack(-1 if count is None else count)


def compact_array_length(count: int | None) -> bytes:
    """A compact array length: uvarint ``count + 1`` (0 = null)."""
    return _NULL_COMPACT if count is None else uvarint(count + 1)
