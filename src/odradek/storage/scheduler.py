"""Background work for the storage layer: fsync, deletion of removed segments, periodic
retention and flush checks — everything that must stay off the caller's hot path.

``Scheduler`` is the port; ``ThreadScheduler`` runs tasks on one daemon thread;
``ManualScheduler`` runs them only when a test says so, against a ``MockClock``.
A task that raises is logged and does not stop the scheduler or later runs of periodic tasks.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from odradek._clock import SYSTEM_CLOCK, Clock

logger = logging.getLogger(__name__)

Task = Callable[[], object]


class Scheduler(Protocol):
    """Runs tasks later, on another thread in production."""

    def schedule(
        self, name: str, task: Task, delay_ms: int = 0, period_ms: int | None = None
    ) -> None:
        """Runs ``task`` after ``delay_ms``, then every ``period_ms`` when given."""
        ...

    def shutdown(self) -> None:
        """Stops periodic tasks; runs the one-off tasks already due; waits for the thread."""
        ...


@dataclass(order=True)
class _Entry:
    due_ms: int
    sequence: int
    name: str = field(compare=False)
    task: Task = field(compare=False)
    period_ms: int | None = field(compare=False)


class _Queue:
    """A due-time ordered queue of tasks (shared by both schedulers)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.entries: list[_Entry] = []
        self.sequence = itertools.count()

    def push(self, name: str, task: Task, delay_ms: int, period_ms: int | None) -> None:
        if period_ms is not None and period_ms < 1:
            raise ValueError(f"task {name!r}: a period must be at least 1 ms, not {period_ms}")
        due = self.clock.monotonic_ms() + max(0, delay_ms)
        heapq.heappush(self.entries, _Entry(due, next(self.sequence), name, task, period_ms))

    def pop_due(self) -> _Entry | None:
        if self.entries and self.entries[0].due_ms <= self.clock.monotonic_ms():
            return heapq.heappop(self.entries)
        return None

    def run(self, entry: _Entry) -> None:
        """Runs a task on the caller's thread and reschedules it when periodic."""
        _run_task(entry)
        if entry.period_ms is not None:
            self.push(entry.name, entry.task, entry.period_ms, entry.period_ms)


def _run_task(entry: _Entry) -> None:
    try:
        entry.task()
    except Exception:
        logger.exception("background task %s failed", entry.name)


class ThreadScheduler:
    """One daemon thread running tasks in due order."""

    def __init__(self, name: str = "odradek-storage", clock: Clock = SYSTEM_CLOCK) -> None:
        self._queue = _Queue(clock)
        self._condition = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def schedule(
        self, name: str, task: Task, delay_ms: int = 0, period_ms: int | None = None
    ) -> None:
        with self._condition:
            if self._stopping:
                raise RuntimeError("scheduler is shut down")
            self._queue.push(name, task, delay_ms, period_ms)
            self._condition.notify()

    def _run(self) -> None:
        while True:
            with self._condition:
                entry = self._queue.pop_due()
                while entry is None:
                    if self._stopping and not self._queue.entries:
                        return
                    timeout = None
                    if self._queue.entries:
                        due = self._queue.entries[0].due_ms
                        timeout = max(0, due - self._queue.clock.monotonic_ms()) / 1000
                    self._condition.wait(timeout)
                    entry = self._queue.pop_due()
            _run_task(entry)
            if entry.period_ms is not None:
                with self._condition:
                    if not self._stopping:
                        self._queue.push(entry.name, entry.task, entry.period_ms, entry.period_ms)

    def shutdown(self) -> None:
        with self._condition:
            self._stopping = True
            # One-off tasks run now, whatever their due time; periodic ones are dropped.
            kept = [entry for entry in self._queue.entries if entry.period_ms is None]
            for entry in kept:
                entry.due_ms = 0
            heapq.heapify(kept)
            self._queue.entries = kept
            self._condition.notify()
        self._thread.join()


class ManualScheduler:
    """A scheduler for tests: tasks run only in ``run_due()``, judged by the given clock."""

    def __init__(self, clock: Clock) -> None:
        self._queue = _Queue(clock)

    def schedule(
        self, name: str, task: Task, delay_ms: int = 0, period_ms: int | None = None
    ) -> None:
        self._queue.push(name, task, delay_ms, period_ms)

    def run_due(self) -> int:
        """Runs every task that is due now (periodic ones are rescheduled); returns how many."""
        ran = 0
        while (entry := self._queue.pop_due()) is not None:
            self._queue.run(entry)
            ran += 1
        return ran

    def pending(self) -> list[str]:
        return [entry.name for entry in sorted(self._queue.entries)]

    def shutdown(self) -> None:
        for entry in sorted(self._queue.entries):
            if entry.period_ms is None:
                self._queue.run(entry)
        self._queue.entries.clear()
