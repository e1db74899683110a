"""OffsetCommit: stores a group's committed offsets (the next offset to read), acknowledged
once appended to ``__consumer_offsets``.

Versions: v2-v4 carry a retention time (-1: the broker's); v6 a leader epoch per partition;
v7 ``group.instance.id``. A generation of -1 commits from outside any group (an Empty or
unknown group only). A coordinator error is every partition's error.
"""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.broker.auth.checks import TOPIC_DENIED, Op, denied_topics, require_group
from odradek.broker.context import BrokerContext
from odradek.broker.group.results import OffsetCommitPartition
from odradek.broker.handlers._groups import optional, runtime
from odradek.broker.handlers._topics import by_topic
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response, request_value
from odradek.protocol.group_requests import offset_commit_body

API_KEY = ApiKey.OFFSET_COMMIT


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = offset_commit_body(request)
    partitions = [
        OffsetCommitPartition(
            str(topic.name),
            int(p.partition_index),
            int(p.committed_offset),
            int(optional(p, "committed_leader_epoch", -1)),
            None if p.committed_metadata is None else str(p.committed_metadata),
        )
        for topic in body.topics
        for p in topic.partitions
    ]
    retention = optional(body, "retention_time", -1)
    denied = denied_topics(ctx, Op.READ, {p.topic for p in partitions})
    committed = [p for p in partitions if p.topic not in denied] if denied else partitions
    try:
        require_group(ctx, Op.READ, str(body.group_id))
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
        errors = [
            (tp, TOPIC_DENIED if tp.topic in denied else result.partitions.get(tp, ErrorCode.NONE))
            for tp in (TopicPartition(p.topic, p.partition) for p in partitions)
        ]
    except KafkaError as error:
        errors = [(TopicPartition(p.topic, p.partition), error.error_code) for p in partitions]
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "topics": by_topic(
                errors, lambda index, code: {"partition_index": index, "error_code": code}
            ),
        },
    )
