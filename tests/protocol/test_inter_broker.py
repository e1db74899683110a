"""protocol.inter_broker: the ZooKeeper-era controller APIs kio lacks round-trip through the
broker's codec and the client codec, with Kafka's header versions."""

from __future__ import annotations

from typing import Any

import pytest

from odradek.protocol import ApiKey
from odradek.protocol.api_keys import IMPLEMENTED_VERSIONS, is_flexible
from odradek.protocol.builder import build_response
from odradek.protocol.client_codec import decode_response, encode_request, entity_fields
from odradek.protocol.codec import decode_request, encode_response
from odradek.protocol.header import request_header_version, response_header_version

REQUESTS: dict[tuple[int, int], dict[str, Any]] = {
    (ApiKey.LEADER_AND_ISR, 1): {
        "controller_id": 2,
        "controller_epoch": 7,
        "ungrouped_partition_states": [
            {
                "topic_name": "t",
                "partition_index": 3,
                "controller_epoch": 7,
                "leader": 1,
                "leader_epoch": 4,
                "isr": [1, 2],
                "zk_version": 9,
                "replicas": [1, 2, 0],
                "is_new": True,
            }
        ],
        "live_leaders": [{"broker_id": 1, "host_name": "h", "port": 9092}],
    },
    (ApiKey.UPDATE_METADATA, 4): {
        "controller_id": 2,
        "controller_epoch": 7,
        "ungrouped_partition_states": [
            {
                "topic_name": "t",
                "partition_index": 0,
                "controller_epoch": 7,
                "leader": -1,
                "leader_epoch": 2,
                "isr": [0],
                "zk_version": 1,
                "replicas": [0, 1],
                "offline_replicas": [0],
            }
        ],
        "live_brokers": [
            {
                "id": 1,
                "endpoints": [
                    {"port": 9093, "host": "h", "listener": "PLAINTEXT", "security_protocol": 0}
                ],
                "rack": "r1",
            }
        ],
    },
    (ApiKey.STOP_REPLICA, 0): {
        "controller_id": 2,
        "controller_epoch": 7,
        "delete_partitions": True,
        "ungrouped_partitions": [{"topic_name": "t", "partition_index": 5}],
    },
    (ApiKey.CONTROLLED_SHUTDOWN, 1): {"broker_id": 4},
}

RESPONSES: dict[tuple[int, int], dict[str, Any]] = {
    (ApiKey.LEADER_AND_ISR, 1): {
        "error_code": 0,
        "partition_errors": [{"topic_name": "t", "partition_index": 3, "error_code": 11}],
    },
    (ApiKey.UPDATE_METADATA, 4): {"error_code": 11},
    (ApiKey.STOP_REPLICA, 0): {
        "error_code": 0,
        "partition_errors": [{"topic_name": "t", "partition_index": 5, "error_code": 0}],
    },
    (ApiKey.CONTROLLED_SHUTDOWN, 1): {
        "error_code": 0,
        "remaining_partitions": [{"topic_name": "t", "partition_index": 1}],
    },
}


@pytest.mark.parametrize(("key", "version"), sorted(REQUESTS))
def test_requests_and_responses_round_trip(key: int, version: int) -> None:
    assert version in IMPLEMENTED_VERSIONS[ApiKey(key)]
    assert not is_flexible(key, version)
    assert request_header_version(key, version) == 1
    assert response_header_version(key, version) == 0
    frame = encode_request(key, version, 42, "controller-2", REQUESTS[(key, version)])
    request = decode_request(frame[4:])
    assert request.correlation_id == 42
    assert request.header.client_id == "controller-2"
    again = encode_request(key, version, 42, "controller-2", entity_fields(request.body))
    assert again == frame
    response = build_response(key, version, RESPONSES[(key, version)])
    encoded = encode_response(0, 42, response)
    assert decode_response(key, version, encoded[4:]) == (42, RESPONSES[(key, version)])


def test_a_truncated_request_is_a_decode_error() -> None:
    frame = encode_request(ApiKey.LEADER_AND_ISR, 1, 1, None, REQUESTS[(ApiKey.LEADER_AND_ISR, 1)])
    with pytest.raises(Exception, match="malformed LEADER_AND_ISR v1"):
        decode_request(frame[4:-3])


def test_alter_partition_v1_round_trips_flexible_with_topic_names() -> None:
    key, version = ApiKey.ALTER_PARTITION, 1
    assert version in IMPLEMENTED_VERSIONS[key]
    assert is_flexible(key, version)
    assert request_header_version(key, version) == 2
    assert response_header_version(key, version) == 1
    fields: dict[str, Any] = {
        "broker_id": 1,
        "broker_epoch": -1,
        "topics": [
            {
                "topic_name": "orders",
                "partitions": [
                    {
                        "partition_index": 2,
                        "leader_epoch": 5,
                        "new_isr": [1, 0],
                        "leader_recovery_state": 0,
                        "partition_epoch": 8,
                    }
                ],
            }
        ],
    }
    frame = encode_request(key, version, 7, "broker-1", fields)
    request = decode_request(frame[4:])
    assert entity_fields(request.body) == fields
    answer: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": 0,
        "topics": [
            {
                "topic_name": "orders",
                "partitions": [
                    {
                        "partition_index": 2,
                        "error_code": 95,
                        "leader_id": 1,
                        "leader_epoch": 5,
                        "isr": [1, 2, 0],
                        "leader_recovery_state": 0,
                        "partition_epoch": 9,
                    }
                ],
            }
        ],
    }
    encoded = encode_response(1, 7, build_response(key, version, answer))
    assert decode_response(key, version, encoded[4:]) == (7, answer)
