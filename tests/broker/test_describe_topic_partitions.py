"""DescribeTopicPartitions (API 75) against a live broker: topics sorted with their partitions,
pages of at most ``response_partition_limit`` partitions chained by ``next_cursor`` that visit
every partition exactly once, unknown and illegal names answered per topic, and the same
leaders, replicas and topic ids as Metadata."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.broker._wire import Wire

from odradek import Broker
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey

TOPICS = {"alpha": 3, "beta": 5, "gamma": 1}


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config={"auto.create.topics.enable": "false"}) as running:
        wire = Wire(running.port)
        try:
            assert wire.create_topics(TOPICS) == dict.fromkeys(TOPICS, 0)
        finally:
            wire.close()
        yield running


@pytest.fixture
def wire(broker: Broker) -> Iterator[Wire]:
    connection = Wire(broker.port)
    yield connection
    connection.close()


def _describe(
    wire: Wire, names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None
) -> dict[str, Any]:
    return wire.request(
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        0,
        {
            "topics": [{"name": name} for name in names],
            "response_partition_limit": limit,
            "cursor": None
            if cursor is None
            else {"topic_name": cursor[0], "partition_index": cursor[1]},
        },
    )


def _pairs(body: dict[str, Any]) -> list[tuple[str, int]]:
    return [(t["name"], p["partition_index"]) for t in body["topics"] for p in t["partitions"]]


def test_every_topic_in_one_page(broker: Broker, wire: Wire) -> None:
    body = _describe(wire, [])
    assert [t["name"] for t in body["topics"]] == ["alpha", "beta", "gamma"]
    assert body["next_cursor"] is None
    metadata = wire.request(
        ApiKey.METADATA,
        12,
        {
            "topics": None,
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    by_name = {t["name"]: t for t in metadata["topics"]}
    for topic in body["topics"]:
        assert topic["error_code"] == 0
        assert topic["topic_id"] == by_name[topic["name"]]["topic_id"]
        assert topic["topic_id"] is not None
        assert len(topic["partitions"]) == TOPICS[topic["name"]]
        for partition in topic["partitions"]:
            assert partition["leader_id"] == broker.app.ctx.broker_id
            assert list(partition["replica_nodes"]) == [broker.app.ctx.broker_id]
            assert partition["eligible_leader_replicas"] is None
            assert list(partition["offline_replicas"]) == []


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 8, 9])
def test_pages_chained_by_the_cursor_visit_every_partition_once(wire: Wire, limit: int) -> None:
    seen: list[tuple[str, int]] = []
    cursor = None
    pages = 0
    while True:
        body = _describe(wire, [], limit, cursor)
        page = _pairs(body)
        assert 0 < len(page) <= limit
        seen.extend(page)
        pages += 1
        if body["next_cursor"] is None:
            break
        cursor = (body["next_cursor"]["topic_name"], body["next_cursor"]["partition_index"])
        assert pages < 20
    expected = [(name, p) for name in sorted(TOPICS) for p in range(TOPICS[name])]
    assert seen == expected
    assert pages == -(-len(expected) // limit)


def test_listed_topics_unknown_and_illegal_names(wire: Wire) -> None:
    body = _describe(wire, ["gamma", "nope", "bad/name", "alpha", "gamma"])
    answered = {t["name"]: t for t in body["topics"]}
    assert [t["name"] for t in body["topics"]] == ["alpha", "bad/name", "gamma", "nope"]
    assert answered["nope"]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert list(answered["nope"]["partitions"]) == []
    assert answered["bad/name"]["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert len(answered["alpha"]["partitions"]) == 3


def test_a_cursor_inside_a_topic_and_a_limit_out_of_range(wire: Wire) -> None:
    body = _describe(wire, ["beta", "gamma"], limit=0, cursor=("beta", 3))
    assert _pairs(body) == [("beta", 3), ("beta", 4), ("gamma", 0)]
    assert body["next_cursor"] is None
    # A cursor naming a topic that is not listed starts at the next name.
    assert _pairs(_describe(wire, [], 2000, ("b", 7)))[0] == ("beta", 0)
