"""The codec facade: golden request frames, round trips against kio, rejections, responses."""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.metadata.v4.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v4.response import MetadataResponse
from kio.schema.produce.v3.request import ProduceRequest as ProduceRequestV3
from kio.static.primitive import i16, i32Timedelta

from odradek.errors import ProtocolError, RequestDecodeError, UnsupportedVersionError
from odradek.protocol.api_keys import (
    IMPLEMENTED_VERSIONS,
    ApiKey,
    VersionRange,
    is_implemented,
    schema_versions,
)
from odradek.protocol.codec import (
    decode_request,
    encode_api_versions_fallback,
    encode_response,
    response_class,
)
from odradek.protocol.header import (
    RequestHeader,
    request_header_version,
    response_header_version,
)
from odradek.protocol.inter_broker import load_request_schema, load_response_schema

IMPLEMENTED = [
    (key, version)
    for key, versions in IMPLEMENTED_VERSIONS.items()
    for version in versions
    # kio models every implemented version but Produce v0-v2 (tested on their own below).
    if is_implemented(key, version) and version in (schema_versions(key) or ())
]
IDS = [f"{key.name}-v{version}" for key, version in IMPLEMENTED]

# ApiVersions v3 as librdkafka sends it, written out from the protocol guide:
#   header v2: api_key 18, api_version 3, correlation_id 1, client_id "rdkafka" (int16
#   length, not compact, even in header v2), no tagged fields;
#   body: client_software_name, client_software_version (compact strings), no tagged fields.
LIBRDKAFKA_API_VERSIONS_V3 = (
    bytes.fromhex("0012 0003 00000001 0007")
    + b"rdkafka"
    + b"\x00"
    + b"\x0b"
    + b"librdkafka"
    + b"\x07"
    + b"2.16.0"
    + b"\x00"
)


def test_golden_api_versions_v3_from_librdkafka() -> None:
    request = decode_request(LIBRDKAFKA_API_VERSIONS_V3)
    assert request.header == RequestHeader(ApiKey.API_VERSIONS, 3, 1, "rdkafka", 2)
    assert request.body == ApiVersionsRequestV3(
        client_software_name="librdkafka", client_software_version="2.16.0"
    )
    assert request.api_key is ApiKey.API_VERSIONS
    assert (request.api_version, request.correlation_id) == (3, 1)
    assert request.frame_size == len(LIBRDKAFKA_API_VERSIONS_V3)


def test_golden_api_versions_v0_has_an_empty_body() -> None:
    frame = bytes.fromhex("0012 0000 00000005 000c") + b"kafka-python"
    request = decode_request(frame)
    assert request.header == RequestHeader(ApiKey.API_VERSIONS, 0, 5, "kafka-python", 1)
    assert type(request.body).__version__ == 0


def test_golden_metadata_v4() -> None:
    frame = (
        bytes.fromhex("0003 0004 00000002 0007")
        + b"rdkafka"
        + bytes.fromhex("00000001 0006")
        + b"orders"
        + b"\x01"  # allow_auto_topic_creation
    )
    request = decode_request(frame)
    assert request.body == MetadataRequest(
        topics=(MetadataRequestTopic(name="orders"),), allow_auto_topic_creation=True
    )


def test_golden_metadata_v1_null_topics_means_all() -> None:
    frame = bytes.fromhex("0003 0001 00000002 ffff ffffffff")
    assert decode_request(frame).body.topics is None


def test_golden_produce_v3() -> None:
    records = b"R" * 5  # the codec does not look inside records
    frame = (
        bytes.fromhex("0000 0003 0000000a 0001")
        + b"c"
        + bytes.fromhex("ffff ffff 00007530")  # transactional_id null, acks -1, timeout 30000
        + bytes.fromhex("00000001 0001")
        + b"t"
        + bytes.fromhex("00000001 00000002 00000005")
        + records
    )
    body = decode_request(frame).body
    assert isinstance(body, ProduceRequestV3)
    assert body.acks == -1
    assert body.transactional_id is None
    assert body.timeout == datetime.timedelta(seconds=30)
    (topic,) = body.topic_data
    (partition,) = topic.partition_data
    assert (topic.name, partition.index, partition.records) == ("t", 2, records)


def test_bytes_after_the_body_are_refused() -> None:
    with pytest.raises(RequestDecodeError, match="4 bytes after the request body") as caught:
        decode_request(LIBRDKAFKA_API_VERSIONS_V3 + b"junk")
    assert (caught.value.api_key, caught.value.correlation_id) == (ApiKey.API_VERSIONS, 1)


