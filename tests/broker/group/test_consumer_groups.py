"""KIP-848 consumer groups in the pure coordinator: joining, epochs, reconciliation with
revocation before assignment, fencing, session and revocation timeouts, static members,
regular expressions, leaving, the upgrade of an empty classic group, and the replay of the
records after a failover."""

from __future__ import annotations

import random

import pytest

from odradek.broker.group import GroupConfig, OffsetCommitPartition
from odradek.broker.group.consumer_group import ConsumerGroupState, MemberState
from odradek.broker.group.consumer_results import ConsumerGroupDescribeResult
from odradek.errors import ErrorCode

from .conftest import Harness, subscription
from .consumer_harness import (
    ConsumerHarness,
    SimulatedMember,
    no_partition_owned_twice,
    topic_id,
)

T = topic_id("t")


def _settle(members: dict[str, SimulatedMember], rounds: int = 20) -> None:
    for _ in range(rounds):
        for member in list(members.values()):
            member.heartbeat()
            assert no_partition_owned_twice(members)


def test_first_member_gets_every_partition_at_epoch_one() -> None:
    h = ConsumerHarness(t=4)
    result = h.heartbeat("m1", 0, subscribed_topic_names=["t"])
    assert result.error_code is ErrorCode.NONE
    assert result.member_epoch == 1
    assert result.heartbeat_interval_ms == 1_000
    assert result.assignment == {T: frozenset({0, 1, 2, 3})}
    group = h.group()
    assert (group.group_epoch, group.assignment_epoch) == (1, 1)
    assert group.state is ConsumerGroupState.STABLE
    # nothing changed: no assignment in the answer, same epoch
    again = h.heartbeat("m1", 1, owned={T: frozenset({0, 1, 2, 3})})
    assert (again.member_epoch, again.assignment) == (1, None)


def test_a_partition_moves_only_after_its_owner_revoked_it() -> None:
    h = ConsumerHarness(t=4)
    h.heartbeat("m1", 0, subscribed_topic_names=["t"])
    joined = h.heartbeat("m2", 0, subscribed_topic_names=["t"])
    # the group epoch moved to 2; m2's target partitions are still m1's: it gets none yet
    assert joined.member_epoch == 2
    assert joined.assignment == {}
    assert h.group().members["m2"].state is MemberState.UNRELEASED_PARTITIONS
    # m1 is asked to revoke two partitions, its epoch stays 1 until it has
    asked = h.heartbeat("m1", 1, owned={T: frozenset({0, 1, 2, 3})})
    assert asked.member_epoch == 1
    kept = asked.assignment[T]
    assert len(kept) == 2
    assert h.group().members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    # m2 still waits while m1 has not confirmed
    assert h.heartbeat("m2", 2, owned={}).assignment is None
    # m1 confirms: it reaches epoch 2
    confirmed = h.heartbeat("m1", 1, owned={T: kept})
    assert confirmed.member_epoch == 2
    # now m2 gets the released partitions
    released = h.heartbeat("m2", 2, owned={})
    assert released.assignment == {T: frozenset({0, 1, 2, 3}) - kept}
    assert h.group().state is ConsumerGroupState.STABLE


@pytest.mark.parametrize("seed", range(8))
def test_random_joins_leaves_and_expiries_never_give_a_partition_to_two_members(
    seed: int,
) -> None:
    rng = random.Random(seed)
    h = ConsumerHarness(t=12, u=5)
    members: dict[str, SimulatedMember] = {}
    names = itertools_names()
    for _ in range(60):
        action = rng.random()
        if action < 0.25 or not members:
            member_id = next(names)
            topics = rng.choice([("t",), ("t", "u"), ("u",)])
            members[member_id] = SimulatedMember(h, member_id, topics)
        elif action < 0.35:
            victim = rng.choice(sorted(members))
            members.pop(victim).leave()
        elif action < 0.4:
            h.advance(rng.choice([500, 11_000]))  # sessions may expire (members are silent)
        for member in rng.sample(
            sorted(members.values(), key=lambda m: m.member_id), k=len(members)
        ):
            member.heartbeat()
            assert no_partition_owned_twice(members)
            server = h.group()
            owners: dict[tuple[object, int], str] = {}
            for stored in server.members.values():
                for key in (
                    (t, p)
                    for a in (stored.assigned, stored.pending_revocation)
                    for t, ps in a.items()
                    for p in ps
                ):
                    assert key not in owners, "the coordinator gave a partition to two members"
                    owners[key] = stored.member_id
    _settle(members)
    live = [m for m in members.values() if m.member_id in h.group().members]
    for member in live:
        member.heartbeat()
    assert h.group().state is ConsumerGroupState.STABLE
    owned = sorted(p for m in live for p in m.partitions())
    subscribed = {t for m in live for t in m.topics}
    expected = sorted((topic_id(t), p) for t in subscribed for p in range(h.topics[t].partitions))
    assert owned == expected  # every subscribed partition consumed, once
    # the log rebuilds the same group
    replayed = h.replayed()._consumer_groups["g"]
    group = h.group()
    assert replayed.group_epoch == group.group_epoch
    assert replayed.assignment_epoch == group.assignment_epoch
    assert replayed.members == group.members
    assert replayed.target == group.target


