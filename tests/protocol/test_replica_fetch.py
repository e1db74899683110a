"""The follower's hand-written Fetch v11 codec against the generic one (kio underneath): the
same request bytes, the same response fields, and ProtocolError — never another exception —
for any truncated or padded response."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.errors import ProtocolError
from odradek.protocol import ApiKey
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.protocol.fetch_response import (
    AbortedTransaction,
    FetchableTopicResponse,
    FetchPartitionData,
    RecordsSlot,
    encode_fetch_response,
)
from odradek.protocol.replica_fetch import (
    REPLICA_FETCH_VERSION,
    FetchedPartition,
    ReplicaFetchPartition,
    decode_replica_fetch_response,
    encode_replica_fetch_request,
    response_session_id,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
TOPICS = st.sampled_from(["t", "orders", "__consumer_offsets", "é-topic"])

request_partitions = st.lists(
    st.builds(ReplicaFetchPartition, TOPICS, INT32, INT32, INT64, INT32), max_size=8
)


def generic_request(
    correlation_id: int,
    client_id: str,
    fixed: tuple[int, int, int, int],
    partitions: list[Any],
    session: tuple[int, int] = (0, -1),
    forgotten: tuple[tuple[str, tuple[int, ...]], ...] = (),
) -> bytes:
    """The same request through the generic client codec."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for p in partitions:
        topics.setdefault(p.topic, []).append(
            {
                "partition": p.partition,
                "current_leader_epoch": p.current_leader_epoch,
                "fetch_offset": p.fetch_offset,
                "log_start_offset": -1,
                "partition_max_bytes": p.partition_max_bytes,
            }
        )
    replica_id, max_wait, min_bytes, max_bytes = fixed
    fields = {
        "replica_id": replica_id,
        "max_wait": max_wait,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": session[0],
        "session_epoch": session[1],
        "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
        "forgotten_topics_data": [{"topic": t, "partitions": list(p)} for t, p in forgotten],
        "rack_id": "",
    }
    return encode_request(ApiKey.FETCH, REPLICA_FETCH_VERSION, correlation_id, client_id, fields)


@settings(max_examples=200, deadline=None)
@given(
    INT32,
    st.sampled_from(["replica-fetcher-1-2-0", "", "ü"]),
    st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1), INT32, INT32),
    request_partitions,
)
def test_the_request_equals_the_generic_encoding(
    correlation_id: int, client_id: str, fixed: tuple[int, int, int, int], partitions: list[Any]
) -> None:
    replica_id, max_wait, min_bytes, max_bytes = fixed
    ours = encode_replica_fetch_request(
        correlation_id,
        client_id,
        replica_id=replica_id,
        max_wait_ms=max_wait,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        partitions=partitions,
    )
    assert ours == generic_request(correlation_id, client_id, fixed, partitions)


@settings(max_examples=100, deadline=None)
@given(
    request_partitions,
    st.tuples(INT32, INT32),
    st.lists(st.tuples(TOPICS, st.lists(INT32, max_size=4).map(tuple)), max_size=3).map(tuple),
)
def test_a_session_request_equals_the_generic_encoding(
    partitions: list[Any],
    session: tuple[int, int],
    forgotten: tuple[tuple[str, tuple[int, ...]], ...],
) -> None:
    fixed = (1, 500, 1, 1 << 20)
    ours = encode_replica_fetch_request(
        7,
        "f",
        replica_id=1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=1 << 20,
        partitions=partitions,
        session_id=session[0],
        session_epoch=session[1],
        forgotten=forgotten,
    )
    assert ours == generic_request(7, "f", fixed, partitions, session, forgotten)


@given(INT32, INT32)
def test_the_response_session_id_is_read_back(correlation_id: int, session_id: int) -> None:
    frame = encode_fetch_response(REPLICA_FETCH_VERSION, correlation_id, [], session_id=session_id)
    data = b"".join(part for part in frame.parts if isinstance(part, bytes))[4:]
    assert response_session_id(data) == session_id
    with pytest.raises(ProtocolError):
        response_session_id(data[:12])


