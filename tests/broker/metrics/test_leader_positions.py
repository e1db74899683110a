"""``broker.leader_positions``: the high watermark and the record timestamp at an offset, asked
of a partition's leader with a consumer Fetch — here an embedded broker stands for the leader
(the cluster test, tests/cluster/test_lag_cluster.py, runs it between brokers)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest
from tests.broker.metrics.test_endpoint import produce

from odradek import Broker
from odradek._types import TopicPartition
from odradek.broker.leader_positions import LeaderPositions
from odradek.broker.metrics import LeaderPosition
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic
from odradek.client.config import ClientConfig
from odradek.client.network import NetworkClient
from odradek.records.record import SimpleRecord

TP = TopicPartition("positions", 0)
HERE = 99  # the asking broker's id: not the leader's


@pytest.fixture(scope="module")
def leader() -> Iterator[Broker]:
    with Broker(config={"offsets.topic.num.partitions": "1"}) as started:
        with AdminClient({"bootstrap.servers": started.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic(TP.topic, 1, 1)]).all()
        network = NetworkClient(ClientConfig(bootstrap_servers=started.bootstrap_servers))
        try:
            produce(network, TP.topic, [SimpleRecord(1_000 + i, b"k", b"v") for i in range(3)])
            produce(network, TP.topic, [SimpleRecord(2_000 + i, None, b"w") for i in range(2)])
        finally:
            network.close()
        yield started


def ask(
    leader: Broker, wanted: set[tuple[TopicPartition, int]], *, timeout_s: float = 5.0
) -> dict[tuple[TopicPartition, int], LeaderPosition]:
    endpoint = (0, "127.0.0.1", leader.port)

    def leader_of(tp: TopicPartition) -> tuple[int, str, int] | None:
        return None if tp.topic == "leaderless" else endpoint

    async def run() -> dict[tuple[TopicPartition, int], LeaderPosition]:
        positions = LeaderPositions(HERE, leader_of, timeout_s=timeout_s)
        try:
            return await positions.positions(wanted)
        finally:
            positions.close()

    return asyncio.run(run())


def test_positions_at_several_offsets_of_one_partition(leader: Broker) -> None:
    found = ask(leader, {(TP, 0), (TP, 1), (TP, 3), (TP, 5)})
    assert found == {
        (TP, 0): LeaderPosition(5, 1_000),  # a batch's first record
        (TP, 1): LeaderPosition(5, 1_001),  # inside a batch: the record's own timestamp
        (TP, 3): LeaderPosition(5, 2_000),
        (TP, 5): LeaderPosition(5, None),  # at the high watermark: nothing to read
    }


def test_what_is_not_known_is_left_out(leader: Broker) -> None:
    unknown = TopicPartition("no-such-topic", 0)
    leaderless = TopicPartition("leaderless", 0)
    found = ask(leader, {(TP, 2), (TP, 100), (unknown, 0), (leaderless, 0)})
    assert found == {(TP, 2): LeaderPosition(5, 1_002)}  # out of range, unknown, no leader


def test_a_leader_that_does_not_answer(leader: Broker) -> None:
    with socket.socket() as listening:  # accepts connections, never answers
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]

        async def run() -> dict[tuple[TopicPartition, int], LeaderPosition]:
            positions = LeaderPositions(HERE, lambda _: (1, "127.0.0.1", port), timeout_s=0.5)
            try:
                return await positions.positions({(TP, 0)})
            finally:
                positions.close()

        assert asyncio.run(run()) == {}


def test_partitions_led_by_the_asking_broker_are_not_asked(leader: Broker) -> None:
    async def run() -> dict[tuple[TopicPartition, int], LeaderPosition]:
        positions = LeaderPositions(0, lambda _: (0, "127.0.0.1", leader.port))
        try:
            return await positions.positions({(TP, 0)})
        finally:
            positions.close()

    assert asyncio.run(run()) == {}
