"""``SessionLease``: whether this process may still trust that its ZooKeeper session is alive.

A broker that was stopped (SIGSTOP, a long GC-like stall, a VM pause) for longer than its
ZooKeeper session may already have been declared dead: the controller moved its leaderships and
another broker serves its groups. When it runs again, kazoo still reports the old connection as
up until it reads the socket and learns the session expired; a request handled in that window
answers from memory that another broker has overtaken (the fault suite's resumed zombie
coordinator answered OffsetFetch with offsets older than acknowledged commits).

The lease closes that window with the process's own clock: a ticker records the monotonic time
every ``tick_s``; a gap longer than ``gap_s`` between two ticks (or between the last tick and a
question) means the process did not run for that long, so the session is *suspect* until a
ZooKeeper round trip sent after the gap succeeds (ZooKeeper answers only a live session).

Pure and thread-safe: callers pass the time; the store owns the ticker thread and the round
trip. A gap shorter than the session cannot expire the session (kazoo pings every third of it),
so ``gap_s`` is a third of the session timeout: a false alarm costs one round trip.
"""

from __future__ import annotations

import threading

__all__ = ["SessionLease"]


class SessionLease:
    """Tracks ticks and confirmations; ``trusted(now)`` is the answer handlers need."""

    def __init__(self, session_timeout_s: float, now: float) -> None:
        #: The longest stall after which the session is still trusted without a round trip.
        self.gap_s = max(session_timeout_s / 3, 0.05)
        #: How often the owner should call ``tick``.
        self.tick_s = self.gap_s / 4
        self._lock = threading.Lock()
        self._last_tick = now
        self._suspect_since: int | None = None  # the gap's number while unconfirmed
        self._gaps = 0

    def tick(self, now: float) -> int | None:
        """Records that the process ran at ``now``.

        Returns:
            the number of a newly detected gap (the owner sends a round trip and passes the
            number to ``confirm`` when it succeeds), or ``None`` when time ran without a gap.
        """
        with self._lock:
            stalled = now - self._last_tick > self.gap_s
            self._last_tick = max(self._last_tick, now)
            if not stalled:
                return None
            self._gaps += 1
            self._suspect_since = self._gaps
            return self._gaps

    def unconfirmed(self) -> int | None:
        """The number of the gap still waiting for a round trip, if any."""
        with self._lock:
            return self._suspect_since

    def confirm(self, gap: int) -> None:
        """A round trip sent after gap ``gap`` succeeded: trusted again, unless a later gap
        happened meanwhile (its own round trip must confirm it)."""
        with self._lock:
            if self._suspect_since == gap:
                self._suspect_since = None

    def trusted(self, now: float) -> bool:
        """Whether the session may be taken as alive at ``now``: no unconfirmed gap, and no
        gap since the last tick (a question asked before the ticker ran after a stall)."""
        with self._lock:
            return self._suspect_since is None and now - self._last_tick <= self.gap_s
