"""``Sender``: the producer's background thread, which turns queued batches into Produce
requests and their responses into completed futures.

It owns the producer's ``NetworkClient`` (the network client's one owner thread, see
``client.network``): every Produce request is written, every response read, every batch
completed and so every per-record callback run on this thread. One iteration (``run_once``):

1. fail batches past ``delivery.timeout.ms`` (queued, and in flight: their late responses are
   then ignored) with ``KafkaTimeoutError``;
2. ask the accumulator which leader nodes have sendable batches; topics whose partitions have
   no known leader trigger a metadata refresh;
3. keep the nodes whose connection can take a request now (``NetworkClient.ready`` starts
   connecting the others), drain their batches, and send **one Produce request per node**
   with all its drained partitions (``acks``, ``request.timeout.ms``); with
   ``max.in.flight.requests.per.connection=1`` each drained partition is *muted* until its
   request is answered, which keeps per-partition order across retries;
4. ``poll`` the network until the next thing is due (a linger deadline, a retry backoff, an
   expiry, a reconnect) or a ``wakeup`` (the facade wakes it when a batch fills or is created).

A response completes each batch: success → base offset (and log append time); a retriable error
(NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, NETWORK_EXCEPTION, REQUEST_TIMED_OUT, ...)
→ back to the front of its partition's deque after the retry backoff, while ``retries`` and
``delivery.timeout.ms`` allow, with a metadata refresh when the error means stale metadata; any
other error (MESSAGE_TOO_LARGE, INVALID_RECORD, ...) fails the batch's futures (Java's producer
splits a batch refused as too large and retries the halves; this one does not: a record larger
than the broker's ``message.max.bytes`` fails either way, and batches stay within
``batch.size``). When the answer names the records at fault (Produce v8+, KIP-467: keyless
records on a compacted topic), those records fail with INVALID_RECORD and the broker's message,
and the batch's other records, not appended either, with ``RecordNotAppendedError``; they are
not retried, as in Java's producer (``Sender.failBatch``). A lost connection or a request
timeout is a retriable error of every batch of the request. **Ordering:** with more than one
request in flight per connection a retried batch
can land after a later one of the same partition, and a batch whose request timed out after the
broker appended it is appended again on retry (duplicate) — Kafka's behaviour without
idempotence; ``max.in.flight.requests.per.connection=1`` removes the reordering.

**Idempotence** (``sequences`` set: KIP-98, KIP-360): before the first batch the loop asks the
least loaded broker for a producer id (InitProducerId without a transactional id, retried after
``retry.backoff.ms``); batches are stamped with it when first drained and keep their sequence
across retries, and ``ProducerSequences`` holds back what would reach the broker out of order,
so up to 5 requests per connection keep each partition's order. DUPLICATE_SEQUENCE_NUMBER is a
success (the broker has the batch; its offset is then -1). OUT_OF_ORDER_SEQUENCE_NUMBER for a
batch behind an unacknowledged one is retried; for the partition's oldest incomplete batch, and
UNKNOWN_PRODUCER_ID, fail the batch, and so does any other failure of a stamped batch: then
the partition's other batches of that producer id and epoch fail too (never resent out of
order) and the loop asks for a new epoch (InitProducerId naming the current id and epoch).

Closing: ``initiate_close`` stops taking new work but keeps sending until nothing is queued
or in flight; ``force_close`` fails everything still incomplete with the given error. Either
way the thread then closes the network client and ends. An exception escaping an iteration
(a bug, never user code: callbacks are guarded where they run) is logged and the loop goes on.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any, Final

from odradek._clock import Clock
from odradek._types import TopicPartition
from odradek.client.cluster import Metadata, needs_metadata_refresh
from odradek.client.network import NetworkClient
from odradek.client.producer.accumulator import ReadyResult, RecordAccumulator
from odradek.client.producer.batch import ProducerBatch
from odradek.client.producer.config import ProducerSettings
from odradek.client.producer.produce_codec import PRODUCE_CODEC_VERSIONS
from odradek.client.producer.sequences import ProducerSequences
from odradek.client.producer.transactions import TransactionManager
from odradek.errors import (
    ErrorCode,
    InvalidRecordError,
    KafkaError,
    KafkaTimeoutError,
    OdradekError,
    RecordNotAppendedError,
    error_for_code,
)
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = ["Sender"]

logger = logging.getLogger(__name__)

_NEVER: Final = 2**62
#: Cap on one poll while something is pending, so a missed wakeup costs at most this.
_MAX_IDLE_POLL_MS: Final = 1_000
#: Send rounds per loop iteration before the network is polled (see ``run_once``).
_MAX_SEND_ROUNDS: Final = 8
_INIT_PRODUCER_ID: Final = VersionRange(0, 4)
_MAX_EPOCH: Final = 2**15 - 1
#: Kafka's producers ask with this timeout when they have no transactional id.
_NO_TRANSACTION_TIMEOUT_MS: Final = 2**31 - 1
_SEQUENCE_ERRORS: Final = frozenset(
    {ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID}
)


class Sender:
    """The sender loop (see the module docstring). ``run`` is the thread's target.

    Args:
        network: the producer's network client (this thread becomes its owner).
        metadata: the producer's cluster metadata (kept fresh by a ``MetadataUpdater``
            installed on ``network``).
        accumulator: where batches wait.
        settings: acks, timeouts, retries, in-flight limit, max request size.
        clock: monotonic time.
    """

    def __init__(
        self,
        network: NetworkClient,
        metadata: Metadata,
        accumulator: RecordAccumulator,
        settings: ProducerSettings,
        clock: Clock,
    ) -> None:
        self._network = network
        self._metadata = metadata
        self._accumulator = accumulator
        self._settings = settings
        self._clock = clock
        self._guarantee_order = settings.max_in_flight == 1
        #: A transactional producer's manager: hears of failed batches.
        self.transactions: TransactionManager | None = None
        #: An idempotent producer's id and sequences: stamps batches (see the docstring).
        self.sequences: ProducerSequences | None = None
        self._producer_id_pending = False
        self._producer_id_retry_ms = -_NEVER
        self._in_flight: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._last_metadata_request_ms = -_NEVER
        self._wake_requested = False
        self._blocked = False
        self._poll_deadline_ms = 0
        self._running = True
        self._forced_error: BaseException | None = None
        self._stopped = threading.Event()
        self._stats_lock = threading.Lock()
        self._stats = {
            "requests": 0,
            "responses": 0,
            "records_sent": 0,
            "batches_sent": 0,
            "retries": 0,
            "batches_failed": 0,
            "batches_expired": 0,
            "loop_errors": 0,
            "duplicates": 0,
        }

    # -- control (any thread)

    def wakeup(self) -> None:
        """Cuts the current (or next) network poll short."""
        self._wake_requested = True
        self._network.wakeup()

    def notify(self, due_ms: int) -> None:
        """Tells the loop that a batch becomes sendable at ``due_ms`` (monotonic; the facade
        calls it when it creates or fills a batch).

        Cheap when the loop is busy: a flag it checks before it blocks. The socket wakeup (a
        system call, and a GIL hand-off) happens only when the loop is blocked in ``poll``
        past ``due_ms``. The flag is set before ``_blocked`` is read here, and ``_blocked``
        is set before the flag is read in ``run_once``, so one side always sees the other.
        """
        self._wake_requested = True
        if self._blocked and self._poll_deadline_ms > due_ms:
            self._network.wakeup()

    def initiate_close(self) -> None:
        """Stop after sending what is queued and in flight (see the module docstring)."""
        self._running = False
        self._accumulator.close()
        self.wakeup()

    def force_close(self, error: BaseException) -> None:
        """Stop now; everything incomplete fails with ``error``."""
        self._forced_error = error
        self._running = False
        self._accumulator.close()
        self.wakeup()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def statistics(self) -> dict[str, int]:
        with self._stats_lock:
            stats = dict(self._stats)
        if self.sequences is not None:
            stats.update(self.sequences.statistics())
        # list() copies the values in one step: the sender thread may change the dict.
        stats["in_flight_batches"] = sum(len(q) for q in list(self._in_flight.values()))
        return stats

    # -- the thread

    def run(self) -> None:
        """The thread's body: iterate until closed, then finish or abort, then close."""
        logger.debug("producer sender thread started")
        try:
            while self._running:
                self._run_once_guarded()
            while self._forced_error is None and self._has_pending():
                self._run_once_guarded()
            if self._forced_error is not None:
                self._abort_incomplete(self._forced_error)
        finally:
            try:
                self._network.close()
            except Exception:
                logger.exception("closing the producer's network client failed")
            # Anything the closed network failed and that was put back for a retry.
            self._abort_incomplete(
                self._forced_error
                or OdradekError("the producer closed before this record was acknowledged")
            )
            self._stopped.set()
            logger.debug("producer sender thread stopped")

    def _has_pending(self) -> bool:
        return (
            self._accumulator.has_undrained()
            or any(self._in_flight.values())
            or self._network.in_flight_count() > 0
        )

    def _run_once_guarded(self) -> None:
        try:
            self.run_once()
        except Exception:
            with self._stats_lock:
                self._stats["loop_errors"] += 1
            logger.exception("the producer's sender loop failed; it goes on")
            # Do not spin on a persistent failure.
            self._stopped.wait(self._settings.retry_backoff_ms / 1000)

    def run_once(self) -> None:
        """One iteration (see the module docstring)."""
        accumulator = self._accumulator
        self._wake_requested = False
        now = self._clock.monotonic_ms()
        self._fail_expired(now)
        sequences = self.sequences
        if sequences is not None and sequences.needs_producer_id:
            self._request_producer_id(sequences, now)
        # Send rounds back to back while they find work (a partition's next batch only
        # becomes drainable once its first one is taken): each network poll costs a GIL
        # hand-off to the sending threads, so poll once per burst, not once per batch.
        for _ in range(_MAX_SEND_ROUNDS):
            ready, not_ready_ms, sent = self._send_ready(now)
            if not sent:
                break
        timeout = min(
            ready.next_ready_check_delay_ms,
            not_ready_ms,
            accumulator.next_expiry_delay_ms(now),
            self._next_in_flight_expiry_ms(now),
        )
        if sent:
            timeout = 0
        elif self._has_pending():
            timeout = min(timeout, _MAX_IDLE_POLL_MS)
            if sequences is not None and sequences.needs_producer_id:
                # Waiting for a producer id: look again when its retry is due.
                timeout = min(timeout, self._settings.retry_backoff_ms)
        timeout = max(0, timeout)
        self._poll_deadline_ms = now + timeout
        self._blocked = True
        if self._wake_requested:
            timeout = 0
        try:
            self._network.poll(timeout)
        finally:
            self._blocked = False

    def _send_ready(self, now: int) -> tuple[ReadyResult, int, bool]:
        """One round: ready nodes → drain → one Produce request per node.

        Returns the accumulator's readiness, the ms until a node that cannot take a request
        may be connected (``_NEVER``: none waits for that; a connected node that is busy
        waits for I/O instead), and whether a request was sent.
        """
        network = self._network
        leader_of = self._metadata.cluster.leader_for
        ready = self._accumulator.ready(leader_of, now)
        if ready.unknown_leader_topics:
            self._metadata.add_topics(ready.unknown_leader_topics)
            self._request_metadata_update(now)
        nodes: list[int] = []
        not_ready_ms = _NEVER
        for node in ready.ready_nodes:
            try:
                if network.ready(node):
                    nodes.append(node)
                    continue
                delay = network.connection_delay_ms(node)
                if delay > 0:
                    not_ready_ms = min(not_ready_ms, delay)
            except KafkaError as error:  # a leader without an address: stale metadata
                logger.debug("broker %d not usable yet: %s", node, error)
                self._request_metadata_update(now)
                not_ready_ms = min(not_ready_ms, self._settings.retry_backoff_ms)
        if not nodes:
            return ready, not_ready_ms, False
        drained = self._accumulator.drain(leader_of, nodes, self._settings.max_request_size, now)
        for node, batches in drained.items():
            self._send_produce(node, batches, now)
        return ready, not_ready_ms, bool(drained)

    def _request_metadata_update(self, now: int) -> None:
        # At most once per retry.backoff.ms: each request wakes the network's poll, and
        # asking on every iteration would spin while the answer is pending.
        if now - self._last_metadata_request_ms >= self._settings.retry_backoff_ms:
            self._last_metadata_request_ms = now
            self._metadata.request_update()

    # -- requests

    def _send_produce(self, node: int, batches: Sequence[ProducerBatch], now: int) -> None:
        settings = self._settings
        by_tp: dict[TopicPartition, ProducerBatch] = {}
        topics: dict[str, list[dict[str, Any]]] = {}
        records = 0
        transactions = self.transactions
        sequences = self.sequences
        for batch in batches:
            tp = batch.tp
            by_tp[tp] = batch
            if sequences is not None and not batch.stamped:
                sequences.stamp(batch)
            topics.setdefault(tp.topic, []).append(
                {"index": tp.partition, "records": batch.records}
            )
            queue = self._in_flight.get(tp)
            if queue is None:
                queue = self._in_flight[tp] = deque()
            queue.append(batch)
            if self._guarantee_order:
                self._accumulator.mute(tp)
            records += batch.record_count
        fields = {
            "transactional_id": None if transactions is None else transactions.transactional_id,
            "acks": settings.acks,
            "timeout": settings.request_timeout_ms,
            "topic_data": [
                {"name": name, "partition_data": partitions} for name, partitions in topics.items()
            ],
        }
        with self._stats_lock:
            self._stats["requests"] += 1
            self._stats["batches_sent"] += len(batches)
            self._stats["records_sent"] += records
        future = self._network.send(
            node,
            ApiKey.PRODUCE,
            fields,
            versions=PRODUCE_CODEC_VERSIONS,
            expect_response=settings.acks != 0,
            timeout_ms=settings.request_timeout_ms,
        )
        future.add_done_callback(lambda done: self._on_response(done, node, by_tp))

    def _on_response(
        self, future: Future[dict[str, Any]], node: int, by_tp: dict[TopicPartition, ProducerBatch]
    ) -> None:
        try:
            self._handle_response(future, node, by_tp)
        except Exception:
            logger.exception("handling a Produce response from broker %d failed", node)
            error = KafkaError(
                "the producer failed to handle the broker's response",
                code=ErrorCode.UNKNOWN_SERVER_ERROR,
            )
            for batch in by_tp.values():
                self._finish(batch, -1, -1, error)

    def _handle_response(
        self, future: Future[dict[str, Any]], node: int, by_tp: dict[TopicPartition, ProducerBatch]
    ) -> None:
        now = self._clock.monotonic_ms()
        with self._stats_lock:
            self._stats["responses"] += 1
        failure = future.exception()
        if failure is not None:
            error = (
                failure
                if isinstance(failure, KafkaError)
                else KafkaError(f"{failure}", code=ErrorCode.NETWORK_EXCEPTION)
            )
            logger.info(
                "Produce request to broker %d failed (%s): %d batches affected",
                node,
                error,
                len(by_tp),
            )
            self._metadata.request_update()
            for batch in by_tp.values():
                self._fail_or_retry(batch, error, now)
            return
        if self._settings.acks == 0:
            for batch in by_tp.values():
                self._finish(batch, -1, -1, None)
            return
        body = future.result()
        for topic in body.get("responses") or ():
            name = topic["name"]
            for partition in topic["partition_responses"]:
                answered = by_tp.pop(TopicPartition(name, partition["index"]), None)
                if answered is None:
                    logger.warning(
                        "broker %d answered for %s-%d, which the request did not carry",
                        node,
                        name,
                        partition["index"],
                    )
                    continue
                batch = answered
                code = partition["error_code"]
                if code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER and batch.stamped:
                    # The broker has this batch already, but no longer its offset.
                    with self._stats_lock:
                        self._stats["duplicates"] += 1
                    code = ErrorCode.NONE
                if code == ErrorCode.NONE:
                    log_append_time = partition.get("log_append_time")
                    self._finish(
                        batch,
                        partition["base_offset"],
                        -1 if log_append_time is None else log_append_time,
                        None,
                    )
                    continue
                message = partition.get("error_message") or ""
                error = error_for_code(
                    code,
                    f"{_code_name(code)} for {batch.tp} from broker {node}"
                    + (f": {message}" if message else ""),
                )
                if needs_metadata_refresh(code):
                    self._metadata.request_update()
                if partition.get("record_errors") and not error.retriable:
                    self._fail_records(batch, error, partition, node)
                    continue
                self._fail_or_retry(batch, error, now)
        for batch in by_tp.values():
            self._fail_or_retry(
                batch,
                KafkaError(
                    f"broker {node}'s Produce response lacks {batch.tp}",
                    code=ErrorCode.UNKNOWN_SERVER_ERROR,
                ),
                now,
            )

    def _fail_records(
        self, batch: ProducerBatch, error: KafkaError, partition: dict[str, Any], node: int
    ) -> None:
        """Fails a batch the broker refused for the records it names (Produce v8+, KIP-467)
        as Java's producer does: each named record with the partition's error (with one named
        record) or INVALID_RECORD (with several: the code cannot say which record had which
        reason), carrying the record's message, else the partition's; every other record
        with ``RecordNotAppendedError``, never retried (the batch was not appended)."""
        record_errors = partition["record_errors"]
        code = error.error_code
        fallback = partition.get("error_message") or code.name
        by_index: dict[int, BaseException] = {}
        for entry in record_errors:
            index = entry["batch_index"]
            text = (
                f"{code.name if len(record_errors) == 1 else 'INVALID_RECORD'} for record "
                f"{index} of the batch to {batch.tp} from broker {node}: "
                f"{entry.get('batch_index_error_message') or fallback}"
            )
            if len(record_errors) == 1:
                by_index[index] = error_for_code(code, text)
            else:
                by_index[index] = InvalidRecordError(text)
        others = RecordNotAppendedError(
            f"not appended to {batch.tp}: broker {node} refused {len(by_index)} other "
            f"record(s) of its batch ({code.name}); this record itself may be sent again"
        )
        others.__cause__ = error
        logger.debug(
            "failing a batch of %d records to %s: %d refused by the broker (%s)",
            batch.record_count,
            batch.tp,
            len(by_index),
            error,
        )
        self._finish(batch, -1, -1, others, by_index)

    def _fail_or_retry(self, batch: ProducerBatch, error: KafkaError, now: int) -> None:
        settings = self._settings
        retriable = error.retriable
        sequences = self.sequences
        if sequences is not None and batch.stamped and not sequences.transactional:
            if sequences.is_broken(batch):
                retriable = False  # an earlier batch of its run failed: never out of order
            elif error.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER:
                # Behind a batch not yet written (its request lost or retried): wait for it.
                retriable = not sequences.is_first_incomplete(batch)
            elif error.error_code in _SEQUENCE_ERRORS:
                retriable = False
        if (
            retriable
            and not batch.completed
            and self._forced_error is None
            and batch.attempts < settings.retries
            and now - batch.created_ms < settings.delivery_timeout_ms
        ):
            logger.warning(
                "retrying a batch of %d records to %s after %s (attempt %d)",
                batch.record_count,
                batch.tp,
                error,
                batch.attempts + 1,
            )
            self._untrack(batch)
            self._accumulator.reenqueue(batch, now)
            with self._stats_lock:
                self._stats["retries"] += 1
            return
        if not batch.completed:
            logger.debug(
                "failing a batch of %d records to %s: %s", batch.record_count, batch.tp, error
            )
        self._finish(batch, -1, -1, error)

    def _finish(
        self,
        batch: ProducerBatch,
        base_offset: int,
        log_append_time_ms: int,
        error: BaseException | None,
        record_errors: dict[int, BaseException] | None = None,
    ) -> None:
        self._untrack(batch)
        if (
            batch.complete(base_offset, log_append_time_ms, error, record_errors)
            and error is not None
        ):
            with self._stats_lock:
                self._stats["batches_failed"] += 1
            if self.transactions is not None:
                self.transactions.record_failure(error)
        self._accumulator.deallocate(batch)
        self._sequence_done(batch, error)

    def _sequence_done(self, batch: ProducerBatch, error: BaseException | None) -> None:
        """Tells ``sequences`` a stamped batch completed; a failure breaks its run, and the
        run's queued batches fail with it (see the module docstring)."""
        sequences = self.sequences
        if sequences is None or not batch.stamped:
            return
        sequences.completed(batch)
        if error is None or sequences.transactional or not sequences.break_run(batch):
            return
        logger.warning(
            "a batch of %d records to %s with producer id %d, epoch %d, sequence %d failed "
            "(%s); the partition's later batches of that epoch fail too, and the producer "
            "asks for a new epoch",
            batch.record_count,
            batch.tp,
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            error,
        )
        run = (batch.producer_id, batch.producer_epoch)
        for queued in self._accumulator.take_queued(
            batch.tp, lambda b: b.stamped and (b.producer_id, b.producer_epoch) == run
        ):
            self._finish(
                queued,
                -1,
                -1,
                KafkaError(
                    f"not resent: an earlier batch to {batch.tp} failed ({error}), so this "
                    "one could only be written out of order",
                    code=ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                ),
            )

    # -- the producer id (idempotence without transactions)

    def _request_producer_id(self, sequences: ProducerSequences, now: int) -> None:
        """Sends InitProducerId when none is pending and the backoff has passed; the answer
        sets the id (or, on failure, the next attempt's time)."""
        if self._producer_id_pending or now < self._producer_id_retry_ms:
            return
        network = self._network
        node = network.least_loaded_node()
        try:
            if node is None or not network.ready(node):  # ready() starts connecting
                return
        except KafkaError as error:  # a node without an address: stale metadata
            logger.debug("broker %s not usable for InitProducerId: %s", node, error)
            self._request_metadata_update(now)
            return
        current = (sequences.producer_id, sequences.epoch)
        if current[0] < 0 or current[1] >= _MAX_EPOCH:
            current = (-1, -1)
        fields = {
            "transactional_id": None,
            "transaction_timeout": _NO_TRANSACTION_TIMEOUT_MS,
            # Read from v3 (KIP-360): an epoch bump of this id; older versions get a new id.
            "producer_id": current[0],
            "producer_epoch": current[1],
        }
        self._producer_id_pending = True
        future = network.send(
            node,
            ApiKey.INIT_PRODUCER_ID,
            fields,
            versions=_INIT_PRODUCER_ID,
            timeout_ms=self._settings.request_timeout_ms,
        )
        future.add_done_callback(lambda done: self._on_producer_id(done, sequences, node))

    def _on_producer_id(
        self, future: Future[dict[str, Any]], sequences: ProducerSequences, node: int
    ) -> None:
        self._producer_id_pending = False
        failure = future.exception()
        code = ErrorCode.NETWORK_EXCEPTION if failure is not None else ErrorCode.NONE
        if failure is None:
            body = future.result()
            code = ErrorCode(int(body["error_code"]))
            if code is ErrorCode.NONE:
                producer_id, epoch = int(body["producer_id"]), int(body["producer_epoch"])
                logger.info(
                    "producer %s has producer id %d, epoch %d",
                    self._settings.client_id,
                    producer_id,
                    epoch,
                )
                sequences.set_producer(producer_id, epoch)
                self.wakeup()
                return
        self._producer_id_retry_ms = self._clock.monotonic_ms() + self._settings.retry_backoff_ms
        error = failure if failure is not None else error_for_code(code, "InitProducerId")
        if isinstance(error, KafkaError) and not error.retriable:
            # Authorization and the like: the queued records cannot be sent; say why now.
            logger.error("InitProducerId refused by broker %d: %s", node, error)
            for batch in self._accumulator.take_all_unstamped():
                self._finish(batch, -1, -1, error)
        else:
            logger.info("InitProducerId to broker %d failed (%s); retrying", node, error)

    def _untrack(self, batch: ProducerBatch) -> None:
        queue = self._in_flight.get(batch.tp)
        if queue is not None and batch in queue:
            queue.remove(batch)
        if self._guarantee_order:
            self._accumulator.unmute(batch.tp)

    # -- expiry and abort

    def _fail_expired(self, now: int) -> None:
        timeout_ms = self._settings.delivery_timeout_ms
        expired = self._accumulator.expired_batches(now)
        for queue in self._in_flight.values():
            # In flight: fail now, keep tracking (and muted) until the response comes.
            expired.extend(
                batch
                for batch in queue
                if not batch.completed and now - batch.created_ms >= timeout_ms
            )
        for batch in expired:
            error = KafkaTimeoutError(
                f"expiring {batch.record_count} record(s) for {batch.tp}: "
                f"{now - batch.created_ms} ms has passed since batch creation "
                f"(delivery.timeout.ms={timeout_ms})"
            )
            if batch.complete(-1, -1, error):
                with self._stats_lock:
                    self._stats["batches_expired"] += 1
            self._accumulator.deallocate(batch)
            self._sequence_done(batch, error)

    def _next_in_flight_expiry_ms(self, now: int) -> int:
        timeout_ms = self._settings.delivery_timeout_ms
        oldest = min(
            (b.created_ms for q in self._in_flight.values() for b in q if not b.completed),
            default=None,
        )
        return _NEVER if oldest is None else max(0, oldest + timeout_ms - now)

    def _abort_incomplete(self, error: BaseException) -> None:
        self._accumulator.abort_undrained()
        for batch in self._accumulator.incomplete_batches():
            batch.complete(-1, -1, error)
            self._accumulator.deallocate(batch)
        self._in_flight.clear()


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"
