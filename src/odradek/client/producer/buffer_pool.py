"""``BufferPool``: the ``buffer.memory`` budget of records not yet acknowledged.

Python has no byte buffers to recycle the way Java's ``BufferPool`` does, so this pool only
counts: ``allocate(size)`` reserves bytes (each new batch reserves ``max(batch.size, its
first record)``), ``deallocate(size)`` gives them back when the batch completes. A caller that
finds too little free memory waits — up to ``max.block.ms`` — and fails with
``KafkaTimeoutError`` if none was freed in time. Waiters are served in arrival order (each has
its own condition), so a large request is not starved by a stream of small ones.

Time: deadlines are read from the injected ``Clock`` (monotonic); the wait itself is a
condition wait bounded by the time left, which ``deallocate`` and ``wake_all`` cut short. A test
with a ``MockClock`` advances the clock and calls ``wake_all`` to make a waiter re-check.

Thread-safe: any number of threads allocate, the sender deallocates.
"""

from __future__ import annotations

import threading
from collections import deque

from odradek._clock import Clock
from odradek.errors import KafkaTimeoutError, ProducerClosedError

__all__ = ["BufferPool"]


class BufferPool:
    """Counts reserved bytes against ``total_bytes`` (see the module docstring).

    Args:
        total_bytes: ``buffer.memory``.
        clock: time source for deadlines.
    """

    def __init__(self, total_bytes: int, clock: Clock) -> None:
        self.total_bytes = total_bytes
        self._clock = clock
        self._lock = threading.Lock()
        self._available = total_bytes
        self._waiters: deque[threading.Condition] = deque()
        self._closed = False

    @property
    def available_bytes(self) -> int:
        return self._available

    @property
    def queued(self) -> int:
        """How many threads wait for memory (the accumulator then sends batches at once)."""
        return len(self._waiters)

    def allocate(self, size: int, max_time_ms: int) -> None:
        """Reserves ``size`` bytes, waiting up to ``max_time_ms`` for them.

        Raises:
            ValueError: ``size`` exceeds ``total_bytes`` (it could never be reserved).
            KafkaTimeoutError: not enough memory was freed within ``max_time_ms``.
            ProducerClosedError: the pool was closed while waiting.
        """
        if size > self.total_bytes:
            raise ValueError(
                f"{size} bytes is more than the whole buffer.memory ({self.total_bytes})"
            )
        with self._lock:
            if not self._waiters and self._available >= size:
                self._available -= size
                return
            deadline = self._clock.monotonic_ms() + max_time_ms
            condition = threading.Condition(self._lock)
            self._waiters.append(condition)
            try:
                while True:
                    if self._closed:
                        raise ProducerClosedError(
                            "the producer closed while send() waited for buffer.memory"
                        )
                    if self._waiters[0] is condition and self._available >= size:
                        self._available -= size
                        return
                    remaining_ms = deadline - self._clock.monotonic_ms()
                    if remaining_ms <= 0:
                        raise KafkaTimeoutError(
                            f"failed to reserve {size} bytes of buffer.memory "
                            f"({self.total_bytes}) within max.block.ms ({max_time_ms})"
                        )
                    condition.wait(remaining_ms / 1000)
            finally:
                self._waiters.remove(condition)
                if self._waiters and self._available > 0:
                    self._waiters[0].notify()

    def deallocate(self, size: int) -> None:
        """Gives back ``size`` bytes and wakes the first waiter."""
        with self._lock:
            self._available += size
            if self._waiters:
                self._waiters[0].notify()

    def wake_all(self) -> None:
        """Makes every waiter re-check its deadline (after a clock change, or on close)."""
        with self._lock:
            for condition in self._waiters:
                condition.notify()

    def close(self) -> None:
        """Fails every thread waiting for memory, now or later, with ProducerClosedError."""
        with self._lock:
            self._closed = True
            for condition in self._waiters:
                condition.notify()
