"""The event loop's busy fraction: Kafka's network processor idle ratio, for one asyncio loop.

Kafka's ``NetworkProcessorAvgIdlePercent`` says how much of the time its network threads wait
for sockets. The broker's equivalent is the share of wall time the event-loop thread spends on
the CPU: read from the thread's CPU clock (``pthread_getcpuclockid``), which another thread
(the scrape) may read without touching the loop. Time the loop spends blocked in a system call
(an inline page-cache miss) counts as idle here, which Kafka would count as busy; on the broker's
paths that is rare.

``LoopBusy`` is created on the loop thread. Where the platform has no thread CPU clocks, the
figures are None.
"""

from __future__ import annotations

import threading
import time


class LoopBusy:
    """CPU seconds of the loop thread, and its busy fraction between two readings."""

    def __init__(self) -> None:
        self._clock: int | None
        try:
            self._clock = time.pthread_getcpuclockid(threading.get_ident())
            time.clock_gettime(self._clock)
        except (AttributeError, OSError):
            self._clock = None
        self._lock = threading.Lock()
        cpu = self.cpu_seconds()
        self._last: tuple[float, float] | None = None if cpu is None else (time.monotonic(), cpu)

    def cpu_seconds(self) -> float | None:
        """The loop thread's CPU time so far (user + system)."""
        if self._clock is None:
            return None
        try:
            return time.clock_gettime(self._clock)
        except OSError:  # the thread is gone (the loop stopped)
            return None

    def busy_fraction(self) -> float | None:
        """The share of wall time the loop thread was on the CPU since the previous call
        (the first call: since this object was made), clamped to 0..1."""
        cpu = self.cpu_seconds()
        if cpu is None:
            return None
        wall = time.monotonic()
        with self._lock:
            last, self._last = self._last, (wall, cpu)
        if last is None:
            return None
        elapsed = wall - last[0]
        if elapsed <= 0:
            return None
        return min(1.0, max(0.0, (cpu - last[1]) / elapsed))