def itertools_names():  # type: ignore[no-untyped-def]
    index = 0
    while True:
        index += 1
        yield f"m{index}"


def test_the_uniform_assignment_is_balanced_and_range_is_contiguous() -> None:
    h = ConsumerHarness(t=7)
    members = {m: SimulatedMember(h, m) for m in ("a", "b", "c")}
    _settle(members)
    sizes = sorted(len(m.partitions()) for m in members.values())
    assert sizes == [2, 2, 3]
    r = ConsumerHarness(t=7)
    ranged = {m: SimulatedMember(r, m, server_assignor="range") for m in ("a", "b", "c")}
    _settle(ranged)
    assert ranged["a"].owned == {T: frozenset({0, 1, 2})}
    assert ranged["b"].owned == {T: frozenset({3, 4})}
    assert ranged["c"].owned == {T: frozenset({5, 6})}


def test_an_unknown_assignor_is_refused() -> None:
    h = ConsumerHarness(t=1)
    result = h.heartbeat("m", 0, subscribed_topic_names=["t"], server_assignor="sticky")
    assert result.error_code is ErrorCode.UNSUPPORTED_ASSIGNOR


def test_epochs_are_fenced() -> None:
    h = ConsumerHarness(t=2)
    h.heartbeat("m1", 0, subscribed_topic_names=["t"])
    assert h.heartbeat("m1", 5).error_code is ErrorCode.FENCED_MEMBER_EPOCH
    assert h.heartbeat("nobody", 1).error_code is ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat("", 1).error_code is ErrorCode.INVALID_REQUEST
    assert h.heartbeat(
        "m1", 0, subscribed_topic_names=["t"], rebalance_timeout_ms=-1
    ).error_code is (ErrorCode.INVALID_REQUEST)
    # a lost answer: the member retries with its previous epoch, owning only what it has
    h.heartbeat("m2", 0, subscribed_topic_names=["t"])
    bumped = h.heartbeat("m1", 1, owned={T: frozenset({0, 1})})
    assert bumped.error_code is ErrorCode.NONE
    mine = bumped.assignment[T]
    h.heartbeat("m1", 1, owned={T: mine})  # revoked: m1 is at epoch 2 now
    assert h.group().members["m1"].member_epoch == 2
    assert h.heartbeat("m1", 1, owned={T: mine}).error_code is ErrorCode.NONE
    assert h.heartbeat("m1", 1, owned={T: frozenset({0, 1})}).error_code is (
        ErrorCode.FENCED_MEMBER_EPOCH
    )


def test_a_silent_member_is_removed_after_its_session_and_its_partitions_move() -> None:
    h = ConsumerHarness(t=4)
    a, b = SimulatedMember(h, "a"), SimulatedMember(h, "b")
    _settle({"a": a, "b": b})
    assert len(a.partitions()) == 2
    for _ in range(12):
        h.advance(1_000)
        a.heartbeat()  # b stays silent
    assert "b" not in h.group().members
    assert len(a.partitions()) == 4
    assert b.heartbeat().error_code is ErrorCode.UNKNOWN_MEMBER_ID


def test_a_member_that_does_not_revoke_in_its_rebalance_timeout_is_fenced() -> None:
    h = ConsumerHarness(t=4)
    h.heartbeat("slow", 0, subscribed_topic_names=["t"], rebalance_timeout_ms=3_000)
    h.heartbeat("new", 0, subscribed_topic_names=["t"])
    asked = h.heartbeat("slow", 1, owned={T: frozenset(range(4))})
    assert h.group().members["slow"].state is MemberState.UNREVOKED_PARTITIONS
    assert asked.member_epoch == 1
    h.advance(3_001)
    assert "slow" not in h.group().members
    taken = h.heartbeat("new", 2, owned={})
    assert taken.assignment == {T: frozenset(range(4))}


