"""ACLs in a ZooKeeper cluster: an ACL created through one broker (CreateAcls, written to
``/kafka-acl`` with a change notification) is enforced by another broker, which learns it
from the notification. The admin client picks the broker it sends CreateAcls to, so the
guarded topic has a partition led by each broker and both must refuse the write. Two
``odradek serve`` brokers with the authorizer on and ``allow.everyone.if.no.acl.found=true``
(so the brokers' own ANONYMOUS traffic needs no ACL)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from odradek.testing.cluster import Cluster

from .test_replication_acceptance import SETTINGS, _create

pytestmark = pytest.mark.cluster

ACL_SETTINGS = {
    **SETTINGS,
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}


@pytest.fixture
def cluster(zookeeper_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(2, zookeeper_chroot, tmp_path, settings=ACL_SETTINGS) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


def _produce(address: str, topic: str, partition: int) -> KafkaError | None:
    results: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": address, "message.timeout.ms": 10_000, "retries": 0})
    producer.produce(
        topic, b"v", partition=partition, on_delivery=lambda error, _m: results.append(error)
    )
    producer.flush(15)
    return results[0] if results else KafkaError(KafkaError._TIMED_OUT)


def test_an_acl_created_through_one_broker_is_enforced_by_another(cluster: Cluster) -> None:
    _create(cluster, "guarded", replicas=[[0], [1]], partitions=2)
    address = cluster.bootstrap_servers
    assert [_produce(address, "guarded", p) for p in (0, 1)] == [None, None]
    with AdminClient({"bootstrap.servers": cluster.brokers[0].address}) as admin:
        bindings = [
            AclBinding(
                ResourceType.TOPIC,
                "guarded",
                ResourcePatternType.LITERAL,
                "User:ANONYMOUS",
                "*",
                operation,
                permission,
            )
            for operation, permission in (
                (AclOperation.WRITE, AclPermissionType.DENY),
                (AclOperation.DESCRIBE, AclPermissionType.ALLOW),
            )
        ]
        for future in admin.create_acls(bindings).values():
            future.result(15)
    assert cluster.store.exists("/kafka-acl/Topic/guarded")
    # The broker that did not handle CreateAcls learns the ACL from the change notification.
    deadline = time.monotonic() + 30
    for partition in (0, 1):
        while (error := _produce(address, "guarded", partition)) is None or (
            error.code() != KafkaError.TOPIC_AUTHORIZATION_FAILED
        ):
            assert time.monotonic() < deadline, f"broker {partition} lets the write through"
