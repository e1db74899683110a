"""aiokafka against the embedded broker: admin create/delete, produce with every codec, read
back by assignment, beginning/end offsets and ``offsets_for_times``.

aiokafka is asyncio-only; each test runs its scenario with ``asyncio.run``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

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
)

pytestmark = pytest.mark.interop

TIMEOUT_S = 10.0


def assert_no_topic_errors(entries: Any) -> None:
    """CreateTopics/DeleteTopics responses carry (name, error_code, ...) per topic."""
    assert entries
    for entry in entries:
        assert entry[1] == 0, entries


async def create_topic(broker: Broker, admin: AIOKafkaAdminClient, topic: str) -> int:
    """Creates ``topic`` with CreateTopics and returns its partition count."""
    response = await admin.create_topics([NewTopic(topic, PARTITIONS, 1)], timeout_ms=10_000)
    assert_no_topic_errors(response.topic_errors)
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    await producer.start()
    try:
        partitions = await asyncio.wait_for(producer.partitions_for(topic), TIMEOUT_S)
        assert len(partitions) == PARTITIONS
    finally:
        await producer.stop()
    return PARTITIONS


async def produce(broker: Broker, topic: str, records: Sequence[Produced], codec: str) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
        acks="all",
    )
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic,
                key=record.key,
                value=record.value,
                headers=list(record.headers),
                partition=record.partition,
                timestamp_ms=record.timestamp_ms,
            )
            for record in records
        ]
        for metadata in await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT_S):
            assert metadata.offset >= 0
    finally:
        await producer.stop()


async def consume_all(broker: Broker, topic: str, partitions: int, count: int) -> list[Consumed]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, index) for index in range(partitions)])
        await consumer.seek_to_beginning()
        consumed: list[Consumed] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(consumed) < count and time.monotonic() < deadline:
            for messages in (await consumer.getmany(timeout_ms=200)).values():
                for message in messages:
                    assert message.timestamp_type == 0  # CreateTime
                    consumed.append(
                        Consumed(
                            partition=message.partition,
                            offset=message.offset,
                            key=message.key,
                            value=message.value,
                            headers=tuple(message.headers),
                            timestamp_ms=message.timestamp,
                        )
                    )
        assert not await consumer.getmany(timeout_ms=300), "records beyond those produced"
        return consumed
    finally:
        await consumer.stop()


async def check_offsets(
    broker: Broker, topic: str, partitions: int, by_partition: dict[int, list[Consumed]]
) -> None:
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, index) for index in range(partitions)]
        assert await consumer.beginning_offsets(tps) == dict.fromkeys(tps, 0)
        assert await consumer.end_offsets(tps) == {
            tp: len(by_partition.get(tp.partition, [])) for tp in tps
        }
        for seq in (0, 7, 20, 39, 1000):
            timestamp_ms = BASE_TIMESTAMP_MS + 1000 * seq
            answers = await consumer.offsets_for_times(dict.fromkeys(tps, timestamp_ms))
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
        await consumer.stop()


async def delete_topic(admin: AIOKafkaAdminClient, topic: str) -> None:
    response = await admin.delete_topics([topic], timeout_ms=10_000)
    assert_no_topic_errors(response.topic_error_codes)
    deadline = time.monotonic() + TIMEOUT_S
    while topic in await admin.list_topics():
        assert time.monotonic() < deadline, f"topic {topic} still listed"
        await asyncio.sleep(0.05)


async def round_trip(broker: Broker, codec: str) -> None:
    topic = f"aiokafka-{codec}"
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    await admin.start()
    try:
        partitions = await create_topic(broker, admin, topic)
        records = make_records(topic, partitions)
        await produce(broker, topic, records, codec)
        consumed = await consume_all(broker, topic, partitions, len(records))
        by_partition = verify_round_trip(records, consumed, partitions=partitions)
        assert stored_codecs(broker, topic) == {codec}
        await check_offsets(broker, topic, partitions, by_partition)
        await delete_topic(admin, topic)
    finally:
        await admin.close()


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(broker: Broker, codec: str) -> None:
    asyncio.run(asyncio.wait_for(round_trip(broker, codec), 60))
