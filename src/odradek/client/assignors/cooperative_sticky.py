"""Kafka's ``CooperativeStickyAssignor`` (``cooperative-sticky``, KIP-429): the sticky target,
reached in two rebalances so that no partition is ever owned by two members at once.

The rule it keeps: a partition goes into a member's assignment only if no *other* member says
it owns it (``Subscription.owned_partitions``, whatever its generation). So a partition that
moves is, in the first generation, left out of the new owner's assignment; its old owner sees it
missing, revokes it (commits, stops fetching), and, having revoked something, joins again. In
the second generation nobody owns it and the sticky target gives it to its new owner.
Partitions claimed by two members at once are held back from both until both have let go.

The target is ``sticky.sticky_assignment`` over the members' owned partitions, each in the
member's generation: ``Subscription.generation_id`` (subscription v2+), else the generation in
this assignor's user data (for older subscription versions), else -1.

Cooperative members keep their partitions while they join, so this assignor supports the
cooperative protocol first and eager second (as Kafka's, to let a group upgrade from eager
assignors in a rolling bounce).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from odradek._types import TopicPartition
from odradek.client.assignors.assignor import (
    DEFAULT_GENERATION_ID,
    Assignment,
    RebalanceProtocol,
    Subscription,
)
from odradek.client.assignors.protocol import (
    decode_cooperative_user_data,
    encode_cooperative_user_data,
)
from odradek.client.assignors.sticky import PreviousAssignment, sticky_assignment

__all__ = ["CooperativeStickyAssignor", "member_generation", "withhold_transfers"]


def member_generation(subscription: Subscription) -> int:
    """The generation of a member's owned partitions: the subscription's, else its user data's,
    else -1."""
    if subscription.generation_id >= 0:
        return subscription.generation_id
    from_user_data = decode_cooperative_user_data(subscription.user_data)
    return DEFAULT_GENERATION_ID if from_user_data is None else from_user_data


def withhold_transfers(
    target: Mapping[str, list[TopicPartition]],
    subscriptions: Mapping[str, Subscription],
) -> dict[str, list[TopicPartition]]:
    """``target`` without the partitions that another member still owns (revoked first)."""
    claimants: dict[TopicPartition, set[str]] = {}
    for member, subscription in subscriptions.items():
        for tp in subscription.owned_partitions:
            claimants.setdefault(tp, set()).add(member)
    return {
        member: [tp for tp in partitions if claimants.get(tp, {member}) <= {member}]
        for member, partitions in target.items()
    }


class CooperativeStickyAssignor:
    """``cooperative-sticky``: the sticky target, with moving partitions revoked first."""

    def name(self) -> str:
        return "cooperative-sticky"

    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]:
        return (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def subscription_user_data(
        self, owned_partitions: Sequence[TopicPartition], generation_id: int
    ) -> bytes | None:
        """The member's generation as an int32, for leaders reading subscriptions below v2."""
        del owned_partitions  # travels in the subscription itself (v1+)
        return encode_cooperative_user_data(generation_id)

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> dict[str, Assignment]:
        previous: dict[str, PreviousAssignment] = {
            member: (subscription.owned_partitions, member_generation(subscription))
            for member, subscription in subscriptions.items()
        }
        target = sticky_assignment(partitions_per_topic, subscriptions, previous)
        return {
            member: Assignment(partitions)
            for member, partitions in withhold_transfers(target, subscriptions).items()
        }

    def __repr__(self) -> str:
        return "CooperativeStickyAssignor()"
