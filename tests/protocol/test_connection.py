"""ServerConnection: events from bytes, responses in request order, acks=0, fallbacks, errors."""

from __future__ import annotations

import datetime
import io
import struct
from collections.abc import Callable
from typing import Any

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.fetch.v11.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.heartbeat.v1.request import HeartbeatRequest
from kio.schema.heartbeat.v1.response import HeartbeatResponse
from kio.schema.metadata.v4.request import MetadataRequest
from kio.schema.metadata.v4.response import MetadataResponse
from kio.schema.produce.v7.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import Records, i16, i32, i32Timedelta

from odradek.errors import (
    ConnectionStateError,
    FrameTooLargeError,
    InvalidFrameError,
    RequestDecodeError,
    UnsupportedVersionError,
)
from odradek.protocol.api_keys import IMPLEMENTED_VERSIONS, ApiKey, VersionRange
from odradek.protocol.connection import RequestReceived, RequestRejected, ServerConnection
from odradek.protocol.fetch_response import (
    FetchableTopicResponse,
    FetchPartitionData,
    RecordsSlot,
    encode_fetch_response,
)
from odradek.protocol.produce_response import (
    PartitionProduceResponse,
    TopicProduceResponse,
    encode_produce_response,
)

FrameBuilder = Callable[..., bytes]
ZERO = i32Timedelta.parse(datetime.timedelta(0))


def sized(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def metadata(request_frame: FrameBuilder, correlation_id: int) -> bytes:
    return sized(request_frame(MetadataRequest(topics=None), correlation_id))


def heartbeat(request_frame: FrameBuilder, correlation_id: int) -> bytes:
    body = HeartbeatRequest(group_id="g", generation_id=i32(1), member_id="m")
    return sized(request_frame(body, correlation_id))


def produce(request_frame: FrameBuilder, correlation_id: int, acks: int) -> bytes:
    body = ProduceRequest(
        transactional_id=None,
        acks=i16(acks),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=1)),
        topic_data=(
            TopicProduceData(
                name="t",
                partition_data=(PartitionProduceData(index=i32(0), records=Records(b"r")),),
            ),
        ),
    )
    return sized(request_frame(body, correlation_id))


def metadata_response() -> MetadataResponse:
    return MetadataResponse(
        throttle_time=ZERO,
        brokers=(),
        cluster_id=None,
        controller_id=i32(-1),
        topics=(),
    )


def heartbeat_response() -> HeartbeatResponse:
    return HeartbeatResponse(throttle_time=ZERO, error_code=KioErrorCode.none)


def correlation_ids(parts: list[Any]) -> list[int]:
    """Correlation ids of the whole frames in ``parts`` (bytes only)."""
    data = b"".join(part for part in parts if isinstance(part, bytes))
    ids = []
    offset = 0
    while offset < len(data):
        size, correlation_id = struct.unpack_from(">ii", data, offset)
        ids.append(correlation_id)
        offset += 4 + size
    return ids


def by_id(events: list[Any]) -> dict[int, RequestReceived]:
    """The ``RequestReceived`` events by correlation id (ids unique in the stream)."""
    return {e.request.correlation_id: e for e in events if isinstance(e, RequestReceived)}


def received(events: list[Any]) -> list[int]:
    assert all(isinstance(event, RequestReceived) for event in events), events
    return [event.request.correlation_id for event in events]


def test_a_request_becomes_an_event(request_frame: FrameBuilder) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    frame = metadata(request_frame, 7)
    (event,) = conn.receive_data(frame)
    assert isinstance(event, RequestReceived)
    assert event.expects_response
    assert event.header.api_key == ApiKey.METADATA
    assert event.frame_size == len(frame) - 4
    assert isinstance(event.request.body, MetadataRequest)
    assert conn.in_flight == 1


def test_kio_responses_are_encoded_with_the_right_header(request_frame: FrameBuilder) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    (event,) = conn.receive_data(metadata(request_frame, 7))
    assert isinstance(event, RequestReceived)
    (out,) = conn.send_response(event, metadata_response())
    assert isinstance(out, bytes)
    assert struct.unpack_from(">ii", out) == (len(out) - 4, 7)
    assert conn.in_flight == 0


