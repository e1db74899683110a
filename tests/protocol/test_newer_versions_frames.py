"""Golden frames of the versions odradek serves since issue 19 (Kafka 4's): a representative
request and response of each API, at every served version, encoded and decoded through kio's
schemas (what a client writes comes back as the broker reads it; what the broker builds comes
back as a client reads it), and byte-exact frames of the new forms: batched FindCoordinator
(v4+) and OffsetFetch (v8+), DeleteTopics by id (v6), and the KIP-951 tagged fields of Produce
(v10+) and Fetch (v16+) written by the hand-made encoders."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest

from odradek.protocol.api_keys import IMPLEMENTED_VERSIONS, ApiKey, is_implemented
from odradek.protocol.builder import build_response, request_value
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.protocol.codec import decode_request, encode_response
from odradek.protocol.fetch_response import (
    FetchableTopicResponse,
    FetchPartitionData,
    encode_fetch_response,
)
from odradek.protocol.header import response_header_version
from odradek.protocol.produce_response import (
    NodeEndpoint,
    PartitionProduceResponse,
    TopicProduceResponse,
    encode_produce_response,
)

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")

#: Representative requests (newest field names; a version drops what it lacks) and the
#: fields read back from them, by API.
REQUESTS: dict[ApiKey, dict[str, Any]] = {
    ApiKey.FIND_COORDINATOR: {"key": "g", "key_type": 0, "coordinator_keys": ["g", "h"]},
    ApiKey.JOIN_GROUP: {
        "group_id": "g",
        "session_timeout": 10_000,
        "rebalance_timeout": 30_000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"m"}],
        "reason": "why",
    },
    ApiKey.SYNC_GROUP: {
        "group_id": "g",
        "generation_id": 3,
        "member_id": "m",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [{"member_id": "m", "assignment": b"a"}],
    },
    ApiKey.HEARTBEAT: {"group_id": "g", "generation_id": 3, "member_id": "m"},
    ApiKey.LEAVE_GROUP: {
        "group_id": "g",
        "member_id": "m",
        "members": [{"member_id": "m", "group_instance_id": None, "reason": "bye"}],
    },
    ApiKey.OFFSET_COMMIT: {
        "group_id": "g",
        "generation_id_or_member_epoch": 3,
        "member_id": "m",
        "retention_time": -1,
        "topics": [
            {
                "name": "t",
                "topic_id": TOPIC_ID,  # v10
                "partitions": [
                    {"partition_index": 1, "committed_offset": 42, "committed_metadata": None}
                ],
            }
        ],
    },
    ApiKey.OFFSET_FETCH: {
        "group_id": "g",
        "topics": [{"name": "t", "partition_indexes": [0, 1]}],
        "groups": [
            {
                "group_id": "g",
                "topics": [{"name": "t", "topic_id": TOPIC_ID, "partition_indexes": [0, 1]}],
            },
            {"group_id": "h", "topics": None},
        ],
    },
    ApiKey.DESCRIBE_GROUPS: {"groups": ["g"], "include_authorized_operations": False},
    ApiKey.LIST_GROUPS: {"states_filter": ["Stable"], "types_filter": ["classic"]},
    ApiKey.DELETE_GROUPS: {"groups_names": ["g"]},
    ApiKey.CREATE_TOPICS: {
        "topics": [
            {
                "name": "t",
                "num_partitions": -1,
                "replication_factor": -1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout": 5_000,
        "validate_only": False,
    },
    ApiKey.DELETE_TOPICS: {
        "topic_names": ["t"],
        "topics": [{"name": None, "topic_id": TOPIC_ID}],
        "timeout": 5_000,
    },
    ApiKey.INIT_PRODUCER_ID: {
        "transactional_id": None,
        "transaction_timeout": 60_000,
        "producer_id": 7,
        "producer_epoch": 2,
    },
    ApiKey.LIST_OFFSETS: {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -3}]}],
        "timeout": 1_000,
    },
}

REQUEST_CASES = [
    (key, version)
    for key in REQUESTS
    for version in IMPLEMENTED_VERSIONS[key]
    if is_implemented(key, version)
]


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
    return request_value(value)


def _subset(sent: Any, read: Any) -> bool:
    """Whether every field ``read`` has matches what was ``sent`` (a version drops fields)."""
    if isinstance(read, dict):
        return all(name not in sent or _subset(sent[name], item) for name, item in read.items())
    if isinstance(read, list):
        return (
            isinstance(sent, list)
            and len(sent) == len(read)
            and all(_subset(s, r) for s, r in zip(sent, read, strict=True))
        )
    return bool(sent == read)


@pytest.mark.parametrize(
    ("api_key", "version"), REQUEST_CASES, ids=[f"{k.name}-v{v}" for k, v in REQUEST_CASES]
)
def test_request_round_trip(api_key: ApiKey, version: int) -> None:
    frame = encode_request(api_key, version, 17, "golden", REQUESTS[api_key])
    request = decode_request(frame[4:])
    assert (request.api_key, request.api_version, request.correlation_id) == (
        api_key,
        version,
        17,
    )
    read = _plain(request.body)
    assert read  # at least one field of the representative request
    assert _subset(REQUESTS[api_key], read), read


RESPONSES: dict[ApiKey, dict[str, Any]] = {
    ApiKey.FIND_COORDINATOR: {
        "throttle_time": 0,
        "error_code": 0,
        "error_message": None,
        "node_id": 1,
        "host": "h",
        "port": 9092,
        "coordinators": [
            {
                "key": "g",
                "node_id": 1,
                "host": "h",
                "port": 9092,
                "error_code": 0,
                "error_message": None,
            },
            {
                "key": "x",
                "node_id": -1,
                "host": "",
                "port": -1,
                "error_code": 15,
                "error_message": "none",
            },
        ],
    },
    ApiKey.OFFSET_FETCH: {
        "throttle_time": 0,
        "error_code": 0,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 5,
                        "committed_leader_epoch": 2,
                        "metadata": "",
                        "error_code": 0,
                    }
                ],
            }
        ],
        "groups": [
            {
                "group_id": "g",
                "error_code": 0,
                "topics": [
                    {
                        "name": "t",
                        "topic_id": TOPIC_ID,  # v10
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 5,
                                "committed_leader_epoch": 2,
                                "metadata": "",
                                "error_code": 0,
                            }
                        ],
                    }
                ],
            }
        ],
    },
    ApiKey.DESCRIBE_GROUPS: {
        "throttle_time": 0,
        "groups": [
            {
                "error_code": 69,
                "error_message": "group g not found",
                "group_id": "g",
                "group_state": "Dead",
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
                "authorized_operations": -(2**31),
            }
        ],
    },
    ApiKey.LIST_GROUPS: {
        "throttle_time": 0,
        "error_code": 0,
        "groups": [
            {
                "group_id": "g",
                "protocol_type": "consumer",
                "group_state": "Stable",
                "group_type": "classic",
            }
        ],
    },
    ApiKey.DELETE_TOPICS: {
        "throttle_time": 0,
        "responses": [{"name": "t", "topic_id": TOPIC_ID, "error_code": 0, "error_message": None}],
    },
    ApiKey.LIST_OFFSETS: {
        "throttle_time": 0,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "old_style_offsets": [7],
                        "timestamp": 300,
                        "offset": 7,
                        "leader_epoch": 1,
                    }
                ],
            }
        ],
    },
    ApiKey.INIT_PRODUCER_ID: {
        "throttle_time": 0,
        "error_code": 0,
        "producer_id": 7,
        "producer_epoch": 0,
    },
}

RESPONSE_CASES = [
    (key, version)
    for key in RESPONSES
    for version in IMPLEMENTED_VERSIONS[key]
    if is_implemented(key, version)
]


@pytest.mark.parametrize(
    ("api_key", "version"), RESPONSE_CASES, ids=[f"{k.name}-v{v}" for k, v in RESPONSE_CASES]
)
def test_response_round_trip(api_key: ApiKey, version: int) -> None:
    response = build_response(api_key, version, RESPONSES[api_key])
    frame = encode_response(response_header_version(api_key, version), 23, response)
    correlation_id, read = decode_response(api_key, version, frame[4:])
    assert correlation_id == 23
    assert _subset(RESPONSES[api_key], {k: v for k, v in read.items() if k != "topic_id"}), read


def test_golden_find_coordinator_v4_request() -> None:
    frame = encode_request(ApiKey.FIND_COORDINATOR, 4, 5, None, REQUESTS[ApiKey.FIND_COORDINATOR])
    assert frame[4:] == bytes.fromhex(
        "000a 0004 00000005"  # api key 10, v4, correlation id 5
        "ffff 00"  # null client id, no header tags
        "00"  # key_type 0
        "03 0267 0268"  # coordinator_keys: compact array of 2, "g", "h"
        "00"  # no tags
    )


def test_golden_offset_fetch_v8_request() -> None:
    frame = encode_request(ApiKey.OFFSET_FETCH, 8, 5, None, REQUESTS[ApiKey.OFFSET_FETCH])
    assert frame[4:] == bytes.fromhex(
        "0009 0008 00000005 ffff 00"
        "03"  # groups: 2
        "0267 02 0274 03 00000000 00000001 00 00"  # "g": topics [t: 0, 1], tags, tags
        "0268 00 00"  # "h": topics null (every offset), tags
        "00"  # require_stable false
        "00"
    )


def test_golden_delete_topics_v6_by_id() -> None:
    frame = encode_request(ApiKey.DELETE_TOPICS, 6, 5, None, REQUESTS[ApiKey.DELETE_TOPICS])
    assert frame[4:] == bytes.fromhex(
        "0014 0006 00000005 ffff 00"
        "02"  # topics: 1
        "00"  # name: null
        "00112233445566778899aabbccddeeff"  # topic_id
        "00"  # tags
        "00001388"  # timeout 5000
        "00"
    )


def test_golden_produce_v10_names_the_current_leader() -> None:
    partition = PartitionProduceResponse(0, 6, current_leader=(2, 9))  # NOT_LEADER_OR_FOLLOWER
    frame = encode_produce_response(
        10,
        5,
        [TopicProduceResponse("t", [partition])],
        node_endpoints=[NodeEndpoint(2, "b", 9093)],
    )
    body = bytes.fromhex(
        "00000005 00"  # correlation id, header tags
        "02 0274 02"  # responses: 1, "t", partitions: 1
        "00000000 0006 ffffffffffffffff ffffffffffffffff ffffffffffffffff"
        "01 00"  # record_errors: none, error_message: null
        "01 00 09 00000002 00000009 00"  # tag 0 current_leader: leader 2, epoch 9
        "00"  # topic tags
        "00000000"  # throttle
        "01 00 0d 02 00000002 0262 00002385 00 00"  # tag 0 node_endpoints: [2, "b", 9093]
    )
    assert frame == struct.pack(">i", len(body)) + body
    # Before v10 neither field exists: the same answer is the v9 layout.
    v9 = encode_produce_response(
        9, 5, [TopicProduceResponse("t", [partition])], node_endpoints=[NodeEndpoint(2, "b", 9093)]
    )
    assert b"\x09\x00\x00\x00\x02" not in v9


def test_golden_fetch_v16_by_topic_id_with_the_current_leader() -> None:
    topic = FetchableTopicResponse(
        "t", [FetchPartitionData(0, 6, 10, 10, 0, current_leader=(2, 9))], TOPIC_ID
    )
    frame = encode_fetch_response(
        16, 5, [topic], session_id=0, node_endpoints=[NodeEndpoint(2, "b", 9093)]
    )
    (only,) = frame.parts
    assert isinstance(only, bytes)
    body = bytes.fromhex(
        "00000005 00"  # correlation id, header tags
        "00000000 0000 00000000"  # throttle, error, session id
        "02 00112233445566778899aabbccddeeff 02"  # responses: 1 (by id), partitions: 1
        "00000000 0006 000000000000000a 000000000000000a 0000000000000000"
        "00 ffffffff 01"  # aborted: null, preferred replica -1, records: empty
        "01 01 09 00000002 00000009 00"  # tag 1 current_leader: leader 2, epoch 9
        "00"  # topic tags
        "01 00 0d 02 00000002 0262 00002385 00 00"  # tag 0 node_endpoints
    )
    assert only == struct.pack(">i", len(body)) + body
