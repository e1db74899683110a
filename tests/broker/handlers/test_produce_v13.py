"""Produce v13 (Kafka 4.1, KIP-516: topics by id) on an embedded broker: a batch sent by topic
id is appended to that topic and the answer names the topic by its id; an id the broker does
not know answers UNKNOWN_TOPIC_ID for each of its partitions while the known topic's batch in
the same request is appended (and read back by name)."""

from __future__ import annotations

import uuid
from typing import Any

from kafka.admin import KafkaAdminClient, NewTopic

from odradek import Broker
from odradek.broker.handlers._topic_metadata import topic_id_of
from odradek.errors import ErrorCode
from odradek.records.codec import SimpleRecord, build_batch, decode_batch

from .conftest import RawClient, ms, schema, wait_for


def produce_v13(raw: RawClient, batches: dict[uuid.UUID, bytes]) -> Any:
    m = schema("produce", 13)
    return raw.send(
        m.ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout=ms(10_000),
            topic_data=tuple(
                m.TopicProduceData(
                    topic_id=topic_id,
                    partition_data=(m.PartitionProduceData(index=0, records=records),),
                )
                for topic_id, records in batches.items()
            ),
        )
    )


def test_produce_by_topic_id(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient, topic: str
) -> None:
    admin.create_topics([NewTopic(topic, 1, 1)])
    ctx = broker.app.ctx
    assert ctx is not None
    topic_id = wait_for(lambda: topic_id_of(ctx, topic).int and topic_id_of(ctx, topic), "an id")
    unknown = uuid.uuid4()
    batch = build_batch([SimpleRecord(1_000, b"k", b"by-id")])
    answer = produce_v13(raw, {topic_id: batch, unknown: batch})
    answered = {
        t.topic_id: [(p.index, int(p.error_code), p.base_offset) for p in t.partition_responses]
        for t in answer.responses
    }
    assert answered == {
        topic_id: [(0, ErrorCode.NONE, 0)],
        unknown: [(0, ErrorCode.UNKNOWN_TOPIC_ID, -1)],
    }
    second = produce_v13(raw, {topic_id: batch})
    assert second.responses[0].partition_responses[0].base_offset == 1
    m = schema("fetch", 12)
    fetched: Any = raw.send(
        m.FetchRequest(
            replica_id=-1,
            max_wait=ms(0),
            min_bytes=0,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=(
                m.FetchTopic(
                    topic=topic,
                    partitions=(
                        m.FetchPartition(
                            partition=0,
                            current_leader_epoch=-1,
                            fetch_offset=0,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=1 << 20,
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
            rack_id="",
        )
    )
    records = fetched.responses[0].partitions[0].records
    assert decode_batch(records).records[0].value == b"by-id"