def test_pipelined_responses_leave_in_request_order(request_frame: FrameBuilder) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    stream = metadata(request_frame, 1) + heartbeat(request_frame, 2) + metadata(request_frame, 3)
    events = conn.receive_data(stream)
    assert received(events) == [1, 2, 3]
    first, second, third = events
    assert conn.send_response(third, metadata_response()) == []  # waits for 1 and 2
    assert conn.send_response(second, heartbeat_response()) == []  # waits for 1
    out = conn.send_response(first, metadata_response())
    assert len(out) == 1  # coalesced into one write
    assert correlation_ids(out) == [1, 2, 3]
    assert conn.in_flight == 0
    assert conn.data_to_send() == []


def test_acks_zero_produce_gets_no_response_and_blocks_nothing(
    request_frame: FrameBuilder,
) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    stream = (
        metadata(request_frame, 1) + produce(request_frame, 2, acks=0) + metadata(request_frame, 3)
    )
    events = conn.receive_data(stream)
    assert received(events) == [1, 2, 3]
    assert [event.expects_response for event in events] == [True, False, True]
    assert conn.in_flight == 2
    first, quiet, third = events
    assert correlation_ids(conn.send_response(first, metadata_response())) == [1]
    assert correlation_ids(conn.send_response(third, metadata_response())) == [3]
    with pytest.raises(ConnectionStateError):
        conn.send_response(quiet, encode_produce_response(7, 2, []))
    assert conn.statistics().requests_without_response == 1


def test_acks_one_produce_is_answered_with_hot_encoded_bytes(request_frame: FrameBuilder) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    (event,) = conn.receive_data(produce(request_frame, 4, acks=1))
    assert event.expects_response
    frame = encode_produce_response(
        7, 4, [TopicProduceResponse("t", [PartitionProduceResponse(0, 0, 10)])]
    )
    assert isinstance(event, RequestReceived)
    assert conn.send_response(event, frame) == [frame]


def test_fetch_frames_keep_their_slots_between_coalesced_bytes(
    request_frame: FrameBuilder,
) -> None:
    fetch_body = fetch_request_v11()
    conn: ServerConnection[str] = ServerConnection()
    stream = (
        metadata(request_frame, 1)
        + sized(request_frame(fetch_body, 2))
        + metadata(request_frame, 3)
    )
    events = conn.receive_data(stream)
    assert received(events) == [1, 2, 3]
    first, second, third = events
    fetch = encode_fetch_response(
        11,
        2,
        [FetchableTopicResponse("t", [FetchPartitionData(0, records="segment", records_size=5)])],
    )
    assert conn.send_response(second, fetch) == []
    assert conn.send_response(third, metadata_response()) == []
    out = conn.send_response(first, metadata_response())
    assert [type(part) for part in out] == [bytes, RecordsSlot, bytes]
    slot = out[1]
    assert isinstance(slot, RecordsSlot)
    assert slot.records == "segment"
    # metadata 1 and the Fetch framing share the first write; the Fetch's tail and metadata
    # 3 share the last.
    first, last = out[0], out[2]
    assert isinstance(first, bytes)
    assert isinstance(last, bytes)
    assert first.startswith(encode_metadata_frame(1))
    assert last.endswith(encode_metadata_frame(3))


