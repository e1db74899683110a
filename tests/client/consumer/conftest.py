"""Shared parts of the consumer's live tests: topic creation, a consumer factory that closes what
it made, and polling helpers that wait for a condition with a deadline (never a bare sleep)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from odradek import Broker, Consumer, ConsumerRecord
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic

TIMEOUT_S = 20.0

MakeConsumer = Callable[..., Consumer]


@pytest.fixture
def create_topic(broker: Broker) -> Callable[..., None]:
    def create(name: str, partitions: int = 1, **configs: str) -> None:
        with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            admin.create_topics([NewTopic(name, partitions, 1, configs)]).all()

    return create


@pytest.fixture
def make_consumer(broker: Broker) -> Iterator[MakeConsumer]:
    made: list[Consumer] = []

    def make(**settings: Any) -> Consumer:
        settings.setdefault("fetch_max_wait_ms", 100)
        consumer = Consumer(bootstrap_servers=broker.bootstrap_servers, **settings)
        made.append(consumer)
        return consumer

    yield make
    for consumer in made:
        consumer.close(timeout_ms=5_000)


def poll_until(
    consumer: Consumer, count: int, timeout_s: float = TIMEOUT_S
) -> list[ConsumerRecord]:
    """Polls until ``count`` records arrived (fails the test at the deadline)."""
    records: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout_s
    while len(records) < count:
        assert time.monotonic() < deadline, f"only {len(records)} of {count} records arrived"
        records.extend(consumer.poll(200))
    return records


def wait_for(condition: Callable[[], bool], timeout_s: float = TIMEOUT_S, what: str = "") -> None:
    """Calls ``condition`` (which itself blocks briefly, e.g. in ``poll``) until it holds."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what or condition}"


@pytest.fixture
def broker() -> Iterator[Broker]:
    """An embedded broker whose groups form at once (no initial rebalance delay)."""
    config = {"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 3}
    with Broker(config=config) as started:
        yield started


class Member:
    """A group consumer polled on its own thread (a join blocks until every member joins, so
    members of one group cannot share a thread). Records, assignment and listener calls are
    collected; ``stop`` closes the consumer on its thread."""

    def __init__(self, consumer: Consumer, topics: Any, *, poll_ms: int = 100) -> None:
        self.consumer = consumer
        self.records: list[ConsumerRecord] = []
        self.events: list[tuple[str, list[Any]]] = []
        self.assignment: set[Any] = set()
        self.error: BaseException | None = None
        self.paused = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._poll_ms = poll_ms
        consumer.subscribe(topics, listener=self)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def on_partitions_revoked(self, partitions: list[Any]) -> None:
        self.events.append(("revoked", partitions))

    def on_partitions_assigned(self, partitions: list[Any]) -> None:
        self.events.append(("assigned", partitions))

    def on_partitions_lost(self, partitions: list[Any]) -> None:
        self.events.append(("lost", partitions))

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if self.paused.is_set():
                    self._stop.wait(0.05)  # a member that stops polling (max.poll.interval.ms)
                    continue
                batch = self.consumer.poll(self._poll_ms)
                with self._lock:
                    self.records.extend(batch)
                    self.assignment = self.consumer.assignment()
        except BaseException as error:
            self.error = error

    def seen(self) -> list[ConsumerRecord]:
        with self._lock:
            return list(self.records)

    def current(self) -> set[Any]:
        with self._lock:
            return set(self.assignment)

    def stop(self, close: bool = True) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT_S)
        if close:
            self.consumer.close(timeout_ms=10_000)
        assert self.error is None, self.error


def eventually(condition: Callable[[], bool], timeout_s: float = TIMEOUT_S, what: str = "") -> None:
    """Waits for a condition that other threads make true, checking it on a short Event wait
    (a bounded poll with a deadline, not a sleep standing in for a signal)."""
    deadline = time.monotonic() + timeout_s
    tick = threading.Event()
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what or condition}"
        tick.wait(0.02)
