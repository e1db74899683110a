"""Request and response headers: versions per API, golden bytes, and kio as the reference."""

from __future__ import annotations

import io
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.request_header.v1.header import RequestHeader as KioRequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as KioRequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as KioResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as KioResponseHeaderV1
from kio.serial import entity_writer
from kio.static.primitive import i16, i32

from odradek.errors import RequestDecodeError
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.header import (
    RequestHeader,
    encode_response_header,
    parse_request_header,
    peek_request_header,
    request_header_version,
    response_header_version,
)


@pytest.mark.parametrize(
    ("api_key", "api_version", "expected"),
    [
        (ApiKey.PRODUCE, 7, 1),
        (ApiKey.PRODUCE, 8, 1),
        (ApiKey.PRODUCE, 9, 2),
        (ApiKey.FETCH, 11, 1),
        (ApiKey.FETCH, 12, 2),
        (ApiKey.METADATA, 4, 1),
        (ApiKey.API_VERSIONS, 2, 1),
        (ApiKey.API_VERSIONS, 3, 2),
        (ApiKey.DESCRIBE_CLUSTER, 0, 2),
        (ApiKey.CONTROLLED_SHUTDOWN, 0, 0),
    ],
)
def test_request_header_version(api_key: ApiKey, api_version: int, expected: int) -> None:
    assert request_header_version(api_key, api_version) == expected


@pytest.mark.parametrize(
    ("api_key", "api_version", "expected"),
    [
        (ApiKey.PRODUCE, 8, 0),
        (ApiKey.PRODUCE, 9, 1),
        (ApiKey.METADATA, 9, 1),
        (ApiKey.API_VERSIONS, 0, 0),
        (ApiKey.API_VERSIONS, 3, 0),  # always v0, even when the request was flexible
        (ApiKey.DESCRIBE_CLUSTER, 0, 1),
    ],
)
def test_response_header_version(api_key: ApiKey, api_version: int, expected: int) -> None:
    assert response_header_version(api_key, api_version) == expected


def test_header_version_of_an_unknown_version_is_a_lookup_error() -> None:
    with pytest.raises(LookupError):
        request_header_version(ApiKey.PRODUCE, 99)


def test_golden_header_v1() -> None:
    # Metadata v1, correlation id 7, client_id "kafka-python".
    frame = bytes.fromhex("0003 0001 00000007 000c") + b"kafka-python" + b"body"
    header, offset = parse_request_header(frame, 1)
    assert header == RequestHeader(ApiKey.METADATA, 1, 7, "kafka-python", 1)
    assert frame[offset:] == b"body"


def test_golden_header_v2_client_id_is_a_non_compact_string() -> None:
    # ApiVersions v3 from librdkafka: client_id "rdkafka" has an int16 length (0x0007), not a
    # compact one, and the header ends with an empty tagged-field section.
    frame = bytes.fromhex("0012 0003 00000001 0007") + b"rdkafka" + b"\x00" + b"body"
    header, offset = parse_request_header(frame, 2)
    assert header == RequestHeader(ApiKey.API_VERSIONS, 3, 1, "rdkafka", 2)
    assert frame[offset:] == b"body"


def test_golden_header_v0_has_no_client_id() -> None:
    frame = bytes.fromhex("0007 0000 0000002a") + b"body"
    header, offset = parse_request_header(frame, 0)
    assert header == RequestHeader(ApiKey.CONTROLLED_SHUTDOWN, 0, 42, None, 0)
    assert offset == 8


def test_null_client_id() -> None:
    frame = bytes.fromhex("0003 0004 00000001 ffff")
    header, offset = parse_request_header(frame, 1)
    assert header.client_id is None
    assert offset == len(frame)


def test_unknown_tagged_fields_in_header_v2_are_skipped() -> None:
    tags = bytes.fromhex("02" + "00 03 616263" + "05 01 ff")
    frame = bytes.fromhex("0012 0003 00000009 0001") + b"c" + tags + b"body"
    header, offset = parse_request_header(frame, 2)
    assert header.client_id == "c"
    assert frame[offset:] == b"body"


