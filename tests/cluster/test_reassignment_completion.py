"""A reassignment that adds replicas completes once they caught up (KIP-455's whole path):
the new replicas fetch from the leader and join the ISR (AlterPartition), the controller
switches the replicas to the target, the new leader serves every record written before, and
the removed replica's log is deleted.

Needs follower replication and the ISR's growth (AlterPartition → the controller's
``_on_isr_changed``), which come with the replication branches: before they are merged the
new replicas never join the ISR and this test times out waiting for the completion.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator

import pytest
from tests._blocking_connection import BlockingConnection

from odradek.client import AdminClient, NewTopic
from odradek.protocol import ApiKey
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KafkaTopicPartition
    from kafka.admin import KafkaAdminClient

pytestmark = pytest.mark.cluster

TOPIC = "relocated"
RECORDS = 50
WAIT_S = 90.0


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperEnsemble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    chroot = f"{zookeeper.connect_string}/c-{uuid.uuid4().hex[:12]}"
    with Cluster(3, chroot, tmp_path_factory.mktemp("cluster")) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


def _replicas_on(cluster: Cluster, broker_id: int) -> tuple[int, list[int]]:
    """(leader, replicas) of the partition as broker ``broker_id`` answers Metadata."""
    with BlockingConnection(cluster.brokers[broker_id].address) as connection:
        body = connection.request(ApiKey.METADATA, 1, {"topics": [{"name": TOPIC}]})
    (partition,) = body["topics"][0]["partitions"]
    return int(partition["leader_id"]), [int(r) for r in partition["replica_nodes"]]


def test_added_replicas_catch_up_and_the_reassignment_completes(cluster: Cluster) -> None:
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(TOPIC, replica_assignment={0: [0]})]).all()
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks=1)
    try:
        for i in range(RECORDS):
            producer.send(TOPIC, f"record-{i}".encode(), partition=0)
        producer.flush(timeout=30)
    finally:
        producer.close()
    old_log = cluster.brokers[0].log_dir / f"{TOPIC}-0"
    assert old_log.is_dir()

    tp = KafkaTopicPartition(TOPIC, 0)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="complete")
    try:
        assert admin.alter_partition_reassignments({tp: [1, 2]}) == {tp: None}
        cluster.wait_until(
            lambda: admin.list_partition_reassignments() == {},
            timeout_s=WAIT_S,
            what="the reassignment to complete (brokers 1 and 2 must join the ISR)",
        )
    finally:
        admin.close()

    for broker_id in cluster.brokers:
        cluster.wait_until(
            lambda b=broker_id: _replicas_on(cluster, b)[1] == [1, 2],
            timeout_s=WAIT_S,
            what=f"replicas [1, 2] in broker {broker_id}'s metadata",
        )
    assert _replicas_on(cluster, 0)[0] in (1, 2)
    cluster.wait_until(
        lambda: not old_log.exists(), timeout_s=WAIT_S, what="broker 0's log deleted"
    )

    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=10_000,
    )
    try:
        consumer.assign([tp])
        values = [message.value for message in consumer]
    finally:
        consumer.close()
    assert values == [f"record-{i}".encode() for i in range(RECORDS)]
