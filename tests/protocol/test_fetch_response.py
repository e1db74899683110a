"""Fetch response framing: the frame with its records spliced in equals kio's encoding."""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_response_schema
from kio.static.primitive import Records

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.fetch_response import (
    FETCH_RESPONSE_VERSIONS,
    AbortedTransaction,
    FetchableTopicResponse,
    FetchPartitionData,
    FetchResponseFrame,
    RecordsSlot,
    encode_fetch_response,
)
from odradek.protocol.produce_response import NodeEndpoint


def never_null_records(response: Any) -> Any:
    """kio's response with null records replaced by empty ones, as we always send them."""
    topics = tuple(
        dataclasses.replace(
            topic,
            partitions=tuple(
                dataclasses.replace(p, records=p.records or Records(b"")) for p in topic.partitions
            ),
        )
        for topic in response.responses
    )
    return dataclasses.replace(response, responses=topics)


def _pair(value: Any, first: str, second: str) -> tuple[int, int]:
    return (-1, -1) if value is None else (getattr(value, first), getattr(value, second))


def ours(response: Any) -> list[FetchableTopicResponse[bytes]]:
    return [
        FetchableTopicResponse(
            getattr(topic, "topic", ""),
            [
                FetchPartitionData(
                    partition_index=p.partition_index,
                    error_code=int(p.error_code),
                    high_watermark=p.high_watermark,
                    last_stable_offset=p.last_stable_offset,
                    log_start_offset=getattr(p, "log_start_offset", -1),
                    aborted_transactions=None
                    if p.aborted_transactions is None
                    else tuple(
                        AbortedTransaction(a.producer_id, a.first_offset)
                        for a in p.aborted_transactions
                    ),
                    preferred_read_replica=getattr(p, "preferred_read_replica", -1),
                    records=bytes(p.records),
                    records_size=len(p.records),
                    diverging_epoch=_pair(
                        getattr(p, "diverging_epoch", None), "epoch", "end_offset"
                    ),
                    current_leader=_pair(
                        getattr(p, "current_leader", None), "leader_id", "leader_epoch"
                    ),
                )
                for p in topic.partitions
            ],
            getattr(topic, "topic_id", None),
        )
        for topic in response.responses
    ]


def no_snapshot_ids(response: Any) -> Any:
    """kio's response without snapshot ids (v12+, KRaft's fetch-snapshot hint): the broker
    never sends one."""
    if not response.responses or not hasattr(response.responses[0].partitions, "__iter__"):
        return response
    topics = tuple(
        dataclasses.replace(
            topic,
            partitions=tuple(
                dataclasses.replace(p, snapshot_id=type(p.snapshot_id)())
                if hasattr(p, "snapshot_id")
                else p
                for p in topic.partitions
            ),
        )
        for topic in response.responses
    )
    return dataclasses.replace(response, responses=topics)


def endpoints(response: Any) -> list[NodeEndpoint]:
    return [
        NodeEndpoint(e.node_id, e.host, e.port, e.rack)
        for e in getattr(response, "node_endpoints", ())
    ]


def splice(frame: FetchResponseFrame[bytes]) -> bytes:
    return frame.to_bytes(lambda slot: slot.records)


def assert_well_formed(frame: FetchResponseFrame[Any]) -> None:
    assert isinstance(frame.parts[0], bytes)
    for before, after in zip(frame.parts, frame.parts[1:], strict=False):
        assert not (isinstance(before, bytes) and isinstance(after, bytes))
    assert frame.framing_bytes + sum(slot.size for slot in frame.slots) == frame.size
    first = frame.parts[0]
    assert isinstance(first, bytes)
    (size, correlation_id) = struct.unpack_from(">ii", first)
    assert (size, correlation_id) == (frame.size - 4, frame.correlation_id)


@pytest.mark.parametrize("version", list(FETCH_RESPONSE_VERSIONS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_spliced_frame_equals_kio_byte_for_byte(
    version: int, data: st.DataObject, response_frame: Callable[[Any, int], bytes]
) -> None:
    response = no_snapshot_ids(
        never_null_records(data.draw(st.from_type(load_response_schema(ApiKey.FETCH, version))))
    )
    correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1))
    frame = encode_fetch_response(
        version,
        correlation_id,
        ours(response),
        throttle_time_ms=round(response.throttle_time.total_seconds() * 1000),
        error_code=int(getattr(response, "error_code", 0)),
        session_id=getattr(response, "session_id", 0),
        node_endpoints=endpoints(response),
    )
    assert_well_formed(frame)
    assert splice(frame) == response_frame(response, correlation_id)
    non_empty = [
        (getattr(topic, "topic", ""), p.partition_index)
        for topic in response.responses
        for p in topic.partitions
        if p.records
    ]
    assert [(slot.topic, slot.partition_index) for slot in frame.slots] == non_empty


