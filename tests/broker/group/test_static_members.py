"""Static membership (KIP-345): restarts without rebalance, fencing of stale incarnations,
leaving by instance id, and KIP-814's skip_assignment."""

from __future__ import annotations

from odradek.broker.group import JoinGroupResult, LeavingMember, Pending, SyncGroupResult
from odradek.errors import ErrorCode

from .conftest import Harness


def _static_group(h: Harness, *instances: str) -> list[str]:
    latest = [h.join(instance=i, client_id=f"client-{i}") for i in instances]
    while h.state() == "PreparingRebalance":
        for index, request in enumerate(latest):
            answered = h.answers.get(request.ticket) if isinstance(request, Pending) else request
            if answered is not None and h.state() == "PreparingRebalance":
                latest[index] = h.join(answered.member_id, instance=instances[index])
    results = [h.answer(r) if isinstance(r, Pending) else r for r in latest]
    ids = [r.member_id for r in results]
    h.generation = results[-1].generation_id
    leader = results[-1].leader
    waiting = [
        h.sync(m, h.generation, instance=i)
        for m, i in zip(ids, instances, strict=True)
        if m != leader
    ]
    h.sync(leader, h.generation, {m: i.encode() for m, i in zip(ids, instances, strict=True)})
    for request in waiting:
        if isinstance(request, Pending):
            h.answer(request)
    assert h.state() == "Stable"
    return ids


def test_static_member_ids_come_from_the_instance_id(h: Harness) -> None:
    (member,) = _static_group(h, "pod-0")
    assert member == "pod-0-u1"


def test_static_follower_restart_keeps_the_generation_and_assignment(h: Harness) -> None:
    leader, follower = _static_group(h, "pod-0", "pod-1")
    generation = h.generation
    records = len(h.log)
    restarted = h.join(instance="pod-1", client_id="client-pod-1")
    assert restarted == JoinGroupResult(
        error_code=ErrorCode.NONE,
        member_id=restarted.member_id,
        generation_id=generation,
        protocol_type="consumer",
        protocol_name="range",
        leader=leader,
    )
    assert restarted.member_id != follower
    assert h.state() == "Stable"  # no rebalance
    assert len(h.log) == records + 1  # the new member id is stored
    assert h.sync(restarted.member_id, generation, instance="pod-1").assignment == b"pod-1"
    # the old incarnation is fenced
    assert h.heartbeat(follower, generation, instance="pod-1") == ErrorCode.FENCED_INSTANCE_ID
    # also without its instance id (Heartbeat v0-v2): UNKNOWN_MEMBER_ID would make it rejoin
    # without a member id and take the instance id back
    assert h.heartbeat(follower, generation) == ErrorCode.FENCED_INSTANCE_ID
    assert h.heartbeat(leader, generation) == ErrorCode.NONE


def test_static_leader_restart_before_kip_814_is_told_the_old_leader(h: Harness) -> None:
    leader, _ = _static_group(h, "pod-0", "pod-1")
    restarted = h.join(instance="pod-0")
    # an old client must not think it leads (it would assign with no member list)
    assert restarted.leader == leader
    assert restarted.member_id != leader
    assert restarted.skip_assignment is False
    assert restarted.members == ()
    assert h.state() == "Stable"


def test_static_leader_restart_with_kip_814_skips_assignment(h: Harness) -> None:
    _static_group(h, "pod-0", "pod-1")
    restarted = h.join(instance="pod-0", skip_assignment=True)
    assert restarted.leader == restarted.member_id
    assert restarted.skip_assignment is True
    assert h.state() == "Stable"
    # it still leads: a rebalance later lists the members to it
    described = h.coordinator.describe_groups(["g"]).response.groups[0]
    assert described.members[-1].member_id == restarted.member_id


def test_static_restart_that_changes_the_protocol_choice_rebalances(h: Harness) -> None:
    both = (("range", b"r"), ("roundrobin", b"rr"))
    first = h.join(instance="a", protocols=both)
    assert first.protocol_name == "range"
    h.sync(first.member_id, 1, {})
    # alone: its restart preferring roundrobin changes the vote
    restarted = h.join(instance="a", protocols=(("roundrobin", b"rr"), ("range", b"r")))
    assert restarted.generation_id == 2
    assert restarted.protocol_name == "roundrobin"


def test_static_restart_during_completing_rebalance_fences_the_old_sync(h: Harness) -> None:
    leader, follower = _static_group(h, "pod-0", "pod-1")
    h.join(leader, instance="pod-0")
    h.join(follower, instance="pod-1")
    generation = h.generation + 1
    waiting = h.sync(follower, generation, instance="pod-1")
    restarted = h.join(instance="pod-1")
    assert h.answer(waiting) == SyncGroupResult(ErrorCode.FENCED_INSTANCE_ID)
    assert isinstance(restarted, Pending)
    assert h.state() == "PreparingRebalance"
    result = h.join(leader, instance="pod-0")
    assert {m.member_id for m in result.members} == {leader, h.answer(restarted).member_id}


