"""``group.history``: each rebalance is recorded with its cause and the generation it made."""

from __future__ import annotations

from odradek.broker.group.history import CauseKind, RebalanceCause, RebalanceHistory

from .conftest import Harness
from .consumer_harness import ConsumerHarness, topic_id

T = topic_id("t")


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


# --- KIP-848 consumer groups: a rebalance is a group epoch bump -----------------------------


def consumer_history(h: ConsumerHarness) -> list[tuple[CauseKind, str, int, int | None]]:
    return [
        (r.cause.kind, r.cause.member_id, r.from_generation, r.generation_id)
        for r in h.group().rebalances.records()
    ]


def test_consumer_group_epoch_bumps_are_recorded_with_their_cause() -> None:
    h = ConsumerHarness(t=2)
    h.heartbeat("m1", 0, subscribed_topic_names=["t"])
    h.heartbeat("m2", 0, subscribed_topic_names=["t"])
    assert consumer_history(h) == [
        (CauseKind.MEMBER_JOINED, "m1", 0, 1),
        (CauseKind.MEMBER_JOINED, "m2", 1, 2),
    ]
    h.heartbeat("m2", 2, subscribed_topic_names=["t", "u"])
    assert consumer_history(h)[-1] == (CauseKind.SUBSCRIPTION_CHANGED, "m2", 2, 3)
    h.now += 50
    h.set_topic("t", 5)  # partitions added to a subscribed topic
    h.heartbeat("m1", 1)
    record = h.group().rebalances.records()[-1]
    assert (record.cause.kind, record.from_generation, record.generation_id) == (
        CauseKind.METADATA_CHANGED,
        3,
        4,
    )
    assert str(record.cause) == "the subscribed topics changed (t: 2 -> 5 partitions)"
    assert (record.started_ms, record.completed_ms, record.members) == (50, 50, 2)
    assert record.to_json()["detail"] == "t: 2 -> 5 partitions"
    h.heartbeat("m2", -1)  # leaves
    assert consumer_history(h)[-1] == (CauseKind.MEMBER_LEFT, "m2", 4, 5)


def test_a_consumer_member_fenced_at_its_session_timeout_is_recorded() -> None:
    h = ConsumerHarness(t=2)
    h.heartbeat("m1", 0, subscribed_topic_names=["t"])
    h.now = 2_000
    h.heartbeat("m1", 1, owned={T: frozenset({0, 1})})
    h.advance(10_001)  # session 10 s
    record = h.group().rebalances.records()[-1]
    assert record.cause == RebalanceCause(CauseKind.SESSION_TIMEOUT, "m1", 2_000)
    assert (record.started_ms, record.generation_id, record.members) == (12_000, 2, 0)
    assert h.group().rebalances.total == 2
