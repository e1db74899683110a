"""controller.leaders: Kafka's partition leader election algorithms with plain values."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from odradek.controller.leaders import (
    LeaderAndIsr,
    elect_controlled_shutdown_leader,
    elect_offline_partition_leader,
    elect_preferred_replica_leader,
    elect_reassigned_partition_leader,
    initial_leader_and_isr,
    leader_imbalance_ratio,
)


def test_initial_state_takes_the_live_replicas() -> None:
    assert initial_leader_and_isr([1, 2, 3], {1, 2, 3}) == LeaderAndIsr(1, 0, (1, 2, 3))
    assert initial_leader_and_isr([1, 2, 3], {2, 3}) == LeaderAndIsr(2, 0, (2, 3))
    assert initial_leader_and_isr([1, 2, 3], {4}) is None


def test_offline_leader_is_the_first_live_in_sync_replica() -> None:
    current = LeaderAndIsr(1, 4, (1, 2, 3))
    assert elect_offline_partition_leader([1, 2, 3], current, {2, 3}) == LeaderAndIsr(2, 5, (2, 3))
    # assignment order, not ISR order
    current = LeaderAndIsr(1, 4, (1, 3, 2))
    assert elect_offline_partition_leader([1, 2, 3], current, {2, 3}) == LeaderAndIsr(2, 5, (3, 2))


def test_offline_without_an_in_sync_replica_stays_offline_unless_unclean() -> None:
    current = LeaderAndIsr(1, 4, (1,))  # the ISR had shrunk to the dead leader
    assert elect_offline_partition_leader([1, 2, 3], current, {2, 3}) is None
    unclean = elect_offline_partition_leader(
        [1, 2, 3], current, {3, 2}, unclean_leader_election_enable=True
    )
    assert unclean == LeaderAndIsr(2, 5, (2,), unclean=True)
    assert (
        elect_offline_partition_leader(
            [1, 2, 3], current, set(), unclean_leader_election_enable=True
        )
        is None
    )


def test_reassignment_leader_comes_from_the_target_replicas() -> None:
    current = LeaderAndIsr(1, 2, (1, 2, 4, 5))
    assert elect_reassigned_partition_leader([4, 5], current, {1, 2, 4, 5}) == LeaderAndIsr(
        4, 3, (1, 2, 4, 5)
    )
    assert elect_reassigned_partition_leader([6], current, {1, 2, 6}) is None


def test_preferred_replica_election() -> None:
    current = LeaderAndIsr(2, 7, (2, 1, 3))
    assert elect_preferred_replica_leader([1, 2, 3], current, {1, 2, 3}) == LeaderAndIsr(
        1, 8, (2, 1, 3)
    )
    assert elect_preferred_replica_leader([1, 2, 3], current, {2, 3}) is None  # not live
    assert elect_preferred_replica_leader([1, 2, 3], LeaderAndIsr(2, 7, (2, 3)), {1, 2}) is None
    assert elect_preferred_replica_leader([2, 1], current, {1, 2}) is None  # already leads


def test_controlled_shutdown_moves_the_leader_and_shrinks_the_isr() -> None:
    current = LeaderAndIsr(1, 3, (1, 2, 3))
    assert elect_controlled_shutdown_leader([1, 2, 3], current, {1, 2, 3}, {1}) == LeaderAndIsr(
        2, 4, (2, 3)
    )
    # the only in-sync replica is stopping: no leader to move to
    assert (
        elect_controlled_shutdown_leader([1, 2, 3], LeaderAndIsr(1, 3, (1,)), {1, 2, 3}, {1})
        is None
    )


def test_leader_imbalance_ratio() -> None:
    preferred = [1, 2, 3, 1, 2, 3]
    assert leader_imbalance_ratio([1, 2, 3, 1, 2, 3], preferred, 1) == 0.0
    assert leader_imbalance_ratio([2, 2, 3, 1, 2, 3], preferred, 1) == 0.5
    assert leader_imbalance_ratio([2, 2, 3, 2, 2, 3], preferred, 1) == 1.0
    assert leader_imbalance_ratio([1, 1], [1, 1], 4) == 0.0


_BROKERS = st.integers(min_value=0, max_value=6)


@given(
    assignment=st.lists(_BROKERS, min_size=1, max_size=5, unique=True),
    isr_picks=st.sets(_BROKERS),
    live=st.sets(_BROKERS),
    epoch=st.integers(min_value=0, max_value=1000),
    unclean=st.booleans(),
)
def test_offline_election_invariants(
    assignment: list[int], isr_picks: set[int], live: set[int], epoch: int, unclean: bool
) -> None:
    isr = tuple(replica for replica in assignment if replica in isr_picks)
    result = elect_offline_partition_leader(
        assignment, LeaderAndIsr(-1, epoch, isr), live, unclean_leader_election_enable=unclean
    )
    clean_candidates = [r for r in assignment if r in live and r in isr]
    if result is None:
        assert not clean_candidates
        assert not unclean or not any(r in live for r in assignment)
        return
    assert result.leader_epoch == epoch + 1
    assert result.leader in live
    assert result.leader in assignment
    assert result.leader in result.isr
    assert set(result.isr) <= live
    if clean_candidates:
        assert not result.unclean
        assert result.leader == clean_candidates[0]
        assert set(result.isr) <= set(isr)  # never grows the ISR
    else:
        assert unclean
        assert result.unclean
        assert result.isr == (result.leader,)
