"""The hand-written Produce response encoder equals kio's encoding, byte for byte."""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import struct
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_response_schema

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.produce_response import (
    PRODUCE_RESPONSE_VERSIONS,
    BatchIndexAndErrorMessage,
    NodeEndpoint,
    PartitionProduceResponse,
    TopicProduceResponse,
    encode_produce_response,
)

#: The versions kio has a response schema for (Kafka 4 dropped v0-v2): checked against it.
KIO_VERSIONS = [version for version in PRODUCE_RESPONSE_VERSIONS if version >= 3]


def _ms(value: datetime.datetime | datetime.timedelta | None) -> int:
    # The same rounding as kio's writers.
    if value is None:
        return -1
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return round(value.timestamp() * 1000)


def ours(response: Any) -> tuple[list[TopicProduceResponse], int]:
    """The same response as kio's object, in the encoder's input types."""
    topics = [
        TopicProduceResponse(
            getattr(topic, "name", ""),
            [
                PartitionProduceResponse(
                    partition_index=p.index,
                    error_code=int(p.error_code),
                    base_offset=p.base_offset,
                    log_append_time_ms=_ms(p.log_append_time),
                    log_start_offset=getattr(p, "log_start_offset", -1),
                    record_errors=tuple(
                        BatchIndexAndErrorMessage(e.batch_index, e.batch_index_error_message)
                        for e in getattr(p, "record_errors", ())
                    ),
                    error_message=getattr(p, "error_message", None),
                    current_leader=_leader(getattr(p, "current_leader", None)),
                )
                for p in topic.partition_responses
            ],
            getattr(topic, "topic_id", None),  # v13
        )
        for topic in response.responses
    ]
    return topics, _ms(response.throttle_time)


def _leader(value: Any) -> tuple[int, int]:
    return (-1, -1) if value is None else (value.leader_id, value.leader_epoch)


def endpoints(response: Any) -> list[NodeEndpoint]:
    """The response's ``node_endpoints`` (v10+) in the encoder's input type."""
    return [
        NodeEndpoint(e.node_id, e.host, e.port, e.rack)
        for e in getattr(response, "node_endpoints", ())
    ]


@pytest.mark.parametrize("version", KIO_VERSIONS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_equals_kio_byte_for_byte(
    version: int, data: st.DataObject, response_frame: Callable[[Any, int], bytes]
) -> None:
    response = data.draw(st.from_type(load_response_schema(ApiKey.PRODUCE, version)))
    correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1))
    topics, throttle_time_ms = ours(response)
    encoded = encode_produce_response(
        version, correlation_id, topics, throttle_time_ms, endpoints(response)
    )
    assert encoded == response_frame(response, correlation_id)


@pytest.mark.parametrize(
    ("version", "partition_hex", "tail_hex"),
    [
        (0, "00000002 0000 0000000000000007", ""),
        (1, "00000002 0000 0000000000000007", "00000005"),
        (2, "00000002 0000 0000000000000007 ffffffffffffffff", "00000005"),
    ],
)
def test_golden_v0_to_v2(version: int, partition_hex: str, tail_hex: str) -> None:
    # Kafka's ProduceResponse.json: v0 has no throttle time (v1+) and no log append time (v2+).
    body = bytes.fromhex("00000001 0001 74 00000001" + partition_hex + tail_hex)
    expected = struct.pack(">ii", 4 + len(body), 9) + body
    partition = PartitionProduceResponse(2, 0, 7, -1, 99)
    topics = [TopicProduceResponse("t", [partition])]
    assert encode_produce_response(version, 9, topics, throttle_time_ms=5) == expected


def test_golden_v7_one_partition() -> None:
    encoded = encode_produce_response(
        7,
        correlation_id=5,
        responses=[TopicProduceResponse("t", [PartitionProduceResponse(0, 0, 42)])],
    )
    assert encoded == bytes.fromhex(
        "00000031"  # size: 49
        "00000005"  # correlation id
        "00000001 0001 74"  # one topic, "t"
        "00000001 00000000 0000 000000000000002a"  # one partition: 0, no error, base offset 42
        "ffffffffffffffff ffffffffffffffff"  # log_append_time_ms, log_start_offset: -1
        "00000000"  # throttle_time_ms
    )


