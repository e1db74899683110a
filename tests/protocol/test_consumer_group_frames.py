"""Golden frames of the KIP-848 APIs at every served version: ConsumerGroupHeartbeat (key 68)
and ConsumerGroupDescribe (key 69), v0 and v1, both flexible from v0. Requests are encoded as
a client writes them and decoded as the broker reads them; responses are built as the broker
builds them and decoded as a client reads them. Each frame is written out field by field from
Kafka's message specs (ConsumerGroupHeartbeatRequest/Response.json,
ConsumerGroupDescribeRequest/Response.json): v1 of the heartbeat request adds
``SubscribedTopicRegex`` after the topic names, v1 of the describe response adds a member's
``MemberType`` (int8) after its target assignment; the rest is the same in both versions.

Encoding reminders: request header v2 (api key, version, correlation id, a *non-compact*
nullable client id, tags), response header v1 (correlation id, tags); compact strings and
arrays are an unsigned varint of length + 1 (0: null); a nullable struct is an int8 -1 (null)
or 1 before its fields; every struct ends with its tagged fields (here none: 00)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from odradek.protocol.api_keys import IMPLEMENTED_VERSIONS, ApiKey
from odradek.protocol.builder import build_response
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.protocol.codec import decode_request, encode_response
from odradek.protocol.header import response_header_version

HEARTBEAT = ApiKey.CONSUMER_GROUP_HEARTBEAT
DESCRIBE = ApiKey.CONSUMER_GROUP_DESCRIBE
TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
TOPIC_ID_HEX = "00112233445566778899aabbccddeeff"
#: ``topic_partitions`` of one topic by id, partitions 0 and 2, as the heartbeat carries them.
PARTITIONS_BY_ID_HEX = (
    "02"  # compact array of 1
    + TOPIC_ID_HEX  # topic_id: uuid
    + "03 00000000 00000002"  # partitions: compact array of 2 int32
    + "00"  # tags
)

# -- ConsumerGroupHeartbeat

HEARTBEAT_REQUEST: dict[str, Any] = {
    "group_id": "g",
    "member_id": "m1",
    "member_epoch": 0,
    "instance_id": None,
    "rack_id": "r",
    "rebalance_timeout": 30_000,
    "subscribed_topic_names": ["t"],
    "subscribed_topic_regex": "^o.*",  # v1
    "server_assignor": "uniform",
    "topic_partitions": [{"topic_id": TOPIC_ID, "partitions": [0, 2]}],
}


def _heartbeat_request_frame(version: int) -> str:
    return (
        f"0044 000{version} 00000005"  # api key 68, version, correlation id 5
        "ffff 00"  # client id null (int16 -1), header tags
        "02 67"  # group_id "g"
        "03 6d31"  # member_id "m1"
        "00000000"  # member_epoch 0
        "00"  # instance_id null
        "02 72"  # rack_id "r"
        "00007530"  # rebalance_timeout_ms 30000
        "02 02 74"  # subscribed_topic_names: ["t"]
        + ("05 5e6f2e2a" if version >= 1 else "")  # subscribed_topic_regex "^o.*" (v1+)
        + "08 756e69666f726d"  # server_assignor "uniform"
        + PARTITIONS_BY_ID_HEX  # topic_partitions
        + "00"  # tags
    )


HEARTBEAT_RESPONSE: dict[str, Any] = {
    "throttle_time": 0,
    "error_code": 0,
    "error_message": None,
    "member_id": "m1",
    "member_epoch": 5,
    "heartbeat_interval": 5000,
    "assignment": {"topic_partitions": [{"topic_id": TOPIC_ID, "partitions": [0, 2]}]},
}
HEARTBEAT_RESPONSE_FRAME = (
    "00000009 00"  # correlation id 9, header tags
    "00000000"  # throttle_time_ms 0
    "0000"  # error_code 0
    "00"  # error_message null
    "03 6d31"  # member_id "m1"
    "00000005"  # member_epoch 5
    "00001388"  # heartbeat_interval_ms 5000
    "01"  # assignment: present
    + PARTITIONS_BY_ID_HEX  # assignment.topic_partitions
    + "00"  # assignment's tags
    + "00"  # tags
)
#: An error answer: FENCED_MEMBER_EPOCH (110) with its message, no member id, no assignment.
FENCED_RESPONSE: dict[str, Any] = {
    "throttle_time": 0,
    "error_code": 110,
    "error_message": "fenced",
    "member_id": None,
    "member_epoch": -1,
    "heartbeat_interval": 0,
    "assignment": None,
}
FENCED_RESPONSE_FRAME = (
    "00000009 00"
    "00000000"
    "006e"  # error_code 110
    "07 66656e636564"  # error_message "fenced"
    "00"  # member_id null
    "ffffffff"  # member_epoch -1
    "00000000"  # heartbeat_interval_ms 0
    "ff"  # assignment: null
    "00"
)

# -- ConsumerGroupDescribe

DESCRIBE_REQUEST: dict[str, Any] = {"group_ids": ["g"], "include_authorized_operations": True}


def _describe_request_frame(version: int) -> str:
    return (
        f"0045 000{version} 00000005 ffff 00"  # api key 69
        "02 0267"  # group_ids: ["g"]
        "01"  # include_authorized_operations true
        "00"
    )


DESCRIBE_RESPONSE: dict[str, Any] = {
    "throttle_time": 0,
    "groups": [
        {
            "error_code": 0,
            "error_message": None,
            "group_id": "g",
            "group_state": "Stable",
            "group_epoch": 3,
            "assignment_epoch": 3,
            "assignor_name": "uniform",
            "authorized_operations": -(2**31),
            "members": [
                {
                    "member_id": "m1",
                    "instance_id": None,
                    "rack_id": None,
                    "member_epoch": 3,
                    "client_id": "c",
                    "client_host": "/127.0.0.1",
                    "subscribed_topic_names": ["t"],
                    "subscribed_topic_regex": None,
                    "assignment": {
                        "topic_partitions": [
                            {"topic_id": TOPIC_ID, "topic_name": "t", "partitions": [0, 2]}
                        ]
                    },
                    "target_assignment": {"topic_partitions": []},
                    "member_type": 1,  # v1
                }
            ],
        }
    ],
}


def _describe_response_frame(version: int) -> str:
    return (
        "00000009 00"
        "00000000"  # throttle_time_ms 0
        "02"  # groups: 1
        "0000"  # error_code 0
        "00"  # error_message null
        "02 67"  # group_id "g"
        "07 537461626c65"  # group_state "Stable"
        "00000003"  # group_epoch 3
        "00000003"  # assignment_epoch 3
        "08 756e69666f726d"  # assignor_name "uniform"
        "02"  # members: 1
        "03 6d31"  # member_id "m1"
        "00"  # instance_id null
        "00"  # rack_id null
        "00000003"  # member_epoch 3
        "02 63"  # client_id "c"
        "0b 2f3132372e302e302e31"  # client_host "/127.0.0.1"
        "02 02 74"  # subscribed_topic_names: ["t"]
        "00"  # subscribed_topic_regex null
        "02" + TOPIC_ID_HEX + "02 74"  # assignment: 1 topic — topic_id, topic_name "t"
        "03 00000000 00000002 00"  # partitions [0, 2], the topic's tags
        "00"  # assignment's tags
        "01 00"  # target_assignment: no topics, its tags
        + ("01" if version >= 1 else "")  # member_type 1: consumer (v1+)
        + "00"  # the member's tags
        "80000000"  # authorized_operations: INT32_MIN (not asked for)
        "00"  # the group's tags
        "00"
    )


def test_every_served_version_has_golden_frames() -> None:
    assert set(IMPLEMENTED_VERSIONS[HEARTBEAT]) == {0, 1}
    assert set(IMPLEMENTED_VERSIONS[DESCRIBE]) == {0, 1}


@pytest.mark.parametrize("version", [0, 1])
def test_heartbeat_request_frame(version: int) -> None:
    frame = encode_request(HEARTBEAT, version, 5, None, HEARTBEAT_REQUEST)
    assert frame[4:] == bytes.fromhex(_heartbeat_request_frame(version))
    request = decode_request(frame[4:])
    assert (request.api_key, request.api_version, request.correlation_id) == (HEARTBEAT, version, 5)
    body = request.body
    assert (body.group_id, body.member_id, body.member_epoch) == ("g", "m1", 0)
    assert (body.instance_id, body.rack_id, body.server_assignor) == (None, "r", "uniform")
    assert body.rebalance_timeout.total_seconds() == 30
    assert body.subscribed_topic_names == ("t",)
    assert getattr(body, "subscribed_topic_regex", None) == ("^o.*" if version >= 1 else None)
    [owned] = body.topic_partitions
    assert (owned.topic_id, owned.partitions) == (TOPIC_ID, (0, 2))


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize(
    ("fields", "golden"),
    [(HEARTBEAT_RESPONSE, HEARTBEAT_RESPONSE_FRAME), (FENCED_RESPONSE, FENCED_RESPONSE_FRAME)],
    ids=["assignment", "fenced"],
)
def test_heartbeat_response_frame(version: int, fields: dict[str, Any], golden: str) -> None:
    response = build_response(HEARTBEAT, version, fields)
    frame = encode_response(response_header_version(HEARTBEAT, version), 9, response)
    assert frame[4:] == bytes.fromhex(golden)
    correlation_id, read = decode_response(HEARTBEAT, version, frame[4:])
    assert correlation_id == 9
    assert (read["error_code"], read["error_message"]) == (
        fields["error_code"],
        fields["error_message"],
    )
    assert (read["member_id"], read["member_epoch"]) == (
        fields["member_id"],
        fields["member_epoch"],
    )
    if fields["assignment"] is None:
        assert read["assignment"] is None
    else:
        [assigned] = read["assignment"]["topic_partitions"]
        assert (assigned["topic_id"], list(assigned["partitions"])) == (TOPIC_ID, [0, 2])


@pytest.mark.parametrize("version", [0, 1])
def test_describe_request_frame(version: int) -> None:
    frame = encode_request(DESCRIBE, version, 5, None, DESCRIBE_REQUEST)
    assert frame[4:] == bytes.fromhex(_describe_request_frame(version))
    request = decode_request(frame[4:])
    assert (request.api_key, request.api_version) == (DESCRIBE, version)
    assert request.body.group_ids == ("g",)
    assert request.body.include_authorized_operations is True


@pytest.mark.parametrize("version", [0, 1])
def test_describe_response_frame(version: int) -> None:
    response = build_response(DESCRIBE, version, DESCRIBE_RESPONSE)
    frame = encode_response(response_header_version(DESCRIBE, version), 9, response)
    assert frame[4:] == bytes.fromhex(_describe_response_frame(version))
    correlation_id, read = decode_response(DESCRIBE, version, frame[4:])
    assert correlation_id == 9
    [group] = read["groups"]
    assert (group["group_id"], group["group_state"], group["assignor_name"]) == (
        "g",
        "Stable",
        "uniform",
    )
    [member] = group["members"]
    assert (member["member_id"], member["client_host"]) == ("m1", "/127.0.0.1")
    [assigned] = member["assignment"]["topic_partitions"]
    assert (assigned["topic_name"], list(assigned["partitions"])) == ("t", [0, 2])
    assert list(member["target_assignment"]["topic_partitions"]) == []
    assert member.get("member_type", -1) == (1 if version >= 1 else -1)
