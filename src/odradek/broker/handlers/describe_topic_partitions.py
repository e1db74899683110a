"""DescribeTopicPartitions (API 75, v0; KIP-966): a paginated describe of topics, for admin
clients describing clusters too large for one Metadata response.

Topics come sorted by name — every topic this broker knows when ``topics`` is empty, else the
listed ones (each once) — and their partitions by index; the walk starts at ``cursor`` (its
topic at its partition; a cursor topic that is not among them starts at the next name). At
most ``response_partition_limit`` partitions are answered (capped at Kafka's 2,000; a value
below 1 is taken as the cap too); when some are left, ``next_cursor`` names the first of them,
else it is null. A topic is never split in a way that answers it twice: the partitions of one
topic may span pages, each page carrying the next ones.

Each topic says what Metadata v13 says (``handlers._topic_metadata``): leader, leader epoch,
replicas, ISR and offline replicas per partition, its id and whether it is internal; the
eligible-leader fields of KIP-966 are null (there are no ELRs without KRaft). A listed topic
this broker does not know answers UNKNOWN_TOPIC_OR_PARTITION with no partitions; an illegal
name INVALID_TOPIC_EXCEPTION. Nothing is created. The authorized operations are all of them
(no authorizer).
"""

from __future__ import annotations

from typing import Any

from odradek.broker.auth.checks import TOPIC_DENIED, Op, topic_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._topic_metadata import (
    ZERO_UUID,
    describe_topic,
    topic_names,
    topic_operations,
)
from odradek.controller.assignment import validate_topic_name
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.metadata_response import MetadataPartition

API_KEY = ApiKey.DESCRIBE_TOPIC_PARTITIONS
#: Kafka's ``max.request.partition.size.limit`` default: partitions per response at most.
MAX_PARTITIONS_PER_RESPONSE = 2000


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body: Any = request.body
    limit = int(body.response_partition_limit)
    if not 0 < limit <= MAX_PARTITIONS_PER_RESPONSE:
        limit = MAX_PARTITIONS_PER_RESPONSE
    listed = sorted({str(topic.name) for topic in body.topics})
    # Kafka: DESCRIBE on each topic; unlisted topics it may not describe are not shown.
    names = listed or [n for n in topic_names(ctx) if topic_allowed(ctx, Op.DESCRIBE, n)]
    start_topic: str | None = None
    start_partition = 0
    if body.cursor is not None:
        start_topic = str(body.cursor.topic_name)
        start_partition = max(0, int(body.cursor.partition_index))
        names = [name for name in names if name >= start_topic]
    operations = topic_operations(True)
    topics: list[dict[str, Any]] = []
    next_cursor: dict[str, Any] | None = None
    budget = limit
    for name in names:
        if budget == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        described = _describe(ctx, name, operations)
        partitions: list[MetadataPartition] = list(described["partitions"])
        if name == start_topic:
            partitions = [p for p in partitions if p.partition_index >= start_partition]
        if len(partitions) > budget:
            rest = partitions[budget]
            next_cursor = {"topic_name": name, "partition_index": rest.partition_index}
            partitions = partitions[:budget]
        budget -= len(partitions)
        described["partitions"] = [_partition(p) for p in partitions]
        topics.append(described)
        if next_cursor is not None:
            break
    fields = {"throttle_time": 0, "topics": topics, "next_cursor": next_cursor}
    return build_response(API_KEY, request.api_version, fields)


def _describe(ctx: BrokerContext, name: str, operations: int) -> dict[str, Any]:
    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    try:
        if not topic_allowed(ctx, Op.DESCRIBE, name):
            raise KafkaError(name, code=TOPIC_DENIED)  # answered whether it exists or not
        validate_topic_name(name)
    except KafkaError as invalid:
        error = invalid.error_code
    else:
        described = describe_topic(ctx, name, with_id=True, operations=operations)
        if described is not None:
            return {
                "error_code": described.error_code,
                "name": name,
                "topic_id": described.topic_id,
                "is_internal": described.is_internal,
                "partitions": described.partitions,
                "topic_authorized_operations": operations,
            }
    return {
        "error_code": error,
        "name": name,
        "topic_id": ZERO_UUID,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": operations,
    }


def _partition(partition: MetadataPartition) -> dict[str, Any]:
    return {
        "error_code": partition.error_code,
        "partition_index": partition.partition_index,
        "leader_id": partition.leader_id,
        "leader_epoch": partition.leader_epoch,
        "replica_nodes": list(partition.replica_nodes),
        "isr_nodes": list(partition.isr_nodes),
        "eligible_leader_replicas": None,
        "last_known_elr": None,
        "offline_replicas": list(partition.offline_replicas),
    }
