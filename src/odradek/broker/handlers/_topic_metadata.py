"""What Metadata and DescribeTopicPartitions say about one topic: its partitions (leader,
leader epoch, replicas, ISR, offline replicas), whether it is internal, its id and the
operations allowed on it.

On a single broker the topic manager describes the topics this broker serves; in a cluster
the metadata cache, the controller's view, describes every topic (a partition without a
leader answers LEADER_NOT_AVAILABLE; one whose live leader has no endpoint on the listener the
client came through answers LISTENER_NOT_FOUND — LEADER_NOT_AVAILABLE before Metadata v6 —
with no leader, as Kafka does, so a misconfigured listener is named instead of hidden).
Topic ids (KIP-516) are the store's (``/brokers/topics/<t>``'s ``topic_id``, read once per
topic by the topic manager); a topic written without one has the zero UUID, as Kafka answers
for topics made before 2.8. Nothing here creates a topic.

Without an authorizer every operation is allowed: a request that asks for the authorized
operations gets every operation Kafka defines on a topic, as Kafka answers without one.
"""

from __future__ import annotations

import base64
import functools
import uuid
import weakref

from odradek.broker.auth.acls import ResourceType
from odradek.broker.auth.checks import allowed_operations
from odradek.broker.context import CLIENT_LISTENER, BrokerContext
from odradek.broker.metadata_cache import MetadataCache, PartitionMetadata
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
    return _decoded(text)


@functools.lru_cache(maxsize=65536)
def _decoded(text: str) -> uuid.UUID:
    """A stored id (22 characters of URL-safe base64, as Kafka writes it) as a UUID."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


#: Topic names by id, per topic manager: Fetch v13+ looks one up per topic per request.
#: An entry is checked against the topic's current id before it is used, and the map is
#: built again on a miss (a topic created, deleted or created again).
_names_by_id: weakref.WeakKeyDictionary[object, dict[uuid.UUID, str]] = weakref.WeakKeyDictionary()


def topic_names(ctx: BrokerContext) -> list[str]:
    """Every topic this broker can describe, sorted."""
    if ctx.cluster is not None:
        return ctx.cluster.cache.topic_names()
    return ctx.topics.topic_names()


def topic_exists(ctx: BrokerContext, name: str) -> bool:
    """Whether this broker knows the topic (the metadata cache's view in a cluster)."""
    if ctx.cluster is not None:
        return ctx.cluster.cache.has_topic(name)
    return ctx.topics.exists(name)


def find_topic(ctx: BrokerContext, topic_id: uuid.UUID) -> str | None:
    """The name of the topic with this id (``None``: no such topic, or the zero UUID)."""
    if topic_id == ZERO_UUID:
        return None
    names = _names_by_id.get(ctx.topics)
    if names is None:
        names = _names_by_id[ctx.topics] = {}
    name = names.get(topic_id)
    if name is not None and topic_id_of(ctx, name) == topic_id:
        return name
    names.clear()
    for name in topic_names(ctx):
        known = topic_id_of(ctx, name)
        if known != ZERO_UUID:
            names[known] = name
    return names.get(topic_id)


def describe_topic(
    ctx: BrokerContext,
    name: str,
    *,
    with_id: bool = False,
    operations: int = -(2**31),
    listener_not_found: ErrorCode = ErrorCode.LISTENER_NOT_FOUND,
) -> MetadataTopic | None:
    """The topic as this broker knows it (``None``: unknown here).

    Args:
        with_id: look its id up (Metadata v10+, DescribeTopicPartitions).
        operations: the ``topic_authorized_operations`` to answer.
        listener_not_found: the error of a partition whose live leader has no endpoint on
            the client's listener (Metadata before v6 answers LEADER_NOT_AVAILABLE).
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
        listener = CLIENT_LISTENER.get()
        partitions = [
            _cluster_partition(cluster.cache, state, listener, listener_not_found)
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


def _cluster_partition(
    cache: MetadataCache,
    state: PartitionMetadata,
    listener: str | None,
    listener_not_found: ErrorCode,
) -> MetadataPartition:
    error, leader = ErrorCode.NONE, state.leader
    if leader < 0:
        error = ErrorCode.LEADER_NOT_AVAILABLE
    elif (
        listener is not None
        and cache.broker(leader, listener) is None
        and cache.broker(leader) is not None
    ):
        error, leader = listener_not_found, -1
    return MetadataPartition(
        error,
        state.partition,
        leader,
        state.leader_epoch,
        state.replicas,
        state.isr,
        state.offline_replicas,
    )
