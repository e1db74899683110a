"""ListOffsets v11 (Kafka 4.2, KIP-1023) against an embedded broker: the earliest-pending-upload
spec (-6) answers offset -1 and timestamp -1, as Kafka answers it for a topic without remote
storage, next to the older specs in the same request; at v10 the same spec is INVALID_REQUEST."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from odradek.errors import ErrorCode
from odradek.records.codec import SimpleRecord, build_batch

from .conftest import RawClient, ms, schema

SPECS = (-1, -2, -3, -4, -5, -6)


def list_offsets(raw: RawClient, version: int, topic: str) -> list[tuple[int, int, int]]:
    m = schema("list_offsets", version)
    response: Any = raw.send(
        m.ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=(
                m.ListOffsetsTopic(
                    name=topic,
                    partitions=tuple(
                        m.ListOffsetsPartition(partition_index=0, timestamp=spec) for spec in SPECS
                    ),
                ),
            ),
            timeout=ms(1000),
        )
    )
    return [(int(p.error_code), p.offset, p.timestamp) for p in response.topics[0].partitions]


@pytest.mark.parametrize("version", [10, 11])
def test_earliest_pending_upload(
    admin: KafkaAdminClient, raw: RawClient, topic: str, version: int
) -> None:
    admin.create_topics([NewTopic(topic, 1, 1)])
    m = schema("produce", 12)
    raw.send(
        m.ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout=ms(10_000),
            topic_data=(
                m.TopicProduceData(
                    name=topic,
                    partition_data=(
                        m.PartitionProduceData(
                            index=0,
                            records=build_batch(
                                [SimpleRecord(t, b"k%d" % t, b"v") for t in (100, 300, 200)]
                            ),
                        ),
                    ),
                ),
            ),
        )
    )
    assert list_offsets(raw, version, topic) == [
        (ErrorCode.NONE, 3, -1),  # latest
        (ErrorCode.NONE, 0, -1),  # earliest
        (ErrorCode.NONE, 1, 300),  # max timestamp
        (ErrorCode.NONE, 0, -1),  # earliest local
        (ErrorCode.NONE, -1, -1),  # latest tiered
        (ErrorCode.NONE, -1, -1) if version >= 11 else (ErrorCode.INVALID_REQUEST, -1, -1),
    ]
