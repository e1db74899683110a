"""The client side of the codec: requests from plain mappings match kio's bytes; responses come
back as plain mappings; the ApiVersions fallback is read as v0; bad responses raise
ProtocolError."""

from __future__ import annotations

import datetime
import struct
from typing import Any

import pytest
from kio.schema.create_partitions.v1.request import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from kio.schema.create_topics.v3.response import CreatableTopicResult, CreateTopicsResponse
from kio.schema.describe_configs.v4.response import (
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
)
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.metadata.v4.request import MetadataRequest, MetadataRequestTopic
from kio.static.primitive import i8, i32Timedelta

from odradek.errors import ProtocolError
from odradek.protocol.api_keys import ApiKey, VersionRange
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.protocol.codec import encode_api_versions_fallback

from .conftest import kio_request_frame, kio_response_frame, sized


def test_requests_match_kio_bytes() -> None:
    cases: list[tuple[int, int, dict[str, Any], Any]] = [
        (
            ApiKey.METADATA,
            4,
            {"topics": None, "allow_auto_topic_creation": False},
            MetadataRequest(topics=None, allow_auto_topic_creation=False),
        ),
        (
            ApiKey.METADATA,
            4,
            {"topics": [{"name": "a"}, {"name": "b"}], "allow_auto_topic_creation": True},
            MetadataRequest(
                topics=(MetadataRequestTopic(name="a"), MetadataRequestTopic(name="b")),
                allow_auto_topic_creation=True,
            ),
        ),
        (
            ApiKey.CREATE_PARTITIONS,
            1,
            {
                "topics": [{"name": "t", "count": 3, "assignments": None}],
                "timeout": 1500,
                "validate_only": False,
            },
            CreatePartitionsRequest(
                topics=(CreatePartitionsTopic(name="t", count=3, assignments=None),),
                timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=1500)),
                validate_only=False,
            ),
        ),
    ]
    for api_key, version, fields, kio_body in cases:
        expected = sized(kio_request_frame(kio_body, correlation_id=5, client_id="cli"))
        assert encode_request(api_key, version, 5, "cli", fields) == expected


def test_a_flexible_request_has_header_v2_with_a_non_compact_client_id() -> None:
    frame = encode_request(
        ApiKey.API_VERSIONS,
        3,
        1,
        "rdkafka",
        {"client_software_name": "librdkafka", "client_software_version": "2.16.0"},
    )
    payload = (
        bytes.fromhex("0012 0003 00000001 0007") + b"rdkafka\x00" + b"\x0blibrdkafka\x072.16.0\x00"
    )
    assert frame == sized(payload)


def test_a_missing_required_field_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="topics"):
        encode_request(ApiKey.METADATA, 4, 1, None, {})


def test_responses_become_plain_mappings() -> None:
    response = CreateTopicsResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(milliseconds=7)),
        topics=(
            CreatableTopicResult(
                name="t", error_code=KioErrorCode.topic_already_exists, error_message="exists"
            ),
        ),
    )
    frame = kio_response_frame(response, correlation_id=9)[4:]
    correlation_id, body = decode_response(ApiKey.CREATE_TOPICS, 3, frame)
    assert correlation_id == 9
    assert body == {
        "throttle_time": 7,
        "topics": [{"name": "t", "error_code": 36, "error_message": "exists"}],
    }
    assert type(body["topics"][0]["error_code"]) is int


def test_a_flexible_response_skips_the_header_tagged_fields() -> None:
    response = DescribeConfigsResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        results=(
            DescribeConfigsResult(
                error_code=KioErrorCode.none,
                error_message=None,
                resource_type=i8(2),
                resource_name="t",
                configs=(
                    DescribeConfigsResourceResult(
                        name="retention.ms",
                        value="1000",
                        read_only=False,
                        config_source=i8(1),
                        is_sensitive=False,
                        synonyms=(),
                        documentation=None,
                    ),
                ),
            ),
        ),
    )
    _, body = decode_response(ApiKey.DESCRIBE_CONFIGS, 4, kio_response_frame(response, 3)[4:])
    [result] = body["results"]
    [entry] = result["configs"]
    assert (entry["name"], entry["value"], entry["config_source"]) == ("retention.ms", "1000", 1)


def test_the_api_versions_fallback_is_read_as_v0() -> None:
    supported = {ApiKey.API_VERSIONS: VersionRange(0, 2), ApiKey.PRODUCE: VersionRange(3, 7)}
    frame = encode_api_versions_fallback(11, supported)[4:]
    correlation_id, body = decode_response(ApiKey.API_VERSIONS, 3, frame)
    assert correlation_id == 11
    assert body["error_code"] == 35
    assert body["api_keys"] == [
        {"api_key": 0, "min_version": 3, "max_version": 7},
        {"api_key": 18, "min_version": 0, "max_version": 2},
    ]


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(b"\x00\x00", id="no-correlation-id"),
        pytest.param(struct.pack(">ii", 1, 0), id="truncated-body"),
        pytest.param(struct.pack(">iii", 1, 0, 2**31 - 1), id="lying-array-count"),
    ],
)
def test_bad_responses_raise_protocol_error(frame: bytes) -> None:
    with pytest.raises(ProtocolError, match="malformed CREATE_TOPICS v3 response"):
        decode_response(ApiKey.CREATE_TOPICS, 3, frame)


def test_an_unmodelled_version_is_a_lookup_error() -> None:
    with pytest.raises(LookupError):
        decode_response(ApiKey.CREATE_TOPICS, 99, b"\x00" * 8)