def test_ten_partitions_of_one_megabyte() -> None:
    # One handle per partition, never copied: the broker writes each with sendfile.
    handles = [f"segment-{i}" for i in range(10)]
    topic = FetchableTopicResponse(
        "events",
        [
            FetchPartitionData(i, high_watermark=100, records=handles[i], records_size=1 << 20)
            for i in range(10)
        ],
    )
    frame = encode_fetch_response(11, 7, [topic])
    assert_well_formed(frame)
    assert len(frame.parts) == 20  # framing, slot, framing, slot, ...: the last part is a slot
    assert [slot.records for slot in frame.slots] == handles
    assert frame.size == frame.framing_bytes + 10 * (1 << 20)


def test_empty_records_are_written_empty_not_null() -> None:
    frame = encode_fetch_response(
        11, 1, [FetchableTopicResponse("t", [FetchPartitionData(0, high_watermark=5)])]
    )
    (only,) = frame.parts
    assert isinstance(only, bytes)
    assert only.endswith(b"\x00\x00\x00\x00")  # records length 0, not -1
    assert frame.slots == ()


def test_golden_v4_one_empty_partition() -> None:
    frame = encode_fetch_response(
        4,
        9,
        [FetchableTopicResponse("t", [FetchPartitionData(0, 0, 10, 10)])],
        throttle_time_ms=3,
        session_id=123,  # written from v7 only
    )
    assert frame.parts == (
        bytes.fromhex(
            "00000031"  # size: 49
            "00000009"  # correlation id
            "00000003"  # throttle_time_ms
            "00000001 0001 74"  # one topic "t"
            "00000001 00000000 0000"  # one partition: 0, no error
            "000000000000000a 000000000000000a"  # high watermark, last stable offset
            "ffffffff"  # aborted_transactions: null
            "00000000"  # records: empty
        ),
    )


def test_aborted_transactions_and_fetch_session_fields() -> None:
    partition = FetchPartitionData(
        2,
        aborted_transactions=(AbortedTransaction(producer_id=8, first_offset=4),),
        preferred_read_replica=3,
        records=b"abc",
        records_size=3,
    )
    frame = encode_fetch_response(
        11, 1, [FetchableTopicResponse("t", [partition])], error_code=70, session_id=55
    )
    data = splice(frame)
    assert struct.unpack_from(">iiihi", data) == (len(data) - 4, 1, 0, 70, 55)
    assert data.endswith(struct.pack(">qqii", 8, 4, 3, 3) + b"abc")


def test_slot_fill_of_the_wrong_size_is_refused() -> None:
    frame = encode_fetch_response(
        11, 1, [FetchableTopicResponse("t", [FetchPartitionData(0, records=b"ab", records_size=2)])]
    )
    with pytest.raises(ValueError, match="slot of 2 bytes"):
        frame.to_bytes(lambda slot: b"abc")


@pytest.mark.parametrize("version", [3, 19])
def test_versions_outside_the_range_are_refused(version: int) -> None:
    with pytest.raises(ValueError, match="not encoded here"):
        encode_fetch_response(version, 1, [])


def test_records_size_without_records_is_refused() -> None:
    with pytest.raises(ValueError, match="without records"):
        encode_fetch_response(
            11, 1, [FetchableTopicResponse("t", [FetchPartitionData(0, records_size=5)])]
        )
    with pytest.raises(ValueError, match="negative records_size"):
        encode_fetch_response(
            11, 1, [FetchableTopicResponse("t", [FetchPartitionData(0, records_size=-1)])]
        )


def test_slots_are_records_slots() -> None:
    frame = encode_fetch_response(
        5, 1, [FetchableTopicResponse("t", [FetchPartitionData(4, records=b"x", records_size=1)])]
    )
    assert frame.slots == (RecordsSlot("t", 4, b"x", 1),)
