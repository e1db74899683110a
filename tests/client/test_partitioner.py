"""``client.partitioner``: Kafka's murmur2 (golden values of the Java client's ``Utils.murmur2``),
``toPositive`` and the default partition, cross-checked with kafka-python's implementation."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.client.partitioner import default_partition, murmur2, to_positive

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

M = 0x5BD1E995
MASK = 0xFFFFFFFF

#: murmur2 as the Java client returns it (a signed int).
GOLDEN = [
    (b"", 275646681),
    (b"a", -1563381124),
    (b"ab", 316155434),
    (b"abc", 479470107),
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
]


def test_empty_input_step_by_step() -> None:
    # No body and no tail: h = seed ^ 0, then only the final avalanche.
    h = 0x9747B28C
    assert h >> 13 == 0x4BA3D
    h ^= h >> 13
    assert h == 0x974308B1
    h = (h * M) & MASK
    assert h == 0x106E2805
    h ^= h >> 15
    assert h == 0x106E08D9 == 275646681
    assert murmur2(b"") == h


def test_one_byte_tail_step_by_step() -> None:
    h = 0x9747B28C ^ 1  # seed ^ length
    h ^= ord("a")  # case 1 of the tail
    h = (h * M) & MASK
    assert h == 0x453FEF5C
    h ^= h >> 13
    h = (h * M) & MASK
    h ^= h >> 15
    assert h == 0xA2D0B27C
    assert murmur2(b"a") == h - (1 << 32) == -1563381124


@pytest.mark.parametrize(("data", "expected"), GOLDEN)
def test_golden_values(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected
    assert -(2**31) <= murmur2(data) < 2**31


def signed(value: int) -> int:
    value &= MASK
    return value - (1 << 32) if value & 0x80000000 else value


@given(st.binary(max_size=64))
def test_agrees_with_kafka_python(data: bytes) -> None:
    # kafka-python returns the same 32 bits, unsigned.
    assert murmur2(data) == signed(kafka_python_murmur2(data))


def test_to_positive_clears_the_sign_bit() -> None:
    assert to_positive(0) == 0
    assert to_positive(5) == 5
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0  # Integer.MIN_VALUE: not abs()
    assert to_positive(-1563381124) == 0x22D0B27C


@pytest.mark.parametrize("partitions", [1, 2, 3, 7, 12])
def test_default_partition(partitions: int) -> None:
    for key, value in GOLDEN:
        assert default_partition(key, partitions) == (value & 0x7FFFFFFF) % partitions
    assert default_partition(b"a", 3) == 0x22D0B27C % 3


def test_default_partition_needs_partitions() -> None:
    with pytest.raises(ValueError, match="at least one partition"):
        default_partition(b"key", 0)
