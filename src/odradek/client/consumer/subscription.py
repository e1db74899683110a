"""``SubscriptionState``: what the consumer reads — its subscription or manual assignment, and
each assigned partition's position, fetch position, pause flag and pending offset reset.

Owned by the consumer; shared by the application thread (assign, seek, pause, poll's drain)
and the fetcher thread (which fetches, resets offsets, and advances fetch positions). Every
access goes through one lock, held briefly. The rules it keeps:

- ``position`` is the offset of the next record ``poll`` returns; ``fetch_position`` the offset
  the next Fetch asks for (ahead of ``position`` while fetched data waits in the buffer:
  prefetch). Both move together on ``seek`` and on a reset.
- every seek, reset or (re)assignment bumps the partition's ``epoch``; fetched data or an
  offset lookup started under an older epoch is discarded, never applied.
- a partition without a position needs one: from a committed offset (the group coordinator
  sets ``awaiting_committed``) or a reset (``reset`` = ``EARLIEST`` / ``LATEST``), which the
  fetcher resolves with ListOffsets. With ``auto.offset.reset=none`` the partition records a
  ``NoOffsetForPartitionError`` that the next ``poll`` raises.
- subscription modes exclude each other (Kafka's IllegalStateException): ``assign`` versus
  ``subscribe`` (topics or a pattern).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from odradek._types import TopicPartition
from odradek.client.consumer.record import NoOffsetForPartitionError

__all__ = ["EARLIEST", "LATEST", "PartitionState", "SubscriptionState"]

#: ListOffsets timestamps for the reset strategies.
EARLIEST: Final = -2
LATEST: Final = -1


@dataclass(slots=True)
class PartitionState:
    """One assigned partition (mutated only under ``SubscriptionState.lock``)."""

    position: int | None = None
    fetch_position: int | None = None
    paused: bool = False
    reset: int | None = None
    awaiting_committed: bool = False
    epoch: int = 0
    high_watermark: int = -1
    error: BaseException | None = None
    resetting: bool = field(default=False)  # a ListOffsets is in flight

    @property
    def fetchable(self) -> bool:
        return (
            not self.paused
            and self.fetch_position is not None
            and self.error is None
            and not self.awaiting_committed
        )


class SubscriptionState:
    """The consumer's subscription and partition states (see the module docstring).

    Args:
        default_reset: ``auto.offset.reset`` (``earliest``, ``latest`` or ``none``).
    """

    def __init__(self, default_reset: str) -> None:
        self.lock = threading.RLock()
        self.default_reset = default_reset
        self.assignment: dict[TopicPartition, PartitionState] = {}
        self.manual = False
        self.topics: frozenset[str] = frozenset()
        self.pattern: re.Pattern[str] | None = None
        #: Topics a pattern subscription leaves out (``Consumer.subscribe(exclude_pattern=)``).
        self.exclude_pattern: re.Pattern[str] | None = None

    # -- modes

    @property
    def subscribed(self) -> bool:
        return bool(self.topics) or self.pattern is not None

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Manual assignment: keeps the state of partitions that stay."""
        wanted = list(dict.fromkeys(partitions))
        with self.lock:
            if self.subscribed:
                raise RuntimeError("assign() is not allowed while subscribed; unsubscribe first")
            self.manual = bool(wanted)
            self._set_assignment(wanted)

    def subscribe(
        self,
        topics: Iterable[str] | None,
        pattern: re.Pattern[str] | None,
        exclude_pattern: re.Pattern[str] | None = None,
    ) -> None:
        with self.lock:
            if self.manual:
                raise RuntimeError("subscribe() is not allowed after assign(); unsubscribe first")
            self.topics = frozenset(topics or ())
            self.pattern = pattern
            self.exclude_pattern = exclude_pattern

    def matches(self, topic: str) -> bool:
        """Whether a pattern subscription takes ``topic``: the pattern finds it
        (``re.search``) and the exclude pattern, if any, does not."""
        pattern, exclude = self.pattern, self.exclude_pattern
        return (
            pattern is not None
            and pattern.search(topic) is not None
            and (exclude is None or exclude.search(topic) is None)
        )

    def set_subscribed_topics(self, topics: Iterable[str]) -> bool:
        """For a pattern subscription: the matching topics; returns whether they changed."""
        new = frozenset(topics)
        with self.lock:
            changed = new != self.topics
            self.topics = new
        return changed

    def unsubscribe(self) -> None:
        with self.lock:
            self.topics = frozenset()
            self.pattern = None
            self.exclude_pattern = None
            self.manual = False
            self.assignment = {}

    def assign_from_group(self, partitions: Iterable[TopicPartition]) -> None:
        """The group's assignment; new partitions wait for their committed offsets."""
        with self.lock:
            self._set_assignment(list(partitions), awaiting_committed=True)

    def _set_assignment(
        self, partitions: list[TopicPartition], *, awaiting_committed: bool = False
    ) -> None:
        old = self.assignment
        new: dict[TopicPartition, PartitionState] = {}
        for tp in partitions:
            state = old.get(tp)
            if state is None:
                state = PartitionState(awaiting_committed=awaiting_committed)
                if not awaiting_committed:
                    self._reset(tp, state, None)
            new[tp] = state
        for tp, state in old.items():
            if tp not in new:
                state.epoch += 1  # in-flight data for it is dropped
        self.assignment = new

    def _default_reset(self) -> int | None:
        if self.default_reset == "earliest":
            return EARLIEST
        if self.default_reset == "latest":
            return LATEST
        return None

    # -- positions

    def state(self, tp: TopicPartition) -> PartitionState:
        state = self.assignment.get(tp)
        if state is None:
            raise RuntimeError(f"partition {tp} is not assigned to this consumer")
        return state

    def seek(self, tp: TopicPartition, offset: int) -> None:
        with self.lock:
            state = self.state(tp)
            state.position = state.fetch_position = offset
            state.reset = None
            state.awaiting_committed = False
            state.error = None
            state.epoch += 1

    def request_reset(self, tp: TopicPartition, timestamp: int | None) -> None:
        """Asks for the ``EARLIEST``/``LATEST`` offset (``None``: the default strategy, and
        with ``none`` an error the next poll raises)."""
        with self.lock:
            state = self.state(tp)
            self._reset(tp, state, timestamp)

    def _reset(self, tp: TopicPartition, state: PartitionState, timestamp: int | None) -> None:
        state.position = state.fetch_position = None
        state.awaiting_committed = False
        state.epoch += 1
        if timestamp is None:
            timestamp = self._default_reset()
        if timestamp is None:
            state.error = NoOffsetForPartitionError(
                f"{tp}: no valid offset and auto.offset.reset is none"
            )
            state.reset = None
        else:
            state.error = None
            state.reset = timestamp

    def fail_or_reset(self, tp: TopicPartition, error: BaseException, epoch: int) -> None:
        """OFFSET_OUT_OF_RANGE at ``epoch``: reset by the default strategy, or record ``error``
        when it is ``none``."""
        with self.lock:
            state = self.assignment.get(tp)
            if state is None or state.epoch != epoch:
                return
            if self._default_reset() is None:
                state.error = error
            else:
                self._reset(tp, state, None)

    def set_committed(self, tp: TopicPartition, offset: int | None) -> None:
        """The committed offset found for a partition awaiting it (``None``: reset)."""
        with self.lock:
            state = self.assignment.get(tp)
            if state is None or not state.awaiting_committed:
                return
            if offset is None or offset < 0:
                self._reset(tp, state, None)
            else:
                state.awaiting_committed = False
                state.position = state.fetch_position = offset
                state.epoch += 1

    def awaiting_committed(self) -> list[TopicPartition]:
        with self.lock:
            return [tp for tp, s in self.assignment.items() if s.awaiting_committed]

    def positions(self) -> dict[TopicPartition, int]:
        """The known positions (what auto commit commits)."""
        with self.lock:
            return {tp: s.position for tp, s in self.assignment.items() if s.position is not None}

    def error(self) -> BaseException | None:
        """The first recorded partition error, if any; it stays until the partition is sought
        or reset (so every poll raises it, as Kafka's consumer does)."""
        with self.lock:
            for state in self.assignment.values():
                if state.error is not None:
                    return state.error
        return None
