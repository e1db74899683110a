"""The history of a fault run: what the workload did and what the brokers answered, as plain
values the checker reads.

Events (frozen, slotted; times in seconds on the run's monotonic clock, ``at_s``):

- ``Send``: a producer handed ``value`` for ``partition`` to its client.
- ``Ack``: the broker acknowledged ``value`` at ``(partition, offset)`` (acks=all).
- ``Failure``: the client gave up on ``value`` (its outcome is unknown: it may be in the log).
- ``Consume``: a group member read ``value`` at ``(partition, offset)``.
- ``Commit``: the coordinator acknowledged a group's committed ``offset`` for ``partition``;
  ``sent_at_s`` is when the commit left the member.
- ``CommittedRead``: the coordinator answered an OffsetFetch with ``offset`` for
  ``partition``; ``sent_at_s`` is when the request left.
- ``Transaction``: a transactional producer's transaction ``number`` ended with ``outcome``
  (``committed`` once commit_transaction returned, ``aborted`` once abort_transaction
  returned, ``unknown`` when the end failed — a fenced or failed producer's transaction is
  committed or aborted by the coordinator, all or nothing); ``records`` are its
  ``(partition, value)`` in the order produced.

Every value a producer sends is unique in the run (``<producer>-<sequence>``), so a value
names its record. ``History`` is the recorder: any thread may ``record``; ``events()`` is a
snapshot in recording order. The clock is injected (``now_s``) so tests feed plain values.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias


@dataclass(frozen=True, slots=True)
class Send:
    at_s: float
    producer: str
    idempotent: bool
    partition: int
    value: bytes


@dataclass(frozen=True, slots=True)
class Ack:
    at_s: float
    producer: str
    partition: int
    offset: int
    value: bytes


@dataclass(frozen=True, slots=True)
class Failure:
    at_s: float
    producer: str
    partition: int
    value: bytes
    error: str


@dataclass(frozen=True, slots=True)
class Consume:
    at_s: float
    consumer: str
    partition: int
    offset: int
    value: bytes


@dataclass(frozen=True, slots=True)
class Commit:
    sent_at_s: float
    at_s: float
    consumer: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class CommittedRead:
    sent_at_s: float
    at_s: float
    partition: int
    offset: int


#: The outcomes a ``Transaction`` records.
TXN_OUTCOMES = ("committed", "aborted", "unknown")


@dataclass(frozen=True, slots=True)
class Transaction:
    at_s: float
    producer: str
    number: int
    outcome: str
    records: tuple[tuple[int, bytes], ...]

    def __post_init__(self) -> None:
        if self.outcome not in TXN_OUTCOMES:
            raise ValueError(f"a transaction outcome is one of {TXN_OUTCOMES}: {self.outcome!r}")


Event: TypeAlias = Send | Ack | Failure | Consume | Commit | CommittedRead | Transaction


class History:
    """An append-only, thread-safe list of events stamped by ``now_s``.

    Args:
        now_s: the clock (default: ``time.monotonic``); times are kept relative to the
            moment the history was made, so a run starts at 0.
    """

    def __init__(self, now_s: Callable[[], float] = time.monotonic) -> None:
        self._clock = now_s
        self._origin = now_s()
        self._events: list[Event] = []
        self._lock = threading.Lock()

    def now_s(self) -> float:
        """Seconds since the history began (the time events carry)."""
        return self._clock() - self._origin

    def record(self, event: Event) -> None:
        with self._lock:
            self._events.append(event)

    def events(self) -> tuple[Event, ...]:
        """A snapshot of every event recorded so far, in recording order."""
        with self._lock:
            return tuple(self._events)

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)


@dataclass(frozen=True, slots=True)
class ReplicaLog:
    """One replica of one partition as read after the faults healed: its records below
    ``high_watermark`` (the leader's, when the read was made), in offset order."""

    partition: int
    broker_id: int
    high_watermark: int
    records: tuple[tuple[int, bytes], ...]


@dataclass(frozen=True, slots=True)
class CommittedLog:
    """One partition as a read_committed consumer saw it after the faults healed: the
    ``(offset, value)`` of every record it was given, in the order given."""

    partition: int
    records: tuple[tuple[int, bytes], ...]


@dataclass(frozen=True, slots=True)
class FaultWindow:
    """One fault of the run: applied at ``applied_at_s``, healed at ``healed_at_s``."""

    kind: str
    target: str
    applied_at_s: float
    healed_at_s: float
