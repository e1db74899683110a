"""The hand-written Metadata and ListOffsets response encoders equal kio's encoding, byte for
byte, at every version they write; versions outside their ranges are refused."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.index import load_response_schema

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.builder import build_entity
from odradek.protocol.codec import encode_response
from odradek.protocol.header import response_header_version
from odradek.protocol.metadata_response import (
    LIST_OFFSETS_RESPONSE_VERSIONS,
    METADATA_RESPONSE_VERSIONS,
    ListOffsetsPartition,
    ListOffsetsTopic,
    MetadataBroker,
    MetadataPartition,
    MetadataTopic,
    encode_list_offsets_response,
    encode_metadata_response,
)

int16s = st.integers(-(2**15), 2**15 - 1)
int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
names = st.text(max_size=20)
error_codes = st.sampled_from([0, 3, 5, 6, 9, 17, 29, 37, 87])
node_lists = st.lists(int32s, max_size=5)

brokers = st.builds(MetadataBroker, int32s, names, int32s, st.one_of(st.none(), names))
partitions = st.builds(
    MetadataPartition,
    error_codes,
    int32s,
    int32s,
    int32s,
    node_lists,
    node_lists,
    node_lists,
)
topic_ids = st.one_of(st.none(), st.uuids())
topics = st.builds(
    MetadataTopic,
    error_codes,
    names,
    st.booleans(),
    st.lists(partitions, max_size=4),
    int32s,
    topic_ids,
)
#: v12+: a topic asked by an unknown id has no name.
nameless_topics = st.builds(
    MetadataTopic, error_codes, st.none(), st.booleans(), st.just(()), int32s, st.uuids()
)
offsets_topics = st.builds(
    ListOffsetsTopic,
    names,
    st.lists(
        st.builds(ListOffsetsPartition, int32s, error_codes, int64s, int64s, int32s), max_size=4
    ),
)


def kio_metadata(
    version: int,
    correlation_id: int,
    brokers: list[MetadataBroker],
    cluster_id: str | None,
    controller_id: int,
    topics: list[MetadataTopic],
    throttle_time_ms: int,
    error_code: int = 0,
) -> bytes:
    fields: dict[str, Any] = {
        "error_code": error_code,
        "throttle_time": throttle_time_ms,
        "brokers": [b._asdict() for b in brokers],
        "cluster_id": cluster_id,
        "controller_id": controller_id,
        "topics": [
            {**t._asdict(), "partitions": [p._asdict() for p in t.partitions]} for t in topics
        ],
    }
    response = build_entity(load_response_schema(ApiKey.METADATA, version), fields)
    return encode_response(
        response_header_version(ApiKey.METADATA, version), correlation_id, response
    )


@settings(max_examples=60, deadline=None)
@given(
    version=st.integers(
        METADATA_RESPONSE_VERSIONS.min_version, METADATA_RESPONSE_VERSIONS.max_version
    ),
    correlation_id=int32s,
    brokers=st.lists(brokers, max_size=3),
    cluster_id=st.one_of(st.none(), names),
    controller_id=int32s,
    topics=st.lists(topics, max_size=4),
    nameless=st.lists(nameless_topics, max_size=2),
    throttle_time_ms=st.integers(0, 2**31 - 1),
    error_code=error_codes,
)
def test_metadata_matches_kio(
    version: int,
    correlation_id: int,
    brokers: list[MetadataBroker],
    cluster_id: str | None,
    controller_id: int,
    topics: list[MetadataTopic],
    nameless: list[MetadataTopic],
    throttle_time_ms: int,
    error_code: int,
) -> None:
    if version >= 12:
        topics = [*topics, *nameless]
    ours = encode_metadata_response(
        version,
        correlation_id,
        brokers,
        cluster_id,
        controller_id,
        topics,
        throttle_time_ms,
        error_code,
    )
    theirs = kio_metadata(
        version,
        correlation_id,
        brokers,
        cluster_id,
        controller_id,
        topics,
        throttle_time_ms,
        error_code if version >= 13 else 0,
    )
    assert ours == theirs


@pytest.mark.parametrize("version", range(METADATA_RESPONSE_VERSIONS.min_version, 12))
def test_a_topic_without_a_name_is_refused_below_v12(version: int) -> None:
    with pytest.raises(ValueError, match="without a name"):
        encode_metadata_response(version, 1, [], None, 0, [MetadataTopic(0, None)])


@pytest.mark.parametrize("version", list(METADATA_RESPONSE_VERSIONS))
def test_every_version_matches_kio_on_a_cluster_shaped_answer(version: int) -> None:
    """One deterministic case per version (hypothesis may skip some): two brokers, a
    topic with an id and partitions with offline replicas."""
    brokers = [MetadataBroker(1, "127.0.0.1", 9092, "r1"), MetadataBroker(2, "h", 9093)]
    topic = MetadataTopic(
        0,
        "t",
        False,
        [
            MetadataPartition(0, 0, 1, 4, [1, 2, 3], [1, 2], [3]),
            MetadataPartition(5, 1, -1, 7, [3], [3], [3]),
        ],
        topic_id=uuid.UUID("12345678-1234-5678-1234-567812345678"),
    )
    ours = encode_metadata_response(version, 77, brokers, "cid", 2, [topic])
    assert ours == kio_metadata(version, 77, brokers, "cid", 2, [topic], 0)


@settings(max_examples=60, deadline=None)
@given(
    version=st.integers(
        LIST_OFFSETS_RESPONSE_VERSIONS.min_version, LIST_OFFSETS_RESPONSE_VERSIONS.max_version
    ),
    correlation_id=int32s,
    topics=st.lists(offsets_topics, max_size=4),
    throttle_time_ms=st.integers(0, 2**31 - 1),
)
def test_list_offsets_matches_kio(
    version: int, correlation_id: int, topics: list[ListOffsetsTopic], throttle_time_ms: int
) -> None:
    fields = {
        "throttle_time": throttle_time_ms,
        "topics": [
            {"name": t.name, "partitions": [p._asdict() for p in t.partitions]} for t in topics
        ],
    }
    theirs = encode_response(
        0, correlation_id, build_entity(load_response_schema(ApiKey.LIST_OFFSETS, version), fields)
    )
    assert encode_list_offsets_response(version, correlation_id, topics, throttle_time_ms) == theirs


@pytest.mark.parametrize("version", [-1, METADATA_RESPONSE_VERSIONS.max_version + 1])
def test_metadata_versions_outside_the_range_are_refused(version: int) -> None:
    with pytest.raises(ValueError, match="not encoded here"):
        encode_metadata_response(version, 1, [], None, 0, [])


@pytest.mark.parametrize("version", [0, LIST_OFFSETS_RESPONSE_VERSIONS.max_version + 1])
def test_list_offsets_versions_outside_the_range_are_refused(version: int) -> None:
    with pytest.raises(ValueError, match="not encoded here"):
        encode_list_offsets_response(version, 1, [])
