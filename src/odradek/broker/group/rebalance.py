"""The rebalance mechanics of a classic group: join phase, sync phase, member removal.

Owns the state changes that follow from membership events, and the answers they release:
when a join phase completes every waiting JoinGroup is answered, when the leader syncs every
waiting SyncGroup is, when a rebalance starts every waiting SyncGroup is turned away. Request
validation lives in ``coordinator``; this module assumes a valid event.

Every function takes the group, ``now_ms`` and an ``Effects`` that collects the records to
append and the completed pending requests. Deadlines are left on the group
(``join_deadline_ms``, ``sync_deadline_ms``, members' sessions) for the coordinator to queue.
"""

from __future__ import annotations

import logging

from odradek.broker.group.group import ClassicGroup, Member
from odradek.broker.group.history import CauseKind, RebalanceCause
from odradek.broker.group.records import CoordinatorRecord
from odradek.broker.group.results import (
    Completion,
    JoinGroupMember,
    JoinGroupResult,
    SyncGroupResult,
)
from odradek.broker.group.state import GroupState
from odradek.errors import ErrorCode

logger = logging.getLogger(__name__)


class Effects:
    """What one coordinator event produced so far."""

    __slots__ = ("completions", "records")

    def __init__(self) -> None:
        self.records: list[CoordinatorRecord] = []
        self.completions: list[Completion] = []

    def complete(self, ticket: int, response: JoinGroupResult | SyncGroupResult) -> None:
        self.completions.append(Completion(ticket, response))

    def take(self, ticket: int) -> JoinGroupResult | SyncGroupResult | None:
        """Removes and returns the completion of ``ticket`` (the requester's own answer, when
        the event that made it wait also released it)."""
        for index, completion in enumerate(self.completions):
            if completion.ticket == ticket:
                del self.completions[index]
                return completion.response
        return None


def answer_join(member: Member, effects: Effects, response: JoinGroupResult) -> None:
    """Answers the member's waiting JoinGroup, if any."""
    if member.join_ticket is not None:
        effects.complete(member.join_ticket, response)
        member.join_ticket = None


def answer_sync(member: Member, effects: Effects, response: SyncGroupResult) -> None:
    """Answers the member's waiting SyncGroup, if any."""
    if member.sync_ticket is not None:
        effects.complete(member.sync_ticket, response)
        member.sync_ticket = None


def join_response(group: ClassicGroup, member: Member) -> JoinGroupResult:
    """The JoinGroup answer of the current generation for ``member``; the leader gets the
    members and their metadata for the selected protocol."""
    protocol = group.protocol_name or ""
    members: tuple[JoinGroupMember, ...] = ()
    if group.is_leader(member.member_id):
        members = tuple(
            JoinGroupMember(
                other.member_id, other.group_instance_id, other.metadata(protocol) or b""
            )
            for other in group.members.values()
        )
    return JoinGroupResult(
        error_code=ErrorCode.NONE,
        member_id=member.member_id,
        generation_id=group.generation_id,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=group.leader_id or "",
        members=members,
    )


def sync_response(group: ClassicGroup, member: Member) -> SyncGroupResult:
    return SyncGroupResult(
        error_code=ErrorCode.NONE,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        assignment=member.assignment,
    )