def test_a_static_member_that_leaves_for_now_comes_back_without_a_rebalance() -> None:
    h = ConsumerHarness(t=4)
    a = SimulatedMember(h, "a1", instance_id="pod-a")
    b = SimulatedMember(h, "b1", instance_id="pod-b")
    _settle({"a": a, "b": b})
    epoch = h.group().group_epoch
    before = dict(a.owned)
    assert h.heartbeat("a1", -2, instance_id="pod-a").member_epoch == -2
    # another process may not take the instance id while it is someone's
    assert (
        h.heartbeat("b2", 0, instance_id="pod-b", subscribed_topic_names=["t"]).error_code
        is ErrorCode.UNRELEASED_INSTANCE_ID
    )
    back = h.heartbeat("a2", 0, instance_id="pod-a", subscribed_topic_names=["t"])
    assert back.error_code is ErrorCode.NONE
    assert back.assignment == before
    assert h.group().group_epoch == epoch  # no rebalance
    assert "a1" not in h.group().members
    assert h.heartbeat("a1", back.member_epoch, instance_id="pod-a").error_code in (
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.UNKNOWN_MEMBER_ID,
    )


def test_regex_subscriptions_follow_new_topics() -> None:
    h = ConsumerHarness(**{"orders-eu": 2, "orders-us": 1, "payments": 3, "__internal": 1})
    result = h.heartbeat("m", 0, subscribed_topic_regex="orders-.*")
    assert result.assignment == {
        topic_id("orders-eu"): frozenset({0, 1}),
        topic_id("orders-us"): frozenset({0}),
    }
    assert h.heartbeat("x", 0, subscribed_topic_regex="(").error_code is (
        ErrorCode.INVALID_REGULAR_EXPRESSION
    )
    assert h.heartbeat("y", 0, subscribed_topic_regex=".*").assignment is not None
    assert all(topic_id("__internal") not in m.assigned for m in h.group().members.values())
    h.set_topic("orders-asia", 1)
    grown = h.heartbeat("m", h.group().members["m"].member_epoch, owned=dict(result.assignment))
    assert (
        topic_id("orders-asia") in (grown.assignment or {})
        or topic_id("orders-asia") in h.group().target["y"]
    )


def test_leaving_gives_the_partitions_to_the_others() -> None:
    h = ConsumerHarness(t=3)
    a, b = SimulatedMember(h, "a"), SimulatedMember(h, "b")
    members = {"a": a, "b": b}
    _settle(members)
    assert a.leave().member_epoch == -1
    del members["a"]
    _settle(members)
    assert b.owned == {T: frozenset({0, 1, 2})}
    assert "a" not in h.replayed()._consumer_groups["g"].members


def test_offset_commits_check_the_member_epoch() -> None:
    h = ConsumerHarness(t=2)
    h.heartbeat("m", 0, subscribed_topic_names=["t"])
    commit = [OffsetCommitPartition("t", 0, 10)]

    def commit_as(member_id: str, epoch: int) -> ErrorCode:
        result = h.apply(
            h.coordinator.commit_offsets(
                h.now, group_id="g", generation_id=epoch, member_id=member_id, partitions=commit
            )
        )
        (code,) = result.partitions.values()
        return code

    assert commit_as("m", 1) is ErrorCode.NONE
    assert commit_as("m", 0) is ErrorCode.STALE_MEMBER_EPOCH
    assert commit_as("x", 1) is ErrorCode.UNKNOWN_MEMBER_ID
    assert commit_as("", -1) is ErrorCode.UNKNOWN_MEMBER_ID  # not while it has members
    fetched = h.apply(h.coordinator.fetch_offsets("g", None, member_id="m", member_epoch=7))
    assert fetched.error_code is ErrorCode.STALE_MEMBER_EPOCH
    fetched = h.apply(h.coordinator.fetch_offsets("g", None, member_id="m", member_epoch=1))
    assert [v.committed_offset for v in fetched.partitions.values()] == [10]
    # offsets survive a failover with the group
    replayed = h.replayed()
    assert replayed.fetch_offsets("g").response.partitions  # type: ignore[union-attr]


def test_an_empty_classic_group_is_upgraded_and_keeps_its_offsets() -> None:
    classic = Harness()
    classic.commit({("t", 0): 42})
    h = ConsumerHarness(t=1)
    h.coordinator = classic.coordinator
    h.log = list(classic.log)
    upgraded = h.heartbeat("m", 0, subscribed_topic_names=["t"])
    assert upgraded.error_code is ErrorCode.NONE
    assert h.coordinator.group_state("g") is None  # no classic group any more
    listed = h.coordinator.list_groups().response
    assert [(g.group_id, g.group_type, g.group_state) for g in listed.groups] == [  # type: ignore[union-attr]
        ("g", "consumer", "Stable")
    ]
    fetched = h.coordinator.fetch_offsets("g").response
    assert [v.committed_offset for v in fetched.partitions.values()] == [42]  # type: ignore[union-attr]
    assert [
        v.committed_offset for v in h.replayed().fetch_offsets("g").response.partitions.values()
    ] == [42]  # type: ignore[union-attr]


