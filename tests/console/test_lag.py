"""``console.lag.partition_lags``: lag in offsets and in seconds from its inputs and ``now_ms``."""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.console.lag import GroupLag, PartitionLag, partition_lags

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
T2 = TopicPartition("t", 2)
NOW = 1_700_000_100_000


def test_lag_in_seconds_is_the_age_of_the_next_unconsumed_record() -> None:
    [row] = partition_lags([T0], {T0: 40}, {T0: 100}, {T0: NOW - 12_345}, NOW)
    assert row == PartitionLag("t", 0, 40, 100, 60, NOW - 12_345, 12_345)


def test_a_caught_up_partition_lags_zero_seconds_without_a_record() -> None:
    [row] = partition_lags([T0], {T0: 100}, {T0: 100}, {}, NOW)
    assert (row.lag, row.lag_ms) == (0, 0)


def test_unknowns_stay_unknown() -> None:
    rows = partition_lags([T1, T0], {T0: 5}, {T0: 10, T1: 10}, {}, NOW)
    # T0: behind but its record was not found; T1: nothing committed.
    assert [(r.partition, r.committed, r.lag, r.lag_ms) for r in rows] == [
        (0, 5, 5, None),
        (1, None, None, None),
    ]


def test_clock_skew_and_truncation_never_give_negative_lag() -> None:
    rows = partition_lags([T0, T1], {T0: 1, T1: 50}, {T0: 9, T1: 20}, {T0: NOW + 5_000}, NOW)
    assert [(r.lag, r.lag_ms) for r in rows] == [(8, 0), (0, 0)]


def test_a_partition_without_a_log_end_offset_is_left_out() -> None:
    assert partition_lags([T0], {T0: 1}, {}, {}, NOW) == []


def test_group_totals_sum_offsets_and_take_the_slowest_partition_in_time() -> None:
    rows = partition_lags(
        [T0, T1, T2],
        {T0: 0, T1: 0, T2: 3},
        {T0: 10, T1: 4, T2: 3},
        {T0: NOW - 2_000, T1: NOW - 9_000},
        NOW,
    )
    group = GroupLag("g", tuple(rows))
    assert (group.lag, group.lag_ms) == (14, 9_000)
    assert GroupLag("g", ()).lag_ms is None
