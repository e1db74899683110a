"""Kafka's ``StickyAssignor`` (``sticky``, KIP-54): a balanced assignment that keeps as many
partitions as possible where they were.

This module owns the sticky algorithm that ``cooperative_sticky`` reuses. Its rules, in order:

1. **Valid**: every partition of a subscribed topic goes to exactly one member subscribed to
   its topic.
2. **Balanced** (Kafka's criterion): no partition could move from a member to another member
   that subscribes to its topic and holds at least two fewer partitions. Among members with
   identical subscriptions the counts therefore differ by at most one.
3. **Sticky**: a member keeps the previous partitions it still subscribes to, except those the
   balance takes away; partitions are taken only from members above the balanced level. With
   identical subscriptions this keeps the most partitions any balanced assignment can.

Previous ownership is a list of partitions with the generation it was assigned in. A partition
claimed by several members belongs to the claim with the highest generation; two claims in the
same (highest) generation cancel out, so neither member keeps it (Kafka logs that as an error).
Claims on topics a member no longer subscribes to, or on partitions that no longer exist, are
dropped.

The algorithm (our own; it reproduces the examples in Kafka's documentation, and may pick a
different one of several equally balanced and sticky answers than Kafka's does):

- keep the valid previous ownership;
- deal the other partitions one at a time, those with the fewest possible owners first (so
  narrow subscriptions are served before wide ones take their share), each to its eligible
  member with the fewest partitions (ties: Kafka member order);
- then, while some member holds two or more partitions more than an eligible member, move one
  partition from the fullest such member to the emptiest, preferring a partition it did not
  own before. Each move lowers the sum of squared counts, so this ends.

``StickyAssignor`` reads each member's previous assignment from its sticky user data (written
by ``subscription_user_data``, Kafka's v1 layout, see ``protocol``); a member without readable
user data is taken to own its subscription's ``owned_partitions`` in ``generation_id``.
Rack ids are ignored (rack-aware stickiness needs partition replica racks).

Cost: about O(P log M) to deal P partitions to M members, plus O(M log M + P/M) per balancing
move. A member joining costs a few milliseconds at 2,000 partitions and 200 members; the worst
case, one member owning all 2,000 before 199 others join, about a second.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Mapping, Sequence

from odradek._types import TopicPartition
from odradek.client.assignors.assignor import (
    DEFAULT_GENERATION_ID,
    Assignment,
    RebalanceProtocol,
    Subscription,
    java_string_key,
    sorted_members,
    subscribed_partitions,
)
from odradek.client.assignors.protocol import decode_sticky_user_data, encode_sticky_user_data

__all__ = ["PreviousAssignment", "StickyAssignor", "partition_sort_key", "sticky_assignment"]

logger = logging.getLogger(__name__)

#: A member's previous partitions and the generation it received them in.
PreviousAssignment = tuple[Sequence[TopicPartition], int]


def partition_sort_key(tp: TopicPartition) -> tuple[bytes, int]:
    """Orders topic-partitions as Kafka does: topic (Java string order), then partition."""
    return java_string_key(tp.topic), tp.partition


def _previous_owners(
    members: Sequence[str],
    topics_of: Mapping[str, frozenset[str]],
    partitions_per_topic: Mapping[str, int],
    previous: Mapping[str, PreviousAssignment],
) -> dict[TopicPartition, str]:
    """Resolves the members' claims: highest generation wins, a tie at the top cancels."""
    best: dict[TopicPartition, tuple[int, list[str]]] = {}
    for member in members:
        partitions, generation_id = previous.get(member, ((), DEFAULT_GENERATION_ID))
        for tp in dict.fromkeys(partitions):
            if tp.topic not in topics_of[member]:
                continue
            if not 0 <= tp.partition < partitions_per_topic[tp.topic]:
                continue
            claim = best.get(tp)
            if claim is None or generation_id > claim[0]:
                best[tp] = (generation_id, [member])
            elif generation_id == claim[0]:
                claim[1].append(member)
    owners = {}
    for tp, (generation_id, claimants) in best.items():
        if len(claimants) == 1:
            owners[tp] = claimants[0]
        else:
            logger.warning(
                "members %s all claim %s in generation %d; none of them keeps it",
                ", ".join(claimants),
                tp,
                generation_id,
            )
    return owners


