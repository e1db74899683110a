"""``ProducerBatch``: the records of one partition that travel together, and their futures.

Life of a batch: *open* (the accumulator appends records to its ``BatchBuilder``) → *closed*
(drained by the sender: built once into the bytes of one v2 record batch, no more appends) →
*in flight* (sent, possibly several times: retries resend the same bytes) → *completed*
(``complete`` with a base offset or an error; exactly once, later calls are ignored).

Who touches it: appends happen under the accumulator's lock; closing, sending and completing
happen on the sender thread. ``complete`` runs the per-record callbacks ("thunks", one
``(metadata, exception)`` call per record that has one, in record order) before it releases
the record futures' waiters, and logs — never raises — what a callback raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TypeAlias

from odradek._types import TopicPartition
from odradek.client.producer.future import BatchResult, RecordFuture
from odradek.client.producer.record import RecordMetadata
from odradek.records.codec import BatchBuilder
from odradek.records.record import Header

__all__ = ["ProducerBatch", "Thunk"]

logger = logging.getLogger(__name__)

#: A per-record completion callback: ``(metadata, exception)``, exactly one meaningful.
Thunk: TypeAlias = Callable[[RecordMetadata, BaseException | None], object]


class ProducerBatch:
    """One partition's batch (see the module docstring).

    Args:
        tp: the partition.
        builder: an empty ``BatchBuilder`` (its size limit is ``batch.size``).
        created_ms: monotonic creation time (``linger.ms`` and ``delivery.timeout.ms`` count
            from it).
        buffer_bytes: the ``buffer.memory`` reserved for this batch, given back when it
            completes.
    """

    __slots__ = (
        "_builder",
        "_records",
        "_thunks",
        "attempts",
        "base_sequence",
        "batch_size",
        "buffer_bytes",
        "created_ms",
        "full",
        "last_attempt_ms",
        "producer_epoch",
        "producer_id",
        "result",
        "retrying",
        "stamp_order",
        "stamped",
        "tp",
    )

    def __init__(
        self, tp: TopicPartition, builder: BatchBuilder, created_ms: int, buffer_bytes: int
    ) -> None:
        self.tp = tp
        self._builder: BatchBuilder | None = builder
        self._records: bytes | None = None
        self._thunks: list[tuple[RecordFuture, Thunk]] | None = None
        self.result = BatchResult(tp.topic, tp.partition)
        self.created_ms = created_ms
        self.last_attempt_ms = created_ms
        self.attempts = 0
        self.retrying = False
        self.full = False
        self.buffer_bytes = buffer_bytes
        self.batch_size = 0
        #: Whether an idempotent producer's id, epoch and sequence are in the bytes (then
        #: the fields below hold them, and ``stamp_order`` the producer's stamping order).
        self.stamped = False
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.stamp_order = -1

    # -- open

    def try_append(
        self,
        timestamp_ms: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header],
        thunk: Thunk | None,
    ) -> RecordFuture | None:
        """Adds a record unless the batch is closed or full.

        Returns:
            The record's future, or None (and the batch is then marked full) when it did not
            fit; the first record of a batch always fits.
        Raises:
            ValueError: a field outside its varint range (from the record codec).
        """
        builder = self._builder
        if builder is None:
            return None
        count = builder.record_count
        if not builder.append(timestamp_ms, key, value, headers):
            self.full = True
            return None
        future = RecordFuture(
            self.result,
            count,
            timestamp_ms,
            -1 if key is None else len(key),
            -1 if value is None else len(value),
        )
        if thunk is not None:
            if self._thunks is None:
                self._thunks = []
            self._thunks.append((future, thunk))
        return future

    @property
    def record_count(self) -> int:
        builder = self._builder
        return builder.record_count if builder is not None else self.batch_size

    @property
    def estimated_size(self) -> int:
        """Bytes of the batch: the builder's estimate while open, the exact size once closed."""
        builder = self._builder
        if builder is not None:
            return builder.estimated_size
        assert self._records is not None
        return len(self._records)

    @property
    def is_open(self) -> bool:
        return self._builder is not None

    # -- closed

    def close(self) -> bytes:
        """Builds the batch (once) and refuses further appends; returns its bytes.

        ``batch_size`` becomes the record count (kept after the builder is dropped).
        """
        if self._records is None:
            builder = self._builder
            assert builder is not None
            self.batch_size = builder.record_count
            self._records = builder.build()
            self._builder = None
        return self._records

    def stamp(
        self, records: bytes, producer_id: int, epoch: int, base_sequence: int, order: int
    ) -> None:
        """Replaces the built bytes with the idempotent producer's, which carry
        ``producer_id``, ``epoch`` and ``base_sequence`` (``stamped``: once, so a retry
        resends the same sequence). ``order`` ranks the batch among the producer's stamped
        batches (a retry goes back into its queue by it)."""
        assert self._records is not None, "the batch is still open"
        self._records = records
        self.producer_id = producer_id
        self.producer_epoch = epoch
        self.base_sequence = base_sequence
        self.stamp_order = order
        self.stamped = True

    @property
    def records(self) -> bytes:
        """The built batch (``close`` first)."""
        assert self._records is not None, "the batch is still open"
        return self._records

    # -- completion

    @property
    def completed(self) -> bool:
        return self.result.completed

    def complete(
        self,
        base_offset: int,
        log_append_time_ms: int,
        error: BaseException | None,
        record_errors: Mapping[int, BaseException] | None = None,
    ) -> bool:
        """Completes every record's future (once; see the module docstring).

        ``record_errors`` gives the records at those batch indexes their own errors (a batch
        the broker refused for some of its records, KIP-467); the others get ``error``.

        Returns:
            False when the batch was already completed (nothing happens).
        """
        if self._builder is not None:
            # Completed while still open (aborted): no more appends.
            self.batch_size = self._builder.record_count
            self._builder = None
        return self.result.complete(
            base_offset,
            log_append_time_ms,
            error,
            before_release=self._run_thunks,
            record_errors=record_errors,
        )

    def _run_thunks(self) -> None:
        thunks, self._thunks = self._thunks, None
        if not thunks:
            return
        result = self.result
        for future, thunk in thunks:
            error = result.error_of(future.batch_index)
            try:
                thunk(future.metadata(), error)
            except Exception:
                logger.exception(
                    "a delivery callback of a record to %s raised (the record was %s)",
                    self.tp,
                    "not delivered" if error is not None else "delivered",
                )

    def __repr__(self) -> str:
        state = "open" if self.is_open else ("completed" if self.completed else "closed")
        return (
            f"<ProducerBatch {self.tp} {self.record_count} records, {state}, "
            f"attempts={self.attempts}>"
        )
