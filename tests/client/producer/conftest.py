"""Shared parts of the producer's live tests: an embedded broker whose auto-created topics have
``PARTITIONS`` partitions, a producer factory that closes what it made, and a kafka-python
read-back (an independent consumer: what we wrote is what another client reads)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from odradek import Broker
from odradek.client.producer import Producer

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

PARTITIONS = 4
TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class ReadBack:
    """One record as kafka-python's consumer read it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int
    timestamp_type: int


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(config={"num.partitions": str(PARTITIONS)}) as started:
        yield started


@pytest.fixture
def make_producer(broker: Broker) -> Iterator[Callable[..., Producer]]:
    """``make_producer(**settings)``: a producer on ``broker``, closed after the test."""
    made: list[Producer] = []

    def make(config: dict[str, Any] | None = None, **kwargs: Any) -> Producer:
        settings = {"bootstrap.servers": broker.bootstrap_servers, **(config or {})}
        producer = Producer(settings, **kwargs)
        made.append(producer)
        return producer

    yield make
    for producer in made:
        producer.close(5)


def read_back(
    bootstrap_servers: str,
    topic: str,
    count: int,
    partitions: int = PARTITIONS,
    *,
    exact: bool = True,
) -> list[ReadBack]:
    """Reads ``topic`` from offset 0 of every partition with kafka-python until ``count``
    records came back (and, when ``exact``, checks that no more follow). Partition order,
    then offset order."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap_servers, enable_auto_commit=False, fetch_max_wait_ms=100
    )
    try:
        consumer.assign([KafkaTopicPartition(topic, index) for index in range(partitions)])
        consumer.seek_to_beginning()
        records: list[ReadBack] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(records) < count:
            assert time.monotonic() < deadline, f"read {len(records)} of {count} records"
            for messages in consumer.poll(timeout_ms=200).values():
                records.extend(
                    ReadBack(
                        m.partition,
                        m.offset,
                        m.key,
                        m.value,
                        tuple((name, value) for name, value in m.headers),
                        m.timestamp,
                        m.timestamp_type,
                    )
                    for m in messages
                )
        if exact:
            assert not consumer.poll(timeout_ms=300), "more records than expected"
        return sorted(records, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


def wait_until(condition: Callable[[], bool], timeout_s: float = TIMEOUT_S, what: str = "") -> None:
    """Polls ``condition`` until it holds, failing the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what or condition}")
        time.sleep(0.02)