response_partitions = st.lists(
    st.builds(
        FetchPartitionData,
        partition_index=INT32,
        error_code=st.sampled_from([0, 1, 6, 74, 75]),
        high_watermark=INT64,
        last_stable_offset=INT64,
        log_start_offset=INT64,
        aborted_transactions=st.none()
        | st.lists(st.builds(AbortedTransaction, INT64, INT64), max_size=3).map(tuple),
        preferred_read_replica=INT32,
        records=st.binary(max_size=64),
    ).map(lambda p: p._replace(records_size=len(p.records or b""))),
    max_size=5,
)
responses = st.lists(st.builds(FetchableTopicResponse, TOPICS, response_partitions), max_size=4)


def wire(correlation_id: int, topics: list[FetchableTopicResponse[bytes]]) -> bytes:
    """A response frame, records spliced in, without the size prefix."""
    frame = encode_fetch_response(REPLICA_FETCH_VERSION, correlation_id, topics)
    data = b"".join(part.records if isinstance(part, RecordsSlot) else part for part in frame.parts)
    return data[4:]


@settings(max_examples=200, deadline=None)
@given(INT32, responses)
def test_the_response_reads_as_the_generic_decoding_does(
    correlation_id: int, topics: list[FetchableTopicResponse[bytes]]
) -> None:
    data = wire(correlation_id, topics)
    got_correlation, error_code, fetched = decode_replica_fetch_response(data)
    generic_correlation, body = decode_response(ApiKey.FETCH, REPLICA_FETCH_VERSION, data)
    assert (got_correlation, error_code) == (generic_correlation, body["error_code"])
    expected = [
        FetchedPartition(
            topic["topic"],
            p["partition_index"],
            p["error_code"],
            p["high_watermark"],
            p["log_start_offset"],
            p["records"] or b"",  # type: ignore[arg-type]
        )
        for topic in body["responses"]
        for p in topic["partitions"]
    ]
    assert [(*f[:5], bytes(f.records)) for f in fetched] == [(*e[:5], e[5]) for e in expected]


def sample() -> bytes:
    partition = FetchPartitionData(
        0, 0, 10, 10, 0, (AbortedTransaction(1, 2),), -1, b"batch-bytes", 11
    )
    return wire(
        7, [FetchableTopicResponse("t", [partition, partition._replace(partition_index=1)])]
    )


def test_records_are_views_into_the_frame_not_copies() -> None:
    data = bytearray(sample())
    _, _, fetched = decode_replica_fetch_response(data)
    assert bytes(fetched[0].records) == b"batch-bytes"
    data[data.index(b"batch-bytes")] = ord("B")
    assert bytes(fetched[0].records) == b"Batch-bytes"


def test_every_truncation_is_a_protocol_error() -> None:
    data = sample()
    for cut in range(len(data)):
        with pytest.raises(ProtocolError):
            decode_replica_fetch_response(data[:cut])


def test_trailing_bytes_are_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="after the response body"):
        decode_replica_fetch_response(sample() + b"\x00")


@pytest.mark.parametrize(
    ("find", "replace", "why"),
    [
        (b"\x00\x00\x00\x01\x00\x01t", b"\x7f\xff\xff\xff\x00\x01t", "runs past the frame"),
        (b"\x00\x00\x00\x0bbatch", b"\x7f\xff\xff\xffbatch", "records of"),
        (b"\x00\x00\x00\x0bbatch", b"\xff\xff\xff\xfebatch", "records of"),
    ],
)
def test_counts_and_sizes_past_the_end_are_refused_before_reading(
    find: bytes, replace: bytes, why: str
) -> None:
    data = sample()
    assert find in data
    with pytest.raises(ProtocolError, match=why):
        decode_replica_fetch_response(data.replace(find, replace, 1))
