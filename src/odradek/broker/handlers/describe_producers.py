"""DescribeProducers: the producers a partition led here knows (KIP-664): each one's id,
epoch, last sequence, last timestamp and the first offset of its open transaction (-1 when
none); what ``kafka-transactions.sh find-hanging`` reads. A partition not led here answers
NOT_LEADER_OR_FOLLOWER, an unknown one UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

from typing import Any

from odradek._types import TopicPartition
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._txn import body_of
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.DESCRIBE_PRODUCERS


def _partition(ctx: BrokerContext, topic: str, index: int) -> dict[str, Any]:
    partition = ctx.replicas.get(TopicPartition(topic, index))
    code = ErrorCode.NONE
    if partition is None:
        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    elif not partition.is_leader:
        code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    if partition is None or code is not ErrorCode.NONE:
        return {
            "partition_index": index,
            "error_code": code,
            "error_message": None,
            "active_producers": [],
        }
    producers = [
        {
            "producer_id": producer_id,
            "producer_epoch": epoch,
            "last_sequence": last_sequence,
            "last_timestamp": last_timestamp,
            "coordinator_epoch": -1,
            "current_txn_start_offset": txn_start,
        }
        for producer_id, epoch, last_sequence, last_timestamp, txn_start in (
            partition.active_producers()
        )
    ]
    return {
        "partition_index": index,
        "error_code": code,
        "error_message": None,
        "active_producers": producers,
    }


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = body_of(request)
    topics = [
        {
            "name": str(topic.name),
            "partitions": [
                _partition(ctx, str(topic.name), int(i)) for i in topic.partition_indexes
            ],
        }
        for topic in body.topics
    ]
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, "topics": topics})
