"""The workload of a fault run: confluent-kafka producers and group consumers on threads,
recording everything they do and hear into a ``History``.

- **Producers** (``producers`` of them, every other one with ``enable.idempotence=true``, the
  rest without; all ``acks=all``): producer ``p<i>`` sends ``p<i>-<sequence>`` to partition
  ``sequence % partitions`` at ``rate_per_producer`` records a second, at most
  ``max_outstanding`` unacknowledged at a time, and records a ``Send`` per value, then an
  ``Ack`` (partition, offset) or a ``Failure`` from its delivery report. Values still
  unresolved when the workload stops are recorded as failures ("unresolved at stop"). A
  producer client that fails fatally (librdkafka's idempotence gives up) is counted, its
  pending values recorded as failures, and replaced by a new client (a new producer id).
- **Consumers** (``consumers`` members of group ``group_id``, offsets committed by hand):
  each records a ``Consume`` per record and, every ``commit_interval_s``, commits its
  position (asynchronously, one commit in flight) and records a ``Commit`` per partition
  the coordinator accepted when its answer arrives.
- **A committed-offset reader** (same group id, never joins it) asks the coordinator for the
  group's committed offsets every ``commit_interval_s`` and records ``CommittedRead``s.

Lifecycle: ``start(bootstrap_servers)`` once, then ``stop()`` (idempotent; joins every
thread, flushing producers for at most ``flush_timeout_s``). Each thread owns its client;
the history is the only shared object. The clients' own errors (brokers down, coordinator
moving) are expected under faults: they are recorded or retried, never raised.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from odradek.testing.faults.history import (
    Ack,
    Commit,
    CommittedRead,
    Consume,
    Failure,
    History,
    Send,
)

logger = logging.getLogger(__name__)
#: librdkafka's own log lines go to Python logging, silenced by default: brokers going away
#: is what a fault run is for, and every client complains of it (lower the level to see them).
client_logger = logging.getLogger(f"{__name__}.librdkafka")
client_logger.setLevel(logging.CRITICAL)

_POLL_S = 0.1


@dataclass(frozen=True, slots=True)
class WorkloadConfig:
    """What the workload does; Kafka's names where a client setting is meant."""

    topic: str
    partitions: int
    producers: int = 4
    consumers: int = 2
    rate_per_producer: float = 50.0
    max_outstanding: int = 200
    group_id: str = "chaos"
    message_timeout_ms: int = 120_000
    commit_interval_s: float = 0.5
    flush_timeout_s: float = 120.0
    session_timeout_ms: int = 10_000


@dataclass(frozen=True, slots=True)
class WorkloadStatistics:
    sent: int
    acknowledged: int
    failed: int
    consumed: int
    commits: int
    #: Producer clients that failed fatally and were replaced.
    fatal_errors: int = 0


