"""The group leader's part of the classic protocol: every member's assignment, computed by
the agreed assignor from the members' subscriptions and the partition counts in metadata,
encoded for SyncGroup. Runs on the application thread, inside a join."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from odradek.client.assignors import (
    Assignment,
    Assignor,
    Subscription,
    decode_subscription,
    encode_assignment,
)
from odradek.client.cluster import Metadata
from odradek.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)


def leader_assignments(
    assignors: Sequence[Assignor],
    protocol_name: str,
    members: Iterable[Mapping[str, Any]],
    metadata: Metadata,
    metadata_wait_ms: int,
    what: str,
) -> list[dict[str, Any]]:
    """SyncGroup's ``assignments`` for the JoinGroup response's ``members``.

    Args:
        metadata_wait_ms: how long to wait for metadata of topics not known yet.
        what: the group and generation, for the log line.

    Raises:
        KafkaError: INCONSISTENT_GROUP_PROTOCOL when the group chose an assignor not
            configured here.
    """
    assignor = next((a for a in assignors if a.name() == protocol_name), None)
    if assignor is None:
        raise KafkaError(
            f"{what} chose assignor {protocol_name!r}, not configured here",
            code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        )
    subscriptions: dict[str, Subscription] = {}
    for member in members:
        subscription = decode_subscription(member["metadata"])
        subscriptions[str(member["member_id"])] = dataclasses.replace(
            subscription, group_instance_id=member.get("group_instance_id")
        )
    topics = {topic for s in subscriptions.values() for topic in s.topics}
    cluster = metadata.cluster
    if not topics <= set(cluster.topics):
        metadata.add_topics(topics)
        version = metadata.request_update()
        metadata.wait_for_update(version, metadata_wait_ms)
        cluster = metadata.cluster
    counts = {t: n for t in topics if (n := cluster.partition_count(t) or 0) > 0}
    result: Mapping[str, Assignment] = assignor.assign(counts, subscriptions)
    log.info(
        "%s: leader assigned with %s: %s",
        what,
        protocol_name,
        {m: [str(tp) for tp in a.partitions] for m, a in result.items()},
    )
    return [
        {
            "member_id": member_id,
            "assignment": encode_assignment(result.get(member_id, Assignment())),
        }
        for member_id in subscriptions
    ]
