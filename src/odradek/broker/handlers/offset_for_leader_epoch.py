"""OffsetForLeaderEpoch (v2-v4; KIP-101, KIP-279, KIP-320): where a leader epoch ends in this
broker's log of a partition.

A follower asks its leader, before fetching, where the follower's latest epoch ends in the
leader's log, and truncates its own log there (the divergence point); a consumer asks to detect
a truncated log (KIP-320). Per partition the answer is the leader-epoch cache's
(``LeaderEpochCache.end_offset_for``): the largest epoch at or below the one asked and where it
ends — the log end offset for the leader's latest epoch, otherwise the start offset of the next
epoch — or -1, -1 when the epoch is newer than any this log holds.

Errors per partition: UNKNOWN_TOPIC_OR_PARTITION (not here); FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH (the ``current_leader_epoch`` check, as Fetch does); NOT_LEADER_OR_FOLLOWER
when this broker does not lead it, unless ``replica_id`` is -2 (Kafka's debugging id, which
may read a follower's log; v3+).
"""

from __future__ import annotations

from typing import Any

from odradek._types import TopicPartition
from odradek.broker.auth.checks import TOPIC_DENIED, Op, cluster_allowed, topic_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._leader_epochs import check_leader_epoch
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.admin_requests import (
    OffsetForLeaderPartitionRequest,
    offset_for_leader_epoch_body,
)
from odradek.protocol.builder import build_response

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH
CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = offset_for_leader_epoch_body(request)
    # v2 has no replica_id: its callers are consumers.
    replica_id = int(getattr(request.body, "replica_id", CONSUMER_REPLICA_ID))
    topics = []
    for topic in body.topics:
        name = str(topic.topic)
        partitions = [_end_offset(ctx, name, p, replica_id) for p in topic.partitions]
        topics.append({"topic": name, "partitions": partitions})
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, "topics": topics})


def _end_offset(
    ctx: BrokerContext, topic: str, asked: OffsetForLeaderPartitionRequest, replica_id: int
) -> dict[str, Any]:
    index = int(asked.partition)
    if ctx.authorizer is not None and not (  # Kafka: a follower CLUSTER_ACTION, else DESCRIBE
        cluster_allowed(ctx, Op.CLUSTER_ACTION)
        if replica_id >= 0
        else topic_allowed(ctx, Op.DESCRIBE, topic)
    ):
        return _error(index, TOPIC_DENIED)
    partition = ctx.replicas.get(TopicPartition(topic, index))
    if partition is None:
        return _error(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    code = check_leader_epoch(partition, int(asked.current_leader_epoch))
    if code is not ErrorCode.NONE:
        return _error(index, code)
    if not partition.is_leader and replica_id != DEBUGGING_REPLICA_ID:
        return _error(index, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    found = partition.end_offset_for_epoch(int(asked.leader_epoch))
    return {
        "error_code": ErrorCode.NONE,
        "partition": index,
        "leader_epoch": found.epoch,
        "end_offset": found.end_offset,
    }


def _error(index: int, code: ErrorCode) -> dict[str, Any]:
    return {"error_code": code, "partition": index, "leader_epoch": -1, "end_offset": -1}
