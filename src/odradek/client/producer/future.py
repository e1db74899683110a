"""The outcome of a send: ``BatchResult`` (one per batch) and ``RecordFuture`` (one per record).

A batch completes once, with a base offset or an error, and every record in it completes with
it (a batch the broker refused for some of its records, KIP-467, gives those records their own
errors: ``record_errors``); so the waiting machinery (an event, a lock, the listeners) lives
in the batch's ``BatchResult`` and a ``RecordFuture`` is a small handle: the result, the
record's position in the batch and what the metadata needs (Java's ``ProduceRequestResult`` and
``FutureRecordMetadata``). ``RecordMetadata`` is built on demand.

``RecordFuture`` follows ``concurrent.futures.Future``'s reading API — ``done``,
``result(timeout)``, ``exception(timeout)``, ``add_done_callback(fn)`` — plus ``get`` as an
alias of ``result``; it cannot be cancelled (a record handed to the producer is sent or fails).
``result`` raises ``KafkaTimeoutError`` (a ``TimeoutError``) when the timeout runs out.

Thread-safety and order: ``complete`` is called by one thread (the sender) and at most once
takes effect (later calls return False: a batch that expired and then got a late answer).
It (1) records the outcome, (2) runs ``before_release`` (the batch's per-record callbacks, in
record order), (3) releases waiters, (4) runs ``add_done_callback`` listeners. So a caller
woken by ``result`` or ``flush`` sees every per-record callback of the batch already run.
Listener exceptions are logged with the topic and partition and never propagate.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Final

from odradek.client.producer.record import RecordMetadata
from odradek.errors import KafkaTimeoutError

__all__ = ["BatchResult", "RecordFuture"]

logger = logging.getLogger(__name__)

NO_OFFSET: Final = -1
NO_TIMESTAMP: Final = -1


class BatchResult:
    """The shared outcome of one batch (see the module docstring).

    Args:
        topic, partition: where the batch goes (partition -1: none chosen, for a record that
            failed before partitioning).
    """

    __slots__ = (
        "_done",
        "_event",
        "_listeners",
        "_lock",
        "base_offset",
        "error",
        "log_append_time_ms",
        "partition",
        "record_errors",
        "topic",
    )

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.base_offset = NO_OFFSET
        self.log_append_time_ms = NO_TIMESTAMP
        self.error: BaseException | None = None
        #: Errors of particular records by their index in the batch (KIP-467); the others
        #: get ``error``.
        self.record_errors: Mapping[int, BaseException] | None = None
        self._done = False
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._listeners: list[tuple[RecordFuture, Callable[[RecordFuture], object]]] = []

    @property
    def completed(self) -> bool:
        """Whether waiters were released (the outcome is final and callbacks ran)."""
        return self._event.is_set()

    def complete(
        self,
        base_offset: int,
        log_append_time_ms: int,
        error: BaseException | None,
        before_release: Callable[[], None] | None = None,
        record_errors: Mapping[int, BaseException] | None = None,
    ) -> bool:
        """Sets the outcome once; see the module docstring for the order of effects.

        ``record_errors`` (with an ``error``) fails the records at those batch indexes with
        their own errors and the others with ``error``.

        Returns:
            False when the result was already completed (nothing changes).
        """
        with self._lock:
            if self._done:
                return False
            self._done = True
            self.base_offset = base_offset
            self.log_append_time_ms = log_append_time_ms
            self.error = error
            self.record_errors = record_errors if error is not None else None
        if before_release is not None:
            before_release()
        with self._lock:
            listeners, self._listeners = self._listeners, []
            self._event.set()
        for future, listener in listeners:
            future.run_listener(listener)
        return True

    def error_of(self, batch_index: int) -> BaseException | None:
        """The error of the record at ``batch_index`` (None: not failed, or not yet)."""
        record_errors = self.record_errors
        if record_errors is not None:
            own = record_errors.get(batch_index)
            if own is not None:
                return own
        return self.error

    def wait(self, timeout: float | None) -> bool:
        """Waits until completed; False when ``timeout`` (seconds) ran out first."""
        return self._event.wait(timeout)

    def add_listener(
        self, future: RecordFuture, listener: Callable[[RecordFuture], object]
    ) -> bool:
        """Registers ``listener`` unless already completed; False means: call it yourself."""
        with self._lock:
            if self._event.is_set():
                return False
            self._listeners.append((future, listener))
            return True


class RecordFuture:
    """The future of one record's send (see the module docstring).

    Args:
        result: the batch's shared result.
        relative_offset: the record's offset delta in its batch.
        timestamp_ms: the record's create timestamp.
        serialized_key_size, serialized_value_size: -1 for null.
    """

    __slots__ = ("_key_size", "_relative_offset", "_result", "_timestamp_ms", "_value_size")

    def __init__(
        self,
        result: BatchResult,
        relative_offset: int,
        timestamp_ms: int,
        serialized_key_size: int,
        serialized_value_size: int,
    ) -> None:
        self._result = result
        self._relative_offset = relative_offset
        self._timestamp_ms = timestamp_ms
        self._key_size = serialized_key_size
        self._value_size = serialized_value_size

    @classmethod
    def failed(
        cls,
        topic: str,
        partition: int,
        error: BaseException,
        timestamp_ms: int = NO_TIMESTAMP,
        serialized_key_size: int = -1,
        serialized_value_size: int = -1,
    ) -> RecordFuture:
        """A future that already failed with ``error`` (a record refused by ``send``)."""
        result = BatchResult(topic, partition)
        result.complete(NO_OFFSET, NO_TIMESTAMP, error)
        return cls(result, 0, timestamp_ms, serialized_key_size, serialized_value_size)

    @property
    def batch_index(self) -> int:
        """The record's index in its batch (its offset delta)."""
        return self._relative_offset

    @property
    def batch(self) -> BatchResult:
        """The outcome this record shares with every record of its batch: one object per
        batch, so a caller with many futures can check deliveries per batch (``completed``,
        ``error``) rather than per record: a batch is appended whole or not at all, so
        ``error`` is set whenever any of its records failed."""
        return self._result

    def done(self) -> bool:
        return self._result.completed

    def cancelled(self) -> bool:
        """Always False: a record handed to the producer cannot be cancelled."""
        return False

    def cancel(self) -> bool:
        """Always False (see ``cancelled``)."""
        return False

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """The record's metadata once acknowledged.

        Raises:
            KafkaTimeoutError: not completed within ``timeout`` seconds (``None``: wait).
            Exception: the error the send failed with.
        """
        result = self._result
        if not result.wait(timeout):
            raise KafkaTimeoutError(
                f"no acknowledgement for a record to {result.topic} within {timeout} s"
            )
        error = result.error_of(self._relative_offset)
        if error is not None:
            raise error
        return self.metadata()

    get = result

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The error the send failed with, None after success.

        Raises:
            KafkaTimeoutError: not completed within ``timeout`` seconds.
        """
        result = self._result
        if not result.wait(timeout):
            raise KafkaTimeoutError(
                f"no acknowledgement for a record to {result.topic} within {timeout} s"
            )
        return result.error_of(self._relative_offset)

    def add_done_callback(self, fn: Callable[[RecordFuture], object]) -> None:
        """Calls ``fn(future)`` once completed: at once (in this thread) when already done,
        else in the thread that completes it (the producer's sender thread: keep it short).
        Exceptions from ``fn`` are logged, never raised."""
        if not self._result.add_listener(self, fn):
            self.run_listener(fn)

    def metadata(self) -> RecordMetadata:
        """The metadata as known now (offset -1 before success, after failure, or acks=0)."""
        result = self._result
        base_offset = result.base_offset
        offset = base_offset + self._relative_offset if base_offset >= 0 else NO_OFFSET
        log_append_time = result.log_append_time_ms
        return RecordMetadata(
            result.topic,
            result.partition,
            offset if result.error is None else NO_OFFSET,
            log_append_time if log_append_time != NO_TIMESTAMP else self._timestamp_ms,
            self._key_size,
            self._value_size,
        )

    def run_listener(self, listener: Callable[[RecordFuture], object]) -> None:
        """Calls ``listener(self)``, logging (not raising) what it raises."""
        try:
            listener(self)
        except Exception:
            logger.exception(
                "a done-callback of a record to %s-%d raised",
                self._result.topic,
                self._result.partition,
            )

    def __repr__(self) -> str:
        result = self._result
        state = "pending"
        if result.completed:
            error = result.error_of(self._relative_offset)
            state = f"failed: {error!r}" if error is not None else "done"
        return f"<RecordFuture {result.topic}-{result.partition} {state}>"
