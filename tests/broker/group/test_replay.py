"""Replaying the records the coordinator produced rebuilds an equal state; loaded groups keep
working (sessions restart at load, retention keeps counting from the stored timestamps)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek._types import TopicPartition
from odradek.broker.group import (
    CoordinatorRecord,
    GroupCoordinator,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    Pending,
)
from odradek.errors import CoordinatorRecordError, ErrorCode

from .conftest import CONFIG, Harness, subscription


def _assert_replays(h: Harness) -> GroupCoordinator:
    replayed = h.replayed()
    assert replayed.snapshot() == h.coordinator.snapshot()
    return replayed


def test_replay_rebuilds_stable_empty_and_simple_groups(h: Harness) -> None:
    # a Stable group with a static and a dynamic member, and commits
    latest = [h.join(instance="pod-0"), h.join(client_id="dyn")]
    while h.state() == "PreparingRebalance":
        for index, request in enumerate(latest):
            answered = h.answers.get(request.ticket) if isinstance(request, Pending) else request
            if answered is not None and h.state() == "PreparingRebalance":
                latest[index] = h.join(answered.member_id, instance="pod-0" if index == 0 else None)
    static, dynamic = (h.answer(r) if isinstance(r, Pending) else r for r in latest)
    generation = static.generation_id
    h.sync(dynamic.member_id, generation)
    h.sync(static.member_id, generation, {static.member_id: b"S", dynamic.member_id: b"D"})
    h.commit({("t", 0): 5, ("t", 1): 6}, generation=generation, member_id=dynamic.member_id)
    h.commit({("t", 0): 7}, generation=generation, member_id=static.member_id)
    # the static member restarts (a new member id, stored)
    h.join(instance="pod-0")
    # an Empty group with offsets, a group that only commits, a deleted group
    (member,) = h.stable_group(1, group="emptied")
    h.commit({("e", 0): 1}, group="emptied", generation=h.generation, member_id=member)
    h.leave(member, group="emptied")
    h.commit({("s", 0): 3}, group="simple", retention_ms=600_000)
    h.commit({("d", 0): 3}, group="deleted")
    h.absorb(h.coordinator.delete_groups(h.now, ["deleted"]))
    snapshot = h.coordinator.snapshot()
    assert sorted(snapshot) == ["emptied", "g", "simple"]
    assert snapshot["g"].state.value == "Stable"
    assert snapshot["emptied"].state.value == "Empty"
    _assert_replays(h)


def test_a_loaded_group_keeps_working(h: Harness) -> None:
    leader, follower = h.stable_group(2, session_ms=10_000)
    generation = h.generation
    h.commit({("t", 0): 9}, generation=generation, member_id=leader)
    h.now = 50_000
    loaded = h.replayed()
    assert (
        loaded.fetch_offsets("g", [TopicPartition("t", 0)])
        .response.partitions[TopicPartition("t", 0)]
        .committed_offset
        == 9
    )
    # sessions restart at load: both members are alive at 59 999
    ok = loaded.heartbeat(59_999, group_id="g", generation_id=generation, member_id=leader)
    assert ok.response.error_code == ErrorCode.NONE
    # the follower never heartbeats after the load: it expires 10 s after it
    assert loaded.next_deadline_ms() == 51_000  # the offsets expiry check comes first
    outcome = loaded.tick(60_000)
    assert outcome.completions == ()
    assert loaded.group_state("g").value == "PreparingRebalance"  # type: ignore[union-attr]
    rejoin = loaded.join_group(
        60_000,
        group_id="g",
        member_id=leader,
        client_id="c0",
        client_host="/127.0.0.1",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        protocol_type="consumer",
        protocols=(("range", b"sub"),),
    ).response
    assert rejoin.generation_id == generation + 1
    assert [m.member_id for m in rejoin.members] == [leader]
    assert follower not in {m.member_id for m in rejoin.members}


def test_retention_of_a_loaded_empty_group_counts_from_the_stored_timestamp(h: Harness) -> None:
    (member,) = h.stable_group(1, session_ms=60_000)
    h.commit({("t", 0): 1}, generation=h.generation, member_id=member)
    h.now = 1_000
    h.leave(member)  # Empty since 1 000
    h.now = 200_000
    loaded = h.replayed()
    # checks every second from the load at 200 000; the first one at or after 601 000 expires
    assert loaded.tick(600_000).records == ()
    assert loaded.next_deadline_ms() == 601_000
    expired = loaded.tick(601_000)
    assert [r.key for r in expired.records] == [
        OffsetCommitKey("g", "t", 0),
        GroupMetadataKey("g"),
    ]
    assert all(r.value is None for r in expired.records)


def test_load_applies_tombstones_and_later_values() -> None:
    def record(key: Any, value: Any) -> tuple[bytes, bytes | None]:
        return CoordinatorRecord(key, value).encode()

    member = MemberMetadata("m", None, "c", "h", 30_000, 10_000, b"s", b"a")
    log = [
        record(OffsetCommitKey("g", "t", 0), OffsetCommitValue(1)),
        record(OffsetCommitKey("g", "t", 0), OffsetCommitValue(2)),
        record(OffsetCommitKey("g", "t", 1), OffsetCommitValue(3)),
        record(OffsetCommitKey("g", "t", 1), None),
        record(
            GroupMetadataKey("g"), GroupMetadataValue("consumer", 1, "range", "m", 5, (member,))
        ),
        record(GroupMetadataKey("gone"), GroupMetadataValue("consumer", 2, None, None, 5, ())),
        record(GroupMetadataKey("gone"), None),
        record(OffsetCommitKey("o", "t", 0), OffsetCommitValue(4)),
        (b"\x00\x63other-kind", b"ignored"),  # a record kind not read (version 99)
        (None, b"no key"),  # type: ignore[list-item]
    ]
    coordinator = GroupCoordinator(CONFIG)
    coordinator.load(log, 100)
    snapshot = coordinator.snapshot()
    assert sorted(snapshot) == ["g", "o"]
    assert snapshot["g"].offsets == {TopicPartition("t", 0): OffsetCommitValue(2)}
    assert snapshot["g"].state.value == "Stable"
    assert snapshot["g"].metadata is not None
    assert snapshot["g"].metadata.members == (member,)
    assert snapshot["o"].metadata is None
    assert snapshot["o"].state.value == "Empty"
    # loading again replaces everything
    coordinator.load([], 100)
    assert coordinator.snapshot() == {}
    assert coordinator.statistics()["groups"] == 0


def test_load_refuses_a_corrupt_record() -> None:
    coordinator = GroupCoordinator(CONFIG)
    with pytest.raises(CoordinatorRecordError):
        coordinator.load([(b"\x00\x02\x00\x01g", b"\x00\x03garbage")], 0)


# --- random operation sequences -------------------------------------------------------------

_GROUPS = ("a", "b")
_op = st.one_of(
    st.tuples(st.just("join"), st.sampled_from(_GROUPS), st.sampled_from([None, "i0", "i1"])),
    st.tuples(st.just("rejoin"), st.integers(0, 9), st.booleans()),
    st.tuples(st.just("sync"), st.integers(0, 9)),
    st.tuples(st.just("leave"), st.integers(0, 9)),
    st.tuples(st.just("commit"), st.integers(0, 9), st.integers(0, 3)),
    st.tuples(st.just("simple_commit"), st.sampled_from((*_GROUPS, "s")), st.integers(0, 3)),
    st.tuples(st.just("delete"), st.sampled_from((*_GROUPS, "s"))),
    st.tuples(st.just("delete_offsets"), st.sampled_from((*_GROUPS, "s")), st.integers(0, 3)),
    st.tuples(st.just("advance"), st.sampled_from([100, 5_000, 12_000, 700_000])),
)


class _Driver:
    """Plays random client actions; every member it knows is (group, member id, instance)."""

    def __init__(self, h: Harness) -> None:
        self.h = h
        self.members: list[tuple[str, str, str | None]] = []
        self.joining: list[tuple[str, str | None, Pending]] = []

    def _member(self, index: int) -> tuple[str, str, str | None] | None:
        self._learn_late_answers()
        return self.members[index % len(self.members)] if self.members else None

    def _generation(self, group: str) -> int:
        groups = self.h.coordinator._groups  # the test peeks at the generation
        return groups[group].generation_id if group in groups else -1

    def _learn(self, group: str, instance: str | None, response: Any) -> None:
        if isinstance(response, Pending):
            self.joining.append((group, instance, response))
        elif response.error_code == ErrorCode.NONE:
            self.members.append((group, response.member_id, instance))

    def _learn_late_answers(self) -> None:
        still = []
        for group, instance, pending in self.joining:
            answer = self.h.answers.get(pending.ticket)
            if answer is None:
                still.append((group, instance, pending))
            elif answer.error_code == ErrorCode.NONE:
                self.members.append((group, answer.member_id, instance))
        self.joining = still

    def play(self, op: tuple[Any, ...]) -> None:
        h, kind = self.h, op[0]
        if kind == "join":
            _, group, instance = op
            protocols = (("range", subscription("t", group)),)
            self._learn(
                group, instance, h.join(group=group, instance=instance, protocols=protocols)
            )
        elif kind == "advance":
            h.advance(op[1])
        elif kind in ("simple_commit", "delete", "delete_offsets"):
            group = op[1]
            if kind == "simple_commit":
                h.commit({("t", op[2]): op[2]}, group=group)
            elif kind == "delete":
                h.absorb(h.coordinator.delete_groups(h.now, [group]))
            else:
                partition = TopicPartition("u" if op[2] % 2 else "t", op[2])
                h.absorb(
                    h.coordinator.delete_offsets(h.now, group_id=group, partitions=[partition])
                )
        elif (known := self._member(op[1])) is not None:
            group, member_id, instance = known
            generation = self._generation(group)
            if kind == "rejoin":
                payload = subscription("t", "u") if op[2] else subscription("t", group)
                h.join(member_id, group=group, instance=instance, protocols=(("range", payload),))
            elif kind == "sync":
                h.sync(member_id, generation, {member_id: b"x"}, group=group, instance=instance)
            elif kind == "leave":
                h.leave(member_id, group=group)
            else:
                h.commit(
                    {("t", op[2]): op[2], ("u", op[2]): 1},
                    group=group,
                    generation=generation,
                    member_id=member_id,
                    instance=instance,
                )

    def settle(self) -> None:
        """Drives every group to Stable or Empty as clients would: members rejoin a join
        phase, everyone syncs (followers first); time passes only when nothing else helps."""
        h = self.h
        for _ in range(30):
            groups = h.coordinator._groups
            busy = [g for g in groups.values() if g.state.value not in ("Stable", "Empty")]
            if not busy:
                return
            for group in busy:
                members = list(group.members.values())
                if group.state.value == "PreparingRebalance":
                    for member in members:
                        if member.join_ticket is None and group.state.value == "PreparingRebalance":
                            h.join(
                                member.member_id,
                                group=group.group_id,
                                instance=member.group_instance_id,
                                protocols=member.protocols,
                            )
                elif group.state.value == "CompletingRebalance":
                    leader = group.leader_id
                    for member in sorted(members, key=lambda m: m.member_id == leader):
                        if member.sync_ticket is None:
                            h.sync(
                                member.member_id,
                                group.generation_id,
                                {},
                                group=group.group_id,
                                instance=member.group_instance_id,
                            )
            if any(g.state.value == "PreparingRebalance" for g in groups.values()):
                h.advance(1_000)
        raise AssertionError("groups did not settle")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_op, max_size=40))
def test_random_operations_replay_to_an_equal_state(ops: list[tuple[Any, ...]]) -> None:
    h = Harness()
    driver = _Driver(h)
    for op in ops:
        driver.play(op)
    driver.settle()
    _assert_replays(h)
    # and every request that waited was answered exactly once or still legitimately waits
    for outcome in h.outcomes:
        if isinstance(outcome.response, Pending) and outcome.response.ticket not in h.answers:
            group_states = {g.state.value for g in h.coordinator._groups.values()}
            assert group_states <= {"Stable", "Empty"}
            raise AssertionError(f"ticket {outcome.response.ticket} never answered")
