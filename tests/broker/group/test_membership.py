"""JoinGroup / SyncGroup / Heartbeat / LeaveGroup round trips and errors, with a fake clock."""

from __future__ import annotations

import pytest

from odradek.broker.group import (
    GroupConfig,
    JoinGroupMember,
    JoinGroupResult,
    Pending,
    SyncGroupResult,
)
from odradek.errors import ConfigError, ErrorCode

from .conftest import CONFIG, RANGE, Harness


def test_single_member_join_sync_round_trip(h: Harness) -> None:
    joined = h.join(client_id="app")
    # no initial delay in this config and the only member has joined: answered at once
    assert joined == JoinGroupResult(
        error_code=ErrorCode.NONE,
        member_id="app-u1",
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader="app-u1",
        members=(JoinGroupMember("app-u1", None, b"sub"),),
    )
    assert h.state() == "CompletingRebalance"
    synced = h.sync("app-u1", 1, {"app-u1": b"A"})
    assert synced == SyncGroupResult(ErrorCode.NONE, "consumer", "range", b"A")
    assert h.state() == "Stable"
    assert h.heartbeat("app-u1", 1) == ErrorCode.NONE
    # the Stable generation was stored
    assert len(h.log) == 1


def test_n_members_first_joiner_leads_and_followers_wait_for_the_leader() -> None:
    h = Harness(GroupConfig(**{**_fields(CONFIG), "group_initial_rebalance_delay_ms": 3_000}))
    first = h.join(client_id="a")
    h.advance(100)
    second = h.join(client_id="b")
    h.advance(100)
    third = h.join(client_id="c")
    assert all(isinstance(p, Pending) for p in (first, second, third))
    assert h.state() == "PreparingRebalance"
    h.advance(2_799)  # the initial delay runs from the first join ...
    assert h.is_pending(first)
    h.advance(1)  # ... and, members having arrived meanwhile, is extended once
    assert h.is_pending(first)
    h.advance(3_000)
    a, b, c = (h.answer(p) for p in (first, second, third))
    assert a.leader == b.leader == c.leader == "a-u1"
    assert [m.member_id for m in a.members] == ["a-u1", "b-u2", "c-u3"]
    assert b.members == ()
    assert c.members == ()
    assert a.generation_id == b.generation_id == 1
    # followers sync first and wait
    wait_b = h.sync("b-u2", 1)
    wait_c = h.sync("c-u3", 1)
    assert h.is_pending(wait_b)
    assert h.is_pending(wait_c)
    leader = h.sync("a-u1", 1, {"a-u1": b"A", "b-u2": b"B"})  # c gets an empty assignment
    assert leader.assignment == b"A"
    assert h.answer(wait_b).assignment == b"B"
    assert h.answer(wait_c) == SyncGroupResult(ErrorCode.NONE, "consumer", "range", b"")
    assert h.state() == "Stable"
    # a follower syncing after the leader is answered at once
    assert h.sync("b-u2", 1).assignment == b"B"


def _fields(config: GroupConfig) -> dict[str, int]:
    return {name: getattr(config, name) for name in config.__dataclass_fields__}


def test_initial_delay_is_bounded_by_the_rebalance_timeout() -> None:
    h = Harness(GroupConfig(**{**_fields(CONFIG), "group_initial_rebalance_delay_ms": 3_000}))
    first = h.join(rebalance_ms=5_000)
    for _ in range(4):
        h.advance(1_000)
        h.join(rebalance_ms=5_000)
    # delay 3000, then one extension of min(3000, 5000 - 3000) = 2000: answered at 5000
    h.advance(999)
    assert h.is_pending(first)
    h.advance(1)
    assert h.answer(first).generation_id == 1
    assert len(h.answer(first).members) == 5


def test_the_protocol_is_chosen_by_vote(h: Harness) -> None:
    h2 = Harness(GroupConfig(**{**_fields(CONFIG), "group_initial_rebalance_delay_ms": 10}))
    both = (("roundrobin", b"x"), ("range", b"y"))
    p1 = h2.join(protocols=(("range", b"a"), ("roundrobin", b"b")))
    p2 = h2.join(protocols=both)
    p3 = h2.join(protocols=both)
    h2.advance(20)  # the delay, extended once for the members that came meanwhile
    result = h2.answer(p1)
    assert result.protocol_name == "roundrobin"  # two votes to one
    assert [m.metadata for m in result.members] == [b"b", b"x", b"x"]
    assert h2.answer(p2).protocol_name == h2.answer(p3).protocol_name == "roundrobin"


