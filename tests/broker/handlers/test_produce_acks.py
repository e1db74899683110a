"""acks against a real embedded broker, by raw Produce frames: a topic whose
``min.insync.replicas`` (2) exceeds its in-sync replicas (the one broker) refuses acks=all
with NOT_ENOUGH_REPLICAS and appends nothing, while acks=1 appends; with the default
``min.insync.replicas`` acks=all is answered at once (the ISR of one moved the high
watermark) and the records are readable right after."""

from __future__ import annotations

from typing import Any

from kafka.admin import KafkaAdminClient, NewTopic
from tests.broker.handlers.conftest import RawClient, ms, schema

from odradek.errors import ErrorCode
from odradek.records.codec import SimpleRecord, build_batch

VERSION = 7


def produce(raw: RawClient, topic: str, acks: int, values: list[bytes]) -> tuple[int, int]:
    """(error code, base offset) of one partition-0 batch of ``values``."""
    m = schema("produce", VERSION)
    records = build_batch([SimpleRecord(1_000, None, value) for value in values])
    response = raw.send(
        m.ProduceRequest(
            acks=acks,
            timeout=ms(5_000),
            topic_data=(
                m.TopicProduceData(
                    name=topic, partition_data=(m.PartitionProduceData(index=0, records=records),)
                ),
            ),
        )
    )
    (answer,) = response.responses[0].partition_responses
    return int(answer.error_code), int(answer.base_offset)


def log_end_offset(raw: RawClient, topic: str) -> int:
    m = schema("list_offsets", 2)
    response: Any = raw.send(
        m.ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=(
                m.ListOffsetsTopic(
                    name=topic,
                    partitions=(m.ListOffsetsPartition(partition_index=0, timestamp=-1),),
                ),
            ),
        )
    )
    return int(response.topics[0].partitions[0].offset)


def test_min_insync_replicas_above_the_isr_refuses_acks_all_only(
    admin: KafkaAdminClient, raw: RawClient, topic: str
) -> None:
    admin.create_topics([NewTopic(topic, 1, 1, topic_configs={"min.insync.replicas": "2"})])

    refused = produce(raw, topic, -1, [b"a", b"b"])
    end_after_refusal = log_end_offset(raw, topic)
    leader_only = produce(raw, topic, 1, [b"c"])

    assert refused == (ErrorCode.NOT_ENOUGH_REPLICAS, -1)
    assert end_after_refusal == 0
    assert leader_only == (ErrorCode.NONE, 0)
    assert log_end_offset(raw, topic) == 1


def test_acks_all_with_an_isr_of_one_is_answered_and_committed(
    admin: KafkaAdminClient, raw: RawClient, topic: str
) -> None:
    admin.create_topics([NewTopic(topic, 1, 1)])

    first = produce(raw, topic, -1, [b"a", b"b"])
    second = produce(raw, topic, -1, [b"c"])

    assert (first, second) == ((ErrorCode.NONE, 0), (ErrorCode.NONE, 2))
    assert log_end_offset(raw, topic) == 3  # ListOffsets latest is the high watermark
