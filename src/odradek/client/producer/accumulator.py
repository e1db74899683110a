"""``RecordAccumulator``: the records waiting to be sent, as a deque of batches per partition.

The producer's threads ``append`` records; the sender thread asks which broker nodes have
something to send (``ready``), takes batches for those nodes (``drain``), puts a batch back
at the front of its deque to retry it (``reenqueue``), takes out batches past
``delivery.timeout.ms`` (``expired_batches``) and gives their memory back once they complete
(``deallocate``). The batches of a partition are sent in the order they were created: only
the first batch of a deque is ever drained.

When is a partition's first batch sendable (``ready``)? When it is full (or a later batch
exists), when it has waited ``linger.ms`` since it was created, when a thread waits for
``buffer.memory``, when a ``flush`` is in progress, or when the accumulator is closing; and
never while it backs off before a retry (``retry.backoff.ms``, doubling per attempt up to
``retry.backoff.max.ms``; KIP-580 without the jitter) or while its partition is *muted* (the
sender mutes a partition with a batch in flight when ``max.in.flight.requests.per.connection``
is 1, which keeps per-partition order across retries). A node is ready when one of the
partitions it leads is sendable; ``drain`` then takes the first batch of *every* sendable-or-
lingering partition it leads (the request goes anyway), up to ``max.request.size``. An
idempotent producer's ``drain_gate`` (``ProducerSequences.may_drain``) may hold a partition's
first batch back (a retry waits for its turn, a new batch for a producer id); a retried batch
that carries a sequence goes back into its deque in stamping order, not merely to the front.

Size: ``batch.size`` bounds a batch's *uncompressed* size, so a compressed batch goes out
smaller than ``batch.size`` (Java's producer estimates the compression ratio to fill batches
further; this one does not guess).

Memory: a new batch reserves ``max(batch.size, its first record's size)`` from the
``BufferPool``; ``append`` blocks up to ``max.block.ms`` for it, outside the lock.

Time: ``now_ms`` arguments and the injected clock are monotonic milliseconds.

Thread-safety: one lock guards the deques, the incomplete set and the flush/close state;
it is never held while waiting for memory, building (compressing) a batch or completing one.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from odradek._clock import Clock
from odradek._types import TopicPartition
from odradek.client.producer.batch import ProducerBatch, Thunk
from odradek.client.producer.buffer_pool import BufferPool
from odradek.client.producer.future import RecordFuture
from odradek.errors import KafkaTimeoutError, ProducerClosedError
from odradek.records.batch import HEADER_SIZE, CompressionType
from odradek.records.codec import BatchBuilder
from odradek.records.record import Header

__all__ = [
    "BATCH_FULL",
    "NEW_BATCH",
    "AccumulatorSettings",
    "AppendResult",
    "ReadyResult",
    "RecordAccumulator",
    "estimate_record_size",
]

#: The largest overhead of one record besides its key, value and header bytes: length,
#: attributes, timestamp delta, offset delta, key length, value length, header count.
RECORD_OVERHEAD_MAX: Final = 5 + 1 + 10 + 5 + 5 + 5 + 5
#: Largest overhead of one header besides its name and value: two lengths.
HEADER_OVERHEAD_MAX: Final = 10
_NEVER: Final = 2**62
_EMPTY_RECORD_BATCH_MAX: Final = HEADER_SIZE + RECORD_OVERHEAD_MAX

#: Leader lookup: the broker node that leads a partition, None when unknown.
LeaderOf = Callable[[TopicPartition], "int | None"]


def estimate_record_size(
    key: bytes | None, value: bytes | None, headers: Sequence[Header] = ()
) -> int:
    """An upper bound of the bytes of a batch holding only this record (header included)."""
    size = _EMPTY_RECORD_BATCH_MAX
    if key is not None:
        size += len(key)
    if value is not None:
        size += len(value)
    if not headers:
        return size
    for name, header_value in headers:
        size += HEADER_OVERHEAD_MAX + len(name.encode())
        if header_value is not None:
            size += len(header_value)
    return size


@dataclass(frozen=True, slots=True)
class AccumulatorSettings:
    """What the accumulator needs of ``ProducerSettings``."""

    batch_size: int = 16_384
    linger_ms: int = 5
    compression: CompressionType = CompressionType.NONE
    delivery_timeout_ms: int = 120_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000


#: ``append`` flags: the record opened a new batch; its partition has a full batch waiting.
NEW_BATCH: Final = 1
BATCH_FULL: Final = 2
#: What ``append`` returns: the record's future (None only when it asked to abort for a new
#: batch) and the flags above. A plain tuple: one is built per record.
AppendResult: TypeAlias = tuple[RecordFuture | None, int]


@dataclass(slots=True)
class ReadyResult:
    """Nodes with something to send now, when to look again, and topics without leaders."""

    ready_nodes: set[int] = field(default_factory=set)
    next_ready_check_delay_ms: int = _NEVER
    unknown_leader_topics: set[str] = field(default_factory=set)


class RecordAccumulator:
    """The per-partition batch queues (see the module docstring).

    Args:
        settings: batch size, linger, compression, timeouts.
        pool: the ``buffer.memory`` budget.
        clock: monotonic time for batch ages.
    """

    def __init__(self, settings: AccumulatorSettings, pool: BufferPool, clock: Clock) -> None:
        self.settings = settings
        self._pool = pool
        self._clock = clock
        self._lock = threading.Lock()
        self._batches: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._incomplete: set[ProducerBatch] = set()
        self._muted: set[TopicPartition] = set()
        self._flushes_in_progress = 0
        self._closed = False
        # Which partition of a node ``drain`` starts with, so every partition gets its turn
        # when max.request.size cuts a drain short.
        self._drain_index: dict[int, int] = {}
        #: Whether a partition's first batch may be drained now (None: always). Called under
        #: the lock; must not call back into the accumulator.
        self.drain_gate: Callable[[ProducerBatch], bool] | None = None

    # -- appending (any thread)

    def append(
        self,
        tp: TopicPartition,
        timestamp_ms: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header],
        thunk: Thunk | None,
        max_block_ms: int,
        *,
        abort_on_new_batch: bool = False,
    ) -> AppendResult:
        """Adds a record to the partition's last batch, or to a new batch.

        Args:
            abort_on_new_batch: when the record needs a new batch, return ``(None, 0)``
                instead of making one (the sticky partitioner then picks another partition,
                KIP-480).

        Returns:
            ``(future, flags)``: ``NEW_BATCH`` when the record opened a batch, ``BATCH_FULL``
            when the partition has a full batch to send (the sender should be told).

        Raises:
            ProducerClosedError: the accumulator is closed.
            KafkaTimeoutError: no memory for a new batch within ``max_block_ms``.
            ValueError: a record field outside its varint range.
        """
        with self._lock:
            if self._closed:
                raise ProducerClosedError("cannot send: the producer is closed")
            dq = self._batches.get(tp)
            if dq is None:
                dq = self._batches[tp] = deque()
            elif dq:
                last = dq[-1]
                future = last.try_append(timestamp_ms, key, value, headers, thunk)
                if future is not None:
                    return future, BATCH_FULL if last.full or len(dq) > 1 else 0
            if abort_on_new_batch:
                return None, 0
        size = max(self.settings.batch_size, estimate_record_size(key, value, headers))
        self._pool.allocate(size, max_block_ms)
        try:
            with self._lock:
                if self._closed:
                    raise ProducerClosedError("cannot send: the producer closed")
                if dq:
                    # Another thread made a batch while this one waited for memory.
                    last = dq[-1]
                    future = last.try_append(timestamp_ms, key, value, headers, thunk)
                    if future is not None:
                        self._pool.deallocate(size)
                        return future, BATCH_FULL if last.full or len(dq) > 1 else 0
                batch = ProducerBatch(tp, self._new_builder(), self._clock.monotonic_ms(), size)
                future = batch.try_append(timestamp_ms, key, value, headers, thunk)
                assert future is not None, "the first record always fits"
                dq.append(batch)
                self._incomplete.add(batch)
                return future, NEW_BATCH | (BATCH_FULL if len(dq) > 1 or batch.full else 0)
        except BaseException:
            # Every successful path returns above; a failure leaves the reservation unowned.
            self._pool.deallocate(size)
            raise

    def append_encoded(
        self,
        tp: TopicPartition,
        records: bytes,
        count: int,
        base_timestamp_ms: int,
        max_timestamp_ms: int,
        max_block_ms: int,
    ) -> ProducerBatch:
        """Queues a batch of records encoded elsewhere (``BatchBuilder.append_encoded``) after
        the partition's batches, built at once (closed: no record joins it, nor the batch
        before it, so the partition's order holds); it is sent as soon as the partition's
        earlier batches are.

        Raises:
            ProducerClosedError: the accumulator is closed.
            KafkaTimeoutError: no memory for the batch within ``max_block_ms``.
            ValueError: ``count`` below 1.
        """
        builder = self._new_builder()
        builder.append_encoded(records, count, base_timestamp_ms, max_timestamp_ms)
        size = builder.estimated_size
        batch = ProducerBatch(tp, builder, self._clock.monotonic_ms(), size)
        batch.close()  # built here (compressed, CRC), on the caller's thread
        self._pool.allocate(size, max_block_ms)
        try:
            with self._lock:
                if self._closed:
                    raise ProducerClosedError("cannot send: the producer is closed")
                batch.full = True
                dq = self._batches.get(tp)
                if dq is None:
                    dq = self._batches[tp] = deque()
                # Last in the deque and closed: a record sent after it opens a new batch.
                dq.append(batch)
                self._incomplete.add(batch)
                return batch
        except BaseException:
            self._pool.deallocate(size)
            raise

    def _new_builder(self) -> BatchBuilder:
        return BatchBuilder(
            batch_size_bytes=self.settings.batch_size, compression=self.settings.compression
        )

    # -- the sender's side

    def ready(self, leader_of: LeaderOf, now_ms: int) -> ReadyResult:
        """Which nodes have a sendable batch (see the module docstring)."""
        result = ReadyResult()
        settings = self.settings
        exhausted = self._pool.queued > 0
        with self._lock:
            hurry = exhausted or self._closed or self._flushes_in_progress > 0
            for tp, dq in self._batches.items():
                if not dq:
                    continue
                leader = leader_of(tp)
                if leader is None:
                    result.unknown_leader_topics.add(tp.topic)
                    continue
                if leader in result.ready_nodes or tp in self._muted:
                    continue
                batch = dq[0]
                if batch.attempts > 0:
                    wait_ms = self._backoff_ms(batch.attempts)
                    waited_ms = now_ms - batch.last_attempt_ms
                    if waited_ms < wait_ms:
                        result.next_ready_check_delay_ms = min(
                            result.next_ready_check_delay_ms, wait_ms - waited_ms
                        )
                        continue
                    result.ready_nodes.add(leader)
                    continue
                waited_ms = now_ms - batch.created_ms
                if hurry or batch.full or len(dq) > 1 or waited_ms >= settings.linger_ms:
                    result.ready_nodes.add(leader)
                else:
                    result.next_ready_check_delay_ms = min(
                        result.next_ready_check_delay_ms, settings.linger_ms - waited_ms
                    )
        return result

    def _backoff_ms(self, attempts: int) -> int:
        settings = self.settings
        backoff = settings.retry_backoff_ms * (1 << min(attempts - 1, 30))
        return min(backoff, max(settings.retry_backoff_max_ms, settings.retry_backoff_ms))

    def drain(
        self,
        leader_of: LeaderOf,
        nodes: Collection[int],
        max_request_size: int,
        now_ms: int,
    ) -> dict[int, list[ProducerBatch]]:
        """Takes, for each of ``nodes``, the first batch of each partition it leads, up to
        ``max_request_size`` bytes per node (a first batch is taken whatever its size), and
        closes them (builds their bytes; outside the lock).

        Batches backing off before a retry and muted partitions are skipped.
        """
        by_node: dict[int, list[TopicPartition]] = {node: [] for node in nodes}
        drained: dict[int, list[ProducerBatch]] = {}
        gate = self.drain_gate
        with self._lock:
            for tp, dq in self._batches.items():
                if dq and tp not in self._muted:
                    leader = leader_of(tp)
                    if leader is not None and leader in by_node:
                        by_node[leader].append(tp)
            for node, tps in by_node.items():
                if not tps:
                    continue
                start = self._drain_index.get(node, 0) % len(tps)
                self._drain_index[node] = start + 1
                size = 0
                batches: list[ProducerBatch] = []
                for tp in itertools.chain(tps[start:], tps[:start]):
                    dq = self._batches[tp]
                    batch = dq[0]
                    if batch.attempts > 0 and (
                        now_ms - batch.last_attempt_ms < self._backoff_ms(batch.attempts)
                    ):
                        continue
                    if gate is not None and not gate(batch):
                        continue
                    batch_size = batch.estimated_size
                    if batches and size + batch_size > max_request_size:
                        break
                    dq.popleft()
                    size += batch_size
                    batches.append(batch)
                if batches:
                    drained[node] = batches
        for batches in drained.values():
            for batch in batches:
                batch.close()
        return drained

    def reenqueue(self, batch: ProducerBatch, now_ms: int) -> None:
        """Puts a batch that failed with a retriable error back at the front of its deque
        (so it goes before the partition's later batches; a stamped batch after the stamped
        ones stamped before it) and starts its backoff."""
        batch.attempts += 1
        batch.last_attempt_ms = now_ms
        batch.retrying = True
        with self._lock:
            dq = self._batches.get(batch.tp)
            if dq is None:
                dq = self._batches[batch.tp] = deque()
            if not batch.stamped:
                dq.appendleft(batch)
                return
            position = 0
            for queued in dq:
                if not queued.stamped or queued.stamp_order > batch.stamp_order:
                    break
                position += 1
            dq.insert(position, batch)

    def take_queued(
        self, tp: TopicPartition, which: Callable[[ProducerBatch], bool]
    ) -> list[ProducerBatch]:
        """Takes the queued batches of ``tp`` that ``which`` picks out of its deque (the
        caller fails them)."""
        with self._lock:
            dq = self._batches.get(tp)
            if not dq:
                return []
            taken = [batch for batch in dq if which(batch)]
            if taken:
                kept = [batch for batch in dq if not which(batch)]
                dq.clear()
                dq.extend(kept)
            return taken

    def take_all_unstamped(self) -> list[ProducerBatch]:
        """Takes every queued batch without a sequence out (the caller fails them: an
        idempotent producer could get no producer id)."""
        with self._lock:
            taken: list[ProducerBatch] = []
            for dq in self._batches.values():
                kept = [batch for batch in dq if batch.stamped]
                if len(kept) != len(dq):
                    taken.extend(batch for batch in dq if not batch.stamped)
                    dq.clear()
                    dq.extend(kept)
            return taken

    def mute(self, tp: TopicPartition) -> None:
        with self._lock:
            self._muted.add(tp)

    def unmute(self, tp: TopicPartition) -> None:
        with self._lock:
            self._muted.discard(tp)

    def expired_batches(self, now_ms: int) -> list[ProducerBatch]:
        """Takes out of the deques every batch older than ``delivery.timeout.ms`` (the caller
        fails them). Batches are checked from the front of each deque, oldest first."""
        timeout_ms = self.settings.delivery_timeout_ms
        expired: list[ProducerBatch] = []
        with self._lock:
            for dq in self._batches.values():
                while dq and now_ms - dq[0].created_ms >= timeout_ms:
                    expired.append(dq.popleft())
        return expired

    def next_expiry_delay_ms(self, now_ms: int) -> int:
        """Milliseconds until the oldest queued batch reaches ``delivery.timeout.ms``."""
        timeout_ms = self.settings.delivery_timeout_ms
        with self._lock:
            oldest = min((dq[0].created_ms for dq in self._batches.values() if dq), default=None)
        if oldest is None:
            return _NEVER
        return max(0, oldest + timeout_ms - now_ms)

    def deallocate(self, batch: ProducerBatch) -> None:
        """Forgets a completed batch and gives its memory back (once per batch)."""
        with self._lock:
            if batch not in self._incomplete:
                return
            self._incomplete.discard(batch)
        self._pool.deallocate(batch.buffer_bytes)

    # -- flush and close

    def begin_flush(self) -> None:
        """Makes every batch sendable until the matching ``end_flush``."""
        with self._lock:
            self._flushes_in_progress += 1

    def end_flush(self) -> None:
        with self._lock:
            self._flushes_in_progress -= 1

    def incomplete_batches(self) -> list[ProducerBatch]:
        """The batches created and not yet completed (queued or in flight)."""
        with self._lock:
            return list(self._incomplete)

    def await_completion(self, batches: Iterable[ProducerBatch], timeout_ms: int | None) -> None:
        """Waits until every batch of ``batches`` has completed.

        Raises:
            KafkaTimeoutError: some are still incomplete after ``timeout_ms``.
        """
        deadline = None if timeout_ms is None else self._clock.monotonic_ms() + timeout_ms
        for batch in batches:
            remaining = None if deadline is None else deadline - self._clock.monotonic_ms()
            if not batch.result.wait(None if remaining is None else max(remaining, 0) / 1000):
                pending = sum(1 for b in self.incomplete_batches() if not b.completed)
                raise KafkaTimeoutError(f"{pending} batches still incomplete after {timeout_ms} ms")

    def close(self) -> None:
        """Refuses further appends and makes every queued batch sendable at once."""
        with self._lock:
            self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    def has_undrained(self) -> bool:
        with self._lock:
            return any(self._batches.values())

    def has_incomplete(self) -> bool:
        with self._lock:
            return bool(self._incomplete)

    def abort_undrained(self) -> list[ProducerBatch]:
        """Takes every queued (not in flight) batch out; the caller fails them."""
        with self._lock:
            batches = [batch for dq in self._batches.values() for batch in dq]
            for dq in self._batches.values():
                dq.clear()
        return batches

    def statistics(self) -> dict[str, int]:
        """A snapshot: queued batches and records, incomplete batches, free memory."""
        with self._lock:
            queued = [batch for dq in self._batches.values() for batch in dq]
            return {
                "queued_batches": len(queued),
                "queued_records": sum(batch.record_count for batch in queued),
                "incomplete_batches": len(self._incomplete),
                "muted_partitions": len(self._muted),
                "buffer_available_bytes": self._pool.available_bytes,
                "buffer_total_bytes": self._pool.total_bytes,
            }
