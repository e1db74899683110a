"""``StreamRouter``: which stream each assigned partition feeds.

This module owns one rule: **every assigned partition feeds exactly one stream**. Streams are
named by their index in the connector's list; a topic's candidate streams come from a function
given at construction (the streams created for that topic, or every stream of a filter).

- ``add`` places each new partition (in topic, partition order) on the candidate stream
  feeding the fewest partitions, the lowest index on a tie — so a fresh assignment is spread
  evenly, as the classic connector spread its partitions over its threads;
- a partition keeps its stream until ``remove`` (a revocation or a loss); partitions that stay
  assigned through a cooperative rebalance do not move, so after incremental changes the
  spread may be uneven until the next eager rebalance;
- ``place`` puts partitions on given candidates instead (the ZooKeeper-coordinated group,
  where the thread a member claimed a partition for names its stream);
- a partition whose topic has no candidate stream is refused (``ValueError``).

Pure and not thread-safe: the connector's poll thread is its only user.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from odradek._types import TopicPartition

__all__ = ["StreamRouter"]


class StreamRouter:
    """Assigns partitions to stream indices (see the module docstring).

    Args:
        candidates: the stream indices a topic's partitions may feed.
    """

    __slots__ = ("_candidates", "_load", "_owner")

    def __init__(self, candidates: Callable[[str], Sequence[int]]) -> None:
        self._candidates = candidates
        self._owner: dict[TopicPartition, int] = {}
        self._load: dict[int, int] = {}

    def add(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Places the partitions not placed yet; returns every given partition's stream.

        Raises:
            ValueError: a partition's topic has no candidate stream.
        """
        placed: dict[TopicPartition, int] = {}
        for tp in sorted(set(partitions)):
            stream = self._owner.get(tp)
            if stream is None:
                choices = self._candidates(tp.topic)
                if not choices:
                    raise ValueError(f"{tp}: no stream for topic {tp.topic!r}")
                stream = min(choices, key=lambda index: (self._load.get(index, 0), index))
                self._owner[tp] = stream
                self._load[stream] = self._load.get(stream, 0) + 1
            placed[tp] = stream
        return placed

    def place(self, placement: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Places each partition on its topic's ``i``-th candidate stream (the ZooKeeper
        group's rule: thread ``i`` feeds stream ``i``); a partition placed already moves.
        Returns each partition's stream.

        Raises:
            ValueError: a topic has fewer than ``i + 1`` candidate streams.
        """
        placed: dict[TopicPartition, int] = {}
        for tp, thread in sorted(placement.items()):
            choices = self._candidates(tp.topic)
            if not 0 <= thread < len(choices):
                raise ValueError(f"{tp}: no stream {thread} among topic {tp.topic!r}'s")
            self.remove(tp)
            stream = self._owner[tp] = choices[thread]
            self._load[stream] = self._load.get(stream, 0) + 1
            placed[tp] = stream
        return placed

    def remove(self, tp: TopicPartition) -> int | None:
        """Stops ``tp`` feeding its stream; returns that stream (``None``: not placed)."""
        stream = self._owner.pop(tp, None)
        if stream is not None:
            self._load[stream] -= 1
        return stream

    def stream_for(self, tp: TopicPartition) -> int | None:
        return self._owner.get(tp)

    def partitions(self) -> dict[TopicPartition, int]:
        """Every placed partition and its stream."""
        return dict(self._owner)

    def partitions_of(self, stream: int) -> list[TopicPartition]:
        return sorted(tp for tp, index in self._owner.items() if index == stream)
