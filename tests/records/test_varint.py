"""Tests for odradek.records.varint: golden encodings, round trips, truncated and overlong input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.errors import CorruptRecordError
from odradek.records.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    UINT32_MAX,
    decode_unsigned_varint,
    decode_varint,
    decode_varlong,
    encode_unsigned_varint,
    encode_varint,
    encode_varlong,
    size_of_unsigned_varint,
    size_of_varint,
    size_of_varlong,
)

int32s = st.integers(INT32_MIN, INT32_MAX)
int64s = st.integers(INT64_MIN, INT64_MAX)
uint32s = st.integers(0, UINT32_MAX)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (-2, "03"),
        (63, "7e"),
        (-64, "7f"),
        (64, "8001"),
        (300, "d804"),  # zigzag 600 = 0b100_1011000
        (-8193, "818001"),
        (INT32_MAX, "feffffff0f"),
        (INT32_MIN, "ffffffff0f"),
    ],
)
def test_varint_golden(value: int, encoded: str) -> None:
    assert encode_varint(value).hex() == encoded
    assert decode_varint(bytes.fromhex(encoded)) == (value, len(encoded) // 2)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (-1, "01"),
        (1_700_000_000_000, "80a0abfef962"),
        (INT64_MAX, "feffffffffffffffff01"),
        (INT64_MIN, "ffffffffffffffffff01"),
    ],
)
def test_varlong_golden(value: int, encoded: str) -> None:
    assert encode_varlong(value).hex() == encoded
    assert decode_varlong(bytes.fromhex(encoded)) == (value, len(encoded) // 2)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (127, "7f"), (128, "8001"), (300, "ac02"), (UINT32_MAX, "ffffffff0f")],
)
def test_unsigned_varint_golden(value: int, encoded: str) -> None:
    assert encode_unsigned_varint(value).hex() == encoded
    assert decode_unsigned_varint(bytes.fromhex(encoded)) == (value, len(encoded) // 2)


@given(int32s, st.binary(max_size=3), st.binary(max_size=3))
def test_varint_round_trip(value: int, before: bytes, after: bytes) -> None:
    encoded = encode_varint(value)
    assert len(encoded) == size_of_varint(value)
    buf = before + encoded + after
    assert decode_varint(buf, len(before)) == (value, len(before) + len(encoded))
    assert decode_varint(memoryview(bytearray(buf)), len(before))[0] == value


@given(int64s)
def test_varlong_round_trip(value: int) -> None:
    encoded = encode_varlong(value)
    assert len(encoded) == size_of_varlong(value)
    assert decode_varlong(encoded) == (value, len(encoded))


@given(uint32s)
def test_unsigned_varint_round_trip(value: int) -> None:
    encoded = encode_unsigned_varint(value)
    assert len(encoded) == size_of_unsigned_varint(value)
    assert decode_unsigned_varint(encoded) == (value, len(encoded))


@given(int32s)
def test_varint_is_readable_as_varlong(value: int) -> None:
    # Kafka's zigzag mappings agree on the int32 range.
    assert decode_varlong(encode_varint(value))[0] == value


@given(int32s.filter(lambda value: not -64 <= value < 64))
def test_truncated_varint_raises(value: int) -> None:
    encoded = encode_varint(value)
    for cut in range(len(encoded)):
        with pytest.raises(CorruptRecordError, match="truncated"):
            decode_varint(encoded[:cut])


@given(int64s.filter(lambda value: not -64 <= value < 64))
def test_truncated_varlong_raises(value: int) -> None:
    encoded = encode_varlong(value)
    for cut in range(len(encoded)):
        with pytest.raises(CorruptRecordError, match="truncated"):
            decode_varlong(encoded[:cut])


def test_empty_buffer_raises() -> None:
    for decode in (decode_varint, decode_varlong, decode_unsigned_varint):
        with pytest.raises(CorruptRecordError, match="truncated"):
            decode(b"")
        with pytest.raises(CorruptRecordError, match="truncated"):
            decode(b"\x05", 1)


@pytest.mark.parametrize(
    "encoded",
    [
        "8080808080",  # a sixth byte announced
        "ffffffff1f",  # bits above 32 in the fifth byte
        "ffffffffff0f",
    ],
)
def test_overlong_varint_raises(encoded: str) -> None:
    data = bytes.fromhex(encoded) + b"\x00"
    with pytest.raises(CorruptRecordError, match="overlong"):
        decode_varint(data)
    with pytest.raises(CorruptRecordError, match="overlong"):
        decode_unsigned_varint(data)


def test_non_minimal_encoding_is_accepted() -> None:
    # Within the byte limit, a redundant zero group is legal, as Kafka reads it.
    assert decode_varint(bytes.fromhex("8080808000")) == (0, 5)
    assert decode_varlong(bytes.fromhex("8200")) == (1, 2)


@pytest.mark.parametrize("encoded", ["80808080808080808080", "ffffffffffffffffff02"])
def test_overlong_varlong_raises(encoded: str) -> None:
    with pytest.raises(CorruptRecordError, match="overlong"):
        decode_varlong(bytes.fromhex(encoded) + b"\x00")


@pytest.mark.parametrize(
    ("encode", "value"),
    [
        (encode_varint, INT32_MAX + 1),
        (encode_varint, INT32_MIN - 1),
        (encode_varlong, INT64_MAX + 1),
        (encode_varlong, INT64_MIN - 1),
        (encode_unsigned_varint, -1),
        (encode_unsigned_varint, UINT32_MAX + 1),
    ],
)
def test_encode_out_of_range_raises(encode: object, value: int) -> None:
    assert callable(encode)
    with pytest.raises(ValueError, match="range"):
        encode(value)
