"""Kafka's ``RangeAssignor`` (``range``, the Java consumer's first default): topic by topic,
contiguous ranges of partitions to the members subscribed to that topic.

The rule it keeps, per topic with ``n`` partitions and ``c`` subscribed members in Kafka's
member order (``assignor.sorted_members``): every member gets ``n // c`` partitions and the
first ``n % c`` members one more, in ascending partition order. So with 2 members and topics
t0, t1 of 3 partitions each, the first member gets [t0p0, t0p1, t1p0, t1p1] and the second
[t0p2, t1p2]: the extra partitions of every topic land on the same members, which is the
imbalance round robin avoids.

Rack-aware range assignment (KIP-881) needs partition replica racks, which the assignor API
does not carry, so ``rack_id`` is ignored.
"""

from __future__ import annotations

from collections.abc import Mapping

from odradek._types import TopicPartition
from odradek.client.assignors.assignor import (
    Assignment,
    RebalanceProtocol,
    Subscription,
    java_string_key,
    sorted_members,
)

__all__ = ["RangeAssignor", "range_ranges"]


def range_ranges(num_partitions: int, num_members: int) -> list[range]:
    """The partition range of each of ``num_members`` members for a topic (Kafka's split).

    Raises:
        ValueError: ``num_members`` is not positive or ``num_partitions`` is negative.
    """
    if num_members <= 0 or num_partitions < 0:
        raise ValueError(f"cannot split {num_partitions} partitions over {num_members} members")
    quota, extra = divmod(num_partitions, num_members)
    ranges = []
    for index in range(num_members):
        start = index * quota + min(index, extra)
        ranges.append(range(start, start + quota + (1 if index < extra else 0)))
    return ranges


class RangeAssignor:
    """``range``: contiguous partition ranges per topic; stateless, eager."""

    def name(self) -> str:
        return "range"

    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]:
        return (RebalanceProtocol.EAGER,)

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> dict[str, Assignment]:
        members = sorted_members(subscriptions)
        assigned: dict[str, list[TopicPartition]] = {member: [] for member in members}
        members_per_topic: dict[str, list[str]] = {}
        for member in members:
            for topic in dict.fromkeys(subscriptions[member].topics):
                members_per_topic.setdefault(topic, []).append(member)
        for topic in sorted(members_per_topic, key=java_string_key):
            num_partitions = partitions_per_topic.get(topic, 0)
            if num_partitions <= 0:
                continue  # no metadata for the topic: Kafka skips it
            topic_members = members_per_topic[topic]
            for member, partitions in zip(
                topic_members, range_ranges(num_partitions, len(topic_members)), strict=True
            ):
                assigned[member].extend(TopicPartition(topic, p) for p in partitions)
        return {member: Assignment(assigned[member]) for member in members}

    def __repr__(self) -> str:
        return "RangeAssignor()"
