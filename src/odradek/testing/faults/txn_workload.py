"""The transactional workload of a fault run: confluent-kafka transactional producers on
threads, recording each transaction's outcome into a ``History``; and the read_committed
read of every partition after healing.

- **Producers** (``producers`` of them, ``transactional.id`` ``<run>-tx<i>``, unique per
  run; acks=all): transaction ``n`` of producer ``tx<i>`` writes ``tx<i>-<n>-<k>`` for
  ``k`` in ``0..size-1`` (``size`` drawn from ``records``) round-robin over 1 to 3 distinct
  partitions drawn from the topic's, then commits it — or aborts it, one in ``abort_every``
  (drawn) — and records a ``Transaction``:

  - ``committed`` once commit_transaction returned; a retriable commit error is retried;
  - ``aborted`` once abort_transaction returned (a deliberate abort, or one after an
    abortable error — produce or commit);
  - ``unknown`` when the transaction could not be ended (a fatal error, a fenced producer,
    retries exhausted). The client is then replaced by a new one with the same
    transactional.id, whose init_transactions fences the old one and makes the coordinator
    finish the open transaction (abort it, or complete a commit it had begun).

- **read_committed(...)**: a consumer with ``isolation.level=read_committed`` assigned every
  partition from the start, reading until each partition's end (its last stable offset),
  as ``CommittedLog`` values for ``txn_checker``.

Lifecycle as ``Workload``: ``start(bootstrap_servers)`` once, ``stop()`` (the transaction in
flight ends first). The draws come from ``random.Random(seed)`` per producer.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from odradek.testing.faults.history import CommittedLog, History, Transaction
from odradek.testing.faults.workload import client_logger

logger = logging.getLogger(__name__)

_POLL_S = 0.1


@dataclass(frozen=True, slots=True)
class TxnWorkloadConfig:
    topic: str
    partitions: int
    run_id: str
    producers: int = 1
    seed: int = 0
    records: tuple[int, int] = (5, 20)
    abort_every: int = 5
    pause_s: float = 0.05
    transaction_timeout_ms: int = 30_000
    #: How long one init/commit/abort call may take before it is retried or given up.
    call_timeout_s: float = 30.0
    attempts: int = 3


@dataclass(frozen=True, slots=True)
class TxnStatistics:
    committed: int = 0
    aborted: int = 0
    unknown: int = 0
    #: Producer clients replaced (fatal error, fenced, or an end that could not be made).
    replaced: int = 0


class _UnknownOutcomeError(Exception):
    """The transaction could not be ended: its outcome is the coordinator's."""


