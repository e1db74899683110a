"""A queue of deadlines with lazy re-checking, for the coordinator's timers.

Owns "what is due next". A key is scheduled at a deadline; ``schedule`` keeps only the earliest
deadline per key, so pushing a *later* deadline for a key already queued costs nothing. The
owner re-checks each popped key against its real deadline and schedules it again if that moved
later (a heartbeat pushes a session out without touching the queue). So each member costs one
entry and at most one early pop per session timeout, whatever its heartbeat rate.

Not thread-safe; pure (no clock): callers pass ``now_ms``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class DeadlineQueue(Generic[K]):
    """Keys by deadline; each key is queued at most once (at its earliest deadline)."""

    __slots__ = ("_heap", "_scheduled", "_sequence")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, K]] = []
        self._scheduled: dict[K, int] = {}
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return len(self._scheduled)

    def schedule(self, key: K, deadline_ms: int) -> None:
        """Ensures ``key`` is due at ``deadline_ms`` or earlier."""
        current = self._scheduled.get(key)
        if current is not None and current <= deadline_ms:
            return
        self._scheduled[key] = deadline_ms
        heapq.heappush(self._heap, (deadline_ms, next(self._sequence), key))

    def cancel(self, key: K) -> None:
        """Unschedules ``key`` (its heap entry is dropped lazily)."""
        self._scheduled.pop(key, None)

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap and self._scheduled.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)

    def next_deadline_ms(self) -> int | None:
        """The earliest deadline queued, or None."""
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> K | None:
        """Removes and returns a key due at ``now_ms`` (earliest first), or None."""
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, _, key = heapq.heappop(self._heap)
        del self._scheduled[key]
        return key

    def clear(self) -> None:
        self._heap.clear()
        self._scheduled.clear()
