"""Pure planning of what a read covers: offset ranges per partition, split into Spark input
partitions, and the rate limits of streaming triggers.

- ``split_ranges``: one range per topic-partition with data; ``maxRecordsPerPartition`` first
  cuts every range into pieces of at most that many offsets; then, while there are fewer
  pieces than ``minPartitions``, ranges are cut further in proportion to their size (as
  Spark's Kafka connector does) — a big partition is read by several tasks at once.
- ``rate_limit``: ``maxOffsetsPerTrigger`` shared between partitions in proportion to what each
  has waiting (at least one offset for a partition that has any), never past the latest.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

from odradek.client import TopicPartition

__all__ = ["OffsetRange", "rate_limit", "split_ranges"]


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """The offsets ``[start, end)`` of one partition; picklable plain data for executors."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(self.end - self.start, 0)


def split_ranges(
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    *,
    min_partitions: int | None = None,
    max_records_per_partition: int | None = None,
) -> list[OffsetRange]:
    """The input ranges of a read from ``starts`` to ``ends`` (partitions in both; empty
    ranges dropped), sorted by topic, partition, start."""
    ranges = [
        OffsetRange(tp.topic, tp.partition, starts[tp], ends[tp])
        for tp in sorted(set(starts) & set(ends))
        if ends[tp] > starts[tp]
    ]
    if max_records_per_partition is not None:
        ranges = [
            piece
            for r in ranges
            for piece in _cut(r, math.ceil(r.size / max_records_per_partition))
        ]
    if min_partitions is not None and 0 < len(ranges) < min_partitions:
        total = sum(r.size for r in ranges)
        ranges = [
            piece
            for r in ranges
            for piece in _cut(r, max(1, round(r.size / total * min_partitions)))
        ]
    return ranges


def _cut(r: OffsetRange, parts: int) -> list[OffsetRange]:
    parts = max(1, min(parts, r.size))
    bounds = [r.start + r.size * i // parts for i in range(parts + 1)]
    return [OffsetRange(r.topic, r.partition, a, b) for a, b in itertools.pairwise(bounds)]


def rate_limit(
    starts: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], limit: int
) -> dict[TopicPartition, int]:
    """The end offsets of a trigger that reads at most about ``limit`` offsets in all, from
    ``starts`` towards ``latest`` (both must name the same partitions; a partition with
    nothing waiting keeps its start)."""
    waiting = {tp: latest[tp] - start for tp, start in starts.items() if latest[tp] > start}
    total = sum(waiting.values())
    ends = dict(starts)
    if total <= limit:
        ends.update({tp: latest[tp] for tp in waiting})
        return ends
    for tp, size in waiting.items():
        share = limit * size / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        ends[tp] = min(starts[tp] + step, latest[tp])
    return ends