def test_a_classic_group_with_members_is_not_taken_over() -> None:
    classic = Harness()
    classic.join(protocols=(("range", subscription("t")),))
    h = ConsumerHarness(t=1)
    h.coordinator = classic.coordinator
    result = h.heartbeat("m", 0, subscribed_topic_names=["t"])
    assert result.error_code is ErrorCode.GROUP_ID_NOT_FOUND


def test_describe_reports_epochs_assignor_and_assignments() -> None:
    h = ConsumerHarness(t=2)
    h.heartbeat("m", 0, subscribed_topic_names=["t"], server_assignor="range")
    described = h.coordinator.consumer_group_describe(["g", "nope"]).response
    assert isinstance(described, ConsumerGroupDescribeResult)
    group, missing = described.groups
    assert (group.group_state, group.group_epoch, group.assignment_epoch, group.assignor_name) == (
        "Stable",
        1,
        1,
        "range",
    )
    (member,) = group.members
    assert member.assignment == member.target_assignment == {T: frozenset({0, 1})}
    assert missing.error_code is ErrorCode.GROUP_ID_NOT_FOUND
    old_style = h.coordinator.describe_groups(["g"]).response.groups[0]  # type: ignore[union-attr]
    assert (old_style.protocol_type, old_style.group_state) == ("consumer", "Stable")


def test_a_failover_keeps_the_assignment_without_a_rebalance() -> None:
    h = ConsumerHarness(t=4)
    members = {m: SimulatedMember(h, m) for m in ("a", "b")}
    _settle(members)
    epoch = h.group().group_epoch
    h.coordinator = h.replayed()
    for member in members.values():
        result = member.heartbeat()
        assert result.error_code is ErrorCode.NONE
    assert h.group().group_epoch == epoch
    assert no_partition_owned_twice(members)
    assert sum(len(m.partitions()) for m in members.values()) == 4


def test_a_classic_member_joins_an_empty_consumer_group_as_a_classic_group() -> None:
    h = ConsumerHarness(t=1)
    h.heartbeat("m", 0, subscribed_topic_names=["t"])
    h.apply(
        h.coordinator.commit_offsets(
            h.now,
            group_id="g",
            generation_id=1,
            member_id="m",
            partitions=[OffsetCommitPartition("t", 0, 7)],
        )
    )
    # with a member, a classic JoinGroup is refused
    refused = h.apply(
        h.coordinator.join_group(
            h.now, group_id="g", member_id="", client_id="c", client_host="h",
            session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
            protocol_type="consumer", protocols=(("range", subscription("t")),),
        )
    )  # fmt: skip
    assert refused.error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.heartbeat("m", -1).error_code is ErrorCode.NONE
    joined = h.apply(
        h.coordinator.join_group(
            h.now, group_id="g", member_id="", client_id="c", client_host="h",
            session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
            protocol_type="consumer", protocols=(("range", subscription("t")),),
        )
    )  # fmt: skip
    assert joined.error_code is ErrorCode.NONE
    assert "g" not in h.coordinator._consumer_groups
    fetched = h.coordinator.fetch_offsets("g").response
    assert [v.committed_offset for v in fetched.partitions.values()] == [7]  # type: ignore[union-attr]
    replayed = h.replayed()
    assert "g" not in replayed._consumer_groups
    assert replayed.group_state("g") is not None


def test_offsets_of_an_empty_consumer_group_expire_a_retention_after_it_emptied() -> None:
    config = GroupConfig(
        group_consumer_session_timeout_ms=10_000,
        group_consumer_heartbeat_interval_ms=1_000,
        offsets_retention_minutes=1,
        offsets_retention_check_interval_ms=1_000,
    )
    h = ConsumerHarness(config, t=1)
    h.heartbeat("m", 0, subscribed_topic_names=["t"])
    h.apply(
        h.coordinator.commit_offsets(
            h.now, group_id="g", generation_id=1, member_id="m",
            partitions=[OffsetCommitPartition("t", 0, 3)],
        )
    )  # fmt: skip
    for _ in range(100):  # the member stays 100 s, past the retention
        h.advance(1_000)
        h.heartbeat("m", 1)
    h.heartbeat("m", -1)
    h.advance(59_000)
    assert "g" in h.coordinator._consumer_groups  # not a minute since it emptied
    h.advance(2_000)
    assert "g" not in h.coordinator._consumer_groups  # offsets expired, group gone
