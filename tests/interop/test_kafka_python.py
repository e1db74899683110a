"""kafka-python against the embedded broker: admin create/delete, produce with every codec,
read back by assignment, beginning/end offsets and ``offsets_for_times``."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator, Sequence

import pytest

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

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

pytestmark = pytest.mark.interop

TIMEOUT_S = 10.0


@pytest.fixture
def admin(broker: Broker) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, client_id="interop")
    try:
        yield client
    finally:
        client.close()


def partition_count(consumer: KafkaConsumer, topic: str) -> int:
    return len(consumer.partitions_for_topic(topic) or ())


def create_topic(broker: Broker, admin: KafkaAdminClient, topic: str) -> int:
    """Creates ``topic`` with CreateTopics and returns its partition count."""
    # Raises on an error code; returns the response as a dict.
    result = admin.create_topics(
        {topic: {"num_partitions": PARTITIONS, "replication_factor": 1}},
        timeout_ms=10_000,
        wait_for_metadata=True,
    )
    assert [entry["error_code"] for entry in result["topics"]] == [0], result
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    try:
        assert partition_count(consumer, topic) == PARTITIONS
    finally:
        consumer.close()
    return PARTITIONS


def produce(broker: Broker, topic: str, records: Sequence[Produced], codec: str) -> None:
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
        acks="all",
        enable_idempotence=True,  # kafka-python's default: InitProducerId, then sequences
    )
    try:
        futures = [
            producer.send(
                topic,
                key=record.key,
                value=record.value,
                headers=list(record.headers),
                partition=record.partition,
                timestamp_ms=record.timestamp_ms,
            )
            for record in records
        ]
        producer.flush(TIMEOUT_S)
        for future in futures:
            metadata = future.get(TIMEOUT_S)
            assert metadata.offset >= 0
    finally:
        producer.close(TIMEOUT_S)


def consume_all(broker: Broker, topic: str, partitions: int, count: int) -> list[Consumed]:
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    try:
        consumer.assign([TopicPartition(topic, index) for index in range(partitions)])
        consumer.seek_to_beginning()
        consumed: list[Consumed] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(consumed) < count and time.monotonic() < deadline:
            for messages in consumer.poll(timeout_ms=200).values():
                for message in messages:
                    assert message.timestamp_type == 0  # CreateTime
                    consumed.append(
                        Consumed(
                            partition=message.partition,
                            offset=message.offset,
                            key=message.key,
                            value=message.value,
                            headers=tuple((name, value) for name, value in message.headers),
                            timestamp_ms=message.timestamp,
                        )
                    )
        assert not consumer.poll(timeout_ms=300), "records beyond those produced"
        return consumed
    finally:
        consumer.close()


def check_offsets(broker: Broker, topic: str, by_partition: dict[int, list[Consumed]]) -> None:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    try:
        tps = [TopicPartition(topic, index) for index in range(partition_count(consumer, topic))]
        assert consumer.beginning_offsets(tps) == dict.fromkeys(tps, 0)
        assert consumer.end_offsets(tps) == {
            tp: len(by_partition.get(tp.partition, [])) for tp in tps
        }
        for seq in (0, 7, 20, 39, 1000):
            timestamp_ms = BASE_TIMESTAMP_MS + 1000 * seq
            answers = consumer.offsets_for_times(dict.fromkeys(tps, timestamp_ms))
            for tp, answer in answers.items():
                expected = expected_offset_for_time(
                    by_partition.get(tp.partition, []), timestamp_ms
                )
                if expected is None:
                    assert answer is None, (seq, tp, answer)
                else:
                    assert answer is not None, (seq, tp)
                    assert answer.offset == expected, (seq, tp, answer)
                    assert answer.timestamp >= timestamp_ms
    finally:
        consumer.close()


def delete_topic(admin: KafkaAdminClient, topic: str) -> None:
    result = admin.delete_topics([topic], timeout_ms=10_000)
    assert [entry["error_code"] for entry in result["topics"]] == [0], result
    wait_until(lambda: topic not in admin.list_topics(), what=f"topic {topic} deleted")


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(broker: Broker, admin: KafkaAdminClient, codec: str) -> None:
    topic = f"kafka-python-{codec}"
    partitions = create_topic(broker, admin, topic)
    records = make_records(topic, partitions)
    produce(broker, topic, records, codec)
    consumed = consume_all(broker, topic, partitions, len(records))
    by_partition = verify_round_trip(records, consumed, partitions=partitions)
    assert stored_codecs(broker, topic) == {codec}
    check_offsets(broker, topic, by_partition)
    delete_topic(admin, topic)
