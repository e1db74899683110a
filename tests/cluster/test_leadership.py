"""Partition leadership across 3 ``odradek serve`` brokers on a real ZooKeeper: the controller
creates topics with replicas spread and leaders balanced, tells every broker through
LeaderAndIsr / UpdateMetadata, and moves leadership when a leader's broker is killed; clients
(confluent-kafka, kafka-python, odradek's own) find the whole cluster from one address."""

from __future__ import annotations

import json
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import ElectionType
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient as ConfluentAdmin

from odradek.client import AdminClient, NewTopic, TopicPartition
from odradek.client.consumer import Consumer
from odradek.client.producer import Producer
from odradek.controller.channel import BrokerRequest, ControllerChannel
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey
from odradek.protocol.inter_broker import (
    LEADER_AND_ISR,
    LEADER_AND_ISR_VERSION,
    UPDATE_METADATA,
    UPDATE_METADATA_VERSION,
)
from odradek.testing.cluster import Cluster

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KafkaTopicPartition

pytestmark = pytest.mark.cluster

PARTITIONS = 6


@pytest.fixture
def cluster(zookeeper_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    # Leadership moves only when a test moves it: the controller's own preferred-leader
    # rebalance (first check 5 s after its election) would race the tests' elections.
    settings = {"auto.leader.rebalance.enable": "false"}
    with Cluster(3, zookeeper_chroot, tmp_path, settings=settings) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


def _states(cluster: Cluster, topic: str) -> dict[int, dict[str, Any]]:
    store = cluster.store
    partitions = store.children(f"/brokers/topics/{topic}/partitions")
    return {
        int(p): json.loads(store.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])
        for p in partitions
    }


def _assignment(cluster: Cluster, topic: str) -> dict[int, list[int]]:
    document = json.loads(cluster.store.get(f"/brokers/topics/{topic}")[0])
    return {int(p): replicas for p, replicas in document["partitions"].items()}


def _create(cluster: Cluster, via: int, topic: str, partitions: int, rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.brokers[via].address})
    try:
        admin.create_topics([NewTopic(topic, partitions, rf)]).all()  # raises on an error
    finally:
        admin.close()


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _metadata(address: str, topic: str) -> tuple[set[int], int | None, dict[int, Any]]:
    """(broker ids, controller id, partition → (leader, replicas, isr)) as one broker says."""
    admin = AdminClient({"bootstrap.servers": address})
    try:
        description = admin.describe_cluster()
        topics = admin.describe_topics([topic])
    finally:
        admin.close()
    partitions = {
        p.partition: (p.leader, tuple(p.replicas), tuple(p.isr)) for p in topics[topic].partitions
    }
    return {b.node_id for b in description.brokers}, description.controller_id, partitions


