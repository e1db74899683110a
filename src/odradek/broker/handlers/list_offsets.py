"""ListOffsets: earliest (-2), latest (-1) or the first offset at or after a timestamp.

"Latest" is the high watermark (what a consumer can read); a timestamp after every record
answers offset -1 and timestamp -1, as Kafka does.
"""

from __future__ import annotations

from typing import Any

from odradek._types import TopicPartition
from odradek.broker.context import BrokerContext
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.requests import list_offsets_body

API_KEY = ApiKey.LIST_OFFSETS

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    topics = []
    for topic in list_offsets_body(request).topics:
        name = str(topic.name)
        partitions = [
            _list_offset(ctx, name, p.partition_index, p.timestamp) for p in topic.partitions
        ]
        topics.append({"name": name, "partitions": partitions})
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, "topics": topics})


def _list_offset(ctx: BrokerContext, topic: str, index: int, timestamp: int) -> dict[str, Any]:
    partition = ctx.replicas.get(TopicPartition(topic, index))
    if partition is None:
        return {"partition_index": index, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    if timestamp == LATEST_TIMESTAMP:
        offset, found_timestamp = partition.high_watermark, -1
    elif timestamp == EARLIEST_TIMESTAMP:
        offset, found_timestamp = partition.log_start_offset, -1
    elif timestamp < 0:
        return {"partition_index": index, "error_code": ErrorCode.INVALID_REQUEST}
    else:
        found = partition.offset_for_timestamp(timestamp)
        if found is None:  # no record at or after it below the high watermark
            offset, found_timestamp = -1, -1
        else:
            offset, found_timestamp = found.offset, found.timestamp
    return {
        "partition_index": index,
        "error_code": ErrorCode.NONE,
        "timestamp": found_timestamp,
        "offset": offset,
        "old_style_offsets": [offset],
    }
