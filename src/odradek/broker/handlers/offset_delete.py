"""OffsetDelete: removes committed offsets of a group (of topics no member subscribes to,
unless the group is Empty)."""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.broker.auth.checks import TOPIC_DENIED, Op, denied_topics, require_group
from odradek.broker.context import BrokerContext
from odradek.broker.group.results import OffsetDeleteResult
from odradek.broker.handlers._groups import runtime
from odradek.broker.handlers._topics import by_topic
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.group_requests import offset_delete_body

API_KEY = ApiKey.OFFSET_DELETE


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = offset_delete_body(request)
    partitions = [
        TopicPartition(str(topic.name), int(p.partition_index))
        for topic in body.topics
        for p in topic.partitions
    ]
    denied = denied_topics(ctx, Op.READ, {tp.topic for tp in partitions})
    refused = [tp for tp in partitions if tp.topic in denied]
    if denied:  # Kafka: READ on each topic; the others are answered, not deleted
        partitions = [tp for tp in partitions if tp.topic not in denied]
    try:
        require_group(ctx, Op.DELETE, str(body.group_id))
        result = await runtime(ctx).run(
            str(body.group_id),
            lambda coordinator, now_ms: coordinator.delete_offsets(
                now_ms, group_id=str(body.group_id), partitions=partitions
            ),
        )
    except KafkaError as error:
        result = OffsetDeleteResult(error.error_code, {})
    assert isinstance(result, OffsetDeleteResult)
    errors = (
        [(tp, result.partitions.get(tp, ErrorCode.NONE)) for tp in partitions]
        + [(tp, TOPIC_DENIED) for tp in refused]
        if result.error_code is ErrorCode.NONE
        else []
    )
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": result.error_code,
            "topics": by_topic(
                errors, lambda index, code: {"partition_index": index, "error_code": code}
            ),
        },
    )
