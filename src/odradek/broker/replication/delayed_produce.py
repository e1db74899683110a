"""Delayed produces: acks=all appends waiting for the high watermark (Kafka's produce purgatory).

A produce with acks=all whose partitions appended is answered when, for each partition, the
high watermark has reached its *required offset* (the last appended offset + 1) — every
in-sync replica then holds the batch. Each partition ends in one of:

- NONE: the high watermark passed the required offset with at least ``min.insync.replicas``
  replicas in the ISR;
- NOT_ENOUGH_REPLICAS_AFTER_APPEND: the high watermark passed it, but the ISR had shrunk
  below ``min.insync.replicas`` meanwhile (the batch is held by fewer replicas than asked);
- NOT_LEADER_OR_FOLLOWER: the partition stopped being led here (a controller made another
  broker the leader, or it was removed) before the high watermark passed;
- REQUEST_TIMED_OUT: the request's ``timeout_ms`` passed first (the batch stays in the log
  and may still be committed later, as in Kafka).

Waiters are keyed by partition, in order of their required offsets (appends on one event
loop assign increasing offsets), and checked by ``check(partition)``: the replica manager
calls it from each Partition's ``on_high_watermark`` listener and when a partition changes
leader or goes away. A check looks at the head of one partition's queue only, so it costs a
dict lookup when nothing waits. The purgatory takes no part when the append already moved
the high watermark (acks=1, or acks=all with an ISR of one): the caller answers at once and
pays for no timer or future (``all_committed``).

Thread safety: the event loop thread only, no locks. Completion callbacks run inside
``check`` (so inside a follower's Fetch that moved the high watermark): they must be cheap;
one that raises is logged and does not stop the others. Time: timers come from an injected
``schedule`` (the running loop's ``call_later`` by default), so tests fire them by hand.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from odradek._types import TopicPartition
from odradek.broker.acks import InSyncReplicas
from odradek.errors import ErrorCode

logger = logging.getLogger(__name__)

__all__ = [
    "DelayedProduce",
    "DelayedProducePurgatory",
    "ReplicatedPartition",
    "all_committed",
]


class ReplicatedPartition(InSyncReplicas, Protocol):
    """A leader partition as a delayed produce looks at it
    (``odradek.broker.replication.partition.Partition``)."""

    @property
    def topic_partition(self) -> TopicPartition: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def is_leader(self) -> bool: ...


class Timer(Protocol):
    def cancel(self) -> None: ...


#: ``schedule(delay_s, callback)``: runs ``callback`` after ``delay_s`` seconds.
Schedule = Callable[[float, Callable[[], None]], Timer]
#: Called once with each partition's error code, in the order the partitions were given.
OnComplete = Callable[[list[ErrorCode]], None]
#: A partition and the offset its high watermark must reach (last appended offset + 1).
Appended = tuple[ReplicatedPartition, int]


def all_committed(appended: Sequence[Appended]) -> bool:
    """Whether every partition's high watermark already reached its required offset (the
    synchronous answer: no delayed produce needed)."""
    return all(partition.high_watermark >= required for partition, required in appended)


def _status(partition: ReplicatedPartition, required_offset: int) -> ErrorCode | None:
    """A partition's outcome now, or None while it must wait (Kafka's
    Partition.checkEnoughReplicasReachOffset)."""
    if not partition.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if partition.high_watermark < required_offset:
        return None
    if len(partition.isr) < partition.min_insync_replicas:
        return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    return ErrorCode.NONE


class DelayedProduce:
    """One waiting produce: its partitions, their outcomes so far, its timer and callback."""

    __slots__ = ("_errors", "_on_complete", "_remaining", "appended", "done", "timer")

    def __init__(self, appended: Sequence[Appended], on_complete: OnComplete) -> None:
        self.appended = list(appended)
        self._errors: list[ErrorCode | None] = [None] * len(self.appended)
        self._remaining = len(self.appended)
        self._on_complete = on_complete
        self.timer: Timer | None = None
        self.done = False

    def settle(self, slot: int, error: ErrorCode) -> bool:
        """Records one partition's outcome; returns whether every partition has one now."""
        if self._errors[slot] is None:
            self._errors[slot] = error
            self._remaining -= 1
        return self._remaining == 0

    def finish(self, pending_error: ErrorCode) -> None:
        """Answers: partitions without an outcome get ``pending_error``."""
        self.done = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        errors = [pending_error if error is None else error for error in self._errors]
        try:
            self._on_complete(errors)
        except Exception:
            logger.exception("a delayed produce's completion failed")


