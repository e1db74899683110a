"""DeleteRecords against a live broker: the log start offset moves (ListOffsets earliest and
consumers from the beginning follow), -1 means the high watermark, offsets past it fail, and
the next retention pass removes segments wholly below the new start."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient

from odradek import Broker, _types
from odradek.errors import ErrorCode

from .conftest import RawClient, ms, schema, unique_topic

VERSIONS = (0, 1, 2)
RECORDS = 10


def delete_request(version: int, topic: str, offsets: Sequence[tuple[int, int]]) -> Any:
    m = schema("delete_records", version)
    return m.DeleteRecordsRequest(
        topics=(
            m.DeleteRecordsTopic(
                name=topic,
                partitions=tuple(
                    m.DeleteRecordsPartition(partition_index=p, offset=o) for p, o in offsets
                ),
            ),
        ),
        timeout=ms(5000),
    )


def answers(response: Any) -> list[tuple[str, int, int, int]]:
    return [
        (t.name, p.partition_index, int(p.error_code), p.low_watermark)
        for t in response.topics
        for p in t.partitions
    ]


def filled_topic(
    admin: KafkaAdminClient,
    producer: KafkaProducer,
    name: str,
    configs: dict[str, str] | None = None,
) -> TopicPartition:
    """A one-partition topic holding ``RECORDS`` records, one batch each."""
    admin.create_topics(
        {name: {"num_partitions": 1, "replication_factor": 1, "configs": configs or {}}}
    )
    for index in range(RECORDS):
        producer.send(name, b"r%d" % index, partition=0).get(timeout=10)
    return TopicPartition(name, 0)


def test_consumers_start_at_the_new_log_start_offset(
    admin: KafkaAdminClient,
    producer: KafkaProducer,
    consumer_factory: Callable[..., KafkaConsumer],
    topic: str,
) -> None:
    partition = filled_topic(admin, producer, topic)

    result = admin.delete_records({partition: 4})

    assert result[partition]["low_watermark"] == 4
    assert result[partition]["error_code"] == 0
    consumer = consumer_factory(consumer_timeout_ms=5000, auto_offset_reset="earliest")
    assert consumer.beginning_offsets([partition]) == {partition: 4}
    assert consumer.end_offsets([partition]) == {partition: RECORDS}
    consumer.assign([partition])
    consumer.seek_to_beginning()
    first = next(consumer)
    assert (first.offset, first.value) == (4, b"r4")


def test_a_consumer_below_the_start_is_reset(
    admin: KafkaAdminClient,
    producer: KafkaProducer,
    consumer_factory: Callable[..., KafkaConsumer],
    topic: str,
) -> None:
    partition = filled_topic(admin, producer, topic)
    admin.delete_records({partition: 7})

    consumer = consumer_factory(consumer_timeout_ms=5000, auto_offset_reset="earliest")
    consumer.assign([partition])
    consumer.seek(partition, 2)  # deleted: the fetch answers OFFSET_OUT_OF_RANGE
    offsets = [record.offset for _, record in zip(range(3), consumer, strict=False)]

    assert offsets == [7, 8, 9]


@pytest.mark.parametrize("version", VERSIONS)
def test_minus_one_is_the_high_watermark(
    admin: KafkaAdminClient,
    producer: KafkaProducer,
    consumer_factory: Callable[..., KafkaConsumer],
    raw: RawClient,
    version: int,
) -> None:
    name = unique_topic(f"hw-v{version}")
    partition = filled_topic(admin, producer, name)

    response = raw.send(delete_request(version, name, [(0, -1)]))

    assert answers(response) == [(name, 0, 0, RECORDS)]
    consumer = consumer_factory()
    assert consumer.beginning_offsets([partition]) == {partition: RECORDS}


def test_offsets_out_of_range_and_no_ops(
    broker: Broker, admin: KafkaAdminClient, producer: KafkaProducer, raw: RawClient, topic: str
) -> None:
    filled_topic(admin, producer, topic)
    raw.send(delete_request(2, topic, [(0, 5)]))

    past = raw.send(delete_request(2, topic, [(0, RECORDS + 1)]))
    negative = raw.send(delete_request(2, topic, [(0, -2)]))
    lower = raw.send(delete_request(2, topic, [(0, 3)]))
    same = raw.send(delete_request(2, topic, [(0, 5)]))

    assert answers(past) == [(topic, 0, ErrorCode.OFFSET_OUT_OF_RANGE, -1)]
    assert answers(negative) == [(topic, 0, ErrorCode.OFFSET_OUT_OF_RANGE, -1)]
    assert answers(lower) == [(topic, 0, 0, 5)]
    assert answers(same) == [(topic, 0, 0, 5)]
    partition = broker.app.topics.replicas.get(_types.TopicPartition(topic, 0))
    assert partition is not None
    assert partition.log_start_offset == 5


def test_unknown_partitions_fail_alone(
    admin: KafkaAdminClient, producer: KafkaProducer, raw: RawClient, topic: str
) -> None:
    filled_topic(admin, producer, topic)
    missing = unique_topic("missing")
    m = schema("delete_records", 2)

    response = raw.send(
        m.DeleteRecordsRequest(
            topics=(
                m.DeleteRecordsTopic(
                    name=topic,
                    partitions=(
                        m.DeleteRecordsPartition(partition_index=3, offset=1),
                        m.DeleteRecordsPartition(partition_index=0, offset=2),
                    ),
                ),
                m.DeleteRecordsTopic(
                    name=missing,
                    partitions=(m.DeleteRecordsPartition(partition_index=0, offset=1),),
                ),
            ),
            timeout=ms(5000),
        )
    )

    assert answers(response) == [
        (topic, 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        (topic, 0, 0, 2),
        (missing, 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
    ]


def test_retention_removes_segments_below_the_new_start(
    broker: Broker, admin: KafkaAdminClient, producer: KafkaProducer, topic: str
) -> None:
    # Segments just big enough for one batch: each record rolls a new segment.
    filled_topic(admin, producer, topic, {"segment.bytes": "100", "file.delete.delay.ms": "0"})
    partition = broker.app.topics.replicas.get(_types.TopicPartition(topic, 0))
    assert partition is not None
    assert len(partition.log.segments()) == RECORDS

    admin.delete_records({TopicPartition(topic, 0): 6})
    log_manager = broker.app.log_manager
    assert log_manager is not None
    log_manager.cleanup_logs()  # what the next retention pass does

    segments = partition.log.segments()
    assert segments[0].base_offset == 6
    assert partition.log_start_offset == 6
