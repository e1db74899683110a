"""What the controller does on its own, on 3 ``odradek serve`` brokers and a real ZooKeeper:
the automatic preferred-leader rebalance, and the admin nodes Kafka's ZooKeeper-mode tools
write (``/admin/preferred_replica_election``, ``/admin/delete_topics/<t>``).

One cluster serves the module (a leader-imbalance check every second); each test uses topics
of its own.

A broker that comes back does not rejoin a partition's ISR until replication lets it catch up
(the next issue). Where a test needs the preferred replica back in the ISR, it writes the
partition state a leader's ISR expansion would write, then deletes ``/controller`` — the
operator's way to make the brokers elect a controller again, which reads every state anew.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from odradek._types import TopicPartition
from odradek.client import AdminClient, NewTopic
from odradek.controller.election import CONTROLLER_PATH
from odradek.controller.topics import (
    DELETE_TOPICS_PATH,
    PREFERRED_REPLICA_ELECTION_PATH,
    ClusterMetadata,
)
from odradek.errors import NoNodeError
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperEnsemble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    chroot = f"{zookeeper.connect_string}/t-{uuid.uuid4().hex[:12]}"
    settings = {"leader.imbalance.check.interval.seconds": "1"}
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


def _rejoin_isr_and_reelect(cluster: Cluster, topic: str, partition: int, replica: int) -> None:
    """Puts ``replica`` back in the partition's ISR as a leader's ISR expansion would, then
    has the brokers elect a controller again (it reads the states anew)."""
    state, version = _state(cluster, topic, partition)
    assert replica not in state["isr"]
    state["isr"] = [*state["isr"], replica]
    cluster.store.set(
        f"/brokers/topics/{topic}/partitions/{partition}/state",
        json.dumps(state).encode(),
        version,
    )
    epoch = cluster.controller_epoch()
    assert epoch is not None
    cluster.store.delete(CONTROLLER_PATH)
    _wait(lambda: (cluster.controller_epoch() or 0) > epoch, "a new controller epoch")


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
    # Back, but out of the ISR: no check may move leadership to it yet.
    state, _ = _state(cluster, "rebalanced", 0)
    assert state["leader"] == other
    assert victim not in state["isr"]
    _rejoin_isr_and_reelect(cluster, "rebalanced", 0, victim)
    # Nobody asks for an election: the controller's periodic check moves it back.
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
