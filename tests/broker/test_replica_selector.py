"""The replica selectors of ``replica.selector.class`` (KIP-392)."""

from __future__ import annotations

from odradek.broker.replica_selector import (
    LEADER_SELECTOR,
    RACK_AWARE_SELECTOR,
    ReplicaView,
    select_read_replica,
)

LEADER = 0
#: Leader 0 in rack a; followers 1 (rack b) and 2 (rack c), both caught up to 100.
REPLICAS = [
    ReplicaView(0, "a", 100),
    ReplicaView(1, "b", 100, 0, 5_000),
    ReplicaView(2, "c", 100, 0, 5_000),
]


def _select(
    selector: str = RACK_AWARE_SELECTOR,
    rack: str | None = "b",
    replicas: list[ReplicaView] = REPLICAS,
    isr: tuple[int, ...] = (0, 1, 2),
    fetch_offset: int = 50,
) -> int:
    return select_read_replica(
        selector,
        client_rack=rack,
        leader_id=LEADER,
        replicas=replicas,
        isr=isr,
        fetch_offset=fetch_offset,
    )


def test_the_leader_selector_always_picks_the_leader() -> None:
    assert _select(LEADER_SELECTOR, rack="b") == LEADER


def test_the_rack_aware_selector_picks_the_replica_in_the_clients_rack() -> None:
    assert _select(rack="b") == 1
    assert _select(rack="c") == 2


def test_no_rack_or_an_unknown_rack_stays_with_the_leader() -> None:
    assert _select(rack=None) == LEADER
    assert _select(rack="") == LEADER
    assert _select(rack="z") == LEADER


def test_the_leader_in_the_clients_rack_is_preferred_over_a_follower_there() -> None:
    replicas = [*REPLICAS, ReplicaView(3, "a", 100, 0, 5_000)]
    assert _select(rack="a", replicas=replicas, isr=(0, 1, 2, 3)) == LEADER


def test_a_replica_out_of_the_isr_is_not_chosen() -> None:
    assert _select(rack="b", isr=(0, 2)) == LEADER


def test_a_replica_whose_log_does_not_reach_the_fetch_offset_is_not_chosen() -> None:
    behind = [ReplicaView(0, "a", 100), ReplicaView(1, "b", 40, 0, 5_000)]
    assert _select(rack="b", replicas=behind, isr=(0, 1), fetch_offset=50) == LEADER
    assert _select(rack="b", replicas=behind, isr=(0, 1), fetch_offset=40) == 1


def test_among_replicas_of_the_rack_the_one_furthest_ahead_wins() -> None:
    replicas = [
        ReplicaView(0, "a", 100),
        ReplicaView(1, "b", 90, 0, 9_000),
        ReplicaView(2, "b", 100, 0, 1_000),
    ]
    assert _select(rack="b", replicas=replicas, fetch_offset=10) == 2
