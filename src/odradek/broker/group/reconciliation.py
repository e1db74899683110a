"""Reconciliation of one member of a KIP-848 consumer group towards its target assignment.

Owns the rule that no partition is ever owned by two members: a member gives up (revokes)
what its target no longer holds *before* it is given anything new, and a partition of its
target is handed to it only once no other member holds or still has to revoke it
("unreleased"). Pure: the member, its target, the target's epoch and who owns what in; the
next member out.

States (``MemberState``)::

    STABLE ──target epoch moved──► compute next:
        something to revoke      → UNREVOKED_PARTITIONS: epoch unchanged, assigned = what it
                                   keeps, pending_revocation = what it must give up
        else, some partition not
        yet released by another  → UNRELEASED_PARTITIONS: epoch = target epoch, assigned =
                                   what it keeps + what is free now
        else                     → STABLE at the target epoch with the whole target
    UNREVOKED_PARTITIONS ──its heartbeat reports it owns none of pending_revocation──►
        compute next (the revoked partitions are free for their new owners)
    UNRELEASED_PARTITIONS ──every heartbeat──► compute next (partitions may have been freed)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace

from odradek.broker.group.consumer_group import ConsumerGroupMember, MemberState
from odradek.broker.group.consumer_records import Assignment

#: Who holds a partition now (a member id), or None when it is free.
OwnerLookup = Callable[[uuid.UUID, int], str | None]


def owns_none_of(owned: Mapping[uuid.UUID, frozenset[int]], revoking: Assignment) -> bool:
    """Whether the partitions a member reports owning include none of ``revoking``."""
    return all(
        not (owned.get(topic_id, frozenset()) & parts) for topic_id, parts in revoking.items()
    )


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    owner_of: OwnerLookup,
    owned: Mapping[uuid.UUID, frozenset[int]] | None,
) -> ConsumerGroupMember:
    """The member after this heartbeat's reconciliation step.

    Args:
        member: the member as the group holds it.
        target_epoch: the group's assignment epoch.
        target: the member's partitions in the target assignment.
        owner_of: who holds a partition now (this member included).
        owned: the partitions the member's heartbeat says it owns (None when the heartbeat
            did not say: nothing is known to be revoked then).
    """
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if owned is None or not owns_none_of(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch, target_epoch, target, owner_of)
    if member.state == MemberState.STABLE and member.member_epoch == target_epoch:
        return member
    return _next(member, member.member_epoch, target_epoch, target, owner_of)


def _next(
    member: ConsumerGroupMember,
    member_epoch: int,
    target_epoch: int,
    target: Assignment,
    owner_of: OwnerLookup,
) -> ConsumerGroupMember:
    kept: dict[uuid.UUID, frozenset[int]] = {}
    grown: dict[uuid.UUID, frozenset[int]] = {}
    revoke: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset())
        current = member.assigned.get(topic_id, frozenset())
        retained = current & wanted
        free = set()
        for partition in wanted - current:
            owner = owner_of(topic_id, partition)
            if owner is None or owner == member.member_id:
                free.add(partition)
            else:
                unreleased = True
        if retained:
            kept[topic_id] = retained
        if retained or free:
            grown[topic_id] = retained | frozenset(free)
        if current - wanted:
            revoke[topic_id] = current - wanted
    if revoke:
        return replace(
            member,
            state=MemberState.UNREVOKED_PARTITIONS,
            member_epoch=member_epoch,
            previous_member_epoch=member.member_epoch,
            assigned=kept,
            pending_revocation=revoke,
        )
    return replace(
        member,
        state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
        member_epoch=target_epoch,
        previous_member_epoch=member.member_epoch,
        assigned=grown,
        pending_revocation={},
    )
