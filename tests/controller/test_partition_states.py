"""controller.partition_states: which partitions change, and how, when brokers fail, return or
shut down — plain values, plus invariants over generated clusters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from odradek._types import TopicPartition
from odradek.controller.leaders import NO_LEADER, LeaderAndIsr
from odradek.controller.partition_states import (
    PartitionRecord,
    alter_partition,
    elect_leader_on_request,
    leader_counts,
    new_partition_state,
    offline_replicas,
    on_brokers_failed,
    on_brokers_started,
    on_controlled_shutdown,
)
from odradek.errors import ErrorCode

A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)
A2 = TopicPartition("a", 2)


def _record(
    replicas: tuple[int, ...], leader: int, epoch: int, isr: tuple[int, ...]
) -> PartitionRecord:
    return PartitionRecord(replicas, LeaderAndIsr(leader, epoch, isr), 7)


def test_a_new_partition_is_led_by_its_first_live_replica() -> None:
    assert new_partition_state((1, 2, 3), {1, 2, 3}) == LeaderAndIsr(1, 0, (1, 2, 3))
    assert new_partition_state((1, 2, 3), {2, 3}) == LeaderAndIsr(2, 0, (2, 3))
    assert new_partition_state((1, 2), {3}) == LeaderAndIsr(NO_LEADER, 0, (1, 2))


def test_offline_replicas_are_those_on_dead_brokers() -> None:
    assert offline_replicas((1, 2, 3), {1, 3}) == (2,)
    assert offline_replicas((1, 2, 3), {1, 2, 3}) == ()


def test_a_failed_leader_is_replaced_and_a_failed_follower_leaves_the_isr() -> None:
    partitions = {
        A0: _record((1, 2, 3), 1, 4, (1, 2, 3)),  # led by the dead broker
        A1: _record((2, 1, 3), 2, 0, (2, 1, 3)),  # followed by it
        A2: _record((2, 3), 2, 9, (2, 3)),  # untouched
    }
    changes = on_brokers_failed(partitions, {2, 3})
    assert changes == {
        A0: LeaderAndIsr(2, 5, (2, 3)),
        A1: LeaderAndIsr(2, 1, (2, 3)),
    }


def test_a_partition_without_an_electable_replica_goes_offline_keeping_its_isr() -> None:
    partitions = {A0: _record((1, 2), 1, 3, (1,))}
    assert on_brokers_failed(partitions, {2}) == {A0: LeaderAndIsr(NO_LEADER, 4, (1,))}
    unclean = on_brokers_failed(partitions, {2}, unclean=lambda topic: topic == "a")
    assert unclean == {A0: LeaderAndIsr(2, 4, (2,), unclean=True)}
    # Already offline: nothing more to do until a replica returns.
    offline = {A0: _record((1, 2), NO_LEADER, 4, (1,))}
    assert on_brokers_failed(offline, {2}) == {}


def test_an_offline_partition_comes_back_with_an_isr_replica() -> None:
    offline = {A0: _record((1, 2), NO_LEADER, 4, (1,)), A1: _record((1, 2), 2, 0, (2,))}
    assert on_brokers_started(offline, {2}) == {}  # 2 is not in A0's ISR
    assert on_brokers_started(offline, {1, 2}) == {A0: LeaderAndIsr(1, 5, (1,))}


def test_controlled_shutdown_moves_leadership_and_leaves_the_isrs() -> None:
    partitions = {
        A0: _record((1, 2, 3), 1, 0, (1, 2, 3)),
        A1: _record((2, 1, 3), 2, 0, (2, 1, 3)),
        A2: _record((1,), 1, 0, (1,)),  # no other replica: stays
    }
    changes = on_controlled_shutdown(partitions, {1, 2, 3}, 1)
    assert changes == {
        A0: LeaderAndIsr(2, 1, (2, 3)),
        A1: LeaderAndIsr(2, 1, (2, 3)),
    }


def test_leader_counts() -> None:
    partitions = {A0: _record((1, 2), 1, 0, (1, 2)), A1: _record((2, 1), 1, 0, (1, 2))}
    assert leader_counts(partitions, [1, 2, 3]) == {1: 2, 2: 0, 3: 0}


@st.composite
def _clusters(draw: st.DrawFn) -> tuple[dict[TopicPartition, PartitionRecord], set[int]]:
    brokers = list(range(draw(st.integers(1, 5))))
    partitions = {}
    for index in range(draw(st.integers(1, 8))):
        replicas = tuple(draw(st.permutations(brokers))[: draw(st.integers(1, len(brokers)))])
        isr = tuple(r for r in replicas if draw(st.booleans())) or replicas[:1]
        leader = draw(st.sampled_from(isr))
        partitions[TopicPartition("t", index)] = _record(
            replicas, leader, draw(st.integers(0, 9)), isr
        )
    live = {b for b in brokers if draw(st.booleans())}
    return partitions, live


@given(_clusters(), st.booleans())
def test_failure_handling_never_elects_a_dead_or_out_of_sync_broker(
    cluster: tuple[dict[TopicPartition, PartitionRecord], set[int]], unclean: bool
) -> None:
    partitions, live = cluster
    changes = on_brokers_failed(partitions, live, unclean=lambda topic: unclean)
    for tp, state in changes.items():
        before = partitions[tp].state
        assert state.leader_epoch == before.leader_epoch + 1
        if state.leader == NO_LEADER:
            assert state.isr == before.isr
            continue
        assert state.leader in live
        assert state.leader in partitions[tp].replicas
        if not state.unclean:
            assert state.leader in before.isr
            assert set(state.isr) <= set(before.isr) & live
    # Partitions whose leader and ISR are all live are not touched.
    for tp, record in partitions.items():
        if record.state.leader in live and set(record.state.isr) <= live:
            assert tp not in changes


def test_elections_on_request() -> None:
    home = _record((1, 2, 3), 2, 5, (1, 2, 3))  # preferred replica 1, live and in sync
    assert elect_leader_on_request(0, home, {1, 2, 3}) == LeaderAndIsr(1, 6, (1, 2, 3))
    at_home = _record((1, 2), 1, 0, (1, 2))
    assert elect_leader_on_request(0, at_home, {1, 2})[0] == ErrorCode.ELECTION_NOT_NEEDED
    out_of_sync = _record((1, 2), 2, 3, (2,))
    assert elect_leader_on_request(0, out_of_sync, {1, 2})[0] == (
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    )
    # Unclean: only without a live leader, from any live replica.
    assert elect_leader_on_request(1, at_home, {1, 2})[0] == ErrorCode.ELECTION_NOT_NEEDED
    offline = _record((1, 2), NO_LEADER, 3, (1,))
    assert elect_leader_on_request(1, offline, {2}) == LeaderAndIsr(2, 4, (2,), unclean=True)
    assert elect_leader_on_request(1, offline, set())[0] == (
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    )
    assert elect_leader_on_request(7, home, {1})[0] == ErrorCode.INVALID_REQUEST


def test_alter_partition_is_accepted_only_at_the_current_epochs() -> None:
    record = _record((1, 2, 3), 1, 4, (1, 2, 3))  # partition epoch (zk version) 7
    live = {1, 2, 3}

    assert alter_partition(record, 1, 4, (1, 2), 7, live) == LeaderAndIsr(1, 4, (1, 2))
    stale_version = alter_partition(record, 1, 4, (1, 2), 6, live)
    assert isinstance(stale_version, tuple)
    assert stale_version[0] is ErrorCode.INVALID_UPDATE_VERSION
    newer_version = alter_partition(record, 1, 4, (1, 2), 8, live)
    assert isinstance(newer_version, tuple)
    assert newer_version[0] is ErrorCode.INVALID_UPDATE_VERSION
    old_epoch = alter_partition(record, 1, 3, (1, 2), 7, live)
    assert isinstance(old_epoch, tuple)
    assert old_epoch[0] is ErrorCode.FENCED_LEADER_EPOCH
    not_leader = alter_partition(record, 2, 4, (1, 2), 7, live)
    assert isinstance(not_leader, tuple)
    assert not_leader[0] is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_alter_partition_checks_the_new_isr() -> None:
    record = _record((1, 2, 3), 1, 4, (1, 2))
    codes = {
        isr: result[0] if isinstance(result, tuple) else ErrorCode.NONE
        for isr in [(2, 3), (1, 5), (1, 1), (1, 3), (1, 2, 3)]
        for result in [alter_partition(record, 1, 4, isr, 7, {1, 2})]
    }

    assert codes == {
        (2, 3): ErrorCode.INVALID_REQUEST,  # without the leader
        (1, 5): ErrorCode.INVALID_REQUEST,  # not a replica
        (1, 1): ErrorCode.INVALID_REQUEST,
        (1, 3): ErrorCode.INELIGIBLE_REPLICA,  # 3 is not live
        (1, 2, 3): ErrorCode.INELIGIBLE_REPLICA,
    }


def test_a_retried_alter_partition_already_applied_answers_the_state() -> None:
    record = _record((1, 2, 3), 1, 4, (1, 2))  # the (1, 2) change made version 7

    assert alter_partition(record, 1, 4, (1, 2), 6, {1, 2, 3}) == record.state