def test_v9_is_flexible_with_a_v1_response_header() -> None:
    encoded = encode_produce_response(
        9, correlation_id=5, responses=[TopicProduceResponse("t", [PartitionProduceResponse(1)])]
    )
    size, correlation_id = struct.unpack_from(">ii", encoded)
    assert (size, correlation_id) == (len(encoded) - 4, 5)
    assert encoded[8:11] == b"\x00\x02\x02"  # header tags, compact array of 1, compact "t"[0]


def test_fields_of_later_versions_are_dropped_from_earlier_ones() -> None:
    partition = PartitionProduceResponse(
        0,
        log_start_offset=7,
        record_errors=(BatchIndexAndErrorMessage(0, "bad"),),
        error_message="why",
    )
    v3 = encode_produce_response(3, 1, [TopicProduceResponse("t", [partition])])
    v5 = encode_produce_response(5, 1, [TopicProduceResponse("t", [partition])])
    v8 = encode_produce_response(8, 1, [TopicProduceResponse("t", [partition])])
    assert len(v5) == len(v3) + 8
    assert len(v8) == len(v5) + 4 + 4 + 2 + 3 + 2 + 3
    assert b"bad" in v8
    assert b"bad" not in v5


@pytest.mark.parametrize("version", [-1, 14])
def test_versions_outside_the_range_are_refused(version: int) -> None:
    with pytest.raises(ValueError, match="not encoded here"):
        encode_produce_response(version, 1, [])


def test_plain_tuples_are_accepted() -> None:
    # The inputs are NamedTuples; positional tuples in the same order work the same.
    named = encode_produce_response(
        7, 1, [TopicProduceResponse("t", [PartitionProduceResponse(0, 0, 1)])]
    )
    plain = encode_produce_response(
        7, 1, [TopicProduceResponse("t", [PartitionProduceResponse(*(0, 0, 1))])]
    )
    assert named == plain


@pytest.mark.parametrize("version", KIO_VERSIONS)
@pytest.mark.parametrize("name", ["t", "événements-ü", "x" * 300])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_one_topic_one_partition_fast_path_equals_kio(
    version: int, name: str, data: st.DataObject, response_frame: Callable[[Any, int], bytes]
) -> None:
    schema = load_response_schema(ApiKey.PRODUCE, version)
    module = importlib.import_module(schema.__module__)
    partition = data.draw(st.from_type(module.PartitionProduceResponse))
    response = dataclasses.replace(
        data.draw(st.from_type(schema)),
        responses=(
            module.TopicProduceResponse(name=name, partition_responses=(partition,))
            if version < 13
            else module.TopicProduceResponse(topic_id=None, partition_responses=(partition,)),
        ),
    )
    topics, throttle_time_ms = ours(response)
    encoded = encode_produce_response(version, 3, topics, throttle_time_ms, endpoints(response))
    assert encoded == response_frame(response, 3)


def test_golden_v13_names_the_topic_by_id() -> None:
    topic_id = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    partition = PartitionProduceResponse(0, 0, 42, -1, 0)
    encoded = encode_produce_response(13, 5, [TopicProduceResponse("t", [partition], topic_id)])
    assert encoded[4:] == bytes.fromhex(
        "00000005 00"  # correlation id, header tags
        "02 00112233445566778899aabbccddeeff"  # responses: 1 — topic_id (no name from v13)
        "02 00000000 0000 000000000000002a"  # partitions: 1 — index 0, no error, base offset 42
        "ffffffffffffffff 0000000000000000"  # log_append_time_ms -1, log_start_offset 0
        "01 00 00"  # no record errors, error_message null, tags
        "00"  # the topic's tags
        "00000000 00"  # throttle_time_ms, tags
    )
    v12 = encode_produce_response(12, 5, [TopicProduceResponse("t", [partition], topic_id)])
    assert b"\x00\x11\x22\x33" not in v12, "the id is not written before v13"
