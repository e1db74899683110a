"""Variable-length integers of record batch v2: zigzag varint / varlong and unsigned varint.

Byte layout (the protobuf base-128 scheme Kafka adopted in KIP-98): the value is cut into 7-bit
groups, least significant group first; every byte but the last has its high bit (0x80) set.

- *unsigned varint* — a uint32 as above, 1 to 5 bytes (compact lengths of flexible versions).
- *varint* — a signed int32, zigzag-mapped first (0 → 0, -1 → 1, 1 → 2, -2 → 3, ...), so small
  negative numbers stay short: ``(n << 1) ^ (n >> 31)``; 1 to 5 bytes. Record lengths, offset
  deltas, key/value/header lengths (-1 = null) and header counts use it.
- *varlong* — a signed int64, zigzag-mapped, 1 to 10 bytes. Record timestamp deltas use it.

Contracts:

- ``encode_*`` return ``bytes`` and raise ValueError for a value outside the type's range (a
  caller bug, never wire input).
- ``decode_*(buf, pos)`` return ``(value, next_pos)``; ``buf`` is any indexable buffer
  (``bytes``, ``bytearray``, ``memoryview``, ``mmap``). They raise CorruptRecordError when the
  buffer ends inside the number or when it is *overlong*: more bytes than the type allows (5 or
  10), or a last byte carrying bits above the type's width. Non-minimal encodings inside those
  limits (``0x80 0x00`` for 0) are accepted, as Kafka accepts them.

This is the pure-Python hot path of the client codec: the one- and two-byte cases, which cover
nearly all lengths and deltas, take no loop.
"""

from __future__ import annotations

from odradek._types import ReadableBuffer
from odradek.errors import CorruptRecordError

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT32_MAX = (1 << 32) - 1

#: The longest legal encodings.
MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10

#: One-byte encodings of the raw (already zigzag-mapped) values 0..127.
_ONE_BYTE = tuple(bytes((raw,)) for raw in range(0x80))


def _encode_raw(raw: int) -> bytes:
    """Base-128 encoding of a non-negative integer (no range check)."""
    if raw < 0x80:
        return _ONE_BYTE[raw]
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def encode_unsigned_varint(value: int) -> bytes:
    """Encodes a uint32 as an unsigned varint (1–5 bytes)."""
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    if value < 0 or value > UINT32_MAX:
        raise ValueError(f"unsigned varint out of range: {value}")
    return _encode_raw(value)


def encode_varint(value: int) -> bytes:
    """Encodes an int32 as a zigzag varint (1–5 bytes)."""
    if -64 <= value < 64:
        return _ONE_BYTE[(value << 1) ^ (value >> 31)]
    if value < INT32_MIN or value > INT32_MAX:
        raise ValueError(f"varint out of the int32 range: {value}")
    return _encode_raw((value << 1) ^ (value >> 31))


def encode_varlong(value: int) -> bytes:
    """Encodes an int64 as a zigzag varlong (1–10 bytes)."""
    if -64 <= value < 64:
        return _ONE_BYTE[(value << 1) ^ (value >> 63)]
    if value < INT64_MIN or value > INT64_MAX:
        raise ValueError(f"varlong out of the int64 range: {value}")
    return _encode_raw((value << 1) ^ (value >> 63))


def size_of_unsigned_varint(value: int) -> int:
    """Bytes ``encode_unsigned_varint(value)`` takes (no range check)."""
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def size_of_varint(value: int) -> int:
    """Bytes ``encode_varint(value)`` takes (no range check)."""
    return size_of_unsigned_varint((value << 1) ^ (value >> 31))


def size_of_varlong(value: int) -> int:
    """Bytes ``encode_varlong(value)`` takes (no range check)."""
    return size_of_unsigned_varint((value << 1) ^ (value >> 63))


def _decode_raw(buf: ReadableBuffer, pos: int, max_bytes: int, last_limit: int) -> tuple[int, int]:
    """Decodes an unsigned base-128 number of at most ``max_bytes`` bytes.

    ``last_limit`` bounds the byte at index ``max_bytes - 1`` so the value fits the type.
    """
    start = pos
    try:
        byte = buf[pos]
        if byte < 0x80:
            return byte, pos + 1
        raw = byte & 0x7F
        byte = buf[pos + 1]
        if byte < 0x80:
            return raw | (byte << 7), pos + 2
        raw |= (byte & 0x7F) << 7
        shift = 14
        pos += 2
        for index in range(2, max_bytes):
            byte = buf[pos]
            pos += 1
            if byte < 0x80:
                if index == max_bytes - 1 and byte > last_limit:
                    break
                return raw | (byte << shift), pos
            if index == max_bytes - 1:
                break
            raw |= (byte & 0x7F) << shift
            shift += 7
    except IndexError:
        raise CorruptRecordError(f"truncated varint at position {start}") from None
    raise CorruptRecordError(
        f"overlong varint at position {start}: more than {max_bytes} bytes or out of range"
    )


def decode_unsigned_varint(buf: ReadableBuffer, pos: int = 0) -> tuple[int, int]:
    """Decodes a uint32 unsigned varint at ``pos``; returns ``(value, next_pos)``."""
    return _decode_raw(buf, pos, MAX_VARINT_BYTES, 0x0F)


def decode_varint(buf: ReadableBuffer, pos: int = 0) -> tuple[int, int]:
    """Decodes an int32 zigzag varint at ``pos``; returns ``(value, next_pos)``."""
    # One and two bytes inline (values -8192..8191): the common lengths and deltas.
    try:
        byte = buf[pos]
        if byte < 0x80:
            return (byte >> 1) ^ -(byte & 1), pos + 1
        second = buf[pos + 1]
    except IndexError:
        raise CorruptRecordError(f"truncated varint at position {pos}") from None
    if second < 0x80:
        raw = (byte & 0x7F) | (second << 7)
        return (raw >> 1) ^ -(raw & 1), pos + 2
    raw, pos = _decode_raw(buf, pos, MAX_VARINT_BYTES, 0x0F)
    return (raw >> 1) ^ -(raw & 1), pos


def decode_varlong(buf: ReadableBuffer, pos: int = 0) -> tuple[int, int]:
    """Decodes an int64 zigzag varlong at ``pos``; returns ``(value, next_pos)``."""
    try:
        byte = buf[pos]
        if byte < 0x80:
            return (byte >> 1) ^ -(byte & 1), pos + 1
        second = buf[pos + 1]
    except IndexError:
        raise CorruptRecordError(f"truncated varint at position {pos}") from None
    if second < 0x80:
        raw = (byte & 0x7F) | (second << 7)
        return (raw >> 1) ^ -(raw & 1), pos + 2
    raw, pos = _decode_raw(buf, pos, MAX_VARLONG_BYTES, 0x01)
    return (raw >> 1) ^ -(raw & 1), pos
