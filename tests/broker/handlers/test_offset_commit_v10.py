"""OffsetCommit v10 (Kafka 4.1: topics by id) on an embedded broker: offsets committed by topic
id are the topic's (OffsetFetch by name reads them), the answer names each topic by its id, and
an id the broker does not know answers UNKNOWN_TOPIC_ID for its partitions while the known
topic's are committed. Golden frames of the v10 request and response."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from odradek import Broker
from odradek.broker.handlers._topic_metadata import topic_id_of
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.builder import build_response
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.protocol.codec import decode_request, encode_response
from odradek.protocol.header import response_header_version

from .conftest import RawClient, schema
from .test_groups import GROUP_CONFIG, create_topic, find
from .test_groups_newer_versions import fetch_batched

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config=GROUP_CONFIG) as running:
        yield running


def commit_v10(raw: RawClient, group: str, topics: dict[uuid.UUID, dict[int, int]]) -> Any:
    module = schema("offset_commit", 10)
    return raw.send(
        module.OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=tuple(
                module.OffsetCommitRequestTopic(
                    topic_id=topic_id,
                    partitions=tuple(
                        module.OffsetCommitRequestPartition(
                            partition_index=p,
                            committed_offset=o,
                            committed_leader_epoch=-1,
                            committed_metadata=None,
                        )
                        for p, o in offsets.items()
                    ),
                )
                for topic_id, offsets in topics.items()
            ),
        )
    )


def test_offsets_committed_by_topic_id(broker: Broker, raw: RawClient, topic: str) -> None:
    create_topic(raw, topic)
    ctx = broker.app.ctx
    assert ctx is not None
    topic_id = topic_id_of(ctx, topic)
    assert topic_id.int
    unknown = uuid.uuid4()
    group = f"g-v10-{topic}"
    find(raw, group)
    answer = commit_v10(raw, group, {topic_id: {0: 5, 1: 9}, unknown: {0: 1}})
    errors = {
        (t.topic_id, p.partition_index): int(p.error_code)
        for t in answer.topics
        for p in t.partitions
    }
    assert errors == {
        (topic_id, 0): ErrorCode.NONE,
        (topic_id, 1): ErrorCode.NONE,
        (unknown, 0): ErrorCode.UNKNOWN_TOPIC_ID,
    }
    fetched = fetch_batched(raw, {group: [topic]})
    assert fetched[group] == (ErrorCode.NONE, {(topic, 0): 5, (topic, 1): 9})


def test_golden_v10_request_and_response() -> None:
    fields = {
        "group_id": "g",
        "generation_id_or_member_epoch": 3,
        "member_id": "m",
        "group_instance_id": None,
        "topics": [
            {
                "topic_id": TOPIC_ID,
                "partitions": [
                    {"partition_index": 1, "committed_offset": 42, "committed_metadata": None}
                ],
            }
        ],
    }
    frame = encode_request(ApiKey.OFFSET_COMMIT, 10, 5, None, fields)
    assert frame[4:] == bytes.fromhex(
        "0008 000a 00000005 ffff 00"  # api key 8, v10, correlation id 5, null client id, tags
        "0267 00000003 026d 00"  # group "g", member epoch 3, member "m", instance id null
        "02"  # topics: 1
        "00112233445566778899aabbccddeeff"  # topic_id (no name in v10)
        "02 00000001 000000000000002a ffffffff 00 00"  # partition 1, offset 42, epoch -1, null
        "00"  # topic tags
        "00"
    )
    request = decode_request(frame[4:])
    [topic] = request.body.topics
    assert topic.topic_id == TOPIC_ID
    response = build_response(
        ApiKey.OFFSET_COMMIT,
        10,
        {
            "throttle_time": 0,
            "topics": [
                {"topic_id": TOPIC_ID, "partitions": [{"partition_index": 1, "error_code": 0}]}
            ],
        },
    )
    frame = encode_response(response_header_version(ApiKey.OFFSET_COMMIT, 10), 9, response)
    assert frame[4:] == bytes.fromhex(
        "00000009 00"  # correlation id 9, header tags
        "00000000"  # throttle time
        "02 00112233445566778899aabbccddeeff"  # topics: 1, by id
        "02 00000001 0000 00"  # partition 1, no error, tags
        "00 00"
    )
    _, body = decode_response(ApiKey.OFFSET_COMMIT, 10, frame[4:])
    assert body["topics"][0]["topic_id"] == TOPIC_ID
