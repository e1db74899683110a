"""Time-driven transitions: session expiry, rebalance timeout, sync timeout, initial delay and
the deadlines the runtime is told to tick at."""

from __future__ import annotations

from odradek.broker.group import JoinGroupResult, SyncGroupResult
from odradek.broker.group.deadlines import DeadlineQueue
from odradek.errors import ErrorCode

from .conftest import Harness, make_config


def test_session_expiry_removes_the_member_and_rebalances(h: Harness) -> None:
    leader, follower = h.stable_group(2, session_ms=10_000)
    for _ in range(3):
        h.advance(3_000)
        assert h.heartbeat(leader, h.generation) == ErrorCode.NONE
    h.advance(999)
    assert h.state() == "Stable"
    h.advance(1)
    # the follower's last sign of life was the sync at time 0: it expired at 10 000
    assert h.state() == "PreparingRebalance"
    assert h.heartbeat(follower, h.generation) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(leader, h.generation) == ErrorCode.REBALANCE_IN_PROGRESS
    alone = h.join(leader)
    assert alone.generation_id == h.generation + 1
    assert [m.member_id for m in alone.members] == [leader]


def test_session_expires_exactly_at_the_deadline() -> None:
    h = Harness(make_config(offsets_retention_check_interval_ms=600_000))
    (member,) = h.stable_group(1, session_ms=5_000)
    h.advance(4_999)
    assert h.state() == "Stable"
    assert h.coordinator.next_deadline_ms() == 5_000
    h.advance(1)
    assert h.state() == "Empty"
    assert h.heartbeat(member, h.generation) == ErrorCode.UNKNOWN_MEMBER_ID


def test_the_last_member_expiring_empties_the_group(h: Harness) -> None:
    (member,) = h.stable_group(1, session_ms=5_000)
    h.commit({("t", 0): 5}, generation=h.generation, member_id=member)
    h.advance(5_000)
    assert h.state() == "Empty"
    snapshot = h.coordinator.snapshot()["g"]
    assert snapshot.metadata is not None
    assert snapshot.metadata.members == ()
    assert snapshot.metadata.generation == h.generation + 1


def test_an_empty_group_without_offsets_goes_at_the_next_expiry_check(h: Harness) -> None:
    (member,) = h.stable_group(1, session_ms=5_000)
    h.leave(member)
    assert h.state() == "Empty"
    records = len(h.log)
    h.advance(1_000)
    assert h.state() is None
    assert h.log[records:] == [(b"\x00\x02\x00\x01g", None)]  # the group's tombstone


def test_heartbeats_and_commits_keep_a_session(h: Harness) -> None:
    leader, follower = h.stable_group(2, session_ms=5_000)
    for _ in range(5):
        h.advance(4_000)
        h.heartbeat(leader, h.generation)
        h.commit({("t", 0): 1}, generation=h.generation, member_id=follower)
    assert h.state() == "Stable"


def test_a_member_waiting_in_join_group_is_not_expired(h: Harness) -> None:
    leader, follower = h.stable_group(2, session_ms=5_000, rebalance_ms=30_000)
    pending = h.join(leader, session_ms=5_000, rebalance_ms=30_000)
    for _ in range(5):
        h.advance(4_000)
        assert h.heartbeat(follower, h.generation) == ErrorCode.REBALANCE_IN_PROGRESS
    # 20 s in the join phase, beyond the leader's 5 s session: still waiting, still a member
    assert h.is_pending(pending)
    done = h.join(follower, session_ms=5_000, rebalance_ms=30_000)
    assert done.generation_id == h.generation + 1
    assert len(h.answer(pending).members) == 2


def test_rebalance_timeout_removes_members_that_do_not_rejoin() -> None:
    h = Harness(make_config(offsets_retention_check_interval_ms=600_000))
    a, b, c = h.stable_group(3, session_ms=60_000, rebalance_ms=30_000)
    start = h.now
    pending_a = h.join(a, session_ms=60_000, rebalance_ms=30_000)
    pending_b = h.join(b, session_ms=60_000, rebalance_ms=30_000)
    assert h.coordinator.next_deadline_ms() == start + 30_000
    h.advance(29_999)
    assert h.is_pending(pending_a)
    assert h.heartbeat(c, h.generation) == ErrorCode.REBALANCE_IN_PROGRESS  # alive, not joining
    h.advance(1)
    result_a, result_b = h.answer(pending_a), h.answer(pending_b)
    assert [m.member_id for m in result_a.members] == [a, b]
    assert result_b.generation_id == h.generation + 1
    assert h.heartbeat(c, h.generation) == ErrorCode.UNKNOWN_MEMBER_ID


def test_rebalance_timeout_of_a_slow_leader_elects_a_joined_member(h: Harness) -> None:
    leader, follower = h.stable_group(2, session_ms=60_000, rebalance_ms=10_000)
    pending = h.join(
        follower, protocols=(("range", b"new"),), session_ms=60_000, rebalance_ms=10_000
    )
    h.advance(10_000)
    result = h.answer(pending)
    assert result.leader == follower
    assert [m.member_id for m in result.members] == [follower]
    assert h.heartbeat(leader, h.generation) == ErrorCode.UNKNOWN_MEMBER_ID


