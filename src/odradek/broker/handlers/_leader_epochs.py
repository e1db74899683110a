"""Leader-epoch fencing of requests (KIP-320), shared by Fetch, ListOffsets and
OffsetForLeaderEpoch.

A client or follower that knows a partition's leader epoch names it in
``current_leader_epoch``; the broker compares it with its own so neither acts on stale
metadata: an older epoch than the broker's is FENCED_LEADER_EPOCH (the caller's metadata is
stale: it refreshes), a newer one UNKNOWN_LEADER_EPOCH (the broker's is: the caller retries).
-1 (versions before the field, or a caller that does not know the epoch) is never fenced.
"""

from __future__ import annotations

from odradek.broker.ports import PartitionPort
from odradek.errors import ErrorCode

__all__ = ["check_leader_epoch", "current_leader_epoch"]


def current_leader_epoch(partition_request: object) -> int:
    """A request partition's ``current_leader_epoch``; -1 on versions without the field."""
    return int(getattr(partition_request, "current_leader_epoch", -1))


def check_leader_epoch(partition: PartitionPort, current_leader_epoch: int) -> ErrorCode:
    """NONE, FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH (see the module docstring)."""
    if current_leader_epoch < 0 or current_leader_epoch == partition.leader_epoch:
        return ErrorCode.NONE
    if current_leader_epoch < partition.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    return ErrorCode.UNKNOWN_LEADER_EPOCH
