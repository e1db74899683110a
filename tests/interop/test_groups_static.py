"""Static membership (KIP-345) with confluent-kafka on the classic protocol: a second consumer
with the ``group.instance.id`` of a live static member takes its place and fences it.

The first consumer gets librdkafka's fatal error (``_FATAL``, "Static consumer fenced by other
consumer with same group.instance.id": the broker answered FENCED_INSTANCE_ID) and is never
assigned again; the newcomer keeps every partition for the whole watch — longer than the
session timeout — while the fenced one is still polled as an application that ignores the error
would, and it consumes what is produced meanwhile. (Before the fix the two replaced each other
every 0.6–2.4 s for minutes.)"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from odradek import Broker

from .test_groups import wait_until

pytestmark = pytest.mark.interop

PARTITIONS = 4
SESSION_TIMEOUT_MS = 6_000
#: How long both consumers are polled after the newcomer joined: past a session timeout.
WATCH_S = SESSION_TIMEOUT_MS / 1000 + 3
FENCED_TEXT = "Static consumer fenced by other consumer with same group.instance.id"


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    config = {"offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0"}
    with Broker(config=config) as running:
        yield running


class StaticMember:
    """A confluent-kafka consumer with a fixed ``group.instance.id``, polled by the test."""

    def __init__(self, name: str, bootstrap: str, topic: str, group: str, instance: str) -> None:
        self.name = name
        self.events: list[tuple[float, str, Any]] = []
        self.records: list[bytes | None] = []
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.instance.id": instance,
                "client.id": name,
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": 300,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        self.consumer.subscribe(
            [topic],
            on_assign=lambda _c, tps: self._note("assigned", tps),
            on_revoke=lambda _c, tps: self._note("revoked", tps),
            on_lost=lambda _c, tps: self._note("lost", tps),
        )

    def _note(self, kind: str, partitions: list[TopicPartition]) -> None:
        self.events.append((time.monotonic(), kind, sorted(tp.partition for tp in partitions)))

    def poll(self) -> None:
        message = self.consumer.poll(0.05)
        if message is None:
            return
        error = message.error()
        if error is None:
            self.records.append(message.value())
        else:
            self.events.append((time.monotonic(), "error", error))

    def kinds(self, since: float = 0.0) -> list[str]:
        return [kind for at, kind, _ in self.events if at >= since]

    def errors(self) -> list[KafkaError]:
        return [value for _, kind, value in self.events if kind == "error"]


def test_a_second_member_with_the_same_instance_id_fences_the_first(broker: Broker) -> None:
    bootstrap = broker.bootstrap_servers
    tag = uuid.uuid4().hex[:8]
    topic, group, instance = f"static-{tag}", f"g-static-{tag}", f"instance-{tag}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(10)
    first = StaticMember("first", bootstrap, topic, group, instance)
    second: StaticMember | None = None
    try:

        def first_assigned() -> bool:
            first.poll()
            return "assigned" in first.kinds()

        wait_until(first_assigned, "the first member's assignment", 20)
        second = StaticMember("second", bootstrap, topic, group, instance)
        joined = time.monotonic()
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        for seq in range(20):
            producer.produce(topic, b"v%d" % seq, partition=seq % PARTITIONS)
        assert producer.flush(10) == 0
        while time.monotonic() - joined < WATCH_S:
            first.poll()  # an application that ignores the fatal error
            second.poll()

        fatal = [e for e in first.errors() if e.code() == KafkaError._FATAL]
        assert fatal, f"the first member was not fenced: {first.events}"
        assert FENCED_TEXT in fatal[0].str()
        assert first.kinds(joined).count("assigned") == 0, first.events
        assert second.kinds() == ["assigned"], second.events
        assert second.events[0][2] == list(range(PARTITIONS))
        assert not second.errors(), second.events
        assert sorted(second.records) == sorted(b"v%d" % seq for seq in range(20))

        described = admin.describe_consumer_groups([group])[group].result(10)
        assert described.state == ConsumerGroupState.STABLE
        [member] = described.members
        assert (member.client_id, member.group_instance_id) == ("second", instance)
        assert sorted(tp.partition for tp in member.assignment.topic_partitions) == list(
            range(PARTITIONS)
        )
    finally:
        for member in (first, second):
            if member is not None:
                # The fenced consumer's close may raise its fatal error.
                with contextlib.suppress(KafkaException):
                    member.consumer.close()
