"""Retention as pure decisions: which of a log's oldest segments may be deleted, and why.

Each ``DeletePolicy`` looks at the segments in offset order and claims a prefix of them; the
log applies the policies one after another (time, then size, then log start offset, as Kafka
does) and deletes the claimed segments one at a time. The active segment is never offered to a
policy, so it is never deleted. Policies take ``now_ms`` and return values: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from odradek.storage.config import LogConfig


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What retention needs to know of a segment."""

    base_offset: int
    next_offset: int
    size_bytes: int
    #: The largest record timestamp in the segment; when it holds none, the time the
    #: segment file was last modified (as Kafka does).
    largest_timestamp: int


@dataclass(frozen=True, slots=True)
class RetentionState:
    """The log as a policy sees it: deletable segments (the active one excluded), the size
    of the whole log, and its log start offset."""

    deletable: Sequence[SegmentInfo]
    total_size_bytes: int
    log_start_offset: int


class DeletePolicy(Protocol):
    """Claims how many of the oldest deletable segments should go."""

    name: str

    def count(self, state: RetentionState, config: LogConfig, now_ms: int) -> int:
        """Returns n: the first n segments of ``state.deletable`` may be deleted."""
        ...


class RetentionTimePolicy:
    """``retention.ms``: a segment goes once its largest timestamp is older than that."""

    name = "retention.ms"

    def count(self, state: RetentionState, config: LogConfig, now_ms: int) -> int:
        if not config.deletes or config.retention_ms < 0:
            return 0
        count = 0
        for segment in state.deletable:
            if now_ms - segment.largest_timestamp <= config.retention_ms:
                break
            count += 1
        return count


class RetentionSizePolicy:
    """``retention.bytes``: the oldest segments go while the log exceeds that size."""

    name = "retention.bytes"

    def count(self, state: RetentionState, config: LogConfig, now_ms: int) -> int:
        if not config.deletes or config.retention_bytes < 0:
            return 0
        excess = state.total_size_bytes - config.retention_bytes
        count = 0
        for segment in state.deletable:
            if excess - segment.size_bytes < 0:
                break
            excess -= segment.size_bytes
            count += 1
        return count


class LogStartOffsetPolicy:
    """A segment wholly below the log start offset (moved by DeleteRecords) goes, whatever
    the cleanup policy."""

    name = "log start offset"

    def count(self, state: RetentionState, config: LogConfig, now_ms: int) -> int:
        count = 0
        for segment in state.deletable:
            if segment.next_offset > state.log_start_offset:
                break
            count += 1
        return count


DEFAULT_POLICIES: tuple[DeletePolicy, ...] = (
    RetentionTimePolicy(),
    RetentionSizePolicy(),
    LogStartOffsetPolicy(),
)


@dataclass(frozen=True, slots=True)
class Deletion:
    """One segment to delete and the policy that claimed it."""

    segment: SegmentInfo
    reason: str


def plan_deletions(
    deletable: Sequence[SegmentInfo],
    active_size_bytes: int,
    log_start_offset: int,
    config: LogConfig,
    now_ms: int,
    policies: Sequence[DeletePolicy] = DEFAULT_POLICIES,
) -> list[Deletion]:
    """Applies the policies in turn; each sees the log as the previous ones left it.

    Args:
        deletable: every segment but the active one, oldest first.
        active_size_bytes: the active segment's size (it counts toward retention.bytes).
        log_start_offset: the log's current start offset.
    Returns:
        The segments to delete, oldest first, with the policy that claimed each.
    """
    remaining = list(deletable)
    total = active_size_bytes + sum(segment.size_bytes for segment in remaining)
    plan: list[Deletion] = []
    for policy in policies:
        state = RetentionState(remaining, total, log_start_offset)
        count = min(policy.count(state, config, now_ms), len(remaining))
        for segment in remaining[:count]:
            plan.append(Deletion(segment, policy.name))
            total -= segment.size_bytes
        remaining = remaining[count:]
    return plan
