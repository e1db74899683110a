"""Follower fetching (KIP-392) on 3 ``odradek serve`` brokers in racks a, b, c and a real
ZooKeeper, with ``replica.selector.class`` the rack-aware selector: a confluent-kafka consumer
with ``client.rack`` set to a follower's rack is sent there by the leader
(``preferred_read_replica``) and reads every record from it (the follower's log says it served
the partition); without ``client.rack`` the leader serves and no follower does."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentPartition

from odradek.client import AdminClient, NewTopic
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble

pytestmark = pytest.mark.cluster

RACKS = {0: "rack-a", 1: "rack-b", 2: "rack-c"}
RECORDS = 300
SERVED = "serves consumer fetches of"


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperEnsemble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    chroot = f"{zookeeper.connect_string}/ff-{uuid.uuid4().hex[:12]}"
    settings = {
        "replica.fetch.backoff.ms": "100",
        "replica.fetch.wait.max.ms": "100",
        "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
    }
    brokers = Cluster(3, chroot, tmp_path_factory.mktemp("cluster"), settings=settings)
    for broker_id, rack in RACKS.items():
        brokers.brokers[broker_id].settings["broker.rack"] = rack
    with brokers as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


def _topic_with_records(cluster: Cluster) -> tuple[str, int, list[int]]:
    """A new topic of one partition on all three brokers, holding ``RECORDS`` records written
    with acks=all; its name, leader and followers."""
    topic = f"ff-{uuid.uuid4().hex[:8]}"
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(topic, 1, 3)]).all()
    producer = ConfluentProducer(
        {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5}
    )
    for index in range(RECORDS):
        producer.produce(topic, f"record-{index}".encode(), partition=0)
        producer.poll(0)
    assert producer.flush(30) == 0
    state = json.loads(cluster.store.get(f"/brokers/topics/{topic}/partitions/0/state")[0])
    leader = int(state["leader"])
    cluster.wait_until(lambda: _isr(cluster, topic) == 3, what="every replica in the ISR")
    return topic, leader, sorted(set(RACKS) - {leader})


def _isr(cluster: Cluster, topic: str) -> int:
    state = json.loads(cluster.store.get(f"/brokers/topics/{topic}/partitions/0/state")[0])
    return len(state["isr"])


def _consume_all(cluster: Cluster, topic: str, rack: str | None) -> list[bytes]:
    config: dict[str, object] = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "group.id": f"g-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 100,
    }
    if rack is not None:
        config["client.rack"] = rack
    consumer = Consumer(config)
    values: list[bytes] = []
    try:
        consumer.assign([ConfluentPartition(topic, 0, 0)])
        deadline = time.monotonic() + 60
        while len(values) < RECORDS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            value = message.value()
            assert value is not None
            values.append(value)
    finally:
        consumer.close()
    return values


def _served_by(cluster: Cluster, broker_id: int, topic: str) -> bool:
    log = cluster.brokers[broker_id].stderr_path.read_text()
    return any(SERVED in line and topic in line for line in log.splitlines())


def test_a_consumer_in_a_followers_rack_reads_everything_from_that_follower(
    cluster: Cluster,
) -> None:
    topic, _leader, followers = _topic_with_records(cluster)
    near = followers[0]
    values = _consume_all(cluster, topic, RACKS[near])
    assert values == [f"record-{index}".encode() for index in range(RECORDS)]
    assert _served_by(cluster, near, topic)
    assert not _served_by(cluster, followers[1], topic)


def test_without_client_rack_the_leader_serves(cluster: Cluster) -> None:
    topic, _leader, followers = _topic_with_records(cluster)
    values = _consume_all(cluster, topic, None)
    assert values == [f"record-{index}".encode() for index in range(RECORDS)]
    assert not any(_served_by(cluster, follower, topic) for follower in followers)
