"""Delayed fetches: a Fetch that found fewer than ``min_bytes`` waits here until what it reads
may have grown, or ``max_wait_ms`` passes (Kafka's fetch purgatory).

Watchers are futures keyed by partition, of two kinds, because the two kinds of fetch read up
to different offsets:

- a follower's fetch (``replica=True``) reads up to the log end offset: it is woken by an
  append (``notify_appended``, called by Produce after each append);
- a consumer's fetch reads up to the high watermark: it is woken when the high watermark
  moves (``notify_high_watermark``, the replica manager's listener).

So an acks=all append does not wake the consumers (they would read again and find nothing
committed yet), and a high-watermark move does not wake the followers (they already have what
it covers; Kafka's DelayedFetch does not complete a follower's fetch on it either). ``notify``
wakes both kinds: a partition changed leadership or was written by other means. A woken fetch
reads again. Runs on the event loop thread only.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable

from odradek._types import TopicPartition

_Watchers = defaultdict[TopicPartition, set[asyncio.Future[bool]]]


class FetchPurgatory:
    """Parks fetches until data arrives."""

    def __init__(self) -> None:
        self._consumers: _Watchers = defaultdict(set)
        self._replicas: _Watchers = defaultdict(set)

    def notify(self, topic_partition: TopicPartition) -> None:
        """Wakes every fetch waiting on ``topic_partition``."""
        _wake(self._consumers, topic_partition)
        _wake(self._replicas, topic_partition)

    def notify_appended(self, topic_partition: TopicPartition) -> None:
        """Wakes the followers' fetches waiting on ``topic_partition`` (its log end moved)."""
        _wake(self._replicas, topic_partition)

    def notify_high_watermark(self, topic_partition: TopicPartition) -> None:
        """Wakes the consumers' fetches waiting on ``topic_partition`` (its high watermark
        moved)."""
        _wake(self._consumers, topic_partition)

    async def wait(
        self, partitions: Iterable[TopicPartition], timeout_ms: int, *, replica: bool = False
    ) -> bool:
        """Waits until one of ``partitions`` gets data (for a follower's fetch with
        ``replica``: an append; otherwise a high-watermark move) or the timeout passes;
        returns whether it was woken."""
        if timeout_ms <= 0:
            return False
        loop = asyncio.get_running_loop()
        watchers = self._replicas if replica else self._consumers
        # One future and one timer per wait (asyncio.wait_for around a shield cost three
        # futures, a task step and two callbacks more, paid on every long-poll).
        future: asyncio.Future[bool] = loop.create_future()
        keys = list(partitions)
        for key in keys:
            watchers[key].add(future)
        timer = loop.call_later(timeout_ms / 1000, _expire, future)
        try:
            return await future
        finally:
            timer.cancel()
            for key in keys:
                waiting = watchers.get(key)
                if waiting is not None:
                    waiting.discard(future)
                    if not waiting:
                        del watchers[key]

    def watched(self) -> int:
        """How many partitions have fetches waiting (statistics)."""
        return len(self._consumers.keys() | self._replicas.keys())


def _wake(watchers: _Watchers, topic_partition: TopicPartition) -> None:
    waiting = watchers.pop(topic_partition, None)
    if waiting:
        for future in waiting:
            if not future.done():
                future.set_result(True)


def _expire(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(False)