@pytest.mark.parametrize(
    "frame",
    [
        bytes.fromhex("0003 0001 00000007 0005") + b"abc",  # client_id past the end
        bytes.fromhex("0003 0001 00000007 fffe"),  # length -2
        bytes.fromhex("0003 0001 00000007 00"),  # truncated length
        bytes.fromhex("0003 0001 00000007 0002 c328"),  # invalid UTF-8
    ],
)
def test_malformed_header_v1_carries_what_was_read(frame: bytes) -> None:
    with pytest.raises(RequestDecodeError) as info:
        parse_request_header(frame, 1)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (3, 1, 7)


@pytest.mark.parametrize(
    "tags",
    [
        "",  # no tagged-field count at all
        "01 00 05 6162",  # value shorter than its size
        "01 00",  # size missing
        "ffffffffff",  # varint too long
    ],
)
def test_malformed_tagged_fields(tags: str) -> None:
    frame = bytes.fromhex("0012 0003 00000009 ffff" + tags)
    with pytest.raises(RequestDecodeError):
        parse_request_header(frame, 2)


def test_truncated_at_every_byte_is_a_decode_error() -> None:
    frame = bytes.fromhex("0012 0003 00000001 0007") + b"rdkafka" + b"\x00"
    for end in range(len(frame)):
        with pytest.raises(RequestDecodeError):
            parse_request_header(frame[:end], 2)


def test_frame_without_room_for_the_fixed_fields() -> None:
    with pytest.raises(RequestDecodeError) as info:
        peek_request_header(b"\x00\x12\x00")
    assert info.value.correlation_id is None


def test_unknown_header_version_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="header version"):
        parse_request_header(bytes(16), 3)


client_ids = st.none() | st.text(max_size=40)


@given(st.integers(-(2**15), 2**15 - 1), st.integers(0, 2**15 - 1), st.integers(), client_ids)
def test_v1_matches_kio(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None
) -> None:
    correlation_id = correlation_id % 2**32 - 2**31
    buffer = io.BytesIO()
    entity_writer(KioRequestHeaderV1)(
        buffer,
        KioRequestHeaderV1(
            request_api_key=i16(api_key),
            request_api_version=i16(api_version),
            correlation_id=i32(correlation_id),
            client_id=client_id,
        ),
    )
    header, offset = parse_request_header(buffer.getvalue(), 1)
    assert header == RequestHeader(api_key, api_version, correlation_id, client_id, 1)
    assert offset == len(buffer.getvalue())


@given(st.integers(0, 100), st.integers(0, 20), st.integers(-(2**31), 2**31 - 1), client_ids)
def test_v2_matches_kio(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None
) -> None:
    buffer = io.BytesIO()
    entity_writer(KioRequestHeaderV2)(
        buffer,
        KioRequestHeaderV2(
            request_api_key=i16(api_key),
            request_api_version=i16(api_version),
            correlation_id=i32(correlation_id),
            client_id=client_id,
        ),
    )
    header, offset = parse_request_header(buffer.getvalue(), 2)
    assert header == RequestHeader(api_key, api_version, correlation_id, client_id, 2)
    assert offset == len(buffer.getvalue())


@given(st.integers(-(2**31), 2**31 - 1))
def test_response_headers_match_kio(correlation_id: int) -> None:
    for version, kio_type in ((0, KioResponseHeaderV0), (1, KioResponseHeaderV1)):
        buffer = io.BytesIO()
        entity_writer(kio_type)(buffer, kio_type(correlation_id=i32(correlation_id)))
        assert encode_response_header(version, correlation_id) == buffer.getvalue()


def test_golden_response_headers() -> None:
    assert encode_response_header(0, 5) == struct.pack(">i", 5)
    assert encode_response_header(1, 5) == struct.pack(">i", 5) + b"\x00"
    with pytest.raises(ValueError, match="response header version"):
        encode_response_header(2, 5)
