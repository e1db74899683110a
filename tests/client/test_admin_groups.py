"""``client.admin_groups``: the AdminClient group calls against an embedded broker, with real
groups made by a kafka-python group consumer: list, describe (members, decoded assignments),
committed offsets, altering them only while the group is Empty, deleting offsets and groups
(NON_EMPTY_GROUP while a member is active)."""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Iterator

import pytest

from odradek import Broker
from odradek._types import TopicPartition
from odradek.client.admin import AdminClient
from odradek.client.admin_groups import OffsetAndMetadata
from odradek.client.admin_types import NewTopic
from odradek.errors import ErrorCode, KafkaError
from odradek.records.record import SimpleRecord

from .conftest import Produce

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition
    from kafka.structs import OffsetAndMetadata as KafkaOffsetAndMetadata

pytestmark = pytest.mark.interop

GROUP_BROKER_CONFIG = {"offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0"}
TIMEOUT_S = 30.0


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(config=GROUP_BROKER_CONFIG) as started:
        yield started


@pytest.fixture
def admin(broker: Broker) -> Iterator[AdminClient]:
    client = AdminClient({"bootstrap.servers": broker.bootstrap_servers}, client_id="t")
    yield client
    client.close()


def joined_consumer(broker: Broker, topic: str, group: str) -> KafkaConsumer:
    """A kafka-python group consumer that has joined ``group`` and owns partitions of
    ``topic`` (polled until its assignment arrives, within a deadline)."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap_servers,
        group_id=group,
        client_id="kp-member",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    deadline = time.monotonic() + TIMEOUT_S
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the consumer never got an assignment"
        # Not shorter: kafka-python 3.0 can drop the assignment for good when a poll's timer
        # runs out while the completed join is applied (seen on a loaded machine).
        consumer.poll(timeout_ms=2000)
    return consumer


def seed(admin: AdminClient, produce: Produce, topic: str, counts: list[int]) -> None:
    admin.create_topics([NewTopic(topic, len(counts), 1)]).all()
    for partition, count in enumerate(counts):
        if count:
            produce(topic, partition, [SimpleRecord(1_000 + i, b"k", b"v") for i in range(count)])


def test_list_describe_offsets_alter_and_delete(
    broker: Broker, admin: AdminClient, produce: Produce
) -> None:
    topic, group = "orders", f"g-{uuid.uuid4().hex[:8]}"
    seed(admin, produce, topic, [5, 3])
    consumer = joined_consumer(broker, topic, group)
    try:
        consumer.commit(
            {
                KafkaTopicPartition(topic, 0): KafkaOffsetAndMetadata(2, "m", -1),
                KafkaTopicPartition(topic, 1): KafkaOffsetAndMetadata(3, None, -1),
            }
        )
        listed = {g.group_id: g for g in admin.list_groups()}
        assert listed[group].protocol_type == "consumer"
        assert listed[group].is_consumer_group

        description = admin.describe_groups([group])[group]
        assert description.state == "Stable"
        assert description.protocol_type == "consumer"
        assert description.protocol in ("range", "roundrobin")
        [member] = description.members
        assert member.client_id == "kp-member"
        # The broker does not record the member's address yet (join_group: client_host "").
        assert member.host.strip("/") in ("", "127.0.0.1")
        assert sorted(member.assignment, key=lambda tp: tp.partition) == [
            TopicPartition(topic, 0),
            TopicPartition(topic, 1),
        ]
        assert description.coordinator is not None
        assert description.coordinator.port == broker.port

        offsets = admin.list_group_offsets(group)
        assert offsets.all() == {
            TopicPartition(topic, 0): OffsetAndMetadata(2, "m"),
            TopicPartition(topic, 1): OffsetAndMetadata(3, ""),
        } or offsets.all() == {
            TopicPartition(topic, 0): OffsetAndMetadata(2, "m"),
            TopicPartition(topic, 1): OffsetAndMetadata(3, None),
        }
        # A partition without a commit is None; the named partitions only.
        assert admin.list_group_offsets(group, [TopicPartition(topic, 1)]).all() == {
            TopicPartition(topic, 1): offsets[TopicPartition(topic, 1)]
        }

        # Active group: no commits from outside, no deletion.
        refused = admin.alter_group_offsets(group, {TopicPartition(topic, 0): 0})
        with pytest.raises(KafkaError) as raised:
            refused[TopicPartition(topic, 0)]
        assert raised.value.error_code in (
            ErrorCode.ILLEGAL_GENERATION,
            ErrorCode.UNKNOWN_MEMBER_ID,
        )
        with pytest.raises(KafkaError) as raised:
            admin.delete_groups([group])[group]
        assert raised.value.error_code is ErrorCode.NON_EMPTY_GROUP
    finally:
        consumer.close()

    assert admin.describe_groups([group])[group].state == "Empty"
    assert admin.describe_groups([group])[group].members == ()
    altered = admin.alter_group_offsets(
        group, {TopicPartition(topic, 0): 4, TopicPartition(topic, 1): OffsetAndMetadata(1, "x")}
    )
    assert altered.all() == {TopicPartition(topic, 0): None, TopicPartition(topic, 1): None}
    assert {tp: o.offset for tp, o in admin.list_group_offsets(group).all().items() if o} == {
        TopicPartition(topic, 0): 4,
        TopicPartition(topic, 1): 1,
    }
    # kafka-python sees the same commits.
    reader = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=group)
    try:
        assert reader.committed(KafkaTopicPartition(topic, 0)) == 4
        assert reader.committed(KafkaTopicPartition(topic, 1)) == 1
    finally:
        reader.close()

    deleted = admin.delete_group_offsets(group, [TopicPartition(topic, 1)])
    assert deleted.all() == {TopicPartition(topic, 1): None}
    assert admin.list_group_offsets(group, [TopicPartition(topic, 1)]).all() == {
        TopicPartition(topic, 1): None
    }

    assert admin.delete_groups([group]).all() == {group: None}
    assert group not in {g.group_id for g in admin.list_groups()}
    with pytest.raises(KafkaError) as raised:
        admin.delete_groups([group])[group]
    assert raised.value.error_code is ErrorCode.GROUP_ID_NOT_FOUND


def test_unknown_group_is_dead_and_has_no_offsets(admin: AdminClient) -> None:
    description = admin.describe_groups(["nobody"])["nobody"]
    assert (description.state, description.members) == ("Dead", ())
    assert admin.list_group_offsets("nobody").all() == {}
    assert admin.list_group_offsets("nobody", [TopicPartition("t", 0)]).all() == {
        TopicPartition("t", 0): None
    }


def test_list_groups_of_an_idle_cluster_is_empty(admin: AdminClient) -> None:
    assert admin.list_groups() == []
