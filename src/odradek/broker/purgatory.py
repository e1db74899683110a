"""Delayed fetches: a Fetch that found fewer than ``min_bytes`` waits here until what it reads
may have grown, or ``max_wait_ms`` passes (Kafka's fetch purgatory).

Watchers are futures keyed by partition, of two kinds, because the two kinds of fetch read up
to different offsets:

- a follower's fetch (``replica=True``) reads up to the log end offset: it is woken by an
  append (``notify_appended``, the replica manager's leader-append listener);
- a consumer's fetch reads up to the high watermark: it is woken when the high watermark
  moves (``notify_high_watermark``, the replica manager's listener).

So an acks=all append does not wake the consumers (they would read again and find nothing
committed yet), and a high-watermark move does not wake the followers (they already have what
it covers; Kafka's DelayedFetch does not complete a follower's fetch on it either). ``notify``
wakes both kinds: a partition changed leadership or was written by other means. A woken fetch
reads again. Runs on the event loop thread only.

No wake-up is lost between a fetch's read and its wait: ``watch`` registers the fetch at once
(the Fetch handler calls it in the same synchronous step as the read that found too little)
and ``wait_watched`` awaits it later. A handler that read, returned its long poll as a
coroutine and registered only once that coroutine first ran left a window — every callback
the loop ran in between, another connection's Produce or a coordinator's append among them —
in which an append woke nobody, and the follower sat out its whole ``max_wait_ms`` (with an
acks=all producer behind it). A watch never waited on is forgotten when its time is up.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable, Mapping

from odradek._types import TopicPartition

_Watchers = defaultdict[TopicPartition, set[asyncio.Future[bool]]]


class Watch:
    """One fetch registered with the purgatory (``FetchPurgatory.watch``): its future, the
    partitions it is registered under, its timer."""

    __slots__ = ("future", "keys", "timer", "watchers")

    def __init__(
        self,
        future: asyncio.Future[bool],
        keys: list[TopicPartition],
        watchers: _Watchers,
        timer: asyncio.TimerHandle | None,
    ) -> None:
        self.future = future
        self.keys = keys
        self.watchers = watchers
        self.timer = timer

    def forget(self) -> None:
        """Cancels the timer and leaves every partition's watchers."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        watchers = self.watchers
        future = self.future
        for key in self.keys:
            waiting = watchers.get(key)
            if waiting is not None:
                waiting.discard(future)
                if not waiting:
                    del watchers[key]

    def expire(self) -> None:
        """The timer's callback: answers False (not woken) and forgets the watch, awaited
        or not."""
        self.timer = None
        if not self.future.done():
            self.future.set_result(False)
        self.forget()


class FetchPurgatory:
    """Parks fetches until data arrives."""

    def __init__(self) -> None:
        self._consumers: _Watchers = defaultdict(set)
        self._replicas: _Watchers = defaultdict(set)
        #: The partitions with consumers' (``consumers_waiting``) and followers' fetches
        #: (``replicas_waiting``) registered, live views: a partition not in one has nobody
        #: the matching ``notify_*`` would wake, so a caller on every append may test
        #: membership (one dict lookup) and skip the call.
        self.consumers_waiting: Mapping[TopicPartition, object] = self._consumers
        self.replicas_waiting: Mapping[TopicPartition, object] = self._replicas

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

    def watch(
        self, partitions: Iterable[TopicPartition], timeout_ms: int, *, replica: bool = False
    ) -> Watch:
        """Registers a fetch now: the next append (``replica``) or high-watermark move on one
        of ``partitions`` wakes it, or ``timeout_ms`` passes (at once when ≤ 0). Await it
        with ``wait_watched``."""
        loop = asyncio.get_running_loop()
        # One future and one timer per wait (asyncio.wait_for around a shield cost three
        # futures, a task step and two callbacks more, paid on every long-poll).
        future: asyncio.Future[bool] = loop.create_future()
        if timeout_ms <= 0:
            future.set_result(False)
            return Watch(future, [], self._replicas, None)
        watchers = self._replicas if replica else self._consumers
        keys = list(partitions)
        for key in keys:
            watchers[key].add(future)
        watch = Watch(future, keys, watchers, None)
        watch.timer = loop.call_later(timeout_ms / 1000, watch.expire)
        return watch

    async def wait_watched(self, watch: Watch) -> bool:
        """Waits for a ``watch``: whether it was woken (False: its time ran out)."""
        try:
            return await watch.future
        finally:
            watch.forget()

    async def wait(
        self, partitions: Iterable[TopicPartition], timeout_ms: int, *, replica: bool = False
    ) -> bool:
        """``watch`` and ``wait_watched`` at once: waits until one of ``partitions`` gets
        data (for a follower's fetch with ``replica``: an append; otherwise a high-watermark
        move) or the timeout passes; returns whether it was woken."""
        if timeout_ms <= 0:
            return False
        return await self.wait_watched(self.watch(partitions, timeout_ms, replica=replica))

    def watched(self) -> int:
        """How many partitions have fetches waiting (statistics)."""
        return len(self._consumers.keys() | self._replicas.keys())


def _wake(watchers: _Watchers, topic_partition: TopicPartition) -> None:
    waiting = watchers.pop(topic_partition, None)
    if waiting:
        for future in waiting:
            if not future.done():
                future.set_result(True)
