"""What the controller does on its own, on 3 ``odradek serve`` brokers and a real ZooKeeper:
the automatic preferred-leader rebalance, and the admin nodes Kafka's ZooKeeper-mode tools
write (``/admin/preferred_replica_election``, ``/admin/delete_topics/<t>``).

One cluster serves the module (a leader-imbalance check every second); each test uses topics
of its own.

A broker that comes back rejoins a partition's ISR once its follower has caught up; only then
may the periodic check move leadership to it.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from tests.broker._wire import Wire

from odradek._types import TopicPartition
from odradek.client import AdminClient, ConfigResource, NewTopic
from odradek.controller.election import CONTROLLER_PATH
from odradek.controller.topics import (
    DELETE_TOPICS_PATH,
    PREFERRED_REPLICA_ELECTION_PATH,
    ClusterMetadata,
)
from odradek.errors import ErrorCode, NoNodeError
from odradek.protocol.api_keys import ApiKey
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble

pytestmark = pytest.mark.cluster

#: The module cluster's ``max.broker.partitions`` (the other tests hold ~20 replicas a broker).
MAX_BROKER_PARTITIONS = 60


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperEnsemble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    chroot = f"{zookeeper.connect_string}/t-{uuid.uuid4().hex[:12]}"
    settings = {
        "leader.imbalance.check.interval.seconds": "1",
        # Longer than the default 2 s: on a loaded machine a live broker's session must not
        # expire (a kill is still noticed within 6 s).
        "zookeeper.session.timeout.ms": "6000",
        "max.broker.partitions": str(MAX_BROKER_PARTITIONS),
        "max.partitions.per.request": "100",
    }
    with Cluster(3, chroot, tmp_path_factory.mktemp("cluster"), settings=settings) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _state(cluster: Cluster, topic: str, partition: int) -> tuple[dict[str, Any], int]:
    data, version = cluster.store.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    return json.loads(data), version


def _leader(cluster: Cluster, topic: str, partition: int) -> int:
    return int(_state(cluster, topic, partition)[0]["leader"])


def _create(cluster: Cluster, topic: str, assignment: dict[int, list[int]]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    try:
        admin.create_topics([NewTopic(topic, replica_assignment=assignment)]).all()
    finally:
        admin.close()


def _leaders_seen_by(address: str, topic: str) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": address})
    try:
        described = admin.describe_topics([topic])
    finally:
        admin.close()
    return {p.partition: p.leader for p in described[topic].partitions}


def _others(cluster: Cluster) -> tuple[int, int]:
    controller = cluster.controller_id()
    first, second = sorted(b for b in cluster.brokers if b != controller)
    return first, second


def test_leadership_goes_back_to_the_preferred_replica_without_a_request(
    cluster: Cluster,
) -> None:
    victim, other = _others(cluster)
    _create(cluster, "rebalanced", {0: [victim, other], 1: [other, victim]})
    assert _leader(cluster, "rebalanced", 0) == victim
    cluster.kill(victim)
    _wait(lambda: _leader(cluster, "rebalanced", 0) == other, "leadership to move away")
    cluster.restart(victim)
    # Nobody asks for an election: once its follower is back in the ISR, the controller's
    # periodic check moves leadership back.
    _wait(lambda: _leader(cluster, "rebalanced", 0) == victim, "the preferred leader back")
    state, _ = _state(cluster, "rebalanced", 0)
    assert sorted(state["isr"]) == sorted([victim, other])
    assert _leader(cluster, "rebalanced", 1) == other  # its preferred replica led throughout
    for broker in cluster.brokers.values():
        _wait(
            lambda address=broker.address: (
                _leaders_seen_by(address, "rebalanced") == {0: victim, 1: other}
            ),
            f"broker {broker.broker_id} to learn the new leader",
        )


def test_a_preferred_replica_election_node_elects_and_goes(cluster: Cluster) -> None:
    preferred, other = _others(cluster)
    # 11 partitions prefer ``preferred``: one led elsewhere is 9 % < 10 %, below the check's
    # threshold, so only the admin node can move it.
    _create(cluster, "noded", {p: [preferred, other] for p in range(11)})
    state, version = _state(cluster, "noded", 3)
    state.update(leader=other, leader_epoch=state["leader_epoch"] + 1)
    cluster.store.set(
        "/brokers/topics/noded/partitions/3/state", json.dumps(state).encode(), version
    )
    epoch = cluster.controller_epoch()
    assert epoch is not None
    cluster.store.delete(CONTROLLER_PATH)
    _wait(lambda: (cluster.controller_epoch() or 0) > epoch, "a new controller epoch")
    _wait(
        lambda: _leaders_seen_by(cluster.bootstrap_servers, "noded")[3] == other,
        "the new controller to publish the states it read",
    )

    ClusterMetadata(cluster.store).request_preferred_replica_election(
        [TopicPartition("noded", 3), TopicPartition("noded", 0), TopicPartition("missing", 0)]
    )
    _wait(lambda: not cluster.store.exists(PREFERRED_REPLICA_ELECTION_PATH), "the node to go")
    assert _leader(cluster, "noded", 3) == preferred
    assert _state(cluster, "noded", 3)[0]["leader_epoch"] == state["leader_epoch"] + 1
    assert _leader(cluster, "noded", 0) == preferred  # led by it already: untouched
    assert _state(cluster, "noded", 0)[0]["leader_epoch"] == 0

    # A node that is not Kafka's JSON is logged and removed, and does not block the next one.
    cluster.store.create(PREFERRED_REPLICA_ELECTION_PATH, b"{not json")
    _wait(lambda: not cluster.store.exists(PREFERRED_REPLICA_ELECTION_PATH), "the bad node to go")


def test_a_delete_topics_node_deletes_the_topic_everywhere(cluster: Cluster) -> None:
    first, second = _others(cluster)
    _create(cluster, "doomed", {0: [first, second], 1: [second, first]})
    metadata = ClusterMetadata(cluster.store)
    metadata.request_topic_deletion("doomed")
    metadata.request_topic_deletion("never-existed")
    _wait(lambda: not cluster.store.children(DELETE_TOPICS_PATH), "the admin nodes to go")
    assert not metadata.topic_exists("doomed")
    with pytest.raises(NoNodeError):
        cluster.store.get("/config/topics/doomed")
    for broker in cluster.brokers.values():
        admin = AdminClient({"bootstrap.servers": broker.address})
        try:
            _wait(
                lambda admin=admin: "doomed" not in admin.list_topics(),
                f"broker {broker.broker_id} to forget the topic",
            )
        finally:
            admin.close()
    # The name is free again.
    _create(cluster, "doomed", {0: [first]})
    assert _leader(cluster, "doomed", 0) == first


def test_metadata_lists_offline_replicas_and_topic_ids(cluster: Cluster) -> None:
    first, second = _others(cluster)
    _create(cluster, "halved", {0: [first, second], 1: [second, first]})
    topic_id = ClusterMetadata(cluster.store).topic_id("halved")
    assert topic_id is not None
    cluster.kill(second)
    _wait(lambda: _leader(cluster, "halved", 1) == first, "leadership to move off the dead broker")
    wire = Wire(cluster.brokers[first].port)
    try:

        def described() -> dict[str, Any]:
            body = wire.request(
                ApiKey.METADATA,
                12,
                {
                    "topics": [{"name": "halved", "topic_id": None}],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            )
            topic: dict[str, Any] = body["topics"][0]
            return topic

        # (A broker reads a topic's id off its event loop: the first answers may lack it.)
        _wait(
            lambda: (
                all(list(p["offline_replicas"]) == [second] for p in described()["partitions"])
                and described()["topic_id"] is not None
            ),
            "the dead broker's replicas to be offline",
        )
        topic = described()
        assert base64.urlsafe_b64encode(topic["topic_id"].bytes).decode().rstrip("=") == topic_id
        for partition in topic["partitions"]:
            assert partition["leader_id"] == first
            assert list(partition["isr_nodes"]) == [first]
            assert partition["leader_epoch"] >= 1
        # DescribeTopicPartitions says the same, from the same cache.
        paged = wire.request(
            ApiKey.DESCRIBE_TOPIC_PARTITIONS,
            0,
            {"topics": [{"name": "halved"}], "response_partition_limit": 1, "cursor": None},
        )
        [first_page] = paged["topics"]
        assert first_page["topic_id"] == topic["topic_id"]
        assert [list(p["offline_replicas"]) for p in first_page["partitions"]] == [[second]]
        assert paged["next_cursor"]["partition_index"] == 1
    finally:
        wire.close()
    cluster.restart(second)


def _replicas_on(cluster: Cluster, broker_id: int) -> int:
    metadata = ClusterMetadata(cluster.store)
    return sum(
        broker_id in replicas
        for topic in metadata.topics()
        for replicas in metadata.assignment(topic).values()
    )


def _create_result(cluster: Cluster, topic: NewTopic) -> tuple[int, str]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    try:
        result = admin.create_topics([topic])
    finally:
        admin.close()
    error = result.errors.get(topic.name)
    return (0, "") if error is None else (int(error.error_code), str(error))


def test_the_controller_applies_the_partition_limits(cluster: Cluster) -> None:
    first, _ = _others(cluster)
    code, message = _create_result(cluster, NewTopic("too-many", 101, 1))
    assert code == ErrorCode.POLICY_VIOLATION
    assert "max.partitions.per.request is 100" in message
    room = MAX_BROKER_PARTITIONS - _replicas_on(cluster, first)
    assert 0 < room <= 100
    over = NewTopic("crowded", replica_assignment={p: [first] for p in range(room + 1)})
    code, message = _create_result(cluster, over)
    assert code == ErrorCode.POLICY_VIOLATION
    assert f"broker {first}" in message
    assert not ClusterMetadata(cluster.store).topic_exists("crowded")
    assert not ClusterMetadata(cluster.store).topic_exists("too-many")
    fits = NewTopic("crowded", replica_assignment={p: [first] for p in range(room)})
    assert _create_result(cluster, fits) == (0, "")
    assert _replicas_on(cluster, first) == MAX_BROKER_PARTITIONS
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    try:
        admin.delete_topics(["crowded"]).all()
    finally:
        admin.close()


def test_unclean_leader_election_follows_the_topic_config(cluster: Cluster) -> None:
    first, second = _others(cluster)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    try:
        admin.create_topics(
            [
                NewTopic("careful", replica_assignment={0: [first, second]}),
                NewTopic(
                    "reckless",
                    replica_assignment={0: [first, second]},
                    configs={"unclean.leader.election.enable": "true"},
                ),
            ]
        ).all()
    finally:
        admin.close()
    cluster.kill(second)  # out of both ISRs
    _wait(lambda: _state(cluster, "reckless", 0)[0]["isr"] == [first], "the ISR to shrink")
    _wait(lambda: _state(cluster, "careful", 0)[0]["isr"] == [first], "the ISR to shrink")
    cluster.kill(first)  # the last ISR member: both go offline
    _wait(lambda: _leader(cluster, "reckless", 0) == -1, "the partition to go offline")
    _wait(lambda: _leader(cluster, "careful", 0) == -1, "the partition to go offline")
    cluster.restart(second)
    # Only the topic that allows it takes a leader from outside the ISR.
    _wait(lambda: _leader(cluster, "reckless", 0) == second, "an unclean leader")
    assert _state(cluster, "reckless", 0)[0]["isr"] == [second]
    assert _leader(cluster, "careful", 0) == -1
    cluster.restart(first)
    _wait(lambda: _leader(cluster, "careful", 0) == first, "the ISR member to lead again")
    # An override set later (IncrementalAlterConfigs, through any broker) applies to the next
    # election: the controller reads it then. Broker ``second`` may have caught up and
    # rejoined the ISR meanwhile (followers replicate): take it out again first.
    cluster.kill(second)
    _wait(lambda: _state(cluster, "careful", 0)[0]["isr"] == [first], "the ISR to shrink again")
    admin = AdminClient({"bootstrap.servers": cluster.brokers[first].address})
    try:
        admin.alter_configs(
            {ConfigResource.topic("careful"): {"unclean.leader.election.enable": "true"}}
        ).all()
    finally:
        admin.close()
    cluster.kill(first)
    _wait(lambda: _leader(cluster, "careful", 0) == -1, "the partition to go offline again")
    cluster.restart(second)
    _wait(lambda: _leader(cluster, "careful", 0) == second, "an unclean leader after the change")
    cluster.restart(first)


def test_a_config_altered_through_one_broker_applies_on_the_leader_elsewhere(
    cluster: Cluster,
) -> None:
    # Regression: the overrides reached ZooKeeper but only the broker that took the request
    # applied them; the partition's leader kept its old LogConfig until it restarted.
    leader, other = _others(cluster)
    topic = f"altered-{uuid.uuid4().hex[:8]}"
    _create(cluster, topic, {0: [leader]})
    _wait(
        lambda: _leaders_seen_by(cluster.brokers[leader].address, topic) == {0: leader}, "a leader"
    )
    producer = Producer(
        {"bootstrap.servers": cluster.brokers[leader].address, "acks": "1", "linger.ms": 0}
    )

    def produce_error() -> str | None:
        outcome: list[str | None] = []
        producer.produce(
            topic,
            b"x" * 2_000,
            on_delivery=lambda error, _msg: outcome.append(None if error is None else error.name()),
        )
        producer.flush(30)
        return outcome[0]

    assert produce_error() is None
    wire = Wire(cluster.brokers[other].port)
    try:
        answer = wire.request(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            0,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": topic,
                        "configs": [
                            {"name": "max.message.bytes", "config_operation": 0, "value": "1000"}
                        ],
                    }
                ],
                "validate_only": False,
            },
        )
    finally:
        wire.sock.close()
    assert [r["error_code"] for r in answer["responses"]] == [ErrorCode.NONE]
    _wait(lambda: produce_error() == "MSG_SIZE_TOO_LARGE", "the leader to refuse a large batch")
