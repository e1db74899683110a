"""Shared parts of the consumer's live tests: topic creation, a consumer factory that closes what
it made, and polling helpers that wait for a condition with a deadline (never a bare sleep)."""

from __future__ import annotations

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
