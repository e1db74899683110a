"""Followers copy their leaders (issue 14) on 3 ``odradek serve`` brokers and a real ZooKeeper:
after acks=1 produces to the leaders, every replica's log holds the leader's batches byte for
byte (segment files compared), with the same leader-epoch checkpoint; after the leader of a
partition stops and another takes over at a new epoch, the old leader comes back as a follower,
truncates to the divergence point the new leader names, and converges to the same bytes.

One cluster for the module: start-ups are what makes these tests slow."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer as ConfluentProducer

from odradek.client import AdminClient, NewTopic
from odradek.storage.leader_epoch_cache import CHECKPOINT_FILE_NAME
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble

pytestmark = pytest.mark.cluster

PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperEnsemble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    chroot = f"{zookeeper.connect_string}/t-{uuid.uuid4().hex[:12]}"
    settings = {
        "replica.fetch.backoff.ms": "100",
        "replica.fetch.wait.max.ms": "100",
        # Leadership moves only when a test moves it: the controller's preferred-leader
        # rebalance would add a leader epoch on some replicas while a test compares them.
        "auto.leader.rebalance.enable": "false",
    }
    with Cluster(3, chroot, tmp_path_factory.mktemp("cluster"), settings=settings) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


def _create(cluster: Cluster, topic: str) -> None:
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 3)]).all()


def _state(cluster: Cluster, topic: str, partition: int) -> dict[str, int]:
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    document = json.loads(cluster.store.get(path)[0])
    assert isinstance(document, dict)
    return document


def _produce(cluster: Cluster, topic: str, count: int, prefix: str) -> None:
    producer = ConfluentProducer(
        {"bootstrap.servers": cluster.bootstrap_servers, "acks": 1, "linger.ms": 5}
    )
    failures: list[str] = []

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            failures.append(str(error))

    for index in range(count):
        producer.produce(
            topic,
            f"{prefix}-{index}".encode() * 4,
            partition=index % PARTITIONS,
            on_delivery=delivered,
        )
        producer.poll(0)
    assert producer.flush(30) == 0
    assert failures == []


def _log_bytes(cluster: Cluster, broker_id: int, topic: str, partition: int) -> bytes:
    directory = cluster.brokers[broker_id].log_dir / f"{topic}-{partition}"
    segments = sorted(directory.glob("*.log"))
    return b"".join(path.read_bytes() for path in segments)


def _checkpoint(cluster: Cluster, broker_id: int, topic: str, partition: int) -> str:
    path = cluster.brokers[broker_id].log_dir / f"{topic}-{partition}" / CHECKPOINT_FILE_NAME
    return path.read_text() if path.exists() else ""


def _wait_identical(cluster: Cluster, topic: str, partition: int) -> bytes:
    leader = _state(cluster, topic, partition)["leader"]

    def identical() -> bool:
        expected = _log_bytes(cluster, leader, topic, partition)
        return bool(expected) and all(
            _log_bytes(cluster, broker, topic, partition) == expected for broker in cluster.brokers
        )

    cluster.wait_until(identical, timeout_s=60, what=f"{topic}-{partition} replicated")
    return _log_bytes(cluster, leader, topic, partition)


def test_every_follower_holds_the_leaders_batches_byte_for_byte(cluster: Cluster) -> None:
    _create(cluster, "copied")
    _produce(cluster, "copied", 300, "a")
    for partition in range(PARTITIONS):
        data = _wait_identical(cluster, "copied", partition)
        assert len(data) > 1000
        for broker in cluster.brokers:
            assert _checkpoint(cluster, broker, "copied", partition) == "0\n1\n0 0\n"


def test_a_returning_leader_follows_the_new_one_and_converges(cluster: Cluster) -> None:
    _create(cluster, "moved")
    _produce(cluster, "moved", 90, "before")
    for partition in range(PARTITIONS):
        _wait_identical(cluster, "moved", partition)
    old = _state(cluster, "moved", 0)
    assert cluster.terminate(old["leader"]) == 0  # controlled shutdown: leadership moves
    cluster.wait_until(
        lambda: _state(cluster, "moved", 0)["leader"] not in (-1, old["leader"]),
        what="a new leader",
    )
    new = _state(cluster, "moved", 0)
    assert new["leader_epoch"] > old["leader_epoch"]
    _produce(cluster, "moved", 90, "after")
    cluster.restart(old["leader"])
    data = _wait_identical(cluster, "moved", 0)
    assert b"after-0" in data
    assert b"before-0" in data
    # The new epoch starts where the old leader's log ended: every replica says so.
    checkpoints = {_checkpoint(cluster, b, "moved", 0) for b in cluster.brokers}
    assert len(checkpoints) == 1
    lines = checkpoints.pop().splitlines()
    assert lines[:3] == ["0", "2", "0 0"]
    assert lines[3].split()[0] == str(new["leader_epoch"])
