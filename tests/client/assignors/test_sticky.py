"""``client.assignors.sticky``: Kafka's documented StickyAssignor examples, stickiness when
members leave and join, previous ownership from user data or owned partitions, and how
conflicting claims resolve."""

from __future__ import annotations

import logging

import pytest

from odradek._types import TopicPartition
from odradek.client.assignors import Assignment, StickyAssignor, Subscription
from odradek.client.assignors.protocol import encode_sticky_user_data
from odradek.client.assignors.sticky import sticky_assignment


def tps(spec: str) -> list[TopicPartition]:
    out = []
    for item in spec.split():
        topic, _, number = item.rpartition("p")
        out.append(TopicPartition(topic, int(number)))
    return sorted(out)


def parts(result: dict[str, Assignment]) -> dict[str, list[TopicPartition]]:
    return {member: assignment.partitions for member, assignment in result.items()}


def rejoin(
    result: dict[str, Assignment], topics: dict[str, list[str]], generation_id: int
) -> dict[str, Subscription]:
    """Each member's next subscription, carrying its assignment in sticky user data."""
    assignor = StickyAssignor()
    return {
        member: Subscription(
            topics[member],
            user_data=assignor.subscription_user_data(result[member].partitions, generation_id),
        )
        for member in topics
    }


def test_kafka_example_member_leaves() -> None:
    # StickyAssignor's javadoc, example 1: three members, four topics of two partitions.
    topics = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}
    members = {f"C{i}": list(topics) for i in range(3)}
    first = StickyAssignor().assign(topics, {m: Subscription(t) for m, t in members.items()})
    assert parts(first) == {
        "C0": tps("t0p0 t1p1 t3p0"),
        "C1": tps("t0p1 t2p0 t3p1"),
        "C2": tps("t1p0 t2p1"),
    }
    # C1 leaves: C0 and C2 keep everything, C1's three partitions are spread.
    del members["C1"]
    second = StickyAssignor().assign(topics, rejoin(first, members, generation_id=1))
    assert parts(second) == {
        "C0": tps("t0p0 t1p1 t3p0 t2p0"),
        "C2": tps("t1p0 t2p1 t0p1 t3p1"),
    }


def test_kafka_example_uneven_subscriptions() -> None:
    # Example 2: where round robin gives C2 four partitions and C1 one, sticky balances.
    topics = {"t0": 1, "t1": 2, "t2": 3}
    members = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    first = StickyAssignor().assign(topics, {m: Subscription(t) for m, t in members.items()})
    assert parts(first) == {
        "C0": tps("t0p0"),
        "C1": tps("t1p0 t1p1"),
        "C2": tps("t2p0 t2p1 t2p2"),
    }
    # C0 leaves: only t0p0 moves (round robin would move three partitions).
    del members["C0"]
    second = StickyAssignor().assign(topics, rejoin(first, members, generation_id=1))
    assert parts(second) == {"C1": tps("t0p0 t1p0 t1p1"), "C2": tps("t2p0 t2p1 t2p2")}


def test_member_joins_and_takes_from_the_fullest() -> None:
    topics = {"t": 6}
    previous = {"A": (tps("tp0 tp1 tp2"), 3), "B": (tps("tp3 tp4 tp5"), 3)}
    subscriptions = {member: Subscription(["t"]) for member in ("A", "B", "C")}
    result = sticky_assignment(topics, subscriptions, previous)
    # Each old member gives up exactly one partition, its highest.
    assert result == {"A": tps("tp0 tp1"), "B": tps("tp3 tp4"), "C": tps("tp2 tp5")}


def test_previous_assignment_from_owned_partitions_without_user_data() -> None:
    subscriptions = {
        "A": Subscription(["t"], owned_partitions=tps("tp2 tp3"), generation_id=4),
        "B": Subscription(["t"], owned_partitions=tps("tp0 tp1"), generation_id=4),
    }
    result = StickyAssignor().assign({"t": 4}, subscriptions)
    assert parts(result) == {"A": tps("tp2 tp3"), "B": tps("tp0 tp1")}


def test_user_data_wins_over_owned_partitions_and_v0_is_read() -> None:
    v0 = encode_sticky_user_data(tps("tp1"))[:-4]  # no generation
    subscriptions = {
        "A": Subscription(["t"], user_data=v0, owned_partitions=tps("tp0")),
        "B": Subscription(["t"]),
    }
    assert parts(StickyAssignor().assign({"t": 2}, subscriptions)) == {
        "A": tps("tp1"),
        "B": tps("tp0"),
    }


def test_higher_generation_claim_wins() -> None:
    previous = {"A": (tps("tp0 tp1"), 5), "B": (tps("tp1 tp2"), 4), "C": ([], -1)}
    result = sticky_assignment({"t": 3}, {m: Subscription(["t"]) for m in "ABC"}, previous)
    # tp1 belongs to A (generation 5); B keeps its unchallenged tp2; balance takes A's tp1.
    assert result == {"A": tps("tp0"), "B": tps("tp2"), "C": tps("tp1")}


def test_claims_in_the_same_generation_cancel(caplog: pytest.LogCaptureFixture) -> None:
    previous = {"A": (tps("tp0 tp1"), 5), "B": (tps("tp1"), 5)}
    with caplog.at_level(logging.WARNING, logger="odradek.client.assignors.sticky"):
        result = sticky_assignment({"t": 3}, {m: Subscription(["t"]) for m in "AB"}, previous)
    assert caplog.messages == ["members A, B all claim t-1 in generation 5; none of them keeps it"]
    # Neither keeps tp1: it is dealt afresh, to the member with fewer (B).
    assert result == {"A": tps("tp0 tp2"), "B": tps("tp1")}


def test_stale_claims_are_dropped() -> None:
    previous = {"A": (tps("tp5 gonep0 otherp0"), 1), "B": ([], 1)}
    subscriptions = {"A": Subscription(["t"]), "B": Subscription(["t", "other"])}
    result = sticky_assignment({"t": 2, "other": 1}, subscriptions, previous)
    # tp5 no longer exists, "gone" has no metadata, A does not subscribe to "other": nothing
    # is kept. otherp0 (one possible owner) is dealt first, to B; then tp0 to A, tp1 to A
    # (a tie at one partition each goes to the first member).
    assert result == {"A": tps("tp0 tp1"), "B": tps("otherp0")}


def test_subscription_user_data() -> None:
    assignor = StickyAssignor()
    assert assignor.subscription_user_data([], -1) is None  # never assigned: no user data
    assert assignor.subscription_user_data([], 3) == encode_sticky_user_data([], 3)
    data = assignor.subscription_user_data(tps("tp0"), 3)
    assert data == encode_sticky_user_data(tps("tp0"), 3)
