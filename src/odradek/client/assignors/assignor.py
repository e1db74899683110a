"""The assignor contract: ``Subscription`` in, ``Assignment`` out, and Kafka's member order.

This module owns the value types every assignor shares and the rule that makes assignments
deterministic: members are ordered as Kafka's ``MemberInfo`` orders them (static members, those
with a ``group.instance.id``, first by instance id; then dynamic members by member id), and
strings compare as Java's ``String.compareTo`` does (UTF-16 code units), so that every client
of a group, whatever its language, computes the same assignment from the same input.

An assignor is any object with ``name()`` and ``assign(partitions_per_topic, subscriptions)``
(duck typing, checked with ``isinstance(obj, Assignor)``). Two optional hooks mirror Kafka's
``ConsumerPartitionAssignor``: ``supported_protocols()`` (default: eager only) and
``subscription_user_data(owned_partitions, generation_id)`` (default: no user data); the
module-level functions of the same names apply those defaults.

Everything here is pure: no I/O, no clock, no state between calls.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from odradek._types import TopicPartition

__all__ = [
    "DEFAULT_GENERATION_ID",
    "Assignment",
    "Assignor",
    "RebalanceProtocol",
    "Subscription",
    "java_string_key",
    "sorted_members",
    "subscribed_partitions",
    "subscription_user_data",
    "supported_protocols",
]

#: The generation a member reports before it has ever joined (Kafka's ``DEFAULT_GENERATION``).
DEFAULT_GENERATION_ID = -1


class RebalanceProtocol(enum.IntEnum):
    """How members give partitions up in a rebalance (KIP-429), by Kafka's ids.

    ``EAGER``: every member revokes everything before it joins. ``COOPERATIVE``: members keep
    what they own while they join; only partitions the new assignment leaves out are revoked,
    and a member that revoked something joins again so the partition reaches its new owner.
    """

    EAGER = 0
    COOPERATIVE = 1


@dataclass(frozen=True, slots=True)
class Subscription:
    """What one member sends in JoinGroup: ``ConsumerProtocolSubscription`` plus its static id.

    ``topics`` and ``owned_partitions`` are stored as tuples whatever sequence is given.
    ``group_instance_id`` is not part of the subscription bytes: the coordinator reports it per
    member in the JoinGroup response, and Kafka orders static members by it.
    """

    topics: Sequence[str]
    user_data: bytes | None = None
    owned_partitions: Sequence[TopicPartition] = ()
    generation_id: int = DEFAULT_GENERATION_ID
    rack_id: str | None = None
    group_instance_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", tuple(self.topics))
        object.__setattr__(self, "owned_partitions", tuple(self.owned_partitions))


@dataclass(frozen=True, slots=True)
class Assignment:
    """What one member receives in SyncGroup: ``ConsumerProtocolAssignment``."""

    partitions: list[TopicPartition] = field(default_factory=list)
    user_data: bytes | None = None


@runtime_checkable
class Assignor(Protocol):
    """A partition assignor, run by the group leader on every member's subscription.

    ``assign`` must give every partition of a subscribed topic that exists in
    ``partitions_per_topic`` to exactly one member subscribed to that topic (cooperative
    assignors may hold a partition back for one generation), return an entry for every member,
    and depend on nothing but its arguments.
    """

    def name(self) -> str:
        """The protocol name the member advertises in JoinGroup (``range``, ``sticky``...)."""
        ...

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> dict[str, Assignment]:
        """Assigns partitions to members.

        Args:
            partitions_per_topic: partition count of each topic known to the leader; subscribed
                topics missing here (or with no partitions) are skipped, as Kafka does.
            subscriptions: each member's subscription, by member id.

        Returns:
            The assignment of every member of ``subscriptions``, by member id.
        """
        ...


def java_string_key(value: str) -> bytes:
    """A sort key that orders strings as Java's ``String.compareTo`` (UTF-16 code units).

    Python compares code points; the two orders differ only between characters above U+FFFF and
    characters in U+E000–U+FFFF. Big-endian UTF-16 bytes compare exactly as code units do.
    """
    return value.encode("utf-16-be", "surrogatepass")


def _member_key(item: tuple[str, Subscription]) -> tuple[int, bytes, bytes]:
    member_id, subscription = item
    if subscription.group_instance_id is not None:
        return (0, java_string_key(subscription.group_instance_id), java_string_key(member_id))
    return (1, b"", java_string_key(member_id))


def sorted_members(subscriptions: Mapping[str, Subscription]) -> list[str]:
    """Member ids in Kafka's ``MemberInfo`` order: static members by instance id, then the rest
    by member id."""
    return [member_id for member_id, _ in sorted(subscriptions.items(), key=_member_key)]


def subscribed_partitions(
    topics: Iterable[str], partitions_per_topic: Mapping[str, int]
) -> list[TopicPartition]:
    """Every partition of ``topics`` that ``partitions_per_topic`` knows, topics in Java order,
    partitions ascending; unknown topics are skipped."""
    known = {topic for topic in topics if partitions_per_topic.get(topic, 0) > 0}
    return [
        TopicPartition(topic, partition)
        for topic in sorted(known, key=java_string_key)
        for partition in range(partitions_per_topic[topic])
    ]


def supported_protocols(assignor: Assignor) -> tuple[RebalanceProtocol, ...]:
    """The rebalance protocols ``assignor`` supports, preferred first (default: eager only)."""
    hook = getattr(assignor, "supported_protocols", None)
    if hook is None:
        return (RebalanceProtocol.EAGER,)
    return tuple(RebalanceProtocol(protocol) for protocol in hook())


def subscription_user_data(
    assignor: Assignor, owned_partitions: Sequence[TopicPartition], generation_id: int
) -> bytes | None:
    """The user data a member puts in its subscription for ``assignor`` (default: none).

    Args:
        owned_partitions: the member's current assignment.
        generation_id: the generation in which it received that assignment
            (``DEFAULT_GENERATION_ID`` before its first).
    """
    hook = getattr(assignor, "subscription_user_data", None)
    if hook is None:
        return None
    data = hook(owned_partitions, generation_id)
    if data is not None and not isinstance(data, bytes):
        raise TypeError(f"{assignor.name()}: subscription_user_data returned {type(data)!r}")
    return data