class Workload:
    """Producers, consumers and a committed-offset reader over one topic; see the module
    docstring."""

    def __init__(self, config: WorkloadConfig, history: History) -> None:
        if config.partitions < 1 or config.producers < 1:
            raise ValueError("the workload needs at least one partition and one producer")
        self.config = config
        self.history = history
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._counts = dict.fromkeys(
            ("sent", "acknowledged", "failed", "consumed", "commits", "fatal_errors"), 0
        )
        self._counts_lock = threading.Lock()
        self._errors: list[BaseException] = []

    # --- lifecycle -------------------------------------------------------------------------

    def start(self, bootstrap_servers: str) -> None:
        if self._threads:
            raise RuntimeError("the workload was started already")
        for index in range(self.config.producers):
            self._spawn(f"p{index}", self._produce, bootstrap_servers, f"p{index}", index % 2 == 0)
        for index in range(self.config.consumers):
            self._spawn(f"c{index}", self._consume, bootstrap_servers, f"c{index}")
        self._spawn("committed", self._read_committed, bootstrap_servers)

    def stop(self) -> None:
        """Stops every thread: producers flush what they have in flight first."""
        self._stop.set()
        deadline = time.monotonic() + self.config.flush_timeout_s + 60.0
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.1))
            if thread.is_alive():
                logger.error("workload thread %s did not stop", thread.name)
        if self._errors:
            raise RuntimeError(f"workload thread failed: {self._errors[0]!r}") from self._errors[0]

    def statistics(self) -> WorkloadStatistics:
        with self._counts_lock:
            return WorkloadStatistics(**self._counts)

    # --- threads ---------------------------------------------------------------------------

    def _spawn(self, name: str, target: Callable[..., None], *args: Any) -> None:
        def run() -> None:
            try:
                target(*args)
            except BaseException as error:
                logger.exception("workload thread %s failed", name)
                self._errors.append(error)

        thread = threading.Thread(target=run, name=f"workload-{name}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _count(self, name: str, amount: int = 1) -> None:
        with self._counts_lock:
            self._counts[name] += amount

    def _produce(self, bootstrap_servers: str, name: str, idempotent: bool) -> None:
        """Producer ``name`` until the workload stops: a client that hits a fatal error
        (librdkafka's idempotence gives up on inconsistent answers) is replaced by a new one
        (a new producer id), recorded under ``<name>#<incarnation>``."""
        sequence = 0
        incarnation = 0
        while not self._stop.is_set():
            label = name if incarnation == 0 else f"{name}#{incarnation}"
            sequence = self._produce_with(bootstrap_servers, name, label, idempotent, sequence)
            incarnation += 1

    def _produce_with(
        self, bootstrap_servers: str, name: str, label: str, idempotent: bool, sequence: int
    ) -> int:
        """One producer client: sends from ``sequence`` until the workload stops or the
        client fails fatally; returns the next sequence number."""
        config = self.config
        producer = Producer(
            {
                "bootstrap.servers": bootstrap_servers,
                "client.id": label,
                "acks": "all",
                "enable.idempotence": idempotent,
                "linger.ms": 5,
                "message.timeout.ms": config.message_timeout_ms,
                "retry.backoff.ms": 100,
                "retry.backoff.max.ms": 1000,
                "topic.metadata.refresh.interval.ms": 1000,
                "reconnect.backoff.max.ms": 1000,
                "logger": client_logger,
            }
        )
        history = self.history
        outstanding: dict[bytes, int] = {}

        def delivered(error: KafkaError | None, message: Message) -> None:
            value = message.value() or b""
            partition = outstanding.pop(value, message.partition() or 0)
            if error is None:
                offset = message.offset()
                assert offset is not None
                history.record(Ack(history.now_s(), label, partition, offset, value))
                self._count("acknowledged")
            else:
                history.record(Failure(history.now_s(), label, partition, value, error.str()))
                self._count("failed")

        interval_s = 1.0 / config.rate_per_producer
        next_send_s = history.now_s()
        fatal: KafkaException | None = None
        while fatal is None and not self._stop.is_set():
            now_s = history.now_s()
            try:
                if now_s >= next_send_s and len(outstanding) < config.max_outstanding:
                    value = f"{name}-{sequence}".encode()
                    partition = sequence % config.partitions
                    sequence += 1
                    next_send_s = max(next_send_s + interval_s, now_s - 1.0)
                    outstanding[value] = partition
                    history.record(Send(now_s, label, idempotent, partition, value))
                    self._count("sent")
                    try:
                        producer.produce(
                            config.topic, value, partition=partition, on_delivery=delivered
                        )
                    except BufferError as error:
                        outstanding.pop(value, None)
                        history.record(
                            Failure(history.now_s(), label, partition, value, str(error))
                        )
                        self._count("failed")
                producer.poll(max(0.0, min(_POLL_S, next_send_s - history.now_s())))
            except KafkaException as error:
                if not _is_fatal(error):
                    raise
                fatal = error
        if fatal is None:
            producer.flush(config.flush_timeout_s)
            reason = "unresolved at stop"
        else:
            logger.warning("producer %s failed fatally, replacing it: %s", label, fatal)
            self._count("fatal_errors")
            reason = f"producer failed fatally: {fatal}"
        for value, partition in list(outstanding.items()):
            history.record(Failure(history.now_s(), label, partition, value, reason))
            self._count("failed")
        outstanding.clear()
        return sequence

    def _consume(self, bootstrap_servers: str, name: str) -> None:
        """A group member: polls, records, commits its position asynchronously (one commit
        in flight at a time, so a coordinator that never answers cannot hang the thread)
        and records each commit the coordinator accepted when its answer arrives."""
        config = self.config
        history = self.history
        in_flight: list[float] = []  # when the commit in flight left (at most one)

        def committed(error: KafkaError | None, partitions: list[TopicPartition]) -> None:
            sent_at_s = in_flight.pop() if in_flight else history.now_s()
            if error is not None:
                logger.debug("%s: commit failed: %s", name, error)
                return
            at_s = history.now_s()
            for tp in partitions:
                if tp.error is None and tp.offset >= 0:
                    history.record(Commit(sent_at_s, at_s, name, tp.partition, tp.offset))
                    self._count("commits")

        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap_servers,
                "client.id": name,
                "group.id": config.group_id,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": config.session_timeout_ms,
                "heartbeat.interval.ms": max(config.session_timeout_ms // 5, 100),
                "topic.metadata.refresh.interval.ms": 1000,
                "reconnect.backoff.max.ms": 1000,
                "on_commit": committed,
                "logger": client_logger,
            }
        )
        try:
            consumer.subscribe([config.topic])
            next_commit_s = history.now_s() + config.commit_interval_s
            uncommitted = False
            while not self._stop.is_set():
                message = consumer.poll(_POLL_S)
                if message is not None and message.error() is None:
                    offset, partition = message.offset(), message.partition()
                    assert offset is not None
                    assert partition is not None
                    history.record(
                        Consume(history.now_s(), name, partition, offset, message.value() or b"")
                    )
                    self._count("consumed")
                    uncommitted = True
                if uncommitted and not in_flight and history.now_s() >= next_commit_s:
                    uncommitted = not self._commit(consumer, name, in_flight)
                    next_commit_s = history.now_s() + config.commit_interval_s
            if uncommitted and not in_flight:
                self._commit(consumer, name, in_flight)
            deadline_s = history.now_s() + 10.0
            while in_flight and history.now_s() < deadline_s:
                consumer.poll(_POLL_S)
        finally:
            consumer.close()

    def _commit(self, consumer: Consumer, name: str, in_flight: list[float]) -> bool:
        """Sends an asynchronous commit of the consumer's position; False if it could not."""
        in_flight.append(self.history.now_s())
        try:
            consumer.commit(asynchronous=True)
        except KafkaException as error:
            in_flight.clear()
            logger.debug("%s: commit not sent: %s", name, error)
            return False
        return True

    def _read_committed(self, bootstrap_servers: str) -> None:
        config = self.config
        reader = Consumer(
            {
                "bootstrap.servers": bootstrap_servers,
                "client.id": "committed-reader",
                "group.id": config.group_id,
                "enable.auto.commit": False,
                "topic.metadata.refresh.interval.ms": 1000,
                "reconnect.backoff.max.ms": 1000,
                "logger": client_logger,
            }
        )
        history = self.history
        partitions = [TopicPartition(config.topic, p) for p in range(config.partitions)]
        try:
            while not self._stop.wait(config.commit_interval_s):
                sent_at_s = history.now_s()
                try:
                    answer = reader.committed(partitions, timeout=5.0)
                except KafkaException as error:
                    logger.debug("committed offsets not read: %s", error)
                    continue
                at_s = history.now_s()
                for tp in answer:
                    if tp.error is None and tp.offset >= 0:
                        history.record(CommittedRead(sent_at_s, at_s, tp.partition, tp.offset))
        finally:
            reader.close()


def _is_fatal(error: KafkaException) -> bool:
    cause = error.args[0] if error.args else None
    return isinstance(cause, KafkaError) and cause.fatal()


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Polls ``condition`` every 50 ms until true.

    Raises:
        TimeoutError: ``timeout_s`` passed first.
    """
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.05)
