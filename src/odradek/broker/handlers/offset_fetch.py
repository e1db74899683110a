"""OffsetFetch: a group's committed offsets (-1 where none), served from the coordinator's
memory.

Versions: v1 names its partitions and has no group-level error (a coordinator error is put
on every partition); v2+ may ask for every committed offset (topics null) and report a
group-level error; v5 adds the leader epoch; v8+ (KIP-709) ask for several groups at once,
each answered on its own (one group's coordinator error does not touch the others); v9's
member id and epoch belong to KIP-848 consumer groups and are not checked for classic groups;
v10 (Kafka 4.2) names topics by id, in the request and the answer: an id this broker does not
know answers UNKNOWN_TOPIC_ID for its partitions, and when every offset is asked for, those of
a topic that no longer exists (no id to name it by) are left out.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from odradek._types import TopicPartition
from odradek.broker.auth.checks import TOPIC_DENIED, Op, denied_topics, require_group
from odradek.broker.context import BrokerContext
from odradek.broker.group.results import FetchedOffset
from odradek.broker.handlers._groups import optional, runtime
from odradek.broker.handlers._topic_metadata import ZERO_UUID, find_topic, topic_id_of
from odradek.broker.handlers._topics import by_topic
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response, has_field
from odradek.protocol.group_requests import offset_fetch_body

API_KEY = ApiKey.OFFSET_FETCH
#: The first version naming topics by id (Kafka 4.2's OffsetFetch v10).
_TOPIC_IDS: Final = 10


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body: Any = offset_fetch_body(request)
    if has_field(body, "groups"):  # v8+: a batch of groups
        groups = [
            {
                "group_id": str(group.group_id),
                **await _fetch(
                    ctx,
                    request.api_version,
                    str(group.group_id),
                    group.topics,
                    optional(group, "member_id"),
                    int(optional(group, "member_epoch", -1)),
                ),
            }
            for group in body.groups
        ]
        return build_response(API_KEY, request.api_version, {"throttle_time": 0, "groups": groups})
    answer = await _fetch(ctx, request.api_version, str(body.group_id), body.topics)
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, **answer})


async def _fetch(
    ctx: BrokerContext,
    version: int,
    group_id: str,
    topics: Any,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> dict[str, Any]:
    """One group's ``error_code`` and ``topics``, as the response nests them (v9+: the
    consumer group member asking, checked against its epoch — STALE_MEMBER_EPOCH; v10:
    topics by id)."""
    by_id = version >= _TOPIC_IDS
    unknown_ids: list[dict[str, Any]] = []
    requested: list[TopicPartition] | None = None
    if topics is not None:
        requested = []
        for topic in topics:
            name = str(optional(topic, "name")) if not by_id else _name(ctx, topic)
            if name is None:
                unknown_ids.append(_unknown_id(optional(topic, "topic_id"), topic))
                continue
            requested.extend(TopicPartition(name, int(i)) for i in topic.partition_indexes)
    error_code = ErrorCode.NONE
    try:
        require_group(ctx, Op.DESCRIBE, group_id)
        result = await runtime(ctx).run(
            group_id,
            lambda coordinator, _now_ms: coordinator.fetch_offsets(
                group_id, requested, member_id=member_id, member_epoch=member_epoch
            ),
        )
        error_code = result.error_code
        offsets = list(result.partitions.items())
    except KafkaError as error:
        error_code = error.error_code
        failed = FetchedOffset(-1, error_code=error_code)
        offsets = [(tp, failed) for tp in requested or ()]
    if denied := denied_topics(ctx, Op.DESCRIBE, {tp.topic for tp, _ in offsets}):
        # Named topics are answered TOPIC_AUTHORIZATION_FAILED; unnamed ones are not listed.
        hidden = FetchedOffset(-1, error_code=TOPIC_DENIED)
        offsets = [
            (tp, hidden if tp.topic in denied else fetched)
            for tp, fetched in offsets
            if requested is not None or tp.topic not in denied
        ]
    if version < 2 and error_code is not ErrorCode.NONE:
        failed = FetchedOffset(-1, error_code=error_code)
        offsets = [(tp, failed) for tp, _ in offsets]
    answered = by_topic(
        offsets,
        lambda index, fetched: {
            "partition_index": index,
            "committed_offset": fetched.committed_offset,
            "committed_leader_epoch": fetched.committed_leader_epoch,
            "metadata": fetched.metadata,
            "error_code": fetched.error_code,
        },
    )
    if by_id:
        for entry in answered:
            entry["topic_id"] = topic_id_of(ctx, entry["name"])
        # A deleted topic's offsets have no id to be named by (asked for by id, it is unknown).
        answered = [entry for entry in answered if entry["topic_id"] != ZERO_UUID]
        answered.extend(unknown_ids)
    return {"error_code": error_code, "topics": answered}


def _name(ctx: BrokerContext, topic: Any) -> str | None:
    topic_id = optional(topic, "topic_id")
    return None if topic_id is None else find_topic(ctx, topic_id)


def _unknown_id(topic_id: uuid.UUID | None, topic: Any) -> dict[str, Any]:
    return {
        "topic_id": topic_id,
        "partitions": [
            {
                "partition_index": int(index),
                "committed_offset": -1,
                "committed_leader_epoch": -1,
                "metadata": None,
                "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
            }
            for index in topic.partition_indexes
        ],
    }
