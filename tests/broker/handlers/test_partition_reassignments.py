"""AlterPartitionReassignments and ListPartitionReassignments on a single broker (no
``zookeeper.connect``), through kafka-python's admin client: nothing can move, so a target of
this broker alone is accepted as the assignment it already has, any other target is
INVALID_REPLICA_ASSIGNMENT, a cancel NO_REASSIGNMENT_IN_PROGRESS, an unknown partition
UNKNOWN_TOPIC_OR_PARTITION, and the list is empty. (The cluster behaviour is in
tests/cluster/test_reassignment.py.)"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from odradek import Broker
from odradek.client import AdminClient, TopicPartition
from odradek.errors import ErrorCode

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import TopicPartition as KafkaTopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import (
        InvalidReplicationAssignmentError,
        NoReassignmentInProgressError,
        UnknownTopicOrPartitionError,
    )


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config={"broker.id": "3"}) as running:
        yield running


def test_kafka_python_on_a_single_broker(broker: Broker) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, client_id="single")
    try:
        admin.create_topics([NewTopic("alone", 2, 1)])
        here, there = KafkaTopicPartition("alone", 0), KafkaTopicPartition("alone", 1)
        missing = KafkaTopicPartition("alone", 5)
        assert admin.alter_partition_reassignments({here: [3], there: [3, 4], missing: [3]}) == {
            here: None,
            there: InvalidReplicationAssignmentError,
            missing: UnknownTopicOrPartitionError,
        }
        assert admin.alter_partition_reassignments({here: None}) == {
            here: NoReassignmentInProgressError
        }
        assert admin.list_partition_reassignments() == {}
        assert admin.list_partition_reassignments([here]) == {}
    finally:
        admin.close()


def test_our_admin_client_on_a_single_broker(broker: Broker) -> None:
    with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        results = admin.alter_partition_reassignments(
            {TopicPartition("nowhere", 0): [3]}, allow_replication_factor_change=False
        )
        assert results.errors[TopicPartition("nowhere", 0)].error_code is (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )
        assert admin.list_partition_reassignments() == {}