def test_writable_buffers_are_accepted() -> None:
    assert decode_request(bytearray(LIBRDKAFKA_API_VERSIONS_V3)).correlation_id == 1
    assert decode_request(memoryview(bytearray(LIBRDKAFKA_API_VERSIONS_V3))).correlation_id == 1


@pytest.mark.parametrize(("api_key", "api_version"), IMPLEMENTED, ids=IDS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_implemented_version_round_trips_through_kio(
    api_key: ApiKey,
    api_version: int,
    data: st.DataObject,
    request_frame: Callable[..., bytes],
) -> None:
    body = data.draw(st.from_type(load_request_schema(api_key, api_version)))
    correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1))
    client_id = data.draw(st.none() | st.text(max_size=20))
    request = decode_request(request_frame(body, correlation_id, client_id))
    assert request.body == body
    assert request.header.correlation_id == correlation_id
    assert request.header.client_id == client_id


@pytest.mark.parametrize(("api_key", "api_version"), IMPLEMENTED, ids=IDS)
@settings(max_examples=40, deadline=None)
@given(garbage=st.binary(max_size=80))
def test_garbage_bodies_raise_only_request_decode_errors(
    api_key: ApiKey, api_version: int, garbage: bytes
) -> None:
    header = struct.pack(">hhih", api_key, api_version, 77, 1) + b"x"
    if request_header_version(api_key, api_version) == 2:
        header += b"\x00"  # no tagged fields
    error: RequestDecodeError | None = None
    try:
        decode_request(header + garbage)
    except RequestDecodeError as exc:  # decoding may also succeed: garbage can be valid
        error = exc
    if error is not None:
        assert (error.api_key, error.api_version, error.correlation_id) == (
            api_key,
            api_version,
            77,
        )


@pytest.mark.parametrize(("api_key", "api_version"), IMPLEMENTED, ids=IDS)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_requests_truncated_anywhere_raise_request_decode_errors(
    api_key: ApiKey,
    api_version: int,
    data: st.DataObject,
    request_frame: Callable[..., bytes],
) -> None:
    body = data.draw(st.from_type(load_request_schema(api_key, api_version)))
    frame = request_frame(body, 3, "c")
    for end in range(len(frame)):
        with pytest.raises(RequestDecodeError):
            decode_request(frame[:end])


def test_unknown_api_key_is_unsupported_and_carries_the_header() -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(struct.pack(">hhi", 9999, 0, 42))
    error = info.value
    assert (error.api_key, error.api_version, error.correlation_id) == (9999, 0, 42)
    assert not error.api_key_known
    assert error.error_code == 35


@pytest.mark.parametrize(
    ("api_key", "api_version"),
    [
        (ApiKey.PRODUCE, 14),
        (ApiKey.FETCH, 19),
        (ApiKey.API_VERSIONS, 5),
        (ApiKey.SASL_HANDSHAKE, 2),
        (ApiKey.LEADER_AND_ISR, 0),
        (ApiKey.METADATA, -1),
    ],
)
def test_unimplemented_versions_are_unsupported(api_key: ApiKey, api_version: int) -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(struct.pack(">hhih", api_key, api_version, 8, -1))
    assert info.value.api_key_known
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (
        api_key,
        api_version,
        8,
    )


def test_supported_narrows_what_is_decoded() -> None:
    supported = {ApiKey.API_VERSIONS: VersionRange(0, 2)}
    with pytest.raises(UnsupportedVersionError):
        decode_request(LIBRDKAFKA_API_VERSIONS_V3, supported)
    frame = bytes.fromhex("0012 0002 00000001 ffff")
    assert decode_request(frame, supported).api_version == 2
    with pytest.raises(UnsupportedVersionError):
        decode_request(bytes.fromhex("0003 0001 00000002 ffff ffffffff"), supported)


def test_frames_too_short_for_a_header() -> None:
    for frame in (b"", b"\x00\x03\x00\x01\x00\x00\x00"):
        with pytest.raises(RequestDecodeError) as info:
            decode_request(frame)
        assert info.value.correlation_id is None
        assert info.value.error_code == 42  # INVALID_REQUEST


def test_decode_errors_are_protocol_errors() -> None:
    assert issubclass(RequestDecodeError, ProtocolError)
    assert issubclass(UnsupportedVersionError, ProtocolError)


