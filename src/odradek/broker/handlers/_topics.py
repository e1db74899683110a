"""Grouping of per-partition results by topic, in the order they came, for the responses
that nest partitions under topics (OffsetCommit, OffsetFetch, OffsetDelete)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from odradek._types import TopicPartition

V = TypeVar("V")


def by_topic(
    results: Iterable[tuple[TopicPartition, V]], partition: Callable[[int, V], Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """``[{"name": topic, "partitions": [partition(index, value), ...]}, ...]``."""
    topics: dict[str, list[Mapping[str, Any]]] = {}
    for topic_partition, value in results:
        topics.setdefault(topic_partition.topic, []).append(
            partition(topic_partition.partition, value)
        )
    return [{"name": name, "partitions": parts} for name, parts in topics.items()]