def _find_move(
    members: Sequence[str],
    order: Mapping[str, int],
    assigned: Mapping[str, set[TopicPartition]],
    topics_of: Mapping[str, frozenset[str]],
    owner: Mapping[TopicPartition, str],
) -> tuple[TopicPartition, str, str] | None:
    """A partition that may move from a member to an eligible one with 2+ fewer, or None."""
    if not members:
        return None
    descending = sorted(members, key=lambda m: (-len(assigned[m]), order[m]))
    ascending = sorted(members, key=lambda m: (len(assigned[m]), order[m]))
    fewest = len(assigned[ascending[0]])
    for source in descending:
        count = len(assigned[source])
        if count < fewest + 2:
            return None  # later sources hold even fewer
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in assigned[source]:
            by_topic.setdefault(tp.topic, []).append(tp)
        for target in ascending:
            if len(assigned[target]) > count - 2:
                break
            candidates = [
                tp for topic in by_topic.keys() & topics_of[target] for tp in by_topic[topic]
            ]
            if candidates:
                # Partitions the source was dealt this round go before ones it owned before;
                # then the highest, so that members keep their lowest partitions.
                chosen = max(
                    candidates, key=lambda tp: (owner.get(tp) != source, partition_sort_key(tp))
                )
                return chosen, source, target
    return None


def sticky_assignment(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    previous: Mapping[str, PreviousAssignment],
) -> dict[str, list[TopicPartition]]:
    """The balanced, sticky assignment described in the module docstring.

    Args:
        partitions_per_topic: partition count per topic; unknown subscribed topics are skipped.
        subscriptions: every member's subscription, by member id (only ``topics`` and
            ``group_instance_id`` are read here).
        previous: each member's previous partitions and their generation; members missing
            here owned nothing.

    Returns:
        Every member's partitions, sorted by ``partition_sort_key``.
    """
    members = sorted_members(subscriptions)
    order = {member: index for index, member in enumerate(members)}
    topics_of = {
        member: frozenset(
            topic
            for topic in subscriptions[member].topics
            if partitions_per_topic.get(topic, 0) > 0
        )
        for member in members
    }
    members_of_topic: dict[str, tuple[str, ...]] = {}
    for topic in set().union(*topics_of.values()):
        members_of_topic[topic] = tuple(m for m in members if topic in topics_of[m])

    owner = _previous_owners(members, topics_of, partitions_per_topic, previous)
    assigned: dict[str, set[TopicPartition]] = {member: set() for member in members}
    for tp, member in owner.items():
        assigned[member].add(tp)

    # Deal the rest: fewest eligible members first (a stable sort keeps topic/partition order),
    # each to the eligible member holding the fewest. One lazy min-heap per distinct set of
    # eligible members; counts only grow while dealing, so an entry whose count is out of date
    # is pushed back with the current count.
    free = [
        tp
        for tp in subscribed_partitions(members_of_topic, partitions_per_topic)
        if tp not in owner
    ]
    free.sort(key=lambda tp: len(members_of_topic[tp.topic]))
    heaps: dict[tuple[str, ...], list[tuple[int, int, str]]] = {}
    for tp in free:
        eligible = members_of_topic[tp.topic]
        heap = heaps.get(eligible)
        if heap is None:
            heap = [(len(assigned[m]), order[m], m) for m in eligible]
            heapq.heapify(heap)
            heaps[eligible] = heap
        while True:
            count, rank, member = heap[0]
            if count == len(assigned[member]):
                break
            heapq.heapreplace(heap, (len(assigned[member]), rank, member))
        assigned[member].add(tp)
        heapq.heapreplace(heap, (count + 1, rank, member))

    while (move := _find_move(members, order, assigned, topics_of, owner)) is not None:
        tp, source, target = move
        assigned[source].remove(tp)
        assigned[target].add(tp)

    return {member: sorted(assigned[member], key=partition_sort_key) for member in members}


class StickyAssignor:
    """``sticky``: balanced and sticky, eager; previous assignments travel in user data."""

    def name(self) -> str:
        return "sticky"

    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]:
        return (RebalanceProtocol.EAGER,)

    def subscription_user_data(
        self, owned_partitions: Sequence[TopicPartition], generation_id: int
    ) -> bytes | None:
        """Sticky user data v1 for a member's next JoinGroup (``None`` before its first
        assignment, as Kafka's consumer sends)."""
        if generation_id == DEFAULT_GENERATION_ID and not owned_partitions:
            return None
        return encode_sticky_user_data(owned_partitions, generation_id)

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> dict[str, Assignment]:
        previous: dict[str, PreviousAssignment] = {}
        for member, subscription in subscriptions.items():
            decoded = decode_sticky_user_data(subscription.user_data)
            if decoded is None:
                previous[member] = (subscription.owned_partitions, subscription.generation_id)
            else:
                previous[member] = decoded
        result = sticky_assignment(partitions_per_topic, subscriptions, previous)
        return {member: Assignment(partitions) for member, partitions in result.items()}

    def __repr__(self) -> str:
        return "StickyAssignor()"
