"""ListOffsets without sockets: latest is the high watermark, earliest the log start offset,
a timestamp the first batch at or after it (-1 when none is committed yet), other negative
timestamps INVALID_REQUEST, unknown partitions UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

import importlib
from typing import Any

from tests.broker.fakes import FakePartition, context, request

from odradek._types import TopicPartition
from odradek.broker.handlers import list_offsets
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey
from odradek.protocol.client_codec import decode_response
from odradek.records.codec import SimpleRecord, build_batch

TP = TopicPartition("t", 0)


def list_request(version: int, queries: list[tuple[int, int]]) -> Any:
    m = importlib.import_module(f"kio.schema.list_offsets.v{version}.request")
    fields: dict[str, Any] = {"replica_id": -1}
    if version >= 2:
        fields["isolation_level"] = 0
    return request(
        m.ListOffsetsRequest(
            topics=(
                m.ListOffsetsTopic(
                    name="t",
                    partitions=tuple(
                        m.ListOffsetsPartition(partition_index=p, timestamp=t) for p, t in queries
                    ),
                ),
            ),
            **fields,
        )
    )


def answers(response: Any, version: int) -> list[tuple[int, int, int, int]]:
    """The partitions' answers of a response frame (the hand-written encoder's bytes, size
    prefix included) or of a kio response object (versions that encoder does not write)."""
    if isinstance(response, bytes):
        _, body = decode_response(ApiKey.LIST_OFFSETS, version, response[4:])
        return [
            (p["partition_index"], p["error_code"], p["timestamp"], p["offset"])
            for topic in body["topics"]
            for p in topic["partitions"]
        ]
    return [
        (int(p.partition_index), int(p.error_code), int(p.timestamp), int(p.offset))
        for topic in response.topics
        for p in topic.partitions
    ]


def test_earliest_latest_and_by_timestamp() -> None:
    partition = FakePartition(TP)
    for timestamp in (100, 200, 300):
        partition.append_as_leader(build_batch([SimpleRecord(timestamp, None, b"v")]))
    partition.delete_records_before(1)
    partition.committed = False
    partition.append_as_leader(build_batch([SimpleRecord(400, None, b"v")]))  # above HW

    for version in (1, 2):
        response = list_offsets.handle(
            context(partition),
            list_request(version, [(0, -1), (0, -2), (0, 150), (0, 350), (0, -3), (3, -1)]),
        )
        assert answers(response, version) == [
            (0, ErrorCode.NONE, -1, 3),  # latest: the high watermark, not the log end offset
            (0, ErrorCode.NONE, -1, 1),  # earliest: the log start offset
            (0, ErrorCode.NONE, 200, 1),
            (0, ErrorCode.NONE, -1, -1),  # only the uncommitted batch is that late
            (0, ErrorCode.INVALID_REQUEST, -1, -1),
            (3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
        ], version


def test_a_follower_answers_not_leader_or_follower() -> None:
    follower = FakePartition(TP, is_leader=False)  # in a cluster, another broker leads it
    for version in (1, 2):
        response = list_offsets.handle(context(follower), list_request(version, [(0, -1)]))
        assert answers(response, version) == [(0, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1)], (
            version
        )


def test_a_known_leader_epoch_is_fenced_as_fetch_fences_it() -> None:
    # ListOffsets v4+ carries current_leader_epoch (KIP-320); the handler checks it whatever
    # version brought it, so the request is built at v4 and handed over decoded.
    m = importlib.import_module("kio.schema.list_offsets.v4.request")
    partition = FakePartition(TP, leader_epoch=3)
    partition.append_as_leader(build_batch([SimpleRecord(1_000, None, b"x")]))

    def error_for(epoch: int) -> int:
        body = m.ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=(
                m.ListOffsetsTopic(
                    name="t",
                    partitions=(
                        m.ListOffsetsPartition(
                            partition_index=0, current_leader_epoch=epoch, timestamp=-1
                        ),
                    ),
                ),
            ),
        )
        v2 = list_request(2, [(0, -1)])
        decoded = v2._replace(body=body, header=v2.header._replace(api_version=4))
        response = list_offsets.handle(context(partition), decoded)
        return answers(response, 4)[0][1]

    assert error_for(2) == ErrorCode.FENCED_LEADER_EPOCH
    assert error_for(4) == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert error_for(3) == ErrorCode.NONE
    assert error_for(-1) == ErrorCode.NONE
