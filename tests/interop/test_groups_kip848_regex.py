"""A KIP-848 regex subscription with a real client: confluent-kafka with
``group.protocol=consumer`` subscribes to ``^orders-.*``, which librdkafka sends to the broker
as ConsumerGroupHeartbeat's ``subscribed_topic_regex`` (no topic names: the broker resolves the
pattern). It is assigned every partition of the matching topics and none of the others, then
also those of a matching topic created after it joined, and reads a record from each matching
topic."""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from odradek import Broker

from .test_groups import wait_until

pytestmark = pytest.mark.interop

BROKER_CONFIG = {
    "offsets.topic.num.partitions": "3",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "500",
}
#: librdkafka's cgrp debug line for each ConsumerGroupHeartbeat it sends.
HEARTBEAT = re.compile(r'subscribed topics "([^"]*)", subscribed topic regex "([^"]*)"')


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config=BROKER_CONFIG) as running:
        yield running


class Heartbeats(logging.Handler):
    """The (topic names, regex) of each ConsumerGroupHeartbeat librdkafka logged."""

    def __init__(self) -> None:
        super().__init__()
        self.subscriptions: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        found = HEARTBEAT.search(record.getMessage())
        if found is not None:
            self.subscriptions.append((found.group(1), found.group(2)))


def test_a_regex_subscription_gets_matching_topics_also_created_later(broker: Broker) -> None:
    bootstrap = broker.bootstrap_servers
    tag = uuid.uuid4().hex[:8]
    orders_a, orders_b, orders_late = f"orders-a{tag}", f"orders-b{tag}", f"orders-c{tag}"
    others = (f"payments-{tag}", f"xorders-{tag}", f"other-{tag}")
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def create(topic: str, partitions: int) -> None:
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)

    create(orders_a, 2)
    create(orders_b, 1)
    create(others[0], 2)
    create(others[1], 1)
    heartbeats = Heartbeats()
    logger = logging.getLogger(f"librdkafka-{tag}")
    logger.addHandler(heartbeats)
    logger.setLevel(logging.DEBUG)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-regex-{tag}",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "debug": "cgrp",
            "logger": logger,
        }
    )
    values: set[bytes] = set()

    def owned() -> set[tuple[str, int]]:
        message = consumer.poll(0.1)
        if message is not None and message.error() is None and message.value() is not None:
            values.add(message.value())
        return {(tp.topic, tp.partition) for tp in consumer.assignment()}

    try:
        consumer.subscribe(["^orders-.*"])
        first = {(orders_a, 0), (orders_a, 1), (orders_b, 0)}
        wait_until(lambda: owned() == first, "the matching topics' partitions", 20, owned)
        names, regex = heartbeats.subscriptions[0]
        assert names == ""  # no topic names: the broker resolves the pattern
        assert "^orders-.*" in regex

        create(orders_late, 3)
        create(others[2], 1)
        late = first | {(orders_late, p) for p in range(3)}
        wait_until(lambda: owned() == late, "the later matching topic's partitions", 20, owned)

        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        for topic in (orders_a, orders_late, *others):
            producer.produce(topic, topic.encode(), partition=0)
        assert producer.flush(10) == 0
        wanted = {orders_a.encode(), orders_late.encode()}
        wait_until(lambda: owned() and values >= wanted, "a record of each matching topic", 20)
        deadline = time.monotonic() + 1
        while time.monotonic() < deadline:
            assert owned() == late
        assert values == wanted
    finally:
        consumer.close()
