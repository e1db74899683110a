"""The transaction coordinator fails over: 3 ``odradek serve`` brokers and a real ZooKeeper,
``__transaction_state`` with one partition (so one broker coordinates every id). Two
confluent-kafka transactional producers each leave a transaction open (records written,
not committed); the coordinator's broker is killed with SIGKILL. The new leader of the
partition loads the ids from its replica: the first producer's commit then goes through it,
and the second, never committed, is aborted by it once its ``transaction.timeout.ms`` passed.
A read_committed reader ends up at the end of the log with exactly the committed records."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from odradek.testing.cluster import Cluster

from .test_replication_acceptance import SETTINGS, _create, _state, _wait

pytestmark = pytest.mark.cluster

TXN_SETTINGS = {
    **SETTINGS,
    "transaction.state.log.num.partitions": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}
TOPIC = "txn-failover"


@pytest.fixture
def cluster(zookeeper_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(3, zookeeper_chroot, tmp_path, settings=TXN_SETTINGS) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


def _open_transaction(
    cluster: Cluster, transactional_id: str, prefix: str, timeout_ms: int
) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": timeout_ms,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    for index in range(10):
        producer.produce(TOPIC, value=f"{prefix}-{index}".encode(), partition=0)
    assert producer.flush(60) == 0
    return producer


def _read_committed(cluster: Cluster) -> list[bytes]:
    """Every committed record, once the reader got to the end of the log (which it can
    only once no transaction is open)."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"reader-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        tp = KafkaTopicPartition(TOPIC, 0, 0)
        consumer.assign([tp])
        got: list[bytes] = []
        deadline = time.monotonic() + 90
        while True:
            end = consumer.get_watermark_offsets(tp, timeout=30)[1]
            if consumer.position([tp])[0].offset >= end:
                return got
            assert time.monotonic() < deadline, f"stuck below {end} with {len(got)} records"
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                got.append(message.value())
    finally:
        consumer.close()


def test_a_new_coordinator_completes_one_transaction_and_aborts_the_other(
    cluster: Cluster,
) -> None:
    _create(cluster, TOPIC, partitions=1, configs={"min.insync.replicas": "2"})
    # The failover (a ZooKeeper session to expire, an election, the coordinator's reload) can
    # take longer than the abandoned transaction's 8 s on a slow machine: the committing one
    # must outlive it.
    committing = _open_transaction(cluster, "failover-commit", "kept", timeout_ms=60_000)
    abandoned = _open_transaction(cluster, "failover-abandon", "dropped", timeout_ms=8_000)
    coordinator = _state(cluster, "__transaction_state")["leader"]
    cluster.kill(coordinator)
    _wait(
        lambda: _state(cluster, "__transaction_state")["leader"] not in (coordinator, -1),
        "a new transaction coordinator",
    )
    committing.commit_transaction(60)
    assert _read_committed(cluster) == [f"kept-{i}".encode() for i in range(10)]
    del abandoned  # its transaction was aborted by the new coordinator's timeout
