"""What the group coordinator client sends and how it reads the answers, as values: the
error classes of group responses, JoinGroup's protocol list (one consumer-protocol
subscription per assignor) and OffsetCommit's body. ``coordinator.py`` keeps the state and
the flow."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from odradek._types import TopicPartition
from odradek.client.assignors import (
    CONSUMER_PROTOCOL_TYPE,
    Assignor,
    Subscription,
    encode_subscription,
    subscription_user_data,
)
from odradek.client.consumer.record import OffsetAndMetadata
from odradek.errors import ErrorCode, error_for_code

#: Errors that mean the coordinator moved or is unreachable: find it again.
COORDINATOR_ERRORS: Final = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)
#: JoinGroup errors answered by joining again.
RETRY_JOIN: Final = frozenset(
    {ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
)
#: Errors that end this member's generation: rejoin as a new member.
GENERATION_GONE: Final = frozenset(
    {ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID}
)

log = logging.getLogger(__name__)


def join_protocols(
    assignors: Sequence[Assignor],
    topics: Sequence[str],
    owned: list[TopicPartition],
    generation: int,
    rack: str | None,
) -> list[dict[str, Any]]:
    """JoinGroup's ``protocols``: each assignor's name with the subscription it sends, in
    preference order."""
    return [
        {
            "name": assignor.name(),
            "metadata": encode_subscription(
                Subscription(
                    topics,
                    subscription_user_data(assignor, owned, generation),
                    owned,
                    generation,
                    rack,
                )
            ),
        }
        for assignor in assignors
    ]


def offset_commit_fields(
    group_id: str,
    generation: int,
    member_id: str,
    instance_id: str | None,
    offsets: Mapping[TopicPartition, OffsetAndMetadata],
) -> dict[str, Any]:
    """OffsetCommit's body for ``offsets`` (grouped by topic; broker-side retention)."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, value in offsets.items():
        topics.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "committed_offset": value.offset,
                "committed_leader_epoch": value.leader_epoch,
                "committed_metadata": value.metadata,
            }
        )
    return {
        "group_id": group_id,
        "generation_id_or_member_epoch": generation,
        "member_id": member_id,
        "group_instance_id": instance_id,
        "retention_time": -1,
        "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
    }


def sync_group_fields(
    group_id: str,
    generation: int,
    member_id: str,
    instance_id: str | None,
    protocol_name: str | None,
    assignments: list[dict[str, Any]],
) -> dict[str, Any]:
    """A SyncGroup request's fields (``assignments`` empty unless the member leads)."""
    return {
        "group_id": group_id,
        "generation_id": generation,
        "member_id": member_id,
        "group_instance_id": instance_id,
        "protocol_type": CONSUMER_PROTOCOL_TYPE,
        "protocol_name": protocol_name,
        "assignments": assignments,
    }


def log_auto_commit(
    offsets: Mapping[TopicPartition, OffsetAndMetadata], error: BaseException | None
) -> None:
    if error is not None:
        log.warning("auto commit of %d partitions failed: %s", len(offsets), error)


def committed_offsets(
    partitions: list[TopicPartition], group: Mapping[str, Any]
) -> dict[TopicPartition, OffsetAndMetadata | None]:
    """The committed offsets an OffsetFetch answer (or one group of a batched answer) gives
    ``partitions``: ``None`` where nothing is committed.

    Raises:
        KafkaError: a partition's error code.
    """
    result: dict[TopicPartition, OffsetAndMetadata | None] = dict.fromkeys(partitions)
    for topic in group.get("topics") or ():
        for entry in topic.get("partitions") or ():
            tp = TopicPartition(topic["name"], int(entry["partition_index"]))
            if int(entry.get("error_code", 0)):
                raise error_for_code(int(entry["error_code"]), f"OffsetFetch of {tp}")
            offset = int(entry["committed_offset"])
            if offset >= 0:
                result[tp] = OffsetAndMetadata(
                    offset,
                    entry.get("metadata") or "",
                    int(entry.get("committed_leader_epoch", -1)),
                )
    return result
