"""OffsetForLeaderEpoch without sockets: each partition answers where the asked epoch ends in
this broker's log (the leader-epoch cache's answer), after the leader-epoch fence and the
leadership check; every version kio models (v2-v4) round-trips through the real codec."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from tests.broker.fakes import FakePartition, context, request

from odradek._types import TopicPartition
from odradek.broker.handlers import offset_for_leader_epoch
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, encode_response
from odradek.protocol.client_codec import decode_response
from odradek.protocol.header import response_header_version
from odradek.records.codec import SimpleRecord, build_batch

TP = TopicPartition("t", 0)


def leader(**kwargs: Any) -> FakePartition:
    """A leader at epoch 4 whose log holds offsets 0-9: epochs {0: 0, 2: 5, 4: 8}."""
    partition = FakePartition(TP, leader_epoch=4, epochs={0: 0, 2: 5, 4: 8}, **kwargs)
    partition.append_as_leader(build_batch([SimpleRecord(1, None, b"x")] * 10))
    return partition


def ask(
    partition: FakePartition,
    queries: list[tuple[int, int, int]],
    *,
    version: int = 3,
    replica_id: int = 1,
) -> list[tuple[int, int, int, int]]:
    """(partition, current leader epoch, leader epoch) each → (partition, error, epoch, end)."""
    m = importlib.import_module(f"kio.schema.offset_for_leader_epoch.v{version}.request")
    fields: dict[str, Any] = {} if version < 3 else {"replica_id": replica_id}
    body = m.OffsetForLeaderEpochRequest(
        topics=(
            m.OffsetForLeaderTopic(
                topic="t",
                partitions=tuple(
                    m.OffsetForLeaderPartition(
                        partition=p, current_leader_epoch=current, leader_epoch=epoch
                    )
                    for p, current, epoch in queries
                ),
            ),
        ),
        **fields,
    )
    response = offset_for_leader_epoch.handle(context(partition), request(body))
    header_version = response_header_version(ApiKey.OFFSET_FOR_LEADER_EPOCH, version)
    frame = encode_response(header_version, 1, response)
    _, decoded = decode_response(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, frame[4:])
    return [
        (p["partition"], p["error_code"], p["leader_epoch"], p["end_offset"])
        for topic in decoded["topics"]
        for p in topic["partitions"]
    ]


@pytest.mark.parametrize("version", [2, 3, 4])
def test_the_end_of_each_epoch(version: int) -> None:
    answers = ask(
        leader(),
        [(0, -1, 4), (0, -1, 2), (0, -1, 3), (0, -1, 0), (0, -1, 9), (0, 4, 1)],
        version=version,
    )
    assert answers == [
        (0, ErrorCode.NONE, 4, 10),  # the latest epoch ends at the log end offset
        (0, ErrorCode.NONE, 2, 8),  # an older one where the next begins
        (0, ErrorCode.NONE, 2, 8),  # an unknown one: the largest known below it
        (0, ErrorCode.NONE, 0, 5),
        (0, ErrorCode.NONE, -1, -1),  # newer than anything here
        (0, ErrorCode.NONE, 0, 5),  # epoch 1 never wrote: it ends where epoch 0 does
    ]


def test_errors_per_partition() -> None:
    partition = leader()
    answers = ask(partition, [(0, 3, 4), (0, 5, 4), (7, -1, 0)])
    assert [(p, error) for p, error, _, _ in answers] == [
        (0, ErrorCode.FENCED_LEADER_EPOCH),
        (0, ErrorCode.UNKNOWN_LEADER_EPOCH),
        (7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    partition.is_leader = False
    assert ask(partition, [(0, 4, 2)])[0][1] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # Kafka's debugging replica id may read a follower's cache.
    assert ask(partition, [(0, 4, 2)], replica_id=-2)[0] == (0, ErrorCode.NONE, 2, 8)
