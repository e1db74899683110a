"""confluent-kafka (librdkafka) against the embedded broker: admin create/delete, produce with
every codec, read back by assignment, watermarks, ``offsets_for_times`` and admin
``list_offsets``."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from odradek import Broker

from .conftest import (
    BASE_TIMESTAMP_MS,
    CODECS,
    PARTITIONS,
    Consumed,
    Produced,
    expected_offset_for_time,
    make_records,
    stored_codecs,
    verify_round_trip,
    wait_until,
)

pytestmark = pytest.mark.interop

TIMEOUT_S = 10.0


@pytest.fixture(scope="module")
def admin(broker: Broker) -> AdminClient:
    # One per module: AdminClient has no close(), and pytest keeps fixture values to the end.
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def create_topic(admin: AdminClient, topic: str) -> int:
    """Creates ``topic`` with CreateTopics and returns its partition count once the broker's
    metadata shows it."""
    futures = admin.create_topics([NewTopic(topic, PARTITIONS, 1)], operation_timeout=10)
    futures[topic].result(TIMEOUT_S)

    def created() -> bool:
        topics = admin.list_topics(topic, timeout=TIMEOUT_S).topics
        return topic in topics and topics[topic].error is None

    wait_until(created, what=f"topic {topic}")
    assert len(admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions) == PARTITIONS
    return PARTITIONS


def produce(broker: Broker, topic: str, records: Sequence[Produced], codec: str) -> None:
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "compression.type": codec,
            "linger.ms": 20,
            "acks": "all",
            "enable.idempotence": False,
        }
    )
    errors: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(error)

    for record in records:
        producer.produce(
            topic,
            key=record.key,
            value=record.value,
            headers=list(record.headers),
            timestamp=record.timestamp_ms,
            partition=-1 if record.partition is None else record.partition,
            on_delivery=on_delivery,
        )
    assert producer.flush(TIMEOUT_S) == 0
    producer.close()
    assert errors == []


def consume_all(broker: Broker, topic: str, partitions: int, count: int) -> list[Consumed]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"interop-{topic}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, index, 0) for index in range(partitions)])
        consumed: list[Consumed] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(consumed) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            timestamp_type, timestamp_ms = message.timestamp()
            assert timestamp_type == 1  # CreateTime
            consumed.append(
                Consumed(
                    partition=message.partition(),
                    offset=message.offset(),
                    key=message.key(),
                    value=message.value(),
                    headers=tuple(message.headers() or ()),
                    timestamp_ms=timestamp_ms,
                )
            )
        # Nothing beyond what was produced turns up.
        extra = consumer.poll(0.3)
        assert extra is None or extra.error() is not None, extra.value()
        return consumed
    finally:
        consumer.close()


def check_offsets(
    broker: Broker, admin: AdminClient, topic: str, by_partition: dict[int, list[Consumed]]
) -> None:
    partitions = range(len(admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions))
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "offsets"})
    try:
        for index in partitions:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, index), timeout=TIMEOUT_S
            )
            assert (low, high) == (0, len(by_partition.get(index, [])))
        for seq in (0, 7, 20, 39, 1000):
            timestamp_ms = BASE_TIMESTAMP_MS + 1000 * seq
            answers = consumer.offsets_for_times(
                [TopicPartition(topic, index, timestamp_ms) for index in partitions],
                timeout=TIMEOUT_S,
            )
            for answer in answers:
                assert answer.error is None
                expected = expected_offset_for_time(
                    by_partition.get(answer.partition, []), timestamp_ms
                )
                # librdkafka reports "no such offset" as OFFSET_END (-1).
                assert answer.offset == (-1 if expected is None else expected), (seq, answer)
    finally:
        consumer.close()

    # The admin API's ListOffsets: earliest, latest and by timestamp in one call each.
    timestamp_ms = BASE_TIMESTAMP_MS + 1000 * 11
    for spec, expect in (
        (OffsetSpec.earliest(), lambda _records: 0),
        (OffsetSpec.latest(), len),
        (
            OffsetSpec.for_timestamp(timestamp_ms),
            lambda records: expected_offset_for_time(records, timestamp_ms),
        ),
    ):
        futures = admin.list_offsets(
            {TopicPartition(topic, index): spec for index in partitions},
            request_timeout=TIMEOUT_S,
        )
        for tp, future in futures.items():
            expected = expect(by_partition.get(tp.partition, []))
            assert future.result(TIMEOUT_S).offset == (-1 if expected is None else expected)


def delete_topic(admin: AdminClient, topic: str) -> None:
    admin.delete_topics([topic], operation_timeout=10)[topic].result(TIMEOUT_S)
    wait_until(
        lambda: topic not in admin.list_topics(timeout=TIMEOUT_S).topics,
        what=f"topic {topic} deleted",
    )


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(broker: Broker, admin: AdminClient, codec: str) -> None:
    topic = f"confluent-{codec}"
    partitions = create_topic(admin, topic)
    records = make_records(topic, partitions)
    produce(broker, topic, records, codec)
    consumed = consume_all(broker, topic, partitions, len(records))
    by_partition = verify_round_trip(records, consumed, partitions=partitions)
    assert stored_codecs(broker, topic) == {codec}
    check_offsets(broker, admin, topic, by_partition)
    delete_topic(admin, topic)
