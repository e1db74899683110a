"""``group.history``: each rebalance is recorded with its cause and the generation it made."""

from __future__ import annotations

from odradek.broker.group.history import CauseKind, RebalanceCause, RebalanceHistory

from .conftest import Harness


def history(h: Harness, group: str = "g") -> list[tuple[CauseKind, str, int | None]]:
    [found] = [g for g in h.coordinator.groups() if g.group_id == group]
    return [(r.cause.kind, r.cause.member_id, r.generation_id) for r in found.rebalances.records()]


def test_joins_leaves_and_session_timeouts_are_recorded_with_their_member(h: Harness) -> None:
    a, b = h.stable_group(2)
    assert history(h) == [(CauseKind.MEMBER_JOINED, a, 1), (CauseKind.MEMBER_JOINED, b, 2)]
    assert h.generation == 2
    h.leave(b)
    assert history(h)[-1] == (CauseKind.MEMBER_LEFT, b, None)  # the join phase still runs
    rejoined = h.join(a)
    assert rejoined.generation_id == h.generation + 1
    assert history(h)[-1] == (CauseKind.MEMBER_LEFT, b, h.generation + 1)
    h.sync(a, rejoined.generation_id, {a: b"x"})
    last_beat = h.now
    [found] = h.coordinator.groups()  # (the Empty group goes once its offsets expire)
    h.advance(10_001)  # session.timeout.ms 10 s, no heartbeat
    record = found.rebalances.records()[-1]
    assert record.cause == RebalanceCause(CauseKind.SESSION_TIMEOUT, a, last_beat)
    assert record.started_ms == last_beat + 10_000
    assert record.completed_ms == record.started_ms
    assert (record.from_generation, record.generation_id, record.members) == (3, 4, 0)
    assert str(record.cause) == f"member {a} session expired (last heartbeat at {last_beat} ms)"
    assert found.rebalances.total == len(found.rebalances.records())


def test_a_changed_subscription_is_told_from_a_plain_rejoin(h: Harness) -> None:
    [a] = h.stable_group(1)
    h.join(a)  # the leader rejoins, same subscription
    assert history(h)[-1][:2] == (CauseKind.MEMBER_REJOINED, a)
    h.sync(a, h.generation + 1, {a: b"x"})
    h.join(a, protocols=[("range", b"other-topics")])
    assert history(h)[-1][:2] == (CauseKind.SUBSCRIPTION_CHANGED, a)


def test_the_history_keeps_the_last_n_and_counts_all() -> None:
    history = RebalanceHistory(size=3)
    for generation in range(5):
        history.started(generation * 10, generation, RebalanceCause(CauseKind.MEMBER_JOINED, "m"))
        history.completed(generation * 10 + 1, generation + 1, 1)
    records = history.records()
    assert [r.from_generation for r in records] == [2, 3, 4]
    assert [r.generation_id for r in records] == [3, 4, 5]
    assert history.total == 5
    assert records[-1].to_json()["cause"] == "member_joined"
    # A completion with no rebalance running changes nothing.
    history.completed(99, 9, 1)
    assert history.records() == records
