"""broker.replication.isr: the leader's ISR decisions with plain values — when a follower
counts as caught up, who joins or leaves the ISR, and the high watermark over the ISR."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from odradek.broker.replication.isr import (
    UNKNOWN_OFFSET,
    FollowerState,
    can_join_isr,
    follower_fetched,
    high_watermark,
    maximal_isr,
    out_of_sync_replicas,
    reset_follower,
)


def test_a_fetch_at_the_leaders_log_end_is_caught_up_now() -> None:
    state = follower_fetched(FollowerState(2), 10, 10, now_ms=500)

    assert state.log_end_offset == 10
    assert state.last_caught_up_ms == 500
    assert state.last_fetch_leader_log_end_offset == 10


def test_a_fetch_behind_the_leader_is_not_caught_up() -> None:
    state = follower_fetched(FollowerState(2), 4, 10, now_ms=500)

    assert state.log_end_offset == 4
    assert state.last_caught_up_ms == 0


def test_reaching_the_leaders_previous_end_means_caught_up_at_the_previous_fetch() -> None:
    # Kafka's rule: the follower was at 4 when the leader was at 10 (t=500); at t=900 it asks
    # for 10 while the leader is at 15: it held everything the leader had at t=500.
    first = follower_fetched(FollowerState(2), 4, 10, now_ms=500)
    second = follower_fetched(first, 10, 15, now_ms=900)

    assert second.last_caught_up_ms == 500
    assert second.log_end_offset == 10


def test_falling_further_behind_keeps_the_old_caught_up_time() -> None:
    first = follower_fetched(FollowerState(2), 10, 10, now_ms=500)
    second = follower_fetched(first, 9, 20, now_ms=900)  # behind the leader's previous end

    assert second.last_caught_up_ms == 500


def test_reset_counts_isr_members_as_caught_up_now() -> None:
    assert reset_follower(2, in_sync=True, now_ms=70).last_caught_up_ms == 70
    assert reset_follower(3, in_sync=False, now_ms=70).last_caught_up_ms == 0
    assert reset_follower(3, in_sync=False, now_ms=70).log_end_offset == UNKNOWN_OFFSET


def test_a_follower_joins_once_at_the_high_watermark_and_the_epoch_start() -> None:
    at_hw = FollowerState(3, log_end_offset=8)

    assert can_join_isr(at_hw, [1, 2], high_watermark=8, leader_epoch_start_offset=5)
    assert not can_join_isr(at_hw, [1, 2], high_watermark=9, leader_epoch_start_offset=5)
    assert not can_join_isr(at_hw, [1, 2], high_watermark=8, leader_epoch_start_offset=9)
    assert not can_join_isr(at_hw, [1, 3], high_watermark=8, leader_epoch_start_offset=5)


def test_out_of_sync_after_the_lag_time_unless_at_the_leaders_end() -> None:
    followers = {
        2: FollowerState(2, log_end_offset=5, last_caught_up_ms=1_000),
        3: FollowerState(3, log_end_offset=9, last_caught_up_ms=1_000),
        4: FollowerState(4, log_end_offset=9, last_caught_up_ms=1_000),
    }

    # At 30,999 ms of lag nobody leaves; past 31,000 the lagging one does.
    assert out_of_sync_replicas(followers, [1, 2, 3], 10, 31_000, 30_000) == ()
    assert out_of_sync_replicas(followers, [1, 2, 3], 10, 31_001, 30_000) == (2, 3)
    # An idle partition: a follower at the leader's end stays however long ago it fetched.
    assert out_of_sync_replicas(followers, [1, 3, 4], 9, 99_999, 30_000) == ()
    # Only ISR members are considered.
    assert out_of_sync_replicas(followers, [1, 3], 10, 31_001, 30_000) == (3,)


def test_high_watermark_is_the_smallest_isr_leo() -> None:
    followers = {2: FollowerState(2, log_end_offset=7), 3: FollowerState(3, log_end_offset=3)}

    assert high_watermark(1, 10, followers, [1, 2]) == 7
    assert high_watermark(1, 10, followers, [1, 2, 3]) == 3
    assert high_watermark(1, 10, followers, [1]) == 10
    assert high_watermark(1, 10, {}, [1, 5]) == UNKNOWN_OFFSET


def test_the_maximal_isr_adds_a_pending_expansion_only() -> None:
    assert maximal_isr([1, 2], None) == (1, 2)
    assert maximal_isr([1, 2], (1, 2, 3)) == (1, 2, 3)
    assert maximal_isr([1, 2, 3], (1, 3)) == (1, 2, 3)  # a shrink counts after its commit


@given(
    st.integers(0, 1_000),
    st.dictionaries(st.integers(2, 6), st.integers(0, 1_000), max_size=5),
    st.sets(st.integers(2, 6)),
)
def test_the_high_watermark_never_passes_an_isr_member(
    leader_leo: int, leos: dict[int, int], members: set[int]
) -> None:
    followers = {r: FollowerState(r, log_end_offset=leo) for r, leo in leos.items()}
    isr = [1, *sorted(members & set(leos))]

    hw = high_watermark(1, leader_leo, followers, isr)

    assert hw <= leader_leo
    assert all(hw <= followers[r].log_end_offset for r in isr if r != 1)
    assert hw in {leader_leo, *(followers[r].log_end_offset for r in isr if r != 1)}
