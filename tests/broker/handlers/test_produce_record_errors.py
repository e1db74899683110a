"""Produce v8+ names the records that made a batch fail (KIP-467), end to end on an embedded
broker: 100 records to a compacted topic, some without a key — the answer is INVALID_RECORD
with exactly the keyless records' indexes in ``record_errors``, and nothing is appended."""

from __future__ import annotations

import datetime

import pytest
from kio.static.primitive import i32Timedelta

from odradek import Broker
from odradek._types import TopicPartition
from odradek.errors import ErrorCode
from odradek.records.codec import SimpleRecord, build_batch

from .conftest import RawClient, ms, schema

KEYLESS = (3, 17, 99)


def create_compacted(raw: RawClient, topic: str) -> None:
    m = schema("create_topics", 7)
    answer = raw.send(
        m.CreateTopicsRequest(
            topics=(
                m.CreatableTopic(
                    name=topic,
                    num_partitions=1,
                    replication_factor=1,
                    assignments=(),
                    configs=(m.CreatableTopicConfig(name="cleanup.policy", value="compact"),),
                ),
            ),
            timeout=ms(10_000),
            validate_only=False,
        )
    )
    assert int(answer.topics[0].error_code) == ErrorCode.NONE


@pytest.mark.parametrize("version", [8, 12])
def test_keyless_records_of_a_batch_are_named(
    broker: Broker, raw: RawClient, topic: str, version: int
) -> None:
    create_compacted(raw, topic)
    records = [
        SimpleRecord(1_000, None if index in KEYLESS else b"k%d" % index, b"v")
        for index in range(100)
    ]
    m = schema("produce", version)
    answer = raw.send(
        m.ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
            topic_data=(
                m.TopicProduceData(
                    name=topic,
                    partition_data=(m.PartitionProduceData(index=0, records=build_batch(records)),),
                ),
            ),
        )
    )
    (partition,) = answer.responses[0].partition_responses
    assert int(partition.error_code) == ErrorCode.INVALID_RECORD
    assert tuple(e.batch_index for e in partition.record_errors) == KEYLESS
    assert partition.error_message
    assert broker.app.ctx is not None
    appended = broker.app.ctx.replicas.get(TopicPartition(topic, 0))
    assert appended is not None
    assert appended.log_end_offset == 0  # the whole batch was refused