def test_unknown_tagged_fields_in_a_body_are_rejected_not_leaked() -> None:
    # kio refuses tagged fields it does not model (Kafka would skip them): that surfaces
    # as a RequestDecodeError, never as the KeyError kio raises.
    frame = LIBRDKAFKA_API_VERSIONS_V3[:-1] + bytes.fromhex("01 07 01 00")
    with pytest.raises(RequestDecodeError, match="tag"):
        decode_request(frame)


def test_huge_array_counts_are_rejected_before_kio_reads_them() -> None:
    # 2**31 - 1 topics in a 12-byte body: kio would try to reserve 16 GiB for them.
    with pytest.raises(RequestDecodeError, match="array count"):
        decode_request(bytes.fromhex("0003 0001 00000002 ffff 7fffffff"))


@pytest.mark.parametrize(("api_key", "api_version"), IMPLEMENTED, ids=IDS)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_encode_response_matches_kio(
    api_key: ApiKey,
    api_version: int,
    data: st.DataObject,
    response_frame: Callable[[Any, int], bytes],
) -> None:
    response = data.draw(st.from_type(load_response_schema(api_key, api_version)))
    correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1))
    header_version = response_header_version(api_key, api_version)
    encoded = encode_response(header_version, correlation_id, response)
    assert encoded == response_frame(response, correlation_id)


def test_encode_response_size_prefix_and_header() -> None:
    response = MetadataResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        brokers=(),
        cluster_id=None,
        controller_id=-1,
        topics=(),
    )
    encoded = encode_response(0, 99, response)
    assert struct.unpack_from(">ii", encoded) == (len(encoded) - 4, 99)


def test_api_versions_fallback_is_a_v0_body_with_error_35(
    response_frame: Callable[[Any, int], bytes],
) -> None:
    supported = {
        ApiKey.PRODUCE: VersionRange(0, 7),
        ApiKey.API_VERSIONS: VersionRange(0, 3),
        ApiKey.METADATA: VersionRange(0, 4),
    }
    expected = ApiVersionsResponseV0(
        error_code=KioErrorCode.unsupported_version,
        api_keys=(
            ApiVersionV0(api_key=i16(0), min_version=i16(0), max_version=i16(7)),
            ApiVersionV0(api_key=i16(3), min_version=i16(0), max_version=i16(4)),
            ApiVersionV0(api_key=i16(18), min_version=i16(0), max_version=i16(3)),
        ),
    )
    assert encode_api_versions_fallback(12, supported) == response_frame(expected, 12)


def test_response_class() -> None:
    assert response_class(ApiKey.METADATA, 4) is MetadataResponse
    with pytest.raises(UnsupportedVersionError):
        response_class(ApiKey.METADATA, 14)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_decode_through_the_v3_schema(version: int) -> None:
    # v0-v2 body: acks, timeout, topic_data (v3 adds a transactional_id in front).
    body = bytes.fromhex("ffff 00001388 00000001 0001 74 00000001 00000002 00000003 616263")
    frame = struct.pack(">hhih", ApiKey.PRODUCE, version, 6, 2) + b"id" + body
    request = decode_request(frame)
    assert (request.api_version, request.correlation_id) == (version, 6)
    assert request.body.acks == -1
    assert request.body.transactional_id is None
    [topic] = request.body.topic_data
    [partition] = topic.partition_data
    assert (topic.name, partition.index, bytes(partition.records)) == ("t", 2, b"abc")
    with pytest.raises(RequestDecodeError, match="bytes after the request body"):
        decode_request(frame + b"\x00")
    with pytest.raises(RequestDecodeError):
        decode_request(frame[:-1])


@pytest.mark.parametrize("version", [12, 13])
def test_librdkafkas_all_topics_metadata_request_decodes_despite_its_trailing_bytes(
    version: int,
) -> None:
    # As librdkafka 2.16 sends it: a compact null topic array in a 4-byte placeholder.
    frame = bytes.fromhex(f"0003{version:04x}00000003000772646b61666b610000000000010000")
    request = decode_request(frame)
    assert request.body.topics is None
    # Older, non-flexible versions stay strict.
    v4 = bytes.fromhex("0003000400000003000772646b61666b61ffffffff01" + "000000")
    with pytest.raises(RequestDecodeError, match="3 bytes after the request body"):
        decode_request(v4)
