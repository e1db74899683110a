"""Test doubles shared by the producer's unit tests (no broker)."""

from __future__ import annotations

from collections.abc import Sequence


class FakeCluster:
    """A ``ClusterView`` over fixed partition counts; ``unavailable`` partitions lack leaders."""

    def __init__(self, counts: dict[str, int], unavailable: set[int] | None = None) -> None:
        self.counts = counts
        self.unavailable = unavailable or set()

    def partition_count(self, topic: str) -> int:
        return self.counts[topic]

    def partitions_for_topic(self, topic: str) -> Sequence[int]:
        return range(self.counts[topic])

    def available_partitions_for_topic(self, topic: str) -> Sequence[int]:
        return [p for p in range(self.counts[topic]) if p not in self.unavailable]
