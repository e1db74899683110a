"""OffsetFetch v10 (Kafka 4.2: topics by id) on an embedded broker: offsets committed by name
(OffsetCommit v9) read back by topic id, the answer naming each topic by its id; an id the
broker does not know answers UNKNOWN_TOPIC_ID for its partitions beside the known topic's
offsets; asking for every offset (topics null) names each topic by id. Golden frames of the
v10 request and response."""

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
from .test_offset_commit_v10 import commit_v10

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config=GROUP_CONFIG) as running:
        yield running


def fetch_v10(
    raw: RawClient, group: str, topics: dict[uuid.UUID, list[int]] | None
) -> dict[tuple[uuid.UUID, int], tuple[int, int]]:
    """(topic id, partition) → (error code, committed offset), from one OffsetFetch v10."""
    module = schema("offset_fetch", 10)
    answer: Any = raw.send(
        module.OffsetFetchRequest(
            groups=(
                module.OffsetFetchRequestGroup(
                    group_id=group,
                    member_id=None,
                    member_epoch=-1,
                    topics=None
                    if topics is None
                    else tuple(
                        module.OffsetFetchRequestTopics(
                            topic_id=topic_id, partition_indexes=tuple(partitions)
                        )
                        for topic_id, partitions in topics.items()
                    ),
                ),
            ),
            require_stable=False,
        )
    )
    [fetched] = answer.groups
    assert fetched.group_id == group
    assert int(fetched.error_code) == ErrorCode.NONE
    return {
        (t.topic_id, p.partition_index): (int(p.error_code), int(p.committed_offset))
        for t in fetched.topics
        for p in t.partitions
    }


def test_offsets_fetched_by_topic_id(broker: Broker, raw: RawClient, topic: str) -> None:
    create_topic(raw, topic)
    ctx = broker.app.ctx
    assert ctx is not None
    topic_id = topic_id_of(ctx, topic)
    assert topic_id.int
    unknown = uuid.uuid4()
    group = f"g-fetch-v10-{topic}"
    find(raw, group)
    commit_v10(raw, group, {topic_id: {0: 5, 1: 9}})
    assert fetch_v10(raw, group, {topic_id: [0, 1, 2], unknown: [0]}) == {
        (topic_id, 0): (ErrorCode.NONE, 5),
        (topic_id, 1): (ErrorCode.NONE, 9),
        (topic_id, 2): (ErrorCode.NONE, -1),  # nothing committed
        (unknown, 0): (ErrorCode.UNKNOWN_TOPIC_ID, -1),
    }
    assert fetch_v10(raw, group, None) == {
        (topic_id, 0): (ErrorCode.NONE, 5),
        (topic_id, 1): (ErrorCode.NONE, 9),
    }


def test_golden_v10_request_and_response() -> None:
    fields = {
        "groups": [
            {
                "group_id": "g",
                "member_id": None,
                "member_epoch": -1,
                "topics": [{"topic_id": TOPIC_ID, "partition_indexes": [1]}],
            }
        ],
        "require_stable": False,
    }
    frame = encode_request(ApiKey.OFFSET_FETCH, 10, 5, None, fields)
    assert frame[4:] == bytes.fromhex(
        "0009 000a 00000005 ffff 00"  # api key 9, v10, correlation id 5, null client id, tags
        "02"  # groups: 1
        "0267 00 ffffffff"  # group "g", member id null, member epoch -1
        "02 00112233445566778899aabbccddeeff"  # topics: 1 — topic_id (no name in v10)
        "02 00000001 00"  # partition_indexes [1], topic tags
        "00"  # group tags
        "00"  # require_stable false
        "00"
    )
    request = decode_request(frame[4:])
    [group] = request.body.groups
    [topic] = group.topics
    assert (topic.topic_id, topic.partition_indexes) == (TOPIC_ID, (1,))
    response = build_response(
        ApiKey.OFFSET_FETCH,
        10,
        {
            "throttle_time": 0,
            "groups": [
                {
                    "group_id": "g",
                    "error_code": 0,
                    "topics": [
                        {
                            "topic_id": TOPIC_ID,
                            "partitions": [
                                {
                                    "partition_index": 1,
                                    "committed_offset": 42,
                                    "committed_leader_epoch": -1,
                                    "metadata": "",
                                    "error_code": 0,
                                }
                            ],
                        }
                    ],
                }
            ],
        },
    )
    frame = encode_response(response_header_version(ApiKey.OFFSET_FETCH, 10), 9, response)
    assert frame[4:] == bytes.fromhex(
        "00000009 00"  # correlation id 9, header tags
        "00000000"  # throttle time
        "02 0267"  # groups: 1 — "g"
        "02 00112233445566778899aabbccddeeff"  # topics: 1, by id
        "02 00000001 000000000000002a ffffffff 01 0000 00"  # partition 1, offset 42, epoch -1,
        # metadata "", no error, tags
        "00"  # topic tags
        "0000 00"  # group error code, group tags
        "00"
    )
    _, body = decode_response(ApiKey.OFFSET_FETCH, 10, frame[4:])
    assert body["groups"][0]["topics"][0]["topic_id"] == TOPIC_ID
