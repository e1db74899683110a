"""The server-side assignors of KIP-848 consumer groups: ``uniform`` and ``range``.

Owns the computation of a group's target assignment from its members' subscriptions and the
subscribed topics' partition counts. Pure and deterministic: the same members, subscriptions,
topics and previous target give the same answer (a coordinator that fails over recomputes the
same target). Every partition of a subscribed topic goes to exactly one member subscribed to
it; a topic nobody subscribes to is not assigned.

- ``uniform`` (Kafka's default): balanced and sticky. Each member keeps the partitions of its
  previous target it still subscribes to, up to its fair share; the rest go one by one to the
  subscribed member holding the fewest; then partitions move from the fullest to the emptiest
  eligible member while the counts differ by more than one.
- ``range``: per topic, the subscribed members sorted by member id get contiguous ranges, the
  first ``partitions % members`` one partition more (co-partitioned topics land together).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from odradek.broker.group.consumer_records import Assignment

UNIFORM = "uniform"
RANGE = "range"


@dataclass(frozen=True, slots=True)
class AssignmentSpec:
    """What an assignor sees of one member: the topic ids it subscribes to."""

    subscribed: frozenset[uuid.UUID]


AssignorFunction = Callable[
    [Mapping[str, AssignmentSpec], Mapping[uuid.UUID, int], Mapping[str, Assignment]],
    dict[str, Assignment],
]


def _freeze(raw: Mapping[str, Mapping[uuid.UUID, set[int]]]) -> dict[str, Assignment]:
    return {
        member_id: {topic: frozenset(parts) for topic, parts in topics.items() if parts}
        for member_id, topics in raw.items()
    }


def uniform_assign(
    members: Mapping[str, AssignmentSpec],
    partitions: Mapping[uuid.UUID, int],
    previous: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    """The uniform assignor (see the module docstring).

    Args:
        members: member id → subscription (topic ids; unknown ids are ignored).
        partitions: topic id → partition count of every subscribed topic that exists.
        previous: the previous target assignment, for stickiness.
    """
    order = sorted(members)
    held: dict[str, list[tuple[uuid.UUID, int]]] = {member_id: [] for member_id in order}
    eligible: dict[uuid.UUID, list[str]] = {}
    for member_id in order:
        for topic_id in members[member_id].subscribed:
            if topic_id in partitions:
                eligible.setdefault(topic_id, []).append(member_id)
    total = sum(partitions[topic_id] for topic_id in eligible)
    share = -(-total // len(order)) if order else 0  # ceiling: nobody keeps more than this
    taken: set[tuple[uuid.UUID, int]] = set()
    for member_id in order:
        spec = members[member_id]
        for topic_id, kept in sorted(previous.get(member_id, {}).items()):
            if topic_id not in spec.subscribed or topic_id not in partitions:
                continue
            for partition in sorted(kept):
                key = (topic_id, partition)
                if (
                    partition < partitions[topic_id]
                    and key not in taken
                    and len(held[member_id]) < share
                ):
                    held[member_id].append(key)
                    taken.add(key)
    for topic_id in sorted(eligible):
        candidates = eligible[topic_id]
        for partition in range(partitions[topic_id]):
            if (topic_id, partition) in taken:
                continue
            chosen = min(candidates, key=lambda m: (len(held[m]), m))
            held[chosen].append((topic_id, partition))
            taken.add((topic_id, partition))
    _balance(held, members)
    raw: dict[str, dict[uuid.UUID, set[int]]] = {member_id: {} for member_id in order}
    for member_id, keys in held.items():
        for topic_id, partition in keys:
            raw[member_id].setdefault(topic_id, set()).add(partition)
    return _freeze(raw)


def _balance(
    held: dict[str, list[tuple[uuid.UUID, int]]], members: Mapping[str, AssignmentSpec]
) -> None:
    """Moves partitions from the fullest member to an emptier eligible one while that
    narrows the spread (bounded: each move lowers the sum of squared counts)."""
    for _ in range(sum(len(keys) for keys in held.values()) * max(1, len(held))):
        moved = False
        for giver in sorted(held, key=lambda m: (-len(held[m]), m)):
            for index in range(len(held[giver]) - 1, -1, -1):
                topic_id, _ = held[giver][index]
                takers = [
                    m
                    for m in held
                    if topic_id in members[m].subscribed and len(held[m]) + 1 < len(held[giver])
                ]
                if takers:
                    taker = min(takers, key=lambda m: (len(held[m]), m))
                    held[taker].append(held[giver].pop(index))
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


def range_assign(
    members: Mapping[str, AssignmentSpec],
    partitions: Mapping[uuid.UUID, int],
    previous: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    """The range assignor (see the module docstring); ``previous`` is not used."""
    raw: dict[str, dict[uuid.UUID, set[int]]] = {member_id: {} for member_id in members}
    for topic_id in sorted(partitions):
        subscribed = sorted(m for m, spec in members.items() if topic_id in spec.subscribed)
        if not subscribed:
            continue
        count = partitions[topic_id]
        quota, extra = divmod(count, len(subscribed))
        start = 0
        for index, member_id in enumerate(subscribed):
            size = quota + (1 if index < extra else 0)
            if size:
                raw[member_id][topic_id] = set(range(start, start + size))
            start += size
    return _freeze(raw)


#: The assignors by the names ``group.consumer.assignors`` and clients use.
ASSIGNORS: Mapping[str, AssignorFunction] = {UNIFORM: uniform_assign, RANGE: range_assign}
