"""Replication across 3 ``odradek serve`` brokers on a real ZooKeeper (issue 14's acceptance):
replicas hold the same batches, acks=all survives repeated kill -9 of the leader with every
acknowledged record where its acknowledgement said, min.insync.replicas refuses acks=all when
two of three replicas are down while acks=1 still works, a stopped follower leaves the ISR and
rejoins, and a returning old leader truncates its divergent tail (KIP-101)."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import KafkaError as ConfluentError
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from odradek.client import AdminClient, NewTopic
from odradek.records.batch import iter_batches
from odradek.testing.cluster import Cluster

pytestmark = pytest.mark.cluster

#: Followers notice the leader's appends quickly; a stopped follower leaves the ISR in 2 s.
SETTINGS = {
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.wait.max.ms": "100",
    "replica.fetch.backoff.ms": "200",
    # Leadership moves only when a test moves it (kills, elections): the controller's own
    # preferred-leader rebalance would race the tests' checks of leaders and epochs.
    "auto.leader.rebalance.enable": "false",
}


@pytest.fixture
def cluster(zookeeper_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(3, zookeeper_chroot, tmp_path, settings=SETTINGS) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


# --- helpers ---------------------------------------------------------------------------------


def _create(
    cluster: Cluster,
    topic: str,
    *,
    partitions: int = 1,
    replicas: list[list[int]] | None = None,
    configs: dict[str, str] | None = None,
) -> None:
    new = NewTopic(
        topic,
        -1 if replicas else partitions,
        -1 if replicas else 3,
        configs=configs or {},
        replica_assignment=dict(enumerate(replicas)) if replicas else None,
    )
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_topics([new]).all()
    cluster.wait_until(lambda: _all_states(cluster, topic, partitions), what=f"{topic} states")


def _all_states(cluster: Cluster, topic: str, partitions: int) -> bool:
    try:
        return len(cluster.store.children(f"/brokers/topics/{topic}/partitions")) == partitions
    except Exception:
        return False


def _state(cluster: Cluster, topic: str, partition: int = 0) -> dict[str, Any]:
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    document = json.loads(cluster.store.get(path)[0])
    assert isinstance(document, dict)
    return document


def _batches(cluster: Cluster, broker_id: int, topic: str, partition: int) -> list[bytes]:
    """The whole batches in a replica's segment files, in order (a batch being written at
    the end is left out)."""
    directory = cluster.brokers[broker_id].log_dir / f"{topic}-{partition}"
    data = b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))
    batches = []
    position = 0
    try:
        for position, header in iter_batches(data):
            batches.append(bytes(data[position : position + header.size]))
    except Exception:
        pass
    return batches


def _producer(cluster: Cluster, **extra: Any) -> ConfluentProducer:
    return ConfluentProducer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": False,
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
            "retry.backoff.ms": 100,
            "topic.metadata.refresh.interval.ms": 1_000,
            **extra,
        }
    )


def _read_all(cluster: Cluster, topic: str, partitions: int) -> dict[tuple[int, int], bytes]:
    """(partition, offset) → value of every committed record, read from the leaders."""
    consumer = ConfluentConsumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"reader-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        ends = {}
        for partition in range(partitions):
            _, high = consumer.get_watermark_offsets(
                ConfluentTopicPartition(topic, partition), timeout=30
            )
            ends[partition] = high
        consumer.assign([ConfluentTopicPartition(topic, p, 0) for p in range(partitions)])
        found: dict[tuple[int, int], bytes] = {}
        deadline = time.monotonic() + 120
        while any(len([k for k in found if k[0] == p]) < ends[p] for p in range(partitions)):
            assert time.monotonic() < deadline, f"read {len(found)} of {sum(ends.values())}"
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            value = message.value()
            assert value is not None
            found[(message.partition(), message.offset())] = value
        return found
    finally:
        consumer.close()


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# --- tests ----------------------------------------------------------------------------------


def test_every_replica_holds_the_same_batches(cluster: Cluster) -> None:
    _create(cluster, "same", partitions=3, configs={"min.insync.replicas": "2"})
    producer = _producer(cluster)
    failed: list[Any] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failed.append(error)

    for index in range(3_000):
        producer.produce(
            "same", f"value-{index}".encode(), partition=index % 3, on_delivery=delivered
        )
        producer.poll(0)
    assert producer.flush(60) == 0
    assert failed == []

    for partition in range(3):

        def converged(p: int = partition) -> bool:
            copies = [_batches(cluster, broker, "same", p) for broker in (0, 1, 2)]
            return copies[0] == copies[1] == copies[2] and sum(len(b) for b in copies[0]) > 0

        _wait(converged, f"replicas of same-{partition} identical")
        # Equal bytes before the ISR says so: a follower slowed past replica.lag.time.max.ms
        # under load rejoins a moment after it has caught up.
        _wait(
            lambda p=partition: sorted(_state(cluster, "same", p)["isr"]) == [0, 1, 2],
            f"the full ISR of same-{partition}",
        )
    records = _read_all(cluster, "same", 3)
    assert len(records) == 3_000


def test_acknowledged_records_survive_repeated_kill_of_the_leader(cluster: Cluster) -> None:
    _create(cluster, "survive", partitions=2, configs={"min.insync.replicas": "2"})
    producer = _producer(cluster)
    acknowledged: dict[bytes, tuple[int, int]] = {}
    errors: list[Any] = []
    stop = threading.Event()

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            acknowledged[message.value()] = (message.partition(), message.offset())
        else:
            errors.append(error)

    def produce() -> None:
        index = 0
        while not stop.is_set():
            producer.produce(
                "survive", f"r-{index}".encode(), partition=index % 2, on_delivery=delivered
            )
            index += 1
            producer.poll(0.002)
        producer.flush(90)

    thread = threading.Thread(target=produce, name="producer")
    thread.start()
    try:
        for _ in range(3):
            count = len(acknowledged)
            _wait(lambda c=count: len(acknowledged) > c + 200, "acknowledgements")
            leader = _state(cluster, "survive", 0)["leader"]
            cluster.kill(leader)
            _wait(
                lambda old=leader: _state(cluster, "survive", 0)["leader"] not in (old, -1),
                "a new leader",
            )
            count = len(acknowledged)
            _wait(lambda c=count: len(acknowledged) > c + 200, "acknowledgements after failover")
            cluster.restart(leader)
            _wait(
                lambda: all(
                    sorted(_state(cluster, "survive", p)["isr"]) == [0, 1, 2] for p in (0, 1)
                ),
                "the restarted broker back in the ISR",
            )
    finally:
        stop.set()
        thread.join(120)
    assert not thread.is_alive()
    records = _read_all(cluster, "survive", 2)
    lost = {v: at for v, at in acknowledged.items() if records.get(at) != v}
    assert lost == {}, f"{len(lost)} of {len(acknowledged)} acknowledged records lost or moved"
    assert len(acknowledged) > 1_200
    # Errors the producer could not retry would show here (a retriable one is retried).
    assert [e for e in errors if not e.retriable()] == []


def test_two_replicas_down_refuse_acks_all_but_not_acks_1(cluster: Cluster) -> None:
    _create(cluster, "quorum", configs={"min.insync.replicas": "2"})
    leader = _state(cluster, "quorum")["leader"]
    for broker in (0, 1, 2):
        if broker != leader:
            cluster.kill(broker)
    _wait(lambda: _state(cluster, "quorum")["isr"] == [leader], "the ISR down to the leader")
    # ZooKeeper is written before the leader hears of it (LeaderAndIsr): wait for the leader's
    # own view, or an acks=all produce in that gap is appended and waits for dead followers.
    address = cluster.brokers[leader].address

    def isr_seen_by_leader() -> list[int]:
        with AdminClient({"bootstrap.servers": address}) as admin:
            return list(admin.describe_topics(["quorum"])["quorum"].partitions[0].isr)

    _wait(lambda: isr_seen_by_leader() == [leader], "the leader's own ISR down to itself")

    outcomes: dict[str, Any] = {}
    for acks in ("all", "1"):
        producer = _producer(cluster, acks=acks, retries=0, **{"message.timeout.ms": 10_000})
        producer.produce(
            "quorum", b"x", partition=0, on_delivery=lambda e, m, a=acks: outcomes.__setitem__(a, e)
        )
        producer.flush(30)
    assert outcomes["all"] is not None
    assert outcomes["all"].code() == ConfluentError.NOT_ENOUGH_REPLICAS
    assert outcomes["1"] is None


def test_a_stopped_follower_leaves_the_isr_and_rejoins(
    zookeeper_chroot: str, tmp_path: Path
) -> None:
    # Sessions outlast the pause: the follower stays registered and only lags.
    settings = {**SETTINGS, "zookeeper.session.timeout.ms": "20000"}
    with Cluster(3, zookeeper_chroot, tmp_path, settings=settings) as cluster:
        cluster.wait_until(lambda: cluster.controller_id() is not None, what="a controller")
        _create(cluster, "lag", configs={"min.insync.replicas": "2"})
        state = _state(cluster, "lag")
        # Not the controller: the leader's ISR shrink goes to the controller (AlterPartition),
        # so a stopped controller commits it only once its ZooKeeper session expires and
        # another broker takes over — and a broker whose session expired stops for good
        # (odradek.broker.app), so it could never rejoin. Which broker wins the election
        # varies with load: that is why this test failed only in the full suite.
        controller = cluster.controller_id()
        follower = next(r for r in (0, 1, 2) if r not in (state["leader"], controller))
        producer = _producer(cluster)
        # Metadata and the leader's connection before the pause: a bootstrap Metadata request
        # that went to the paused broker waited out the whole flush (nothing reached the leader).
        producer.produce("lag", b"warm-up", partition=0)
        assert producer.flush(30) == 0
        cluster.kill(follower, signal.SIGSTOP)
        try:
            for index in range(100):
                producer.produce("lag", f"{index}".encode(), partition=0)
            assert producer.flush(30) == 0  # two replicas are enough
            _wait(lambda: follower not in _state(cluster, "lag")["isr"], "the follower out")
        finally:
            cluster.kill(follower, signal.SIGCONT)
        _wait(lambda: follower in _state(cluster, "lag")["isr"], "the follower back")
        leader = _state(cluster, "lag")["leader"]
        _wait(
            lambda: _batches(cluster, follower, "lag", 0) == _batches(cluster, leader, "lag", 0),
            "the follower caught up",
        )


def test_a_returning_old_leader_truncates_its_divergent_tail(
    zookeeper_chroot: str, tmp_path: Path
) -> None:
    """KIP-101: A leads with B following; B is paused (still in the ISR) while A takes
    records with acks=1 that B never sees; A dies, B leads (a new leader epoch) and takes
    other records at the same offsets; A returns, finds where its epoch ended on B, drops its
    tail and copies B's — both replicas end byte for byte equal."""
    # B's ZooKeeper session outlasts its pause (a slow machine can stretch it to seconds):
    # expired, B would leave the ISR and could not lead once A dies.
    settings = {
        **SETTINGS,
        "replica.lag.time.max.ms": "60000",
        "zookeeper.session.timeout.ms": "10000",
    }
    with Cluster(3, zookeeper_chroot, tmp_path, settings=settings) as cluster:
        cluster.wait_until(lambda: cluster.controller_id() is not None, what="a controller")
        a, b = 0, 1
        _create(cluster, "diverge", replicas=[[a, b]])
        producer = _producer(cluster, acks="all")
        for index in range(5):
            producer.produce("diverge", f"common-{index}".encode(), partition=0)
        assert producer.flush(30) == 0
        _wait(
            lambda: (
                len(_batches(cluster, b, "diverge", 0)) == len(_batches(cluster, a, "diverge", 0))
            ),
            "B caught up",
        )

        cluster.kill(b, signal.SIGSTOP)
        try:
            # A fault schedule, not a wait for a condition: the fetch B had in flight when
            # it stopped comes back (empty) within replica.fetch.wait.max.ms (100 ms), so
            # nothing A takes from here on can reach B.
            time.sleep(1.0)
            # Bootstrapped from A alone: a first Metadata request sent to the paused B would
            # wait out the flush.
            only_a = _producer(
                cluster, acks="1", **{"bootstrap.servers": cluster.brokers[a].address}
            )
            for index in range(3):
                only_a.produce("diverge", f"lost-{index}".encode(), partition=0)
            assert only_a.flush(30) == 0
            cluster.kill(a)
        finally:
            cluster.kill(b, signal.SIGCONT)
        _wait(lambda: _state(cluster, "diverge")["leader"] == b, "B leads", 60)
        assert _state(cluster, "diverge")["leader_epoch"] >= 1

        only_b = _producer(cluster, acks="1")
        for index in range(3):
            only_b.produce("diverge", f"kept-{index}".encode(), partition=0)
        assert only_b.flush(30) == 0

        cluster.restart(a)
        _wait(
            lambda: _batches(cluster, a, "diverge", 0) == _batches(cluster, b, "diverge", 0),
            "A's log equal to B's",
        )
        # Both replicas know the same epochs: B's began at offset 5, where A's tail went.
        checkpoints = [
            (cluster.brokers[broker].log_dir / "diverge-0" / "leader-epoch-checkpoint")
            .read_text()
            .split("\n")
            for broker in (a, b)
        ]
        assert checkpoints[0] == checkpoints[1]
        assert checkpoints[0][2:4] == ["0 0", f"{_state(cluster, 'diverge')['leader_epoch']} 5"]
        values = [v for (_, _), v in sorted(_read_all(cluster, "diverge", 1).items())]
        assert values[:5] == [f"common-{i}".encode() for i in range(5)]
        assert b"lost-0" not in values
        assert values[-3:] == [f"kept-{i}".encode() for i in range(3)]