def prepare_rebalance(
    group: ClassicGroup,
    now_ms: int,
    initial_delay_ms: int,
    effects: Effects,
    reason: RebalanceCause,
) -> None:
    """Starts a join phase: waiting SyncGroups are turned away (REBALANCE_IN_PROGRESS) and
    assignments reset; an Empty group first waits ``initial_delay_ms`` (bounded by the
    rebalance timeout) for more members, any other group waits for its members to rejoin up
    to the rebalance timeout."""
    if group.is_in(GroupState.COMPLETING_REBALANCE):
        for member in group.members.values():
            member.assignment = b""
            answer_sync(member, effects, SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
    group.pending_sync.clear()
    group.sync_deadline_ms = None
    rebalance_timeout_ms = group.rebalance_timeout_ms()
    if group.is_in(GroupState.EMPTY) and initial_delay_ms > 0:
        delay_ms = min(initial_delay_ms, rebalance_timeout_ms)
        group.in_initial_delay = True
        group.new_member_added = False
        group.initial_delay_remaining_ms = max(rebalance_timeout_ms - initial_delay_ms, 0)
        group.join_deadline_ms = now_ms + delay_ms
    else:
        group.in_initial_delay = False
        group.join_deadline_ms = now_ms + rebalance_timeout_ms
    logger.info(
        "group %s: preparing to rebalance (generation %d): %s",
        group.group_id,
        group.generation_id,
        reason,
    )
    group.rebalances.started(now_ms, group.generation_id, reason)
    group.transition(GroupState.PREPARING_REBALANCE, now_ms)


def maybe_prepare_rebalance(
    group: ClassicGroup,
    now_ms: int,
    initial_delay_ms: int,
    effects: Effects,
    reason: RebalanceCause,
) -> None:
    """``prepare_rebalance`` unless a join phase already runs."""
    if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
        prepare_rebalance(group, now_ms, initial_delay_ms, effects, reason)


def try_complete_join(group: ClassicGroup, now_ms: int, effects: Effects) -> None:
    """Completes the join phase if every member has rejoined (outside the initial delay, which
    always runs its course) or no member is left."""
    if not group.is_in(GroupState.PREPARING_REBALANCE):
        return
    if not group.members or (not group.in_initial_delay and group.all_members_joined()):
        complete_join(group, now_ms, effects)


def complete_join(group: ClassicGroup, now_ms: int, effects: Effects) -> None:
    """Ends the join phase: members that did not rejoin are removed, the generation advances,
    and either the group is Empty (its metadata is stored) or it moves to CompletingRebalance
    with a protocol chosen by vote and every member's JoinGroup answered."""
    for member in group.not_yet_rejoined():
        logger.info(
            "group %s: removing member %s, which did not rejoin in time",
            group.group_id,
            member.member_id,
        )
        remove_member(group, member, effects)
    group.join_deadline_ms = None
    group.in_initial_delay = False
    group.new_member_added = False
    group.generation_id += 1
    group.rebalances.completed(now_ms, group.generation_id, len(group.members))
    if not group.members:
        group.protocol_name = None
        group.transition(GroupState.EMPTY, now_ms)
        effects.records.append(group.metadata_record())
        logger.info("group %s: generation %d is empty", group.group_id, group.generation_id)
        return
    group.protocol_name = group.select_protocol()
    group.transition(GroupState.COMPLETING_REBALANCE, now_ms)
    group.pending_sync = set(group.members)
    group.sync_deadline_ms = now_ms + group.rebalance_timeout_ms()
    logger.info(
        "group %s: generation %d with %d members, protocol %s, leader %s",
        group.group_id,
        group.generation_id,
        len(group.members),
        group.protocol_name,
        group.leader_id,
    )
    for member in group.members.values():
        answer_join(member, effects, join_response(group, member))
        member.last_heartbeat_ms = now_ms


def complete_sync(
    group: ClassicGroup, now_ms: int, assignments: dict[str, bytes], effects: Effects
) -> None:
    """The leader synced: assignments are stored (members it left out get empty ones), the
    group becomes Stable, its metadata is stored, and every waiting SyncGroup is answered."""
    for member_id, member in group.members.items():
        member.assignment = assignments.get(member_id, b"")
    group.transition(GroupState.STABLE, now_ms)
    effects.records.append(group.metadata_record())
    for member in group.members.values():
        if member.sync_ticket is not None:
            answer_sync(member, effects, sync_response(group, member))
            member.last_heartbeat_ms = now_ms


def remove_member(group: ClassicGroup, member: Member, effects: Effects) -> None:
    """Removes a member; its waiting JoinGroup or SyncGroup is answered UNKNOWN_MEMBER_ID."""
    group.remove_member(member.member_id)
    answer_join(member, effects, JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
    answer_sync(member, effects, SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))


def remove_member_and_update_group(
    group: ClassicGroup,
    member: Member,
    now_ms: int,
    initial_delay_ms: int,
    effects: Effects,
    reason: RebalanceCause,
) -> None:
    """Removes a member (it left, or its session expired) and rebalances the rest: a Stable or
    CompletingRebalance group prepares a rebalance, a join phase may now be complete."""
    remove_member(group, member, effects)
    if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
        prepare_rebalance(group, now_ms, initial_delay_ms, effects, reason)
    try_complete_join(group, now_ms, effects)


def on_join_deadline(
    group: ClassicGroup, now_ms: int, initial_delay_ms: int, effects: Effects
) -> None:
    """The join phase's deadline passed: the initial delay is extended while new members keep
    arriving (up to the rebalance timeout); otherwise the phase completes with whoever
    rejoined."""
    if not group.is_in(GroupState.PREPARING_REBALANCE) or group.join_deadline_ms is None:
        return
    if group.join_deadline_ms > now_ms:
        return
    if group.in_initial_delay and group.new_member_added and group.initial_delay_remaining_ms > 0:
        delay_ms = min(initial_delay_ms, group.initial_delay_remaining_ms)
        group.initial_delay_remaining_ms = max(
            group.initial_delay_remaining_ms - initial_delay_ms, 0
        )
        group.new_member_added = False
        group.join_deadline_ms = now_ms + delay_ms
        return
    complete_join(group, now_ms, effects)


def on_sync_deadline(
    group: ClassicGroup, now_ms: int, initial_delay_ms: int, effects: Effects
) -> None:
    """The sync phase's deadline passed: members that never sent SyncGroup for this
    generation (a leader that never assigns would stall the group) are removed and the rest
    rebalance."""
    if group.sync_deadline_ms is None or group.sync_deadline_ms > now_ms:
        return
    group.sync_deadline_ms = None
    if not group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
        return
    laggards = [
        group.members[member_id] for member_id in group.members if member_id in group.pending_sync
    ]
    group.pending_sync.clear()
    if not laggards:
        return
    for member in laggards:
        logger.info(
            "group %s: removing member %s, which did not sync generation %d in time",
            group.group_id,
            member.member_id,
            group.generation_id,
        )
        remove_member(group, member, effects)
    prepare_rebalance(
        group, now_ms, initial_delay_ms, effects, RebalanceCause(CauseKind.SYNC_TIMEOUT)
    )
    try_complete_join(group, now_ms, effects)
