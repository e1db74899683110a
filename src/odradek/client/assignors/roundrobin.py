"""Kafka's ``RoundRobinAssignor`` (``roundrobin``): every subscribed partition of the group, in
order, dealt to the members in turn.

The rule it keeps: partitions are ordered by topic (Java string order) then partition number;
members are in Kafka's member order (``assignor.sorted_members``) on a circle; each partition
goes to the next member on the circle that subscribes to its topic, and the deal continues after
that member. With identical subscriptions the counts differ by at most one; with different
subscriptions they need not (Kafka's documented example: subscriptions t0 / t0,t1 / t0,t1,t2
over 1, 2, 3 partitions give [t0p0], [t1p0], [t1p1, t2p0, t2p1, t2p2]).

Stateless and eager; ``rack_id`` is ignored.
"""

from __future__ import annotations

from collections.abc import Mapping

from odradek._types import TopicPartition
from odradek.client.assignors.assignor import (
    Assignment,
    RebalanceProtocol,
    Subscription,
    sorted_members,
    subscribed_partitions,
)

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor:
    """``roundrobin``: the group's partitions dealt in order to subscribed members in turn."""

    def name(self) -> str:
        return "roundrobin"

    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]:
        return (RebalanceProtocol.EAGER,)

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> dict[str, Assignment]:
        members = sorted_members(subscriptions)
        assigned: dict[str, list[TopicPartition]] = {member: [] for member in members}
        topics_of = {member: frozenset(subscriptions[member].topics) for member in members}
        all_topics = set().union(*topics_of.values()) if members else set()
        position = 0
        for partition in subscribed_partitions(all_topics, partitions_per_topic):
            # Some member subscribes to this topic (it came from the union), so this ends
            # within one turn of the circle.
            while partition.topic not in topics_of[members[position]]:
                position = (position + 1) % len(members)
            assigned[members[position]].append(partition)
            position = (position + 1) % len(members)
        return {member: Assignment(assigned[member]) for member in members}

    def __repr__(self) -> str:
        return "RoundRobinAssignor()"
