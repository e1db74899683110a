"""``producer.partitioners``: murmur2 placement agreeing with Java and kafka-python, the
sticky choice for unkeyed records (KIP-480), round-robin, and resolving ``partitioner.class``."""

from __future__ import annotations

import random
import warnings
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.client.producer.partitioners import (
    DefaultPartitioner,
    RoundRobinPartitioner,
    UniformStickyPartitioner,
    resolve_partitioner,
)
from odradek.errors import ConfigError

from .fakes import FakeCluster

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

#: (key, partitions, partition) as Java's DefaultPartitioner computes it: the murmur2 golden
#: values of the Java client (tests/client/test_partitioner.py) & 0x7fffffff, mod partitions.
JAVA_VECTORS = [
    (b"a", 3, (-1563381124 & 0x7FFFFFFF) % 3),
    (b"abc", 4, (479470107 & 0x7FFFFFFF) % 4),
    (b"foobar", 10, (-790332482 & 0x7FFFFFFF) % 10),
    (b"21", 7, (-973932308 & 0x7FFFFFFF) % 7),
    (b"a-little-bit-long-string", 12, (-985981536 & 0x7FFFFFFF) % 12),
    (b"", 5, 275646681 % 5),
]


@pytest.mark.parametrize(("key", "partitions", "expected"), JAVA_VECTORS)
def test_keyed_records_go_where_java_puts_them(key: bytes, partitions: int, expected: int) -> None:
    cluster = FakeCluster({"t": partitions})
    assert DefaultPartitioner().partition("t", key, key, b"v", b"v", cluster) == expected


@given(key=st.binary(max_size=64), partitions=st.integers(1, 200))
def test_keyed_records_agree_with_kafka_python(key: bytes, partitions: int) -> None:
    cluster = FakeCluster({"t": partitions}, unavailable={0})
    expected = (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions
    assert DefaultPartitioner().partition("t", None, key, None, None, cluster) == expected


def test_unkeyed_records_stick_until_a_new_batch() -> None:
    cluster = FakeCluster({"t": 6, "u": 6})
    partitioner = DefaultPartitioner(random.Random(7))
    first = partitioner.partition("t", None, None, b"v", b"v", cluster)
    assert {partitioner.partition("t", None, None, b"v", b"v", cluster) for _ in range(50)} == {
        first
    }
    # A new batch elsewhere (or for another topic) does not move the sticky partition.
    partitioner.on_new_batch("t", cluster, (first + 1) % 6)
    assert partitioner.partition("t", None, None, b"v", b"v", cluster) == first
    # A new batch in the sticky partition moves it to a different one.
    partitioner.on_new_batch("t", cluster, first)
    second = partitioner.partition("t", None, None, b"v", b"v", cluster)
    assert second != first
    # Keyed records are not affected by the sticky choice.
    assert partitioner.partition("t", b"a", b"a", None, None, cluster) == (
        (-1563381124 & 0x7FFFFFFF) % 6
    )


def test_sticky_spreads_over_available_partitions_only() -> None:
    cluster = FakeCluster({"t": 5}, unavailable={1, 3})
    partitioner = DefaultPartitioner(random.Random(1))
    seen = Counter()
    current = partitioner.partition("t", None, None, None, None, cluster)
    for _ in range(300):
        seen[current] += 1
        partitioner.on_new_batch("t", cluster, current)
        following = partitioner.partition("t", None, None, None, None, cluster)
        assert following != current
        current = following
    assert set(seen) == {0, 2, 4}


def test_sticky_with_one_or_no_available_partition() -> None:
    partitioner = UniformStickyPartitioner(random.Random(3))
    only = FakeCluster({"t": 4}, unavailable={0, 1, 3})
    partitioner.on_new_batch("t", only, partitioner.partition("t", b"k", b"k", None, None, only))
    assert partitioner.partition("t", b"k", b"k", None, None, only) == 2
    none = FakeCluster({"u": 3}, unavailable={0, 1, 2})
    assert partitioner.partition("u", b"k", b"k", None, None, none) in range(3)


def test_round_robin_cycles_through_available_partitions() -> None:
    cluster = FakeCluster({"t": 4, "u": 3})
    partitioner = RoundRobinPartitioner()
    picks = [partitioner.partition("t", b"same", b"same", None, None, cluster) for _ in range(8)]
    assert picks == [0, 1, 2, 3, 0, 1, 2, 3]
    # Each topic has its own turn.
    assert partitioner.partition("u", None, None, None, None, cluster) == 0
    cluster.unavailable = {1}
    picks = [partitioner.partition("t", None, None, None, None, cluster) for _ in range(3)]
    assert sorted(picks) == [0, 2, 3]


def test_resolve_names_classes_and_objects() -> None:
    assert isinstance(resolve_partitioner(None, {}), DefaultPartitioner)
    assert isinstance(resolve_partitioner("round_robin", {}), RoundRobinPartitioner)
    assert isinstance(
        resolve_partitioner("org.apache.kafka.clients.producer.RoundRobinPartitioner", {}),
        RoundRobinPartitioner,
    )
    assert isinstance(
        resolve_partitioner("odradek.client.producer.partitioners.UniformStickyPartitioner", {}),
        UniformStickyPartitioner,
    )

    class Fixed:
        def __init__(self) -> None:
            self.configs: dict[str, Any] | None = None

        def configure(self, configs: dict[str, Any]) -> None:
            self.configs = configs

        def partition(self, *args: Any) -> int:
            return 0

    fixed = Fixed()
    assert resolve_partitioner(fixed, {"x": 1}) is fixed
    assert fixed.configs == {"x": 1}
    assert isinstance(resolve_partitioner(Fixed, {}), Fixed)


@pytest.mark.parametrize("value", ["nope", object()])
def test_resolve_refuses_what_cannot_partition(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"partitioner\.class"):
        resolve_partitioner(value, {})
