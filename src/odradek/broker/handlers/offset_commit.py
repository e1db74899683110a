"""OffsetCommit: stores a group's committed offsets (the next offset to read), acknowledged
once appended to ``__consumer_offsets``.

Versions: v2-v4 carry a retention time (-1: the broker's); v6 a leader epoch per partition;
v7 ``group.instance.id``; v10 (Kafka 4.1) names topics by id, in the request and the answer:
an id this broker does not know answers UNKNOWN_TOPIC_ID. A generation of -1 commits from
outside any group (an Empty or unknown group only). A coordinator error is every partition's
error. A partition of a topic this broker does not know answers UNKNOWN_TOPIC_OR_PARTITION
and is not committed, as Kafka's ``handleOffsetCommitRequest`` does (the metadata cache
decides, before the coordinator).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Final

from odradek._types import TopicPartition
from odradek.broker.auth.checks import TOPIC_DENIED, Op, denied_topics, require_group
from odradek.broker.context import BrokerContext
from odradek.broker.group.results import OffsetCommitPartition
from odradek.broker.handlers._groups import optional, runtime
from odradek.broker.handlers._topic_metadata import find_topic, topic_exists
from odradek.broker.handlers._topics import by_topic
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response, request_value
from odradek.protocol.group_requests import offset_commit_body

API_KEY = ApiKey.OFFSET_COMMIT
#: The first version naming topics by id (KIP-848's OffsetCommit v10).
_TOPIC_IDS: Final = 10


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = offset_commit_body(request)
    by_id = request.api_version >= _TOPIC_IDS
    topic_ids: dict[str, uuid.UUID] = {}
    unknown_ids: list[dict[str, Any]] = []
    topics: list[tuple[str, Sequence[Any]]] = []
    for topic in body.topics:
        if not by_id:
            topics.append((str(optional(topic, "name")), topic.partitions))
            continue
        topic_id = optional(topic, "topic_id")
        name = None if topic_id is None else find_topic(ctx, topic_id)
        if name is None:
            unknown_ids.append(_unknown_id(topic_id, topic.partitions))
        else:
            topic_ids[name] = topic_id
            topics.append((name, topic.partitions))
    unknown = {name for name, _ in topics if not topic_exists(ctx, name)}
    requested = [
        OffsetCommitPartition(
            name,
            int(p.partition_index),
            int(p.committed_offset),
            int(optional(p, "committed_leader_epoch", -1)),
            None if p.committed_metadata is None else str(p.committed_metadata),
        )
        for name, partitions in topics
        for p in partitions
    ]
    partitions = [p for p in requested if p.topic not in unknown]
    retention = optional(body, "retention_time", -1)
    denied = denied_topics(ctx, Op.READ, {p.topic for p in partitions})
    committed = [p for p in partitions if p.topic not in denied] if denied else partitions
    errors: list[tuple[TopicPartition, ErrorCode]]
    try:
        require_group(ctx, Op.READ, str(body.group_id))
        if requested and not partitions:
            raise KafkaError("no known topic", code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        result = await runtime(ctx).run(
            str(body.group_id),
            lambda coordinator, now_ms: coordinator.commit_offsets(
                now_ms,
                group_id=str(body.group_id),
                generation_id=int(body.generation_id_or_member_epoch),
                member_id=str(body.member_id),
                group_instance_id=optional(body, "group_instance_id"),
                partitions=committed,
                retention_time_ms=int(request_value(retention)),
            ),
        )
        outcome = dict(result.partitions)
        errors = [
            (
                tp,
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if tp.topic in unknown
                else TOPIC_DENIED
                if tp.topic in denied
                else outcome.get(tp, ErrorCode.NONE),
            )
            for tp in (TopicPartition(p.topic, p.partition) for p in requested)
        ]
    except KafkaError as error:
        errors = [
            (
                TopicPartition(p.topic, p.partition),
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if p.topic in unknown else error.error_code,
            )
            for p in requested
        ]
    answered = by_topic(errors, lambda index, code: {"partition_index": index, "error_code": code})
    if by_id:
        for entry in answered:
            entry["topic_id"] = topic_ids[entry["name"]]
        answered.extend(unknown_ids)
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, "topics": answered})


def _unknown_id(topic_id: uuid.UUID | None, partitions: Sequence[Any]) -> dict[str, Any]:
    return {
        "topic_id": topic_id,
        "partitions": [
            {"partition_index": int(p.partition_index), "error_code": ErrorCode.UNKNOWN_TOPIC_ID}
            for p in partitions
        ],
    }
