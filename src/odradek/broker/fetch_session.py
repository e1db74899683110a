"""Incremental fetch sessions (KIP-227), the leader's side: a bounded cache of sessions and the
rules that turn one Fetch (v7+) into the partitions to read and the partitions to answer.

A fetch names ``session_id`` and ``session_epoch``:

- epoch -1 (``FINAL_EPOCH``): no session — the request's partitions are read and all answered
  (as before v7). A non-zero ``session_id`` with it closes that session.
- epoch 0 (``INITIAL_EPOCH``): a full fetch. Any session named is closed; the request's
  partitions are read and all answered, and a new session holding them is created when the
  cache has room (its id goes back in the response; 0 when it has none: the client stays
  sessionless). The next request of that session carries epoch 1.
- epoch > 0: an incremental fetch of session ``session_id``: an unknown id is
  FETCH_SESSION_ID_NOT_FOUND, an epoch other than the one expected INVALID_FETCH_SESSION_EPOCH
  (the session is kept: the client goes back to a full fetch). Otherwise the partitions named
  are added or updated in the session, ``forgotten_topics_data`` removed, every partition of
  the session is read, and the response carries only the partitions with news: records, an
  error, or a high watermark or log start offset other than the one last sent for it (a
  partition just added has none sent yet, so it is always answered).

Bounds (never memory-eating, Kafka's eviction rules simplified): at most
``max.incremental.fetch.session.cache.slots`` sessions and ``max_cached_partitions``
partitions over all sessions. A new session that does not fit takes the place of the least
recently used session idle for ``eviction_ms`` or more, else — when it is a follower's
(privileged, as in Kafka) — of the least recently used consumer's session; else it is not
created. An incremental fetch that would grow past the partition bound closes its session
(FETCH_SESSION_ID_NOT_FOUND: the client starts over with a full fetch, which then gets no
session if it still does not fit).

Sans-I/O: values and ``now_ms`` in, values out. Not thread-safe (the event loop only).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from odradek._types import TopicPartition
from odradek.errors import ErrorCode

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "CachedPartition",
    "FetchContext",
    "FetchSession",
    "FetchSessionCache",
    "SessionError",
    "next_epoch",
]

FINAL_EPOCH = -1
INITIAL_EPOCH = 0
_MAX_EPOCH = 2**31 - 1
#: ``min.incremental.fetch.session.eviction.ms``'s default (Kafka's internal setting).
DEFAULT_EVICTION_MS = 120_000
DEFAULT_MAX_SLOTS = 1000
#: All sessions' partitions together; each costs a few hundred bytes.
DEFAULT_MAX_CACHED_PARTITIONS = 200_000


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: it wraps to 1, never back to 0 or -1."""
    return 1 if epoch >= _MAX_EPOCH else epoch + 1


class FetchPartitionRequest(Protocol):
    """A request partition as the Fetch handler reads it (kio's, or a ``CachedPartition``)."""

    @property
    def partition(self) -> int: ...
    @property
    def fetch_offset(self) -> int: ...
    @property
    def partition_max_bytes(self) -> int: ...


@dataclass(slots=True, eq=False)
class CachedPartition:
    """One partition of a session: what its fetcher asked last and what it was last told."""

    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    #: The high watermark and log start offset last answered (-1: none yet).
    sent_high_watermark: int = -1
    sent_log_start_offset: int = -1

    def update(self, request: FetchPartitionRequest) -> None:
        self.fetch_offset = request.fetch_offset
        self.partition_max_bytes = request.partition_max_bytes
        self.current_leader_epoch = int(getattr(request, "current_leader_epoch", -1))

    def has_news(
        self, error_code: int, high_watermark: int, log_start_offset: int, records_size: int
    ) -> bool:
        """Whether an incremental response carries this partition; remembers what it sends."""
        news = (
            records_size > 0
            or error_code != 0
            or high_watermark != self.sent_high_watermark
            or log_start_offset != self.sent_log_start_offset
        )
        if news:
            self.remember(high_watermark, log_start_offset)
        return news

    def remember(self, high_watermark: int, log_start_offset: int) -> None:
        self.sent_high_watermark = high_watermark
        self.sent_log_start_offset = log_start_offset


def _cached(request: FetchPartitionRequest) -> CachedPartition:
    cached = CachedPartition(request.partition, 0, 0)
    cached.update(request)
    return cached


@dataclass(slots=True, eq=False)
class FetchSession:
    """A session: its partitions in the order they were added, and the next epoch expected."""

    session_id: int
    privileged: bool
    partitions: dict[TopicPartition, CachedPartition]
    epoch: int
    last_used_ms: int


@dataclass(frozen=True, slots=True)
class SessionError:
    """The whole fetch fails with a session error (no partitions answered)."""

    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class FetchContext:
    """What one fetch reads and how its answer is cut.

    ``topics``: the partitions to read, grouped by topic. ``session``: the session they
    belong to (None: sessionless, or a full fetch that got no session). ``incremental``:
    answer only the partitions with news (``CachedPartition.has_news``).
    """

    topics: Sequence[tuple[str, Sequence[FetchPartitionRequest]]]
    session: FetchSession | None = None
    incremental: bool = False
    #: With a session: the session's entry of each partition of ``topics``, in their order.
    cached: Sequence[Sequence[CachedPartition]] = ()

    @property
    def session_id(self) -> int:
        return 0 if self.session is None else self.session.session_id