class TxnWorkload:
    """Transactional producers over one topic; see the module docstring."""

    def __init__(self, config: TxnWorkloadConfig, history: History) -> None:
        if config.partitions < 1 or config.producers < 1 or config.abort_every < 1:
            raise ValueError("a transactional workload needs partitions, producers, aborts")
        self.config = config
        self.history = history
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._counts = dict.fromkeys(("committed", "aborted", "unknown", "replaced"), 0)
        self._lock = threading.Lock()
        self._errors: list[BaseException] = []

    def start(self, bootstrap_servers: str) -> None:
        if self._threads:
            raise RuntimeError("the transactional workload was started already")
        for index in range(self.config.producers):
            thread = threading.Thread(
                target=self._run,
                args=(bootstrap_servers, f"tx{index}", self.config.seed * 1000 + index),
                name=f"txn-workload-tx{index}",
                daemon=True,
            )
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        deadline = time.monotonic() + self.config.call_timeout_s * (self.config.attempts + 2)
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.1))
            if thread.is_alive():
                logger.error("transactional workload thread %s did not stop", thread.name)
        if self._errors:
            raise RuntimeError(f"transactional producer failed: {self._errors[0]!r}") from (
                self._errors[0]
            )

    def statistics(self) -> TxnStatistics:
        with self._lock:
            return TxnStatistics(**self._counts)

    def _count(self, name: str) -> None:
        with self._lock:
            self._counts[name] += 1

    # --- one producer ------------------------------------------------------------------------

    def _run(self, bootstrap_servers: str, name: str, seed: int) -> None:
        try:
            self._produce(bootstrap_servers, name, random.Random(seed))
        except BaseException as error:
            logger.exception("transactional producer %s failed", name)
            self._errors.append(error)

    def _new_producer(self, bootstrap_servers: str, name: str) -> Producer | None:
        """A client with this producer's transactional.id, initialized (which fences any
        older one and finishes its open transaction); None if the workload stopped first."""
        config = self.config
        tries_after_stop = 0
        while tries_after_stop < config.attempts:
            producer = Producer(
                {
                    "bootstrap.servers": bootstrap_servers,
                    "client.id": name,
                    "transactional.id": f"{config.run_id}-{name}",
                    "acks": "all",
                    "linger.ms": 5,
                    "transaction.timeout.ms": config.transaction_timeout_ms,
                    "message.timeout.ms": config.transaction_timeout_ms,
                    "retry.backoff.ms": 100,
                    "retry.backoff.max.ms": 1000,
                    "topic.metadata.refresh.interval.ms": 1000,
                    "reconnect.backoff.max.ms": 1000,
                    "logger": client_logger,
                }
            )
            try:
                producer.init_transactions(config.call_timeout_s)
                return producer
            except KafkaException as error:
                # Retriable or not, a new client starts over — after the workload stopped
                # too (a few times): a transaction left open would hold read_committed back.
                logger.info("%s: init_transactions failed, again: %s", name, error)
                self._count("replaced")
                if self._stop.is_set():
                    tries_after_stop += 1
        return None

    def _produce(self, bootstrap_servers: str, name: str, rng: random.Random) -> None:
        config = self.config
        producer = self._new_producer(bootstrap_servers, name)
        number = 0
        while producer is not None and not self._stop.is_set():
            size = rng.randint(*config.records)
            chosen = rng.sample(range(config.partitions), rng.randint(1, min(3, config.partitions)))
            records = tuple(
                (chosen[k % len(chosen)], f"{name}-{number}-{k}".encode()) for k in range(size)
            )
            abort = rng.randrange(config.abort_every) == 0
            try:
                outcome = self._transaction(producer, records, abort)
            except _UnknownOutcomeError as error:
                logger.info("%s: transaction %d outcome unknown: %s", name, number, error)
                outcome = "unknown"
            self.history.record(Transaction(self.history.now_s(), name, number, outcome, records))
            self._count(outcome)
            number += 1
            if outcome == "unknown":
                self._count("replaced")
                # The new client's init_transactions ends the old transaction, however the
                # workload is doing: a read_committed reader must not wait on it.
                producer = self._new_producer(bootstrap_servers, name)
            elif config.pause_s:
                self._stop.wait(config.pause_s)

    def _transaction(
        self, producer: Producer, records: tuple[tuple[int, bytes], ...], abort: bool
    ) -> str:
        """One transaction: its outcome, or ``_UnknownOutcomeError``."""
        config = self.config
        try:
            producer.begin_transaction()
            for partition, value in records:
                self._produce_one(producer, partition, value)
            producer.flush(config.call_timeout_s)
        except KafkaException as error:
            if _abortable(error):
                return self._abort(producer)
            raise _UnknownOutcomeError(str(error)) from error
        if abort:
            return self._abort(producer)
        for _ in range(config.attempts):
            try:
                producer.commit_transaction(config.call_timeout_s)
                return "committed"
            except KafkaException as error:
                if _abortable(error):
                    return self._abort(producer)
                if not _retriable(error):
                    raise _UnknownOutcomeError(str(error)) from error
        raise _UnknownOutcomeError("commit_transaction: retries exhausted")

    def _produce_one(self, producer: Producer, partition: int, value: bytes) -> None:
        while True:
            try:
                producer.produce(self.config.topic, value, partition=partition)
                return
            except BufferError:
                producer.poll(_POLL_S)

    def _abort(self, producer: Producer) -> str:
        for _ in range(self.config.attempts):
            try:
                producer.abort_transaction(self.config.call_timeout_s)
                return "aborted"
            except KafkaException as error:
                if not _retriable(error):
                    raise _UnknownOutcomeError(str(error)) from error
        raise _UnknownOutcomeError("abort_transaction: retries exhausted")


def _cause(error: KafkaException) -> KafkaError | None:
    cause = error.args[0] if error.args else None
    return cause if isinstance(cause, KafkaError) else None


def _abortable(error: KafkaException) -> bool:
    cause = _cause(error)
    return cause is not None and not cause.fatal() and cause.txn_requires_abort()


def _retriable(error: KafkaException) -> bool:
    cause = _cause(error)
    return cause is not None and not cause.fatal() and cause.retriable()


def read_committed(
    bootstrap_servers: str,
    topic: str,
    partitions: int,
    timeout_s: float = 120.0,
    clock: Callable[[], float] = time.monotonic,
) -> list[CommittedLog]:
    """Every partition of ``topic`` from its start to its end as a read_committed consumer
    sees it (the end: the partition's end-of-partition event at or past its high watermark
    when the read began, so no transaction open then is cut short).

    Raises:
        TimeoutError: some partition did not reach its end within ``timeout_s``.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"read-committed-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "topic.metadata.refresh.interval.ms": 1000,
            "reconnect.backoff.max.ms": 1000,
            "logger": client_logger,
        }
    )
    records: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    deadline = clock() + timeout_s
    try:
        ends: dict[int, int] = {}
        for p in range(partitions):
            _, high = consumer.get_watermark_offsets(
                TopicPartition(topic, p), timeout=timeout_s, cached=False
            )
            ends[p] = high
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        pending = set(range(partitions))
        while pending:
            if clock() > deadline:
                raise TimeoutError(f"read_committed: partitions {sorted(pending)} never ended")
            message = consumer.poll(_POLL_S)
            if message is None:
                continue
            at = message.partition()
            assert at is not None
            partition = at
            error = message.error()
            if error is None:
                offset = message.offset()
                assert offset is not None
                records[partition].append((offset, message.value() or b""))
            elif error.code() == KafkaError._PARTITION_EOF:
                offset = message.offset()
                if offset is not None and offset >= ends[partition]:
                    pending.discard(partition)
            else:
                logger.info("read_committed: %s", error)
    finally:
        consumer.close()
    return [CommittedLog(p, tuple(records[p])) for p in range(partitions)]