def test_a_topic_is_spread_balanced_and_served_by_every_client(cluster: Cluster) -> None:
    _create(cluster, 1, "spread", PARTITIONS, 3)  # on a broker that may not be the controller
    assignment = _assignment(cluster, "spread")
    states = _states(cluster, "spread")
    assert sorted(assignment) == list(range(PARTITIONS))
    for replicas in assignment.values():
        assert sorted(replicas) == [0, 1, 2]
    # Preferred replicas, and so leaders, go round-robin: two partitions per broker.
    assert Counter(replicas[0] for replicas in assignment.values()) == {0: 2, 1: 2, 2: 2}
    for index, state in states.items():
        assert state["leader"] == assignment[index][0]
        assert state["leader_epoch"] == 0
        assert sorted(state["isr"]) == [0, 1, 2]
        assert state["controller_epoch"] == cluster.controller_epoch()
    # The answer came once every broker serves the topic: each one says the same at once.
    for broker in cluster.brokers.values():
        brokers, controller, partitions = _metadata(broker.address, "spread")
        assert brokers == {0, 1, 2}
        assert controller == cluster.controller_id()
        assert {p: leader for p, (leader, _, _) in partitions.items()} == {
            p: state["leader"] for p, state in states.items()
        }

    bootstrap = cluster.brokers[2].address  # one address: the clients find the others
    confluent = ConfluentProducer({"bootstrap.servers": bootstrap, "acks": "1"})
    for p in range(PARTITIONS):
        confluent.produce("spread", value=f"confluent-{p}".encode(), partition=p)
    assert confluent.flush(30) == 0
    kafka_producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1)
    for p in range(PARTITIONS):
        kafka_producer.send("spread", value=f"kafka-python-{p}".encode(), partition=p).get(30)
    kafka_producer.close()
    own = Producer({"bootstrap.servers": bootstrap, "acks": "1"})
    for p in range(PARTITIONS):
        own.send("spread", value=f"odradek-{p}".encode(), partition=p).result(30)
    own.close()

    expected = {
        p: [f"{client}-{p}".encode() for client in ("confluent", "kafka-python", "odradek")]
        for p in range(PARTITIONS)
    }
    assert _consume_confluent(bootstrap, "spread") == expected
    assert _consume_kafka_python(bootstrap, "spread") == expected
    assert _consume_odradek(bootstrap, "spread") == expected