def test_static_restart_while_the_old_incarnation_waits_to_join(h: Harness) -> None:
    leader, follower = _static_group(h, "pod-0", "pod-1")
    old = h.join(follower, instance="pod-1", protocols=(("range", b"x"),))
    assert isinstance(old, Pending)
    restarted = h.join(instance="pod-1")
    assert h.answer(old) == JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID, follower)
    h.join(leader, instance="pod-0")
    assert h.answer(restarted).error_code == ErrorCode.NONE


def test_stale_member_id_with_the_instance_is_fenced(h: Harness) -> None:
    leader, follower = _static_group(h, "pod-0", "pod-1")
    restarted = h.join(instance="pod-1").member_id
    generation = h.generation
    assert h.join(follower, instance="pod-1").error_code == ErrorCode.FENCED_INSTANCE_ID
    assert h.sync(follower, generation, instance="pod-1").error_code == (
        ErrorCode.FENCED_INSTANCE_ID
    )
    commit = h.commit({("t", 0): 1}, generation=generation, member_id=follower, instance="pod-1")
    assert set(commit.partitions.values()) == {ErrorCode.FENCED_INSTANCE_ID}
    left = h.leave(LeavingMember(follower, "pod-1"))
    assert left.members[0].error_code == ErrorCode.FENCED_INSTANCE_ID
    # a known member id naming an instance the group does not know
    assert h.join(leader, instance="pod-9").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(restarted, generation, instance="pod-1") == ErrorCode.NONE


def test_leave_by_instance_id(h: Harness) -> None:
    leader, _ = _static_group(h, "pod-0", "pod-1")
    result = h.leave(LeavingMember("", "pod-1"), LeavingMember("", "pod-7"))
    assert [m.error_code for m in result.members] == [
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_MEMBER_ID,
    ]
    assert h.state() == "PreparingRebalance"
    assert h.join(leader, instance="pod-0").members[0].member_id == leader
    # the instance can come back as a new member
    assert isinstance(h.join(instance="pod-1"), Pending)


def test_static_members_that_do_not_rejoin_are_removed_like_others(h: Harness) -> None:
    leader, follower = _static_group(h, "pod-0", "pod-1")
    pending = h.join(leader, instance="pod-0", protocols=(("range", b"new"),))
    for _ in range(9):  # alive (heartbeats) but never rejoins
        h.advance(3_000)
        code = h.heartbeat(follower, h.generation, instance="pod-1")
        assert code == ErrorCode.REBALANCE_IN_PROGRESS
    h.advance(3_000)  # the rebalance timeout
    assert [m.member_id for m in h.answer(pending).members] == [leader]
    assert h.heartbeat(follower, h.generation, instance="pod-1") == ErrorCode.UNKNOWN_MEMBER_ID
    # its instance is free again: a new incarnation joins as a new member
    fresh = h.join(instance="pod-1")
    assert isinstance(fresh, Pending)
    assert h.state() == "PreparingRebalance"


def test_static_member_session_expiry(h: Harness) -> None:
    leader, follower = _static_group(h, "pod-0", "pod-1")
    for _ in range(4):
        h.advance(3_000)
        h.heartbeat(leader, h.generation)
    assert h.state() == "PreparingRebalance"
    assert h.heartbeat(follower, h.generation, instance="pod-1") == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_second_process_with_a_live_instance_id_fences_the_first_for_good(h: Harness) -> None:
    """Two live processes configured with one group.instance.id (KIP-345): the newer one
    takes over and the older one is fenced on every request it makes, with or without the
    instance id, so it stops instead of rejoining and taking the instance id back."""
    leader, first = _static_group(h, "pod-0", "pod-1")
    generation = h.generation
    second = h.join(instance="pod-1", client_id="client-pod-1")
    assert second.error_code is ErrorCode.NONE
    current = h.coordinator._groups["g"].static_member_id("pod-1")
    assert current == second.member_id
    for _ in range(3):  # the old process keeps trying, as a client with old versions would
        assert h.heartbeat(first, generation) == ErrorCode.FENCED_INSTANCE_ID
        assert h.sync(first, generation).error_code is ErrorCode.FENCED_INSTANCE_ID
        rejoin = h.join(first, instance="pod-1")
        assert not isinstance(rejoin, Pending)
        assert rejoin.error_code is ErrorCode.FENCED_INSTANCE_ID
        left = h.leave(first)
        assert [m.error_code for m in left.members] == [ErrorCode.FENCED_INSTANCE_ID]
        h.now += 1_000
    # the instance id stayed with the newer process, which still heartbeats fine
    assert h.coordinator._groups["g"].static_member_id("pod-1") == current
    assert h.heartbeat(current, generation, instance="pod-1") == ErrorCode.NONE
    assert h.heartbeat(leader, generation) == ErrorCode.NONE
