"""``describe_topic`` in a cluster, per listener: a partition whose live leader has no
endpoint on the client's listener answers LISTENER_NOT_FOUND (or the error the caller names)
and no leader; one with an endpoint there, or whose leader is not live, is unchanged."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from odradek.broker.context import CLIENT_LISTENER
from odradek.broker.handlers._topic_metadata import describe_topic
from odradek.broker.metadata_cache import LiveBroker, MetadataCache, PartitionMetadata
from odradek.errors import ErrorCode


def _context() -> Any:
    cache = MetadataCache(0, "BROKER")
    cache.set_brokers(
        [
            LiveBroker(0, "h0", 9000, None, "PLAINTEXT"),
            LiveBroker(0, "h0", 9001, None, "SSL"),
            LiveBroker(0, "h0", 9002, None, "BROKER"),
            LiveBroker(1, "h1", 9100, None, "PLAINTEXT"),  # no SSL listener
            LiveBroker(1, "h1", 9102, None, "BROKER"),
        ]
    )
    cache.update_partitions(
        [
            PartitionMetadata("t", 0, 0, 3, (0, 1), (0, 1)),
            PartitionMetadata("t", 1, 1, 4, (1, 0), (1, 0)),
            PartitionMetadata("t", 2, 7, 1, (7,), (7,)),  # leader 7 is not live
        ]
    )
    topics = SimpleNamespace(is_internal=lambda name: False)
    return SimpleNamespace(cluster=SimpleNamespace(cache=cache), topics=topics, authorizer=None)


def _partitions(listener: str | None, **options: Any) -> list[tuple[int, int, int]]:
    token = CLIENT_LISTENER.set(listener)
    try:
        described = describe_topic(_context(), "t", **options)
    finally:
        CLIENT_LISTENER.reset(token)
    assert described is not None
    return [(p.error_code, p.partition_index, p.leader_id) for p in described.partitions]


def test_a_leader_without_the_clients_listener_is_named() -> None:
    assert _partitions("SSL") == [
        (ErrorCode.NONE, 0, 0),
        (ErrorCode.LISTENER_NOT_FOUND, 1, -1),
        (ErrorCode.NONE, 2, 7),  # not live: nothing to say about its listeners
    ]


@pytest.mark.parametrize("listener", ["PLAINTEXT", None])
def test_every_leader_reachable_on_the_listener_is_answered(listener: str | None) -> None:
    assert [leader for _, _, leader in _partitions(listener)] == [0, 1, 7]
    assert {error for error, _, _ in _partitions(listener)} == {ErrorCode.NONE}


def test_an_older_metadata_version_gets_leader_not_available() -> None:
    partitions = _partitions("SSL", listener_not_found=ErrorCode.LEADER_NOT_AVAILABLE)
    assert partitions[1] == (ErrorCode.LEADER_NOT_AVAILABLE, 1, -1)