def _consume_confluent(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    consumer = ConfluentConsumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([ConfluentTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    try:
        while sum(map(len, got.values())) < 3 * PARTITIONS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                value, partition = message.value(), message.partition()
                assert value is not None
                assert partition is not None
                got[partition].append(value)
    finally:
        consumer.close()
    return got


def _consume_kafka_python(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    consumer.assign([KafkaTopicPartition(topic, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    try:
        while sum(map(len, got.values())) < 3 * PARTITIONS and time.monotonic() < deadline:
            for tp, records in consumer.poll(500).items():
                got[tp.partition].extend(record.value for record in records)
    finally:
        consumer.close()
    return got


def _consume_odradek(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    try:
        while sum(map(len, got.values())) < 3 * PARTITIONS and time.monotonic() < deadline:
            for record in consumer.poll(500):
                assert record.value is not None
                got[record.partition].append(record.value)
    finally:
        consumer.close(autocommit=False)
    return got


def test_killing_a_leader_moves_leadership_to_the_isr_and_producers_go_on(
    cluster: Cluster,
) -> None:
    _create(cluster, 0, "failover", 3, 3)
    controller = cluster.controller_id()
    before = _states(cluster, "failover")
    # A leader that is not the controller (the controller's own death is another test).
    victim = next(s["leader"] for s in before.values() if s["leader"] != controller)
    led = sorted(p for p, s in before.items() if s["leader"] == victim)
    survivor = next(b for b in cluster.brokers if b != victim)
    bootstrap = cluster.brokers[survivor].address
    producer = ConfluentProducer(
        {"bootstrap.servers": bootstrap, "acks": "1", "message.timeout.ms": 60000}
    )
    for p in range(3):
        producer.produce("failover", value=b"before", partition=p)
    assert producer.flush(30) == 0

    cluster.kill(victim)
    _wait(
        lambda: all(_states(cluster, "failover")[p]["leader"] != victim for p in led),
        "new leaders",
    )
    after = _states(cluster, "failover")
    for p in led:
        assert after[p]["leader"] in before[p]["isr"]
        assert after[p]["leader_epoch"] == before[p]["leader_epoch"] + 1
        assert victim not in after[p]["isr"]
    errors: list[Any] = []
    for p in range(3):
        producer.produce(
            "failover",
            value=b"after",
            partition=p,
            on_delivery=lambda error, message: errors.append(error) if error else None,
        )
    assert producer.flush(60) == 0
    assert errors == []
    # The survivors' metadata no longer names the dead broker.
    brokers, _, partitions = _metadata(bootstrap, "failover")
    assert brokers == set(cluster.brokers) - {victim}
    for p in led:
        assert partitions[p][0] == after[p]["leader"]


def test_a_deposed_controllers_requests_are_refused(cluster: Cluster) -> None:
    _create(cluster, 0, "fenced", 1, 3)
    epoch = cluster.controller_epoch()
    assert epoch is not None
    target = cluster.brokers[0]
    channel = ControllerChannel(99)
    try:
        stale = {
            "controller_id": 99,
            "controller_epoch": epoch - 1,
            "ungrouped_partition_states": [],
            "live_brokers": [],
        }
        answers = channel.send(
            {
                0: BrokerRequest(
                    "127.0.0.1", target.port, UPDATE_METADATA, UPDATE_METADATA_VERSION, stale
                )
            }
        )
        assert answers[0] is not None
        assert answers[0]["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
    finally:
        channel.close()
    # The current controller epoch with an older leader epoch: that partition is refused.
    state = _states(cluster, "fenced")[0]
    channel = ControllerChannel(99)
    try:
        older = {
            "controller_id": cluster.controller_id(),
            "controller_epoch": epoch,
            "ungrouped_partition_states": [
                {
                    "topic_name": "fenced",
                    "partition_index": 0,
                    "controller_epoch": epoch,
                    "leader": 0,
                    "leader_epoch": state["leader_epoch"] - 1,
                    "isr": [0],
                    "zk_version": 0,
                    "replicas": [0, 1, 2],
                    "is_new": False,
                }
            ],
            "live_leaders": [],
        }
        answers = channel.send(
            {
                0: BrokerRequest(
                    "127.0.0.1", target.port, LEADER_AND_ISR, LEADER_AND_ISR_VERSION, older
                )
            }
        )
        answer = answers[0]
        assert answer is not None
        assert answer["error_code"] == ErrorCode.NONE
        [partition_error] = answer["partition_errors"]
        assert partition_error["error_code"] == ErrorCode.STALE_CONTROLLER_EPOCH
    finally:
        channel.close()
    # The broker still serves the controller's view: three brokers, the real controller.
    brokers, controller, partitions = _metadata(target.address, "fenced")
    assert brokers == {0, 1, 2}
    assert controller == cluster.controller_id()
    assert partitions[0][0] == state["leader"]


def test_a_follower_answers_not_leader_or_follower(cluster: Cluster) -> None:
    _create(cluster, 0, "follow", 1, 3)
    state = _states(cluster, "follow")[0]
    follower = next(b for b in state["isr"] if b != state["leader"])
    channel = ControllerChannel(0)
    try:
        request = {
            "replica_id": -1,
            "topics": [{"name": "follow", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        }
        answers = channel.send(
            {
                broker: BrokerRequest(
                    "127.0.0.1", cluster.brokers[broker].port, ApiKey.LIST_OFFSETS, 1, request
                )
                for broker in (follower, state["leader"])
            }
        )
    finally:
        channel.close()
    follower_answer, leader_answer = answers[follower], answers[state["leader"]]
    assert follower_answer is not None
    assert leader_answer is not None
    code = follower_answer["topics"][0]["partitions"][0]["error_code"]
    assert code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert leader_answer["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE


def test_sigterm_moves_leadership_before_the_broker_exits(cluster: Cluster) -> None:
    _create(cluster, 0, "stopping", 3, 3)
    before = _states(cluster, "stopping")
    controller = cluster.controller_id()
    victim = next(s["leader"] for s in before.values() if s["leader"] != controller)
    led = sorted(p for p, s in before.items() if s["leader"] == victim)
    survivor = next(b for b in cluster.brokers if b not in (victim,))
    producer = ConfluentProducer(
        {"bootstrap.servers": cluster.brokers[survivor].address, "acks": "1"}
    )
    failures: list[Any] = []
    delivered: list[int] = []

    def report(error: Any, message: Any) -> None:
        if error is not None:
            failures.append(error)
        else:
            delivered.append(message.partition())

    def produce_round() -> None:
        for p in range(3):
            producer.produce("stopping", value=b"x", partition=p, on_delivery=report)
        producer.poll(0)

    produce_round()
    assert producer.flush(30) == 0
    process = cluster.brokers[victim].process
    assert process is not None
    process.terminate()  # SIGTERM: a controlled shutdown
    while process.poll() is None:  # a producer runs while the broker stops
        produce_round()
        time.sleep(0.01)
    assert process.returncode == 0
    after = _states(cluster, "stopping")
    for p in led:
        assert after[p]["leader"] != victim
        assert after[p]["leader"] in before[p]["isr"]
        assert victim not in after[p]["isr"]
    log = cluster.brokers[victim].stderr_path.read_text()
    assert f"controlled shutdown of broker {victim}: leadership moved; 0 partitions" in log
    produce_round()
    assert producer.flush(60) == 0
    assert failures == []
    assert set(delivered) == {0, 1, 2}


def test_a_group_is_coordinated_by_its_offsets_partition_leader(
    zookeeper_chroot: str, tmp_path: Path
) -> None:
    settings = {"offsets.topic.num.partitions": "3", "offsets.topic.replication.factor": "3"}
    with Cluster(3, zookeeper_chroot, tmp_path, settings=settings) as cluster:
        cluster.wait_until(lambda: cluster.controller_id() is not None, what="a controller")
        _create(cluster, 0, "grouped", 3, 3)
        bootstrap = cluster.brokers[1].address
        producer = ConfluentProducer({"bootstrap.servers": bootstrap, "acks": "1"})
        for p in range(3):
            producer.produce("grouped", value=f"m{p}".encode(), partition=p)
        assert producer.flush(30) == 0

        config = {
            "bootstrap.servers": bootstrap,
            "group.id": "members",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
        consumer = ConfluentConsumer(config)
        consumer.subscribe(["grouped"])
        values = []
        deadline = time.monotonic() + 90
        try:
            while len(values) < 3 and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    values.append(message.value())
            consumer.commit(asynchronous=False)
        finally:
            consumer.close()
        assert sorted(values) == [b"m0", b"m1", b"m2"]
        # The offsets partitions' leaders are spread over the brokers.
        offsets = _states(cluster, "__consumer_offsets")
        assert sorted(s["leader"] for s in offsets.values()) == [0, 1, 2]

        again = ConfluentConsumer(config)
        try:
            committed = again.committed(
                [ConfluentTopicPartition("grouped", p) for p in range(3)], timeout=30
            )
        finally:
            again.close()
        assert [tp.offset for tp in committed] == [1, 1, 1]


def test_killing_the_controllers_broker_elects_a_controller_that_moves_its_leaders(
    cluster: Cluster,
) -> None:
    _create(cluster, 0, "orphaned", 3, 3)
    before = _states(cluster, "orphaned")
    victim = cluster.controller_id()
    epoch = cluster.controller_epoch()
    assert victim is not None
    assert epoch is not None
    led = sorted(p for p, s in before.items() if s["leader"] == victim)
    assert led  # round-robin leaders: every broker leads one of the 3
    cluster.kill(victim)
    cluster.wait_until(
        lambda: cluster.controller_id() not in (None, victim), what="a new controller"
    )
    _wait(
        lambda: all(_states(cluster, "orphaned")[p]["leader"] != victim for p in led),
        "new leaders",
    )
    after = _states(cluster, "orphaned")
    new_epoch = cluster.controller_epoch()
    assert new_epoch is not None
    assert new_epoch > epoch
    for p in led:
        assert after[p]["leader"] in before[p]["isr"]
        assert after[p]["leader_epoch"] == before[p]["leader_epoch"] + 1
        assert after[p]["controller_epoch"] == new_epoch
    survivor = next(b for b in cluster.brokers if b != victim)
    _wait(
        lambda: (
            _metadata(cluster.brokers[survivor].address, "orphaned")[1] == cluster.controller_id()
        ),
        "the survivors to learn the new controller",
    )


def test_partitions_added_and_topics_deleted_through_any_broker_reach_every_broker(
    cluster: Cluster,
) -> None:
    _create(cluster, 0, "growing", 2, 2)
    admin = AdminClient({"bootstrap.servers": cluster.brokers[1].address})
    try:
        admin.create_partitions({"growing": 5}).all()
        assert sorted(_states(cluster, "growing")) == [0, 1, 2, 3, 4]
        for broker in cluster.brokers.values():
            partitions = _metadata(broker.address, "growing")[2]
            assert sorted(partitions) == [0, 1, 2, 3, 4]
            assert all(len(replicas) == 2 for _, replicas, _ in partitions.values())
        admin.delete_topics(["growing"]).all()
    finally:
        admin.close()
    assert not cluster.store.exists("/brokers/topics/growing")
    for broker in cluster.brokers.values():
        other = AdminClient({"bootstrap.servers": broker.address})
        try:
            assert "growing" not in other.list_topics()
        finally:
            other.close()
        assert not list(broker.log_dir.glob("growing-*"))  # StopReplica deleted the logs


def test_a_producer_auto_creates_a_topic_on_the_controller(cluster: Cluster) -> None:
    producer = KafkaProducer(bootstrap_servers=cluster.brokers[0].address, acks=1)
    try:
        producer.send("automatic", value=b"v").get(60)
    finally:
        producer.close()
    states = _states(cluster, "automatic")
    assert len(states) == 1  # num.partitions 1, default.replication.factor 1
    assert len(_assignment(cluster, "automatic")[0]) == 1


def test_leader_elections_on_request_through_confluent_kafka(cluster: Cluster) -> None:
    _create(cluster, 0, "homing", 3, 3)
    preferred = {p: replicas[0] for p, replicas in _assignment(cluster, "homing").items()}
    controller = cluster.controller_id()
    victim = next(b for b in cluster.brokers if b != controller)
    partitions = [ConfluentTopicPartition("homing", p) for p in range(3)]
    admin = ConfluentAdmin({"bootstrap.servers": cluster.brokers[controller or 0].address})

    def elect(kind: ElectionType) -> dict[int, int]:
        results = admin.elect_leaders(kind, partitions).result(30)
        return {tp.partition: 0 if error is None else error.code() for tp, error in results.items()}

    # Every preferred replica leads: nothing to do.
    assert elect(ElectionType.PREFERRED) == dict.fromkeys(range(3), ErrorCode.ELECTION_NOT_NEEDED)
    assert cluster.terminate(victim) == 0  # controlled shutdown: its leadership moves away
    away = sorted(p for p, leader in preferred.items() if leader == victim)
    assert away
    # Down: its partitions cannot go home; the others need nothing; every leader is live.
    expected = {
        p: ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if p in away else ErrorCode.ELECTION_NOT_NEEDED
        for p in range(3)
    }
    assert elect(ElectionType.PREFERRED) == expected
    assert elect(ElectionType.UNCLEAN) == dict.fromkeys(range(3), ErrorCode.ELECTION_NOT_NEEDED)
    states = _states(cluster, "homing")
    assert all(states[p]["leader"] != victim for p in away)
    # Back and caught up into the ISR (the fixture turns the automatic rebalance off): the
    # same election moves its partitions home.
    cluster.restart(victim)
    _wait(
        lambda: all(victim in _states(cluster, "homing")[p]["isr"] for p in away),
        "the restarted broker back in the ISR of its partitions",
    )
    expected = {p: 0 if p in away else ErrorCode.ELECTION_NOT_NEEDED for p in range(3)}
    assert elect(ElectionType.PREFERRED) == expected
    states = _states(cluster, "homing")
    assert all(states[p]["leader"] == victim for p in away)
