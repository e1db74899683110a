"""Injected time: the ``Clock`` port, the system clock, and a manual clock for tests.

Logic that depends on time (retention, flush policy, rolls, session timeouts) takes a
``Clock`` or a ``now_ms`` value instead of reading the system clock, so tests move time by
hand and never sleep (STYLE.md rule 6).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """A source of time. Implementations are thread-safe."""

    def now_ms(self) -> int:
        """Wall-clock time in milliseconds since the Unix epoch."""
        ...

    def monotonic_ms(self) -> int:
        """A monotonic time in milliseconds, for measuring intervals."""
        ...


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class MockClock:
    """A clock that only moves when told to. Both readings advance together.

    Args:
        now_ms: the initial wall-clock reading.
    """

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self._lock = threading.Lock()
        self._now_ms = now_ms
        self._monotonic_ms = 0

    def now_ms(self) -> int:
        with self._lock:
            return self._now_ms

    def monotonic_ms(self) -> int:
        with self._lock:
            return self._monotonic_ms

    def advance(self, ms: int) -> None:
        """Move both readings forward by ``ms`` milliseconds (``ms`` ≥ 0)."""
        if ms < 0:
            raise ValueError("a clock does not go backwards")
        with self._lock:
            self._now_ms += ms
            self._monotonic_ms += ms


SYSTEM_CLOCK = SystemClock()