@dataclass
class FetchSessionCache:
    """The leader's sessions (see the module docstring)."""

    max_slots: int = DEFAULT_MAX_SLOTS
    max_cached_partitions: int = DEFAULT_MAX_CACHED_PARTITIONS
    eviction_ms: int = DEFAULT_EVICTION_MS
    rng: random.Random = field(default_factory=random.Random)
    #: Sessions by id, least recently used first.
    _sessions: dict[int, FetchSession] = field(default_factory=dict)
    _cached_partitions: int = 0
    created: int = 0
    evicted: int = 0

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def cached_partitions(self) -> int:
        return self._cached_partitions

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def statistics(self) -> dict[str, int]:
        return {
            "sessions": len(self._sessions),
            "cached_partitions": self._cached_partitions,
            "created": self.created,
            "evicted": self.evicted,
        }

    def new_context(
        self,
        session_id: int,
        session_epoch: int,
        topics: Iterable[tuple[str, Sequence[FetchPartitionRequest]]],
        forgotten: Iterable[tuple[str, Sequence[int]]],
        *,
        privileged: bool,
        now_ms: int,
    ) -> FetchContext | SessionError:
        """The context of one fetch (see the module docstring); a full fetch may create a
        session, an incremental one updates its session and advances its epoch."""
        if session_epoch <= INITIAL_EPOCH:
            if session_id != 0:
                self.remove(session_id)
            requested = [(topic, list(partitions)) for topic, partitions in topics]
            if session_epoch < INITIAL_EPOCH:
                return FetchContext(requested)
            session = self._create(requested, privileged, now_ms)
            if session is None:
                return FetchContext(requested)
            entries = session.partitions
            in_order = [
                [entries[TopicPartition(topic, request.partition)] for request in partitions]
                for topic, partitions in requested
            ]
            return FetchContext(requested, session, cached=in_order)
        session = self._sessions.get(session_id)
        if session is None:
            return SessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != session_epoch:
            return SessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        cached = session.partitions
        before = len(cached)
        for topic, indexes in forgotten:
            for index in indexes:
                cached.pop(TopicPartition(topic, index), None)
        for topic, partitions in topics:
            for request in partitions:
                tp = TopicPartition(topic, request.partition)
                entry = cached.get(tp)
                if entry is None:
                    cached[tp] = _cached(request)
                else:
                    entry.update(request)
        self._cached_partitions += len(cached) - before
        if self._cached_partitions > self.max_cached_partitions:
            self.remove(session_id)
            return SessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        session.epoch = next_epoch(session_epoch)
        self._touch(session, now_ms)
        grouped: dict[str, list[CachedPartition]] = {}
        for tp, entry in cached.items():
            group = grouped.get(tp.topic)
            if group is None:
                group = grouped[tp.topic] = []
            group.append(entry)
        return FetchContext(
            list(grouped.items()), session, incremental=True, cached=list(grouped.values())
        )

    def remove(self, session_id: int) -> bool:
        session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        self._cached_partitions -= len(session.partitions)
        return True

    def _touch(self, session: FetchSession, now_ms: int) -> None:
        session.last_used_ms = now_ms
        # Re-inserting moves it to the end: the dict stays ordered by last use.
        del self._sessions[session.session_id]
        self._sessions[session.session_id] = session

    def _create(
        self,
        topics: Sequence[tuple[str, Sequence[FetchPartitionRequest]]],
        privileged: bool,
        now_ms: int,
    ) -> FetchSession | None:
        if self.max_slots <= 0:
            return None
        partitions = {
            TopicPartition(topic, request.partition): _cached(request)
            for topic, requests in topics
            for request in requests
        }
        size = len(partitions)
        if size > self.max_cached_partitions:
            return None
        while (
            len(self._sessions) >= self.max_slots
            or self._cached_partitions + size > self.max_cached_partitions
        ):
            victim = self._victim(privileged, now_ms)
            if victim is None:
                return None
            self.remove(victim.session_id)
            self.evicted += 1
        session = FetchSession(self._new_id(), privileged, partitions, 1, now_ms)
        self._sessions[session.session_id] = session
        self._cached_partitions += size
        self.created += 1
        return session

    def _victim(self, privileged: bool, now_ms: int) -> FetchSession | None:
        oldest = next(iter(self._sessions.values()), None)
        if oldest is None:
            return None
        if now_ms - oldest.last_used_ms >= self.eviction_ms:
            return oldest
        if privileged:
            for session in self._sessions.values():
                if not session.privileged:
                    return session
        return None

    def _new_id(self) -> int:
        while True:
            session_id = self.rng.randint(1, _MAX_EPOCH)
            if session_id not in self._sessions:
                return session_id