def fetch_request_v11() -> FetchRequest:
    return FetchRequest(
        replica_id=i32(-1),
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=500)),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        isolation_level=i16(0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            FetchTopic(
                topic="t",
                partitions=(
                    FetchPartition(
                        partition=i32(0),
                        current_leader_epoch=i32(-1),
                        fetch_offset=0,
                        log_start_offset=-1,
                        partition_max_bytes=i32(1 << 20),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def encode_metadata_frame(correlation_id: int) -> bytes:
    buffer = io.BytesIO()
    entity_writer(MetadataResponse)(buffer, metadata_response())
    payload = struct.pack(">i", correlation_id) + buffer.getvalue()
    return sized(payload)


def test_api_versions_newer_than_supported_gets_the_v0_fallback(
    request_frame: FrameBuilder,
) -> None:
    supported = {
        ApiKey.API_VERSIONS: VersionRange(0, 2),
        ApiKey.METADATA: VersionRange(0, 4),
    }
    conn: ServerConnection[bytes] = ServerConnection(supported=supported)
    body = ApiVersionsRequest(client_software_name="librdkafka", client_software_version="2.16")
    (event,) = conn.receive_data(sized(request_frame(body, 9)))
    assert isinstance(event, RequestRejected)
    assert not event.close_connection
    assert isinstance(event.error, UnsupportedVersionError)
    (out,) = conn.data_to_send()
    assert isinstance(out, bytes)
    size, correlation_id = struct.unpack_from(">ii", out)  # response header v0
    assert (size, correlation_id) == (len(out) - 4, 9)
    response, _ = entity_reader(ApiVersionsResponseV0)(out, 8)
    assert response.error_code == KioErrorCode.unsupported_version
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
        (3, 0, 4),
        (18, 0, 2),
    ]
    assert not conn.closed


def test_api_versions_fallback_waits_for_earlier_responses(request_frame: FrameBuilder) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    future = struct.pack(">hhih", ApiKey.API_VERSIONS, 99, 2, -1)
    events = conn.receive_data(
        metadata(request_frame, 1) + sized(future) + metadata(request_frame, 3)
    )
    assert [type(event) for event in events] == [RequestReceived, RequestRejected, RequestReceived]
    assert conn.data_to_send() == []
    answers = by_id(events)
    assert correlation_ids(conn.send_response(answers[1], metadata_response())) == [1, 2]
    assert correlation_ids(conn.send_response(answers[3], metadata_response())) == [3]


def test_api_versions_is_not_required_first(request_frame: FrameBuilder) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    assert received(conn.receive_data(heartbeat(request_frame, 1))) == [1]


@pytest.mark.parametrize(
    ("payload", "error_type"),
    [
        (struct.pack(">hhi", 9999, 0, 5), UnsupportedVersionError),  # unknown api key
        (struct.pack(">hhih", ApiKey.PRODUCE, 14, 5, -1), UnsupportedVersionError),
        (struct.pack(">hhih", ApiKey.FETCH, 19, 5, -1), UnsupportedVersionError),
        (struct.pack(">hhih", ApiKey.METADATA, 4, 5, -1) + b"\x00", RequestDecodeError),
        (b"\x00\x03", RequestDecodeError),  # shorter than a header
    ],
)
def test_bad_requests_close_the_connection(payload: bytes, error_type: type) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    (event,) = conn.receive_data(sized(payload))
    assert isinstance(event, RequestRejected)
    assert event.close_connection
    assert isinstance(event.error, error_type)
    assert conn.closed


def test_requests_outside_the_advertised_ranges_close_the_connection(
    request_frame: FrameBuilder,
) -> None:
    conn: ServerConnection[bytes] = ServerConnection(
        supported={ApiKey.API_VERSIONS: VersionRange(0, 3)}
    )
    (event,) = conn.receive_data(metadata(request_frame, 1))
    assert isinstance(event, RequestRejected)
    assert event.close_connection


def test_oversized_frame_closes_before_its_body_arrives() -> None:
    conn: ServerConnection[bytes] = ServerConnection(max_frame_bytes=1000)
    (event,) = conn.receive_data(struct.pack(">i", 1001))
    assert isinstance(event, RequestRejected)
    assert isinstance(event.error, FrameTooLargeError)
    assert event.close_connection


def test_negative_frame_size_closes() -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    (event,) = conn.receive_data(b"\x80\x00\x00\x00")
    assert isinstance(event, RequestRejected)
    assert isinstance(event.error, InvalidFrameError)


def test_events_stop_at_the_first_bad_request(request_frame: FrameBuilder) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    stream = metadata(request_frame, 1) + sized(b"garbage!!") + metadata(request_frame, 3)
    events = conn.receive_data(stream)
    assert [type(event) for event in events] == [RequestReceived, RequestRejected]
    assert conn.closed


def test_a_closed_connection_ignores_everything(request_frame: FrameBuilder) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    (event,) = conn.receive_data(metadata(request_frame, 1))
    assert isinstance(event, RequestReceived)
    conn.receive_data(sized(b"xx"))
    assert conn.closed
    assert conn.receive_data(metadata(request_frame, 2)) == []
    assert conn.send_response(event, metadata_response()) == []  # the handler finished too late
    assert conn.data_to_send() == []
    assert conn.in_flight == 0


def test_stream_split_at_every_byte_gives_the_same_events(request_frame: FrameBuilder) -> None:
    stream = (
        metadata(request_frame, 1) + produce(request_frame, 2, acks=0) + heartbeat(request_frame, 3)
    )
    for split in range(len(stream) + 1):
        conn: ServerConnection[bytes] = ServerConnection()
        events = conn.receive_data(stream[:split]) + conn.receive_data(stream[split:])
        assert received(events) == [1, 2, 3], split


def test_a_response_for_a_request_that_awaits_none_is_refused(
    request_frame: FrameBuilder,
) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    (event,) = conn.receive_data(metadata(request_frame, 1))
    assert isinstance(event, RequestReceived)
    other: ServerConnection[bytes] = ServerConnection()
    (foreign,) = other.receive_data(metadata(request_frame, 5))
    assert isinstance(foreign, RequestReceived)
    with pytest.raises(ConnectionStateError, match="correlation id 5"):
        conn.send_response(foreign, metadata_response())  # another connection's request
    conn.send_response(event, metadata_response())
    with pytest.raises(ConnectionStateError):
        conn.send_response(event, metadata_response())  # answered already


def test_mismatched_responses_are_refused_and_change_nothing(request_frame: FrameBuilder) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    (event,) = conn.receive_data(metadata(request_frame, 1))
    assert isinstance(event, RequestReceived)
    with pytest.raises(ConnectionStateError, match="does not answer"):
        conn.send_response(event, heartbeat_response())
    with pytest.raises(ConnectionStateError, match="does not fit"):
        conn.send_response(event, encode_produce_response(7, 2, []))  # another correlation id
    with pytest.raises(ConnectionStateError):
        conn.send_response(event, b"\x00\x00")
    with pytest.raises(ConnectionStateError, match="Fetch frame"):
        conn.send_response(event, encode_fetch_response(11, 1, []))
    assert correlation_ids(conn.send_response(event, metadata_response())) == [1]


def test_duplicate_correlation_ids_are_answered_in_order(request_frame: FrameBuilder) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    metadata_event, heartbeat_event = conn.receive_data(
        metadata(request_frame, 1) + heartbeat(request_frame, 1)
    )
    assert isinstance(metadata_event, RequestReceived)
    assert isinstance(heartbeat_event, RequestReceived)
    assert correlation_ids(conn.send_response(metadata_event, metadata_response())) == [1]
    assert correlation_ids(conn.send_response(heartbeat_event, heartbeat_response())) == [1]
    assert conn.in_flight == 0


def test_duplicate_correlation_ids_answered_out_of_order_keep_request_order(
    request_frame: FrameBuilder,
) -> None:
    # A slow request (a long-polling Fetch) and a fast one under the same correlation id: the
    # fast one's handler finishes first. Matching by correlation id alone gave the Metadata
    # response to the Fetch (ConnectionStateError, "Fatal error on transport" in the server).
    conn: ServerConnection[str] = ServerConnection()
    fetch_event, metadata_event = conn.receive_data(
        sized(request_frame(fetch_request_v11(), 9)) + metadata(request_frame, 9)
    )
    assert isinstance(fetch_event, RequestReceived)
    assert isinstance(metadata_event, RequestReceived)
    assert conn.send_response(metadata_event, metadata_response()) == []  # waits for the Fetch
    out = conn.send_response(fetch_event, encode_fetch_response(11, 9, []))
    assert correlation_ids(out) == [9, 9]
    assert isinstance(out[0], bytes)
    assert out[0].endswith(encode_metadata_frame(9))
    assert conn.in_flight == 0


def test_statistics(request_frame: FrameBuilder) -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    (event,) = conn.receive_data(metadata(request_frame, 1) + metadata(request_frame, 2)[:5])
    assert isinstance(event, RequestReceived)
    stats = conn.statistics()
    assert (stats.requests_received, stats.in_flight, stats.buffered_bytes) == (1, 1, 5)
    conn.send_response(event, metadata_response())
    stats = conn.statistics()
    assert (stats.responses_sent, stats.in_flight, stats.closed) == (1, 0, False)


def test_default_supported_versions_are_the_implemented_table() -> None:
    conn: ServerConnection[bytes] = ServerConnection()
    future = struct.pack(">hhih", ApiKey.API_VERSIONS, 5, 1, -1)
    conn.receive_data(sized(future))
    (out,) = conn.data_to_send()
    assert isinstance(out, bytes)
    response, _ = entity_reader(ApiVersionsResponseV0)(out, 8)
    assert len(response.api_keys) == len(IMPLEMENTED_VERSIONS)
