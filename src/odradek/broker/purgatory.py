"""Delayed fetches: a Fetch that found fewer than ``min_bytes`` waits here until new data is
appended to one of its partitions or ``max_wait_ms`` passes (Kafka's fetch purgatory).

Watchers are futures keyed by partition; ``notify`` (called after each append) wakes every
fetch watching that partition, which then reads again. Runs on the event loop thread only.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable

from odradek._types import TopicPartition


class FetchPurgatory:
    """Parks fetches until data arrives."""

    def __init__(self) -> None:
        self._watchers: defaultdict[TopicPartition, set[asyncio.Future[bool]]] = defaultdict(set)

    def notify(self, topic_partition: TopicPartition) -> None:
        """Wakes the fetches waiting on ``topic_partition``."""
        waiting = self._watchers.pop(topic_partition, None)
        if waiting:
            for future in waiting:
                if not future.done():
                    future.set_result(True)

    async def wait(self, partitions: Iterable[TopicPartition], timeout_ms: int) -> bool:
        """Waits until one of ``partitions`` gets data or the timeout passes; returns whether
        data arrived."""
        if timeout_ms <= 0:
            return False
        loop = asyncio.get_running_loop()
        # One future and one timer per wait (asyncio.wait_for around a shield cost three
        # futures, a task step and two callbacks more, paid on every long-poll).
        future: asyncio.Future[bool] = loop.create_future()
        keys = list(partitions)
        for key in keys:
            self._watchers[key].add(future)
        timer = loop.call_later(timeout_ms / 1000, _expire, future)
        try:
            return await future
        finally:
            timer.cancel()
            for key in keys:
                watchers = self._watchers.get(key)
                if watchers is not None:
                    watchers.discard(future)
                    if not watchers:
                        del self._watchers[key]

    def watched(self) -> int:
        """How many partitions have fetches waiting (statistics)."""
        return len(self._watchers)


def _expire(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(False)
