"""Retention policies as pure decisions: each policy on its own, and plan_deletions applying
them in order, each seeing the log as the previous ones left it."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from odradek.storage.config import LogConfig
from odradek.storage.retention import (
    DEFAULT_POLICIES,
    Deletion,
    LogStartOffsetPolicy,
    RetentionSizePolicy,
    RetentionState,
    RetentionTimePolicy,
    SegmentInfo,
    plan_deletions,
)

NOW = 1_700_000_000_000


def segments(*specs: tuple[int, int]) -> list[SegmentInfo]:
    """Consecutive segments of 10 offsets each from (size_bytes, largest_timestamp) pairs."""
    return [
        SegmentInfo(
            base_offset=10 * n, next_offset=10 * n + 10, size_bytes=size, largest_timestamp=ts
        )
        for n, (size, ts) in enumerate(specs)
    ]


def state(
    infos: list[SegmentInfo], active_bytes: int = 0, log_start_offset: int = 0
) -> RetentionState:
    return RetentionState(infos, sum(s.size_bytes for s in infos) + active_bytes, log_start_offset)


# -- retention.ms -------------------------------------------------------------------------------


def test_time_policy_deletes_segments_older_than_retention_ms() -> None:
    infos = segments((1, NOW - 5_000), (1, NOW - 1_001), (1, NOW - 1_000), (1, NOW - 10))
    config = LogConfig(retention_ms=1_000)
    assert RetentionTimePolicy().count(state(infos), config, NOW) == 2


def test_time_policy_claims_only_a_prefix() -> None:
    # A young segment stops the policy even when older-looking ones follow.
    infos = segments((1, NOW - 5_000), (1, NOW), (1, NOW - 5_000))
    assert RetentionTimePolicy().count(state(infos), LogConfig(retention_ms=1_000), NOW) == 1


@pytest.mark.parametrize(
    "config",
    [LogConfig(retention_ms=-1), LogConfig(retention_ms=1, cleanup_policy="compact")],
    ids=["unlimited", "compact"],
)
def test_time_policy_off(config: LogConfig) -> None:
    infos = segments((1, 0), (1, 0))
    assert RetentionTimePolicy().count(state(infos), config, NOW) == 0


def test_time_policy_applies_to_compact_and_delete() -> None:
    infos = segments((1, 0), (1, NOW))
    config = LogConfig(retention_ms=1, cleanup_policy="compact,delete")
    assert RetentionTimePolicy().count(state(infos), config, NOW) == 1


# -- retention.bytes ----------------------------------------------------------------------------


def test_size_policy_deletes_while_the_log_stays_at_or_above_retention_bytes() -> None:
    infos = segments((200, 0), (200, 0), (200, 0), (200, 0))
    config = LogConfig(retention_bytes=500)
    # 1000 bytes in all (active 200): 800 and 600 are still >= 500; 400 would be below.
    assert RetentionSizePolicy().count(state(infos, active_bytes=200), config, NOW) == 2
    # Exactly at the limit after deleting: deleted.
    config = LogConfig(retention_bytes=600)
    assert RetentionSizePolicy().count(state(infos, active_bytes=200), config, NOW) == 2
    config = LogConfig(retention_bytes=601)
    assert RetentionSizePolicy().count(state(infos, active_bytes=200), config, NOW) == 1


def test_size_policy_counts_the_active_segment_but_never_offers_it() -> None:
    infos = segments((100, 0))
    config = LogConfig(retention_bytes=0)
    assert RetentionSizePolicy().count(state(infos, active_bytes=10_000), config, NOW) == 1


@pytest.mark.parametrize(
    "config",
    [LogConfig(retention_bytes=-1), LogConfig(retention_bytes=0, cleanup_policy="compact")],
    ids=["unlimited", "compact"],
)
def test_size_policy_off(config: LogConfig) -> None:
    infos = segments((100, 0), (100, 0))
    assert RetentionSizePolicy().count(state(infos, 100), config, NOW) == 0


# -- log start offset ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("log_start_offset", "expected"), [(0, 0), (9, 0), (10, 1), (15, 1), (20, 2), (10**6, 3)]
)
def test_log_start_offset_policy(log_start_offset: int, expected: int) -> None:
    infos = segments((1, NOW), (1, NOW), (1, NOW))
    config = LogConfig(cleanup_policy="compact", retention_ms=-1)
    policy = LogStartOffsetPolicy()
    assert policy.count(state(infos, 0, log_start_offset), config, NOW) == expected


# -- plan_deletions -----------------------------------------------------------------------------


def test_plan_applies_time_then_size_then_log_start_offset() -> None:
    infos = segments((100, NOW - 10_000), (100, NOW), (100, NOW), (100, NOW), (100, NOW))
    config = LogConfig(retention_ms=1_000, retention_bytes=350)
    plan = plan_deletions(infos, 100, 45, config, NOW)
    # time: segment 0; size: 500 left (with the active segment), down to 400 then 300 < 350
    # stops after one more; log start offset 45: segments 2 and 3 lie below it.
    assert plan == [
        Deletion(infos[0], "retention.ms"),
        Deletion(infos[1], "retention.bytes"),
        Deletion(infos[2], "log start offset"),
        Deletion(infos[3], "log start offset"),
    ]


def test_plan_is_empty_without_deletable_segments() -> None:
    config = LogConfig(retention_ms=0, retention_bytes=0)
    assert plan_deletions([], 10**6, 10**6, config, NOW) == []


@dataclass
class RecordingPolicy:
    """A policy that claims ``claim`` segments and remembers what it was shown."""

    name: str
    claim: int
    seen: list[RetentionState] = field(default_factory=list)

    def count(self, state: RetentionState, config: LogConfig, now_ms: int) -> int:
        self.seen.append(state)
        return self.claim


def test_each_policy_sees_what_the_previous_ones_left() -> None:
    infos = segments((10, 0), (20, 0), (30, 0), (40, 0))
    first, greedy, last = RecordingPolicy("a", 1), RecordingPolicy("b", 99), RecordingPolicy("c", 1)
    plan = plan_deletions(infos, 5, 7, LogConfig(), NOW, (first, greedy, last))
    assert [(d.segment.base_offset, d.reason) for d in plan] == [
        (0, "a"),
        (10, "b"),
        (20, "b"),
        (30, "b"),
    ]
    assert list(first.seen[0].deletable) == infos
    assert first.seen[0].total_size_bytes == 105
    assert list(greedy.seen[0].deletable) == infos[1:]
    assert greedy.seen[0].total_size_bytes == 95
    assert list(last.seen[0].deletable) == []
    assert last.seen[0].total_size_bytes == 5
    assert last.seen[0].log_start_offset == 7


def test_default_policies_order() -> None:
    assert [policy.name for policy in DEFAULT_POLICIES] == [
        "retention.ms",
        "retention.bytes",
        "log start offset",
    ]
