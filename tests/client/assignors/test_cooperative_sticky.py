"""``client.assignors.cooperative_sticky``: KIP-429's two-phase hand-over — a moving partition
is revoked by its owner in one generation and reaches its new owner in the next — generations
from the subscription or the user data, and double claims."""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.client.assignors import (
    Assignment,
    CooperativeStickyAssignor,
    RebalanceProtocol,
    Subscription,
    subscription_user_data,
    supported_protocols,
)
from odradek.client.assignors.cooperative_sticky import member_generation, withhold_transfers
from odradek.client.assignors.protocol import encode_cooperative_user_data
from odradek.client.assignors.sticky import sticky_assignment


def tps(spec: str) -> list[TopicPartition]:
    out = []
    for item in spec.split():
        topic, _, number = item.rpartition("p")
        out.append(TopicPartition(topic, int(number)))
    return sorted(out)


def parts(result: dict[str, Assignment]) -> dict[str, list[TopicPartition]]:
    return {member: assignment.partitions for member, assignment in result.items()}


def test_two_phase_hand_over_when_a_member_joins() -> None:
    assignor = CooperativeStickyAssignor()
    topics = {"t": 4}
    # Generation 1: C0 alone owns everything. C1 joins.
    gen1 = {
        "C0": Subscription(["t"], owned_partitions=tps("tp0 tp1 tp2 tp3"), generation_id=1),
        "C1": Subscription(["t"]),
    }
    first = parts(assignor.assign(topics, gen1))
    # The target gives tp2 and tp3 to C1, but C0 still owns them: C0 is told to drop them
    # (they are missing from its assignment) and C1 does not get them yet.
    assert first == {"C0": tps("tp0 tp1"), "C1": []}
    # Generation 2: C0 revoked tp2 and tp3 and joins again with what it kept.
    gen2 = {
        "C0": Subscription(["t"], owned_partitions=first["C0"], generation_id=2),
        "C1": Subscription(["t"], owned_partitions=first["C1"], generation_id=2),
    }
    second = parts(assignor.assign(topics, gen2))
    assert second == {"C0": tps("tp0 tp1"), "C1": tps("tp2 tp3")}
    # Generation 3 with nothing changed: nothing moves.
    gen3 = {
        member: Subscription(["t"], owned_partitions=partitions, generation_id=3)
        for member, partitions in second.items()
    }
    assert parts(assignor.assign(topics, gen3)) == second


def test_a_member_leaves_and_its_partitions_move_at_once() -> None:
    # Nobody owns the departed member's partitions any more: no revocation round is needed.
    subscriptions = {
        "C0": Subscription(["t"], owned_partitions=tps("tp0 tp1"), generation_id=5),
        "C2": Subscription(["t"], owned_partitions=tps("tp4 tp5"), generation_id=5),
    }
    result = parts(CooperativeStickyAssignor().assign({"t": 6}, subscriptions))
    assert result == {"C0": tps("tp0 tp1 tp2"), "C2": tps("tp3 tp4 tp5")}


def test_unsubscribing_releases_partitions_only_after_revocation() -> None:
    # C0 drops topic u; C1 subscribes to it. C0 still owns up0 in this generation.
    subscriptions = {
        "C0": Subscription(["t"], owned_partitions=tps("tp0 up0"), generation_id=2),
        "C1": Subscription(["t", "u"], owned_partitions=tps("tp1"), generation_id=2),
    }
    result = parts(CooperativeStickyAssignor().assign({"t": 2, "u": 1}, subscriptions))
    assert result == {"C0": tps("tp0"), "C1": tps("tp1")}


def test_double_claims_are_held_back_from_everyone() -> None:
    subscriptions = {
        "A": Subscription(["t"], owned_partitions=tps("tp0 tp1"), generation_id=3),
        "B": Subscription(["t"], owned_partitions=tps("tp1"), generation_id=3),
    }
    result = parts(CooperativeStickyAssignor().assign({"t": 2}, subscriptions))
    assert result == {"A": tps("tp0"), "B": []}


def test_generation_from_user_data_for_old_subscription_versions() -> None:
    assert member_generation(Subscription(["t"], generation_id=4)) == 4
    old = Subscription(["t"], user_data=encode_cooperative_user_data(9))
    assert member_generation(old) == 9
    assert member_generation(Subscription(["t"])) == -1
    # The newer generation's claim wins: B (generation 7 in user data) keeps tp0.
    subscriptions = {
        "A": Subscription(["t"], owned_partitions=tps("tp0"), generation_id=6),
        "B": Subscription(
            ["t"], user_data=encode_cooperative_user_data(7), owned_partitions=tps("tp0")
        ),
    }
    previous = {m: (s.owned_partitions, member_generation(s)) for m, s in subscriptions.items()}
    assert sticky_assignment({"t": 2}, subscriptions, previous) == {
        "A": tps("tp1"),
        "B": tps("tp0"),
    }
    # Both claim tp0, so it is held back this generation all the same.
    result = parts(CooperativeStickyAssignor().assign({"t": 2}, subscriptions))
    assert result == {"A": tps("tp1"), "B": []}


def test_withhold_transfers() -> None:
    target = {"A": tps("tp0 tp1"), "B": tps("tp2")}
    subscriptions = {
        "A": Subscription(["t"], owned_partitions=tps("tp0 tp2")),
        "B": Subscription(["t"], owned_partitions=tps("tp1")),
    }
    assert withhold_transfers(target, subscriptions) == {"A": tps("tp0"), "B": []}


def test_protocol_hooks() -> None:
    assignor = CooperativeStickyAssignor()
    assert assignor.name() == "cooperative-sticky"
    assert supported_protocols(assignor) == (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)
    assert subscription_user_data(assignor, tps("tp0"), 3) == encode_cooperative_user_data(3)
