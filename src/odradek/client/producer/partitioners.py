"""Partitioners: which partition a record without an explicit one goes to.

A partitioner is any object with
``partition(topic, key, key_bytes, value, value_bytes, cluster) -> int`` (Java's
``Partitioner.partition``); ``cluster`` is a ``ClusterView`` (partition lists of a topic).
Optional methods: ``configure(configs)`` (called once when the producer is built),
``on_new_batch(topic, cluster, prev_partition)`` (KIP-480, called when a record would open a
new batch in the partition just chosen; the producer then asks ``partition`` again) and
``close()``.

Built-in partitioners (``partitioner.class`` names; Java class names are aliases):

- ``default``: a keyed record goes to ``toPositive(murmur2(key_bytes)) % partition_count``,
  the partition Java's default partitioner picks (``client.partitioner``); an unkeyed record
  goes to the topic's *sticky* partition, kept until a record would open a new batch there
  (its batch filled up or was sent), then a different available partition is picked at
  random (KIP-480: fuller batches, fewer requests, the same spread over time).
- ``uniform_sticky``: the sticky choice for every record, keyed or not.
- ``round_robin``: each record to the next available partition of the topic, in turn (all
  partitions when none has a leader).

Thread-safety: ``partition`` is called by every thread that sends; the built-ins are safe to
share (a lock guards the sticky choice when it changes, reads need none under the GIL).
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol, runtime_checkable

from odradek.client.partitioner import default_partition, to_positive
from odradek.client.producer._plugins import instantiate
from odradek.errors import ConfigError

__all__ = [
    "BUILTIN_PARTITIONERS",
    "ClusterView",
    "DefaultPartitioner",
    "Partitioner",
    "RoundRobinPartitioner",
    "StickyPartitionCache",
    "UniformStickyPartitioner",
    "resolve_partitioner",
]


class ClusterView(Protocol):
    """What a partitioner may ask about the cluster (Java's ``Cluster``, the needed part).

    Partition numbers are ``0 .. partition_count - 1``; "available" means the partition has a
    leader the producer knows.
    """

    def partition_count(self, topic: str) -> int: ...

    def partitions_for_topic(self, topic: str) -> Sequence[int]: ...

    def available_partitions_for_topic(self, topic: str) -> Sequence[int]: ...


@runtime_checkable
class Partitioner(Protocol):
    """Picks a partition for a record (see the module docstring for optional methods)."""

    def partition(
        self,
        topic: str,
        key: Any,
        key_bytes: bytes | None,
        value: Any,
        value_bytes: bytes | None,
        cluster: ClusterView,
    ) -> int: ...


class StickyPartitionCache:
    """The sticky partition of each topic (KIP-480).

    Args:
        rng: the random choice of a new partition (``random.Random`` by default; tests pass
            a seeded one).
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._partitions: dict[str, int] = {}

    def partition(self, topic: str, cluster: ClusterView) -> int:
        """The topic's sticky partition (chosen now when it has none)."""
        partition = self._partitions.get(topic)
        if partition is None:
            return self.next_partition(topic, cluster, -1)
        return partition

    def next_partition(self, topic: str, cluster: ClusterView, prev_partition: int) -> int:
        """Moves the topic's sticky partition away from ``prev_partition`` if it is still
        there (or sets one when there is none); returns the sticky partition.

        A new choice is random among the available partitions other than the old one (among
        all partitions when none is available; the same one when it is the only choice).
        """
        with self._lock:
            old = self._partitions.get(topic)
            if old is not None and old != prev_partition:
                return old  # another thread moved it already
            available = cluster.available_partitions_for_topic(topic)
            if not available:
                available = range(cluster.partition_count(topic))
            if not available:
                raise ValueError(f"topic {topic} has no partitions")
            choices = [p for p in available if p != old] or list(available)
            new = self._rng.choice(choices)
            self._partitions[topic] = new
            return new


class DefaultPartitioner:
    """murmur2 for keyed records, sticky for unkeyed ones (see the module docstring)."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._sticky = StickyPartitionCache(rng)

    def partition(
        self,
        topic: str,
        key: Any,
        key_bytes: bytes | None,
        value: Any,
        value_bytes: bytes | None,
        cluster: ClusterView,
    ) -> int:
        if key_bytes is None:
            return self._sticky.partition(topic, cluster)
        return default_partition(key_bytes, cluster.partition_count(topic))

    def on_new_batch(self, topic: str, cluster: ClusterView, prev_partition: int) -> None:
        self._sticky.next_partition(topic, cluster, prev_partition)


class UniformStickyPartitioner:
    """The sticky partition for every record, keys ignored (Java's UniformStickyPartitioner)."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._sticky = StickyPartitionCache(rng)

    def partition(
        self,
        topic: str,
        key: Any,
        key_bytes: bytes | None,
        value: Any,
        value_bytes: bytes | None,
        cluster: ClusterView,
    ) -> int:
        return self._sticky.partition(topic, cluster)

    def on_new_batch(self, topic: str, cluster: ClusterView, prev_partition: int) -> None:
        self._sticky.next_partition(topic, cluster, prev_partition)


class RoundRobinPartitioner:
    """Each record to the next available partition of its topic (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, itertools.count[int]] = {}

    def partition(
        self,
        topic: str,
        key: Any,
        key_bytes: bytes | None,
        value: Any,
        value_bytes: bytes | None,
        cluster: ClusterView,
    ) -> int:
        counter = self._counters.get(topic)
        if counter is None:
            with self._lock:
                counter = self._counters.setdefault(topic, itertools.count())
        turn = to_positive(next(counter))
        available = cluster.available_partitions_for_topic(topic)
        if available:
            return available[turn % len(available)]
        return turn % cluster.partition_count(topic)


BUILTIN_PARTITIONERS: Final[Mapping[str, Callable[[], object]]] = {
    "default": DefaultPartitioner,
    "murmur2": DefaultPartitioner,
    "uniform_sticky": UniformStickyPartitioner,
    "round_robin": RoundRobinPartitioner,
    "roundrobin": RoundRobinPartitioner,
    "org.apache.kafka.clients.producer.internals.DefaultPartitioner": DefaultPartitioner,
    "org.apache.kafka.clients.producer.UniformStickyPartitioner": UniformStickyPartitioner,
    "org.apache.kafka.clients.producer.RoundRobinPartitioner": RoundRobinPartitioner,
}


def resolve_partitioner(value: Any, configs: Mapping[str, Any]) -> Partitioner:
    """The partitioner ``partitioner.class`` configures (``None``: the default one), with its
    ``configure(configs)`` called if it has one.

    Raises:
        ConfigError: an unknown name, an unimportable path, or an object without
            ``partition``.
        Exception: whatever the constructor or ``configure`` raises.
    """
    partitioner: Any = (
        DefaultPartitioner()
        if value is None
        else instantiate(value, "partitioner.class", BUILTIN_PARTITIONERS)
    )
    if not callable(getattr(partitioner, "partition", None)):
        raise ConfigError(
            f"partitioner.class: {value!r} has no partition(topic, key, key_bytes, value, "
            "value_bytes, cluster) method"
        )
    configure = getattr(partitioner, "configure", None)
    if callable(configure):
        configure(dict(configs))
    return partitioner  # type: ignore[no-any-return]
