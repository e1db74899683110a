"""``producer.produce_codec``: byte for byte the frames kio writes, and the mappings kio reads,
for Produce v3–v8 (hypothesis), plus malformed responses."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.client import codecs
from odradek.client.producer.produce_codec import (
    decode_produce_response,
    encode_produce_request,
    register,
)
from odradek.errors import ProtocolError
from odradek.protocol import client_codec
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.produce_response import (
    BatchIndexAndErrorMessage,
    PartitionProduceResponse,
    TopicProduceResponse,
    encode_produce_response,
)

VERSIONS = st.integers(3, 8)
NAMES = st.text(min_size=1, max_size=12)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)

partition_data = st.fixed_dictionaries(
    {"index": INT32, "records": st.one_of(st.none(), st.binary(max_size=64))}
)
request_fields = st.fixed_dictionaries(
    {
        "transactional_id": st.one_of(st.none(), NAMES),
        "acks": st.sampled_from([-1, 0, 1]),
        "timeout": st.integers(0, 2**31 - 1),
        "topic_data": st.lists(
            st.fixed_dictionaries(
                {"name": NAMES, "partition_data": st.lists(partition_data, max_size=3)}
            ),
            max_size=3,
        ),
    }
)


@settings(max_examples=300)
@given(
    version=VERSIONS,
    correlation_id=INT32,
    client_id=st.one_of(st.none(), st.text(max_size=10)),
    fields=request_fields,
)
def test_request_bytes_equal_kio(
    version: int, correlation_id: int, client_id: str | None, fields: dict[str, Any]
) -> None:
    expected = client_codec.encode_request(
        ApiKey.PRODUCE, version, correlation_id, client_id, fields
    )
    assert encode_produce_request(version, correlation_id, client_id, fields) == expected


record_errors = st.lists(
    st.builds(BatchIndexAndErrorMessage, INT32, st.one_of(st.none(), st.text(max_size=8))),
    max_size=2,
)
partition_responses = st.builds(
    PartitionProduceResponse,
    INT32,
    st.integers(-1, 120),
    INT64,
    # kio reads a datetime (or -1), exact through year 2100.
    st.one_of(st.just(-1), st.integers(0, 4_102_444_800_000)),
    INT64,
    record_errors.map(tuple),
    st.one_of(st.none(), st.text(max_size=8)),
)
responses = st.lists(
    st.builds(TopicProduceResponse, NAMES, st.lists(partition_responses, max_size=3)),
    max_size=3,
)


@settings(max_examples=300)
@given(
    version=VERSIONS,
    correlation_id=INT32,
    body=responses,
    throttle=st.integers(0, 2**31 - 1),
)
def test_response_mapping_equals_kio(
    version: int, correlation_id: int, body: list[TopicProduceResponse], throttle: int
) -> None:
    frame = encode_produce_response(version, correlation_id, body, throttle)[4:]
    expected = client_codec.decode_response(ApiKey.PRODUCE, version, frame)
    assert decode_produce_response(version, frame) == expected


@pytest.mark.parametrize("cut", [1, 5, 12, 20])
def test_truncated_response(cut: int) -> None:
    body = [TopicProduceResponse("t", [PartitionProduceResponse(0, 0, 5, -1, 0)])]
    frame = encode_produce_response(7, 1, body)[4:]
    with pytest.raises(ProtocolError, match="Produce v7"):
        decode_produce_response(7, frame[:-cut])
    with pytest.raises(ProtocolError, match="after the body"):
        decode_produce_response(7, frame + b"\x00")


def test_register_plugs_into_codecs() -> None:
    register()
    fields = {
        "transactional_id": None,
        "acks": 1,
        "timeout": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"x"}]}],
    }
    assert codecs.encode_request(ApiKey.PRODUCE, 7, 9, "c", fields) == encode_produce_request(
        7, 9, "c", fields
    )