def test_inconsistent_group_protocol(h: Harness) -> None:
    h.stable_group(1)
    result = h.join(protocols=(("roundrobin", b""),))
    assert result.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocol_type="connect").error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # an empty offer, or no protocol type, never joins, even a new group
    assert h.join(group="new", protocols=()).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(group="new", protocol_type="").error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.state("new") is None  # a refused join creates no group
    # one shared protocol is enough
    ok = h.join(protocols=(("roundrobin", b""), ("range", b"")))
    assert isinstance(ok, Pending)


def test_join_validation_errors(h: Harness) -> None:
    assert h.join(group="").error_code == ErrorCode.INVALID_GROUP_ID
    assert h.join(session_ms=999).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    assert h.join(session_ms=60_001).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    unknown_group = h.join("someone")
    assert unknown_group == JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, "someone")
    h.stable_group(1)
    assert h.join("someone").error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_group_max_size() -> None:
    h = Harness(GroupConfig(**{**_fields(CONFIG), "group_max_size": 2}))
    ids = h.stable_group(2)
    refused = h.join(client_id="third")
    assert refused.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert h.state() == "Stable"  # no rebalance for a refused member
    # known members still rejoin
    assert isinstance(h.join(ids[0]), Pending)


def test_follower_rejoin_in_stable_without_change_gets_the_current_generation(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    again = h.join(follower)
    assert again.generation_id == h.generation
    assert again.leader == leader
    assert again.members == ()
    assert h.state() == "Stable"


def test_leader_rejoin_or_changed_protocols_start_a_rebalance(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    pending = h.join(leader)
    assert isinstance(pending, Pending)
    assert h.state() == "PreparingRebalance"
    assert h.heartbeat(follower, h.generation) == ErrorCode.REBALANCE_IN_PROGRESS
    done = h.join(follower, protocols=(("range", b"changed"),))
    assert done.generation_id == h.generation + 1
    assert h.answer(pending).members[1].metadata == b"changed"


def test_rejoin_during_completing_rebalance(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    g = h.generation + 1
    h.join(leader)
    h.join(follower)
    assert h.state() == "CompletingRebalance"
    # same protocols: the lost answer is given again (the leader gets the members again)
    again = h.join(leader)
    assert again.generation_id == g
    assert len(again.members) == 2
    waiting = h.sync(follower, g)
    assert h.is_pending(waiting)
    # changed protocols: a new rebalance; the waiting sync is turned away
    pending = h.join(leader, protocols=(("range", b"new"),))
    assert h.answer(waiting).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert isinstance(pending, Pending)
    assert h.state() == "PreparingRebalance"
    assert h.sync(follower, g).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    h.join(follower)
    assert h.answer(pending).generation_id == g + 1


def test_a_second_join_while_the_first_waits_replaces_it(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    first = h.join(leader)
    second = h.join(leader)
    assert h.answer(first).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    h.join(follower)
    assert h.answer(second).generation_id == h.generation + 1


def test_sync_errors(h: Harness) -> None:
    assert h.sync("m", 1, group="").error_code == ErrorCode.INVALID_GROUP_ID
    assert h.sync("m", 1, group="nope").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    joined = h.join()
    member = joined.member_id
    assert h.sync("other", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync(member, 0).error_code == ErrorCode.ILLEGAL_GENERATION
    assert h.sync(member, 1, protocol_type="x").error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync(member, 1, protocol_name="x").error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    ok = h.sync(member, 1, {member: b"A"}, protocol_type="consumer", protocol_name="range")
    assert ok.error_code == ErrorCode.NONE
    # the only member (so the leader) rejoins with a change: a new generation at once
    assert h.join(member, protocols=(("range", b"other"),)).generation_id == 2
    assert h.state() == "CompletingRebalance"


def test_sync_in_preparing_rebalance(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    h.join(leader)
    assert h.sync(follower, h.generation).error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_heartbeat_errors(h: Harness) -> None:
    assert h.heartbeat("m", 1, group="") == ErrorCode.INVALID_GROUP_ID
    assert h.heartbeat("m", 1, group="nope") == ErrorCode.UNKNOWN_MEMBER_ID
    (member,) = h.stable_group(1)
    assert h.heartbeat("ghost", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(member, 1, instance="someone") == ErrorCode.NONE  # unknown instance
    assert h.heartbeat(member, 0) == ErrorCode.ILLEGAL_GENERATION
    assert h.heartbeat(member, 1) == ErrorCode.NONE


def test_heartbeat_in_completing_rebalance_is_fine(h: Harness) -> None:
    joined = h.join()
    assert h.state() == "CompletingRebalance"
    assert h.heartbeat(joined.member_id, 1) == ErrorCode.NONE


def test_leader_leaving_re_elects_the_next_member(h: Harness) -> None:
    leader, second, third = h.stable_group(3)
    result = h.leave(leader)
    assert result.error_code == ErrorCode.NONE
    assert result.members[0].error_code == ErrorCode.NONE
    assert h.state() == "PreparingRebalance"
    p2 = h.join(second)
    j3 = h.join(third)
    assert j3.leader == second
    assert [m.member_id for m in h.answer(p2).members] == [second, third]
    assert j3.generation_id == h.generation + 1


def test_leader_leaving_while_others_wait_to_sync(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    h.join(leader)
    h.join(follower)
    waiting = h.sync(follower, h.generation + 1)
    h.leave(leader)
    assert h.answer(waiting).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    result = h.join(follower)
    assert result.leader == follower
    assert result.generation_id == h.generation + 2


def test_leave_group_batch_and_errors(h: Harness) -> None:
    a, b, c = h.stable_group(3)
    result = h.leave(a, "ghost", b)
    assert [(m.member_id, m.error_code) for m in result.members] == [
        (a, ErrorCode.NONE),
        ("ghost", ErrorCode.UNKNOWN_MEMBER_ID),
        (b, ErrorCode.NONE),
    ]
    unknown = h.leave("x", group="nope")
    assert unknown.error_code == ErrorCode.NONE
    assert unknown.members[0].error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.leave("x", group="").error_code == ErrorCode.INVALID_GROUP_ID
    # the last member leaving empties the group: a new generation with no members is stored
    before = len(h.log)
    h.leave(c)
    assert h.state() == "Empty"
    assert len(h.log) == before + 1


def test_a_leaving_member_waiting_to_join_is_answered(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    pending = h.join(leader)
    h.leave(leader)
    assert h.answer(pending) == JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, leader)
    # the follower is now alone and has not rejoined: the join phase waits for it
    assert h.state() == "PreparingRebalance"
    assert h.join(follower).leader == follower


def test_all_members_leaving_during_the_join_phase_empties_the_group(h: Harness) -> None:
    (member,) = h.stable_group(1)
    alone = h.join(member, protocols=(("range", b"z"),))
    assert alone.generation_id == 2  # the only member rejoined: completes at once
    h.leave(member)
    assert h.state() == "Empty"
    assert h.coordinator.snapshot()["g"].metadata.generation == 3  # type: ignore[union-attr]


def test_describe_and_list_groups(h: Harness) -> None:
    leader, follower = h.stable_group(2)
    h.join(group="other")
    described = h.coordinator.describe_groups(["g", "other", "missing"]).response
    g, other, missing = described.groups
    assert (g.group_state, g.protocol_type, g.protocol_data) == ("Stable", "consumer", "range")
    assert [(m.member_id, m.member_metadata, m.member_assignment) for m in g.members] == [
        (leader, b"sub", leader.encode()),
        (follower, b"sub", follower.encode()),
    ]
    assert g.members[0].client_id == "c0"
    assert g.members[0].client_host == "/127.0.0.1"
    assert other.group_state == "CompletingRebalance"
    assert other.protocol_data == ""
    assert other.members[0].member_metadata == b""  # only a Stable group shows metadata
    assert (missing.error_code, missing.group_state, missing.members) == (
        ErrorCode.NONE,
        "Dead",
        (),
    )
    listed = h.coordinator.list_groups().response.groups
    assert [(x.group_id, x.group_state, x.protocol_type) for x in listed] == [
        ("g", "Stable", "consumer"),
        ("other", "CompletingRebalance", "consumer"),
    ]
    stable = h.coordinator.list_groups(states_filter=["STABLE"]).response.groups
    assert [x.group_id for x in stable] == ["g"]
    assert h.coordinator.list_groups(types_filter=["consumer"]).response.groups == ()
    assert len(h.coordinator.list_groups(types_filter=["Classic"]).response.groups) == 2


def test_statistics(h: Harness) -> None:
    h.stable_group(2)
    stats = h.coordinator.statistics()
    assert stats["groups"] == 1
    assert stats["members"] == 2
    assert stats["groups_Stable"] == 1


@pytest.mark.parametrize("bad", [{"group_max_size": 0}, {"group_min_session_timeout_ms": 70_000}])
def test_config_validation(bad: dict[str, int]) -> None:
    with pytest.raises(ConfigError):
        GroupConfig(**{**_fields(CONFIG), **bad})


def test_members_of_a_dynamic_member_id(h: Harness) -> None:
    assert h.join(client_id="consumer-1").member_id == "consumer-1-u1"
    assert RANGE == (("range", b"sub"),)