class DelayedProducePurgatory:
    """Parks acks=all produces until the high watermark passes them (module docstring).

    Args:
        schedule: the timer source (default: the running loop's ``call_later``).
    """

    def __init__(self, schedule: Schedule | None = None) -> None:
        self._schedule = schedule
        #: partition → (required offset, delayed produce, slot), by required offset.
        self._watchers: dict[TopicPartition, deque[tuple[int, DelayedProduce, int]]] = {}
        #: The partitions with produces waiting, a live view: ``check`` of a partition not
        #: in it does nothing, so a caller on every high-watermark move may test membership
        #: (one dict lookup) and skip the call.
        self.partitions_waiting: Mapping[TopicPartition, object] = self._watchers
        self._waiting = 0
        self._completed = 0
        self._expired = 0

    def watch(
        self, appended: Sequence[Appended], timeout_ms: int, on_complete: OnComplete
    ) -> DelayedProduce:
        """Calls ``on_complete`` with each partition's outcome once every partition has one,
        or after ``timeout_ms`` (REQUEST_TIMED_OUT for those still waiting; at once when
        ``timeout_ms`` ≤ 0). Partitions already decided are settled now; when all are, the
        callback runs before this returns."""
        delayed = DelayedProduce(appended, on_complete)
        waiting = []
        for slot, (partition, required) in enumerate(delayed.appended):
            status = _status(partition, required)
            if status is None:
                waiting.append((slot, partition, required))
            else:
                delayed.settle(slot, status)
        if not waiting:
            self._completed += 1
            delayed.finish(ErrorCode.NONE)
            return delayed
        if timeout_ms <= 0:
            self._expired += 1
            delayed.finish(ErrorCode.REQUEST_TIMED_OUT)
            return delayed
        for slot, partition, required in waiting:
            queue = self._watchers.get(partition.topic_partition)
            if queue is None:
                queue = self._watchers[partition.topic_partition] = deque()
            queue.append((required, delayed, slot))
        self._waiting += 1
        delayed.timer = self._timer(timeout_ms / 1000, lambda: self._expire(delayed))
        return delayed

    async def wait(self, appended: Sequence[Appended], timeout_ms: int) -> list[ErrorCode]:
        """``watch`` as a coroutine: each partition's outcome, in order."""
        future: asyncio.Future[list[ErrorCode]] = asyncio.get_running_loop().create_future()

        def done(errors: list[ErrorCode]) -> None:
            if not future.done():
                future.set_result(errors)

        delayed = self.watch(appended, timeout_ms, done)
        try:
            return await future
        finally:
            if not delayed.done:  # the waiter was cancelled (its connection closed)
                self._drop(delayed)

    def check(self, partition: ReplicatedPartition) -> None:
        """Settles the produces waiting on ``partition`` that its state now decides (its
        high watermark moved, its ISR changed, or it stopped leading)."""
        queue = self._watchers.get(partition.topic_partition)
        if not queue:
            return
        key = partition.topic_partition
        while queue:
            required, delayed, slot = queue[0]
            if delayed.done:
                queue.popleft()
                continue
            status = _status(delayed.appended[slot][0], required)
            if status is None:
                break
            # Off the queue before the callback runs: it may append, move the high
            # watermark and so check this partition again.
            queue.popleft()
            if delayed.settle(slot, status):
                self._waiting -= 1
                self._completed += 1
                delayed.finish(ErrorCode.NONE)
        if not queue and self._watchers.get(key) is queue:
            del self._watchers[key]

    def _expire(self, delayed: DelayedProduce) -> None:
        delayed.timer = None
        if delayed.done:
            return
        self._waiting -= 1
        self._expired += 1
        delayed.finish(ErrorCode.REQUEST_TIMED_OUT)
        self._trim(delayed)

    def _drop(self, delayed: DelayedProduce) -> None:
        delayed.done = True
        if delayed.timer is not None:
            delayed.timer.cancel()
            delayed.timer = None
        self._waiting -= 1
        self._trim(delayed)

    def _trim(self, delayed: DelayedProduce) -> None:
        """Drops finished waiters from the head of each of ``delayed``'s partitions' queues
        (requests with one timeout expire in order, so they are usually at the head)."""
        for partition, _ in delayed.appended:
            key = partition.topic_partition
            queue = self._watchers.get(key)
            if queue is None:
                continue
            while queue and queue[0][1].done:
                queue.popleft()
            if not queue and self._watchers.get(key) is queue:
                del self._watchers[key]

    def _timer(self, delay_s: float, callback: Callable[[], None]) -> Timer:
        if self._schedule is not None:
            return self._schedule(delay_s, callback)
        return asyncio.get_running_loop().call_later(delay_s, callback)

    def statistics(self) -> dict[str, int]:
        """Produces waiting now, completed and expired so far, partitions watched."""
        return {
            "waiting": self._waiting,
            "completed": self._completed,
            "expired": self._expired,
            "partitions": len(self._watchers),
        }
