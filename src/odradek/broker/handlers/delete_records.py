"""DeleteRecords: moves each partition's log start offset up to the requested offset.

Offset -1 means the high watermark. An offset past the high watermark (or below -1) answers
OFFSET_OUT_OF_RANGE; one at or below the current log start offset changes nothing. The answer's
``low_watermark`` is the partition's log start offset afterwards. Consumers and ListOffsets
see the new start at once; segments wholly below it are deleted by the next retention pass,
and the start offset reaches the ``log-start-offset-checkpoint`` at the next checkpoint.

A partition this broker does not hold answers UNKNOWN_TOPIC_OR_PARTITION. With one replica
the high watermark is the log end offset, so nothing waits on followers and ``timeout`` is
not waited on (replication will answer once followers have moved their start too).
"""

from __future__ import annotations

from typing import Any

from odradek._types import TopicPartition
from odradek.broker.auth.checks import TOPIC_DENIED, Op, topic_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._admin import error_of
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.admin_requests import delete_records_body
from odradek.protocol.builder import build_response

API_KEY = ApiKey.DELETE_RECORDS

HIGH_WATERMARK = -1


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = delete_records_body(request)
    topics = []
    for topic in body.topics:
        name = str(topic.name)
        partitions = [
            _delete(ctx, TopicPartition(name, int(p.partition_index)), int(p.offset))
            if topic_allowed(ctx, Op.DELETE, name)
            else {
                "partition_index": p.partition_index,
                "low_watermark": -1,
                "error_code": TOPIC_DENIED,
            }
            for p in topic.partitions
        ]
        topics.append({"name": name, "partitions": partitions})
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, "topics": topics})


def _delete(ctx: BrokerContext, topic_partition: TopicPartition, offset: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "partition_index": topic_partition.partition,
        "low_watermark": -1,
        "error_code": ErrorCode.NONE,
    }
    partition = ctx.replicas.get(topic_partition)
    if partition is None:
        result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return result
    if offset < HIGH_WATERMARK:
        result["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
        return result
    try:
        result["low_watermark"] = partition.delete_records_before(offset)
    except Exception as error:
        result["error_code"], _ = error_of(error, what=f"DeleteRecords of {topic_partition}")
    return result
