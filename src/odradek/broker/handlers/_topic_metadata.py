"""What Metadata and DescribeTopicPartitions say about one topic: its partitions (leader,
leader epoch, replicas, ISR, offline replicas), whether it is internal, its id and the
operations allowed on it.

On a single broker the topic manager describes the topics this broker serves; in a cluster
the metadata cache, the controller's view, describes every topic (a partition without a
leader answers LEADER_NOT_AVAILABLE). Topic ids (KIP-516) are the store's (``/brokers/topics/
<t>``'s ``topic_id``, read once per topic by the topic manager); a topic written without one
has the zero UUID, as Kafka answers for topics made before 2.8. Nothing here creates a topic.

Without an authorizer every operation is allowed: a request that asks for the authorized
operations gets every operation Kafka defines on a topic, as Kafka answers without one.
"""

from __future__ import annotations

import base64
import uuid

from odradek.broker.auth.acls import ResourceType
from odradek.broker.auth.checks import allowed_operations
from odradek.broker.context import BrokerContext
from odradek.errors import ErrorCode
from odradek.protocol.metadata_response import (
    AUTHORIZED_OPERATIONS_OMITTED,
    MetadataPartition,
    MetadataTopic,
)

ZERO_UUID = uuid.UUID(int=0)
#: Kafka's ``AclOperation`` codes on a topic: READ (3), WRITE (4), CREATE (5), DELETE (6),
#: ALTER (7), DESCRIBE (8), DESCRIBE_CONFIGS (10), ALTER_CONFIGS (11).
TOPIC_OPERATIONS = (3, 4, 5, 6, 7, 8, 10, 11)
ALL_TOPIC_OPERATIONS = sum(1 << operation for operation in TOPIC_OPERATIONS)


def topic_operations(requested: bool) -> int:
    """The ``topic_authorized_operations`` bitfield to answer."""
    return ALL_TOPIC_OPERATIONS if requested else AUTHORIZED_OPERATIONS_OMITTED


def topic_id_of(ctx: BrokerContext, topic: str) -> uuid.UUID:
    """The topic's id (the zero UUID for a topic without one)."""
    text = ctx.topics.topic_id(topic)
    if text is None:
        return ZERO_UUID
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def topic_names(ctx: BrokerContext) -> list[str]:
    """Every topic this broker can describe, sorted."""
    if ctx.cluster is not None:
        return ctx.cluster.cache.topic_names()
    return ctx.topics.topic_names()


def find_topic(ctx: BrokerContext, topic_id: uuid.UUID) -> str | None:
    """The name of the topic with this id (``None``: no such topic, or the zero UUID)."""
    if topic_id == ZERO_UUID:
        return None
    for name in topic_names(ctx):
        if topic_id_of(ctx, name) == topic_id:
            return name
    return None


def describe_topic(
    ctx: BrokerContext, name: str, *, with_id: bool = False, operations: int = -(2**31)
) -> MetadataTopic | None:
    """The topic as this broker knows it (``None``: unknown here).

    Args:
        with_id: look its id up (Metadata v10+, DescribeTopicPartitions).
        operations: the ``topic_authorized_operations`` to answer.
    """
    cluster = ctx.cluster
    partitions: list[MetadataPartition]
    if cluster is None:
        if not ctx.topics.exists(name):
            return None
        partitions = [
            MetadataPartition(
                ErrorCode.NONE,
                info.partition,
                info.leader,
                info.leader_epoch,
                info.replicas,
                info.isr,
            )
            for info in ctx.topics.describe(name)
        ]
    else:
        states = cluster.cache.partitions(name)
        if not states:
            return None
        partitions = [
            MetadataPartition(
                ErrorCode.NONE if state.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                state.partition,
                state.leader,
                state.leader_epoch,
                state.replicas,
                state.isr,
                state.offline_replicas,
            )
            for state in states
        ]
    if operations == ALL_TOPIC_OPERATIONS and ctx.authorizer is not None:
        operations = allowed_operations(ctx, ResourceType.TOPIC, name, TOPIC_OPERATIONS)
    return MetadataTopic(
        ErrorCode.NONE,
        name,
        ctx.topics.is_internal(name),
        partitions,
        operations,
        topic_id_of(ctx, name) if with_id else None,
    )