def test_the_rebalance_timeout_is_the_longest_of_the_members() -> None:
    h = Harness(make_config(offsets_retention_check_interval_ms=600_000))
    a, _ = h.stable_group(2, session_ms=60_000, rebalance_ms=10_000)
    # the leader rejoins with a longer timeout, starting the phase
    h.join(a, session_ms=60_000, rebalance_ms=50_000)
    start = h.now
    assert h.coordinator.next_deadline_ms() == start + 50_000


def test_a_leader_that_never_syncs_is_removed_after_the_rebalance_timeout(h: Harness) -> None:
    leader, follower = h.stable_group(2, session_ms=60_000, rebalance_ms=20_000)
    h.join(leader, session_ms=60_000, rebalance_ms=20_000)
    h.join(follower, session_ms=60_000, rebalance_ms=20_000)
    generation = h.generation + 1
    waiting = h.sync(follower, generation)
    h.advance(19_999)
    assert h.is_pending(waiting)
    h.advance(1)
    assert h.answer(waiting) == SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS)
    assert h.state() == "PreparingRebalance"
    assert h.heartbeat(leader, generation) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.join(follower).leader == follower


def test_a_follower_that_never_syncs_is_removed_even_once_stable(h: Harness) -> None:
    leader, follower = h.stable_group(2, session_ms=60_000, rebalance_ms=20_000)
    h.join(leader, session_ms=60_000, rebalance_ms=20_000)
    h.join(follower, session_ms=60_000, rebalance_ms=20_000)
    generation = h.generation + 1
    assert h.sync(leader, generation, {leader: b"L"}).assignment == b"L"
    assert h.state() == "Stable"
    h.advance(10_000)
    assert h.heartbeat(follower, generation) == ErrorCode.NONE  # heartbeats, never syncs
    h.advance(10_000)
    assert h.state() == "PreparingRebalance"
    assert h.heartbeat(follower, generation) == ErrorCode.UNKNOWN_MEMBER_ID


def test_the_sync_deadline_is_harmless_once_everyone_synced(h: Harness) -> None:
    h.stable_group(2, session_ms=60_000, rebalance_ms=20_000)
    h.advance(20_000)
    assert h.state() == "Stable"


def test_initial_delay_waits_its_full_course_even_if_everyone_joined() -> None:
    h = Harness(make_config(group_initial_rebalance_delay_ms=3_000))
    pending = h.join()
    h.advance(2_999)
    assert h.is_pending(pending)
    assert h.state() == "PreparingRebalance"
    h.advance(1)  # no member arrived meanwhile: no extension
    result = h.answer(pending)
    assert isinstance(result, JoinGroupResult)
    assert result.generation_id == 1


def test_initial_delay_applies_to_an_empty_group_again() -> None:
    h = Harness(make_config(group_initial_rebalance_delay_ms=3_000))
    pending = h.join()
    h.advance(3_000)
    member = h.answer(pending).member_id
    h.leave(member)
    assert h.state() == "Empty"
    again = h.join()
    h.advance(2_999)
    assert h.is_pending(again)
    h.advance(1)
    assert h.answer(again).generation_id == 3


def test_next_deadline_covers_the_offsets_expiry_check(h: Harness) -> None:
    # loaded at 0 with a 1 s check interval
    assert h.coordinator.next_deadline_ms() == 1_000
    h.advance(1_000)
    assert h.coordinator.next_deadline_ms() == 2_000


def test_ticking_early_is_harmless(h: Harness) -> None:
    leader, _ = h.stable_group(2, session_ms=10_000)
    for t in range(0, 9_000, 500):
        outcome = h.coordinator.tick(t)
        assert outcome.records == ()
        assert outcome.completions == ()
        h.coordinator.heartbeat(t, group_id="g", generation_id=h.generation, member_id=leader)
    assert h.state() == "Stable"


def test_deadline_queue_keeps_the_earliest_deadline_per_key() -> None:
    queue: DeadlineQueue[str] = DeadlineQueue()
    queue.schedule("a", 10)
    queue.schedule("a", 20)  # later: ignored, the owner re-checks when 10 pops
    queue.schedule("b", 5)
    queue.schedule("b", 3)  # earlier: replaces
    assert len(queue) == 2
    assert queue.next_deadline_ms() == 3
    assert queue.pop_due(2) is None
    assert queue.pop_due(10) == "b"
    assert queue.pop_due(10) == "a"
    assert queue.pop_due(100) is None
    assert queue.next_deadline_ms() is None
    queue.schedule("a", 7)
    queue.schedule("a", 7)
    assert queue.pop_due(7) == "a"
    assert queue.pop_due(7) is None
    queue.schedule("x", 1)
    queue.clear()
    assert queue.next_deadline_ms() is None
