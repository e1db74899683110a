"""controller.assignment's rack-aware replica assignment (the rack-unaware rules are tested in
test_topics.py): the brokers interleaved by rack, every partition's replicas spanning racks,
leaders round-robin, and a clear refusal when only some brokers have a rack."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.controller.assignment import assign_replicas, rack_alternated_brokers
from odradek.errors import InvalidReplicationFactorError


def test_brokers_alternate_between_racks() -> None:
    # Kafka's own example of the arrangement: racks sorted, one broker of each in turn.
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_brokers(racks) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated_brokers({0: "a", 1: "a", 2: "b"}) == [0, 2, 1]


def test_each_partition_spans_as_many_racks_as_it_can() -> None:
    racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
    assignment = assign_replicas(12, 3, list(racks), start_index=0, racks=racks)
    for replicas in assignment.values():
        assert len(set(replicas)) == 3
        assert {racks[b] for b in replicas} == {"a", "b", "c"}
    leaders = Counter(replicas[0] for replicas in assignment.values())
    assert sorted(leaders.values()) == [2] * 6


def test_two_racks_and_three_replicas_use_both_racks() -> None:
    racks = {0: "east", 1: "east", 2: "west", 3: "west"}
    assignment = assign_replicas(8, 3, [0, 1, 2, 3], start_index=1, racks=racks)
    for replicas in assignment.values():
        assert len(set(replicas)) == 3
        assert {racks[b] for b in replicas} == {"east", "west"}


def test_without_racks_the_assignment_is_the_rack_unaware_one() -> None:
    plain = assign_replicas(6, 2, [0, 1, 2], start_index=0)
    assert assign_replicas(6, 2, [0, 1, 2], start_index=0, racks={}) == plain
    assert assign_replicas(6, 2, [0, 1, 2], start_index=0, racks=dict.fromkeys(range(3))) == plain


def test_rack_aware_differs_from_unaware_where_racks_matter() -> None:
    racks = {0: "a", 1: "a", 2: "b", 3: "b"}
    unaware = assign_replicas(4, 2, [0, 1, 2, 3], start_index=0)
    # The rack-unaware layout puts some partition on two brokers of one rack...
    assert any(racks[r[0]] == racks[r[1]] for r in unaware.values())
    aware = assign_replicas(4, 2, [0, 1, 2, 3], start_index=0, racks=racks)
    # ...the rack-aware one never does.
    assert all(racks[r[0]] != racks[r[1]] for r in aware.values())


def test_some_brokers_without_a_rack_is_refused_with_their_ids() -> None:
    with pytest.raises(InvalidReplicationFactorError, match=r"broker\(s\) \[2\] have no"):
        assign_replicas(3, 2, [0, 1, 2], racks={0: "a", 1: "b", 2: None})
    with pytest.raises(InvalidReplicationFactorError, match=r"\[1\]"):
        assign_replicas(3, 2, [0, 1, 2], racks={0: "a", 2: "b"})


def test_racks_ignored_when_none_is_passed() -> None:
    assert assign_replicas(3, 2, [0, 1, 2], start_index=0, racks=None) == assign_replicas(
        3, 2, [0, 1, 2], start_index=0
    )


def test_adding_partitions_continues_the_rack_aware_layout() -> None:
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "b"}
    whole = assign_replicas(10, 3, list(racks), start_index=2, racks=racks)
    tail = assign_replicas(4, 3, list(racks), start_index=2, start_partition=6, racks=racks)
    assert tail == {p: whole[p] for p in range(6, 10)}


@given(
    rack_count=st.integers(1, 4),
    per_rack=st.lists(st.integers(1, 3), min_size=4, max_size=4),
    partitions=st.integers(1, 30),
    factor=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_every_partition_spans_min_of_factor_and_racks(
    rack_count: int, per_rack: list[int], partitions: int, factor: int, seed: int
) -> None:
    racks: dict[int, str | None] = {}
    for rack in range(rack_count):
        for _ in range(per_rack[rack]):
            racks[len(racks) * 3 + 1] = f"r{rack}"
    factor = min(factor, len(racks))
    assignment = assign_replicas(
        partitions, factor, list(racks), racks=racks, rng=random.Random(seed)
    )
    assert sorted(assignment) == list(range(partitions))
    for replicas in assignment.values():
        assert len(replicas) == factor
        assert len(set(replicas)) == factor
        assert len({racks[b] for b in replicas}) == min(factor, rack_count)
