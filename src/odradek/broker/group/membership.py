"""The classic group protocol's requests: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Owns request validation and the member-level decisions (new member, rejoin, static member
restart, fencing); the group-level consequences are ``rebalance``'s. Pure: ``now_ms`` in,
``Outcome`` out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from odradek.broker.group import rebalance
from odradek.broker.group.group import ClassicGroup, Member
from odradek.broker.group.rebalance import Effects
from odradek.broker.group.results import (
    HeartbeatResult,
    JoinGroupResult,
    LeaveGroupResult,
    LeaveMemberResult,
    LeavingMember,
    Outcome,
    SyncGroupResult,
)
from odradek.broker.group.shard import CoordinatorShard
from odradek.broker.group.state import GroupState
from odradek.errors import ErrorCode

logger = logging.getLogger(__name__)


class GroupMembership(CoordinatorShard):
    """The membership requests of a coordinator shard (see the module docstring)."""

    def join_group(
        self,
        now_ms: int,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None = None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: Sequence[tuple[str, bytes]],
        reason: str | None = None,
        supports_skip_assignment: bool = False,
    ) -> Outcome[JoinGroupResult]:
        """JoinGroup: a new member gets an id and joins; a known member rejoins.

        Args:
            member_id: "" for a member's first join (or a static member's restart).
            rebalance_timeout_ms: JoinGroup v0 has none: pass the session timeout.
            protocols: (name, metadata) pairs, most preferred first.
            reason: the client's reason (v8+), logged.
            supports_skip_assignment: the request is v9+ (KIP-814): a restarted static
                leader is told it leads, with ``skip_assignment``; older clients are told the
                previous leader's id so they do not assign again.

        Returns:
            ``Pending`` while a join phase runs; the answer comes when it completes.
        """
        self._schedule_expiry(now_ms)

        def fail(code: ErrorCode) -> Outcome[JoinGroupResult]:
            return Outcome((), JoinGroupResult(code, member_id))

        config = self._config
        if not group_id:
            return fail(ErrorCode.INVALID_GROUP_ID)
        if not (
            config.group_min_session_timeout_ms
            <= session_timeout_ms
            <= config.group_max_session_timeout_ms
        ):
            return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
        effects = Effects()
        if group_id in self._consumer_groups:
            # A KIP-848 group: an empty one becomes a classic group again (keeping its
            # offsets); classic members do not join one with members.
            consumer_group = self._consumer_groups[group_id]
            if consumer_group.members or member_id or not protocol_type or not protocols:
                return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            del self._consumer_groups[group_id]
            effects.records.extend(consumer_group.group_tombstones())
            downgraded = ClassicGroup(group_id, now_ms)
            downgraded.offsets.update(consumer_group.offsets)
        else:
            downgraded = None
        group = self._groups.get(group_id) or downgraded
        if group is None:
            if member_id:
                return fail(ErrorCode.UNKNOWN_MEMBER_ID)
            group = ClassicGroup(group_id, now_ms)
        if group.is_in(GroupState.DEAD):
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        offered = tuple(protocols)
        if not group.supports_protocols(protocol_type, (name for name, _ in offered)):
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if reason:
            logger.info("group %s: member %r joins: %s", group_id, member_id, reason)

        ticket = next(self._tickets)
        if member_id:
            if group.is_static_member_fenced(member_id, group_instance_id):
                return fail(ErrorCode.FENCED_INSTANCE_ID)
            member = group.members.get(member_id)
            if member is None or (
                group_instance_id is not None and group.static_member_id(group_instance_id) is None
            ):
                return fail(ErrorCode.UNKNOWN_MEMBER_ID)
            response = self._rejoin(
                group,
                member,
                now_ms,
                offered,
                rebalance_timeout_ms,
                session_timeout_ms,
                ticket,
                effects,
            )
        else:
            current = (
                None if group_instance_id is None else group.static_member_id(group_instance_id)
            )
            new_member = Member(
                member_id=f"{group_instance_id or client_id}-{self._new_uuid()}",
                group_instance_id=group_instance_id,
                client_id=client_id,
                client_host=client_host,
                rebalance_timeout_ms=rebalance_timeout_ms,
                session_timeout_ms=session_timeout_ms,
                protocol_type=protocol_type,
                protocols=offered,
                last_heartbeat_ms=now_ms,
            )
            if current is not None:
                response = self._restart_static_member(
                    group, current, new_member, now_ms, ticket, supports_skip_assignment, effects
                )
            elif len(group.members) >= config.group_max_size:
                return fail(ErrorCode.GROUP_MAX_SIZE_REACHED)
            else:
                response = self._add_member(group, new_member, now_ms, ticket, effects)
        self._groups[group_id] = group
        return self._outcome(effects, response, ticket, group)

    def _add_member(
        self, group: ClassicGroup, member: Member, now_ms: int, ticket: int, effects: Effects
    ) -> JoinGroupResult | None:
        member.join_ticket = ticket
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.in_initial_delay:
            group.new_member_added = True
        group.add_member(member)
        self._schedule_session(group, member)
        delay = self._config.group_initial_rebalance_delay_ms
        rebalance.maybe_prepare_rebalance(
            group, now_ms, delay, effects, f"member {member.member_id} joined"
        )
        rebalance.try_complete_join(group, now_ms, effects)
        return None

    def _rejoin(
        self,
        group: ClassicGroup,
        member: Member,
        now_ms: int,
        protocols: tuple[tuple[str, bytes], ...],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        ticket: int,
        effects: Effects,
    ) -> JoinGroupResult | None:
        """A known member's JoinGroup. Outside a join phase, a follower whose protocols did
        not change just gets the current generation again (it lost the answer); the leader, or
        a member whose protocols changed, starts a rebalance."""
        unchanged = member.matches(protocols)
        if group.is_in(GroupState.COMPLETING_REBALANCE) and unchanged:
            member.last_heartbeat_ms = now_ms
            return rebalance.join_response(group, member)
        if group.is_in(GroupState.STABLE) and unchanged and not group.is_leader(member.member_id):
            member.last_heartbeat_ms = now_ms
            return rebalance.join_response(group, member)
        if not group.is_in(
            GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE
        ):
            return JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id)
        # A second JoinGroup while the first waits: the newer one is answered instead.
        rebalance.answer_join(
            member, effects, JoinGroupResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id)
        )
        member.protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.join_ticket = ticket
        self._schedule_session(group, member)
        rebalance.maybe_prepare_rebalance(
            group,
            now_ms,
            self._config.group_initial_rebalance_delay_ms,
            effects,
            f"member {member.member_id} rejoined",
        )
        rebalance.try_complete_join(group, now_ms, effects)
        return None

    def _restart_static_member(
        self,
        group: ClassicGroup,
        old_member_id: str,
        member: Member,
        now_ms: int,
        ticket: int,
        supports_skip_assignment: bool,
        effects: Effects,
    ) -> JoinGroupResult | None:
        """A static member (KIP-345) came back without its member id: the new incarnation
        takes the old one's place (and assignment); the old one's waiting requests are fenced.
        A Stable group whose protocol choice does not change is not rebalanced."""
        previous_leader = group.leader_id
        old = group.members[old_member_id]
        member.assignment = old.assignment
        group.replace_static_member(old_member_id, member)
        rebalance.answer_join(
            old, effects, JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id)
        )
        rebalance.answer_sync(old, effects, SyncGroupResult(ErrorCode.FENCED_INSTANCE_ID))
        self._schedule_session(group, member)
        logger.info(
            "group %s: static member %s restarted as %s (was %s)",
            group.group_id,
            member.group_instance_id,
            member.member_id,
            old_member_id,
        )
        delay = self._config.group_initial_rebalance_delay_ms
        if group.is_in(GroupState.STABLE) and group.select_protocol() == group.protocol_name:
            effects.records.append(group.metadata_record())
            if supports_skip_assignment:
                leader = group.leader_id or ""
                skip = group.is_leader(member.member_id)
            else:
                leader, skip = previous_leader or "", False
            return JoinGroupResult(
                error_code=ErrorCode.NONE,
                member_id=member.member_id,
                generation_id=group.generation_id,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=leader,
                skip_assignment=skip,
            )
        member.join_ticket = ticket
        rebalance.maybe_prepare_rebalance(
            group, now_ms, delay, effects, f"static member {member.member_id} restarted"
        )
        rebalance.try_complete_join(group, now_ms, effects)
        return None

    def _member_of_generation(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> tuple[ClassicGroup | None, ErrorCode]:
        """The group when ``member_id`` belongs to it in ``generation_id``; else no group and
        the error that says why (SyncGroup and Heartbeat fence the same way)."""
        if not group_id:
            return None, ErrorCode.INVALID_GROUP_ID
        group = self._groups.get(group_id)
        if group is None:
            return None, ErrorCode.UNKNOWN_MEMBER_ID
        error = self._check_member(group, member_id, group_instance_id)
        if error is not ErrorCode.NONE:
            return None, error
        if generation_id != group.generation_id:
            return None, ErrorCode.ILLEGAL_GENERATION
        return group, ErrorCode.NONE

    def sync_group(
        self,
        now_ms: int,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        assignments: Mapping[str, bytes] | None = None,
    ) -> Outcome[SyncGroupResult]:
        """SyncGroup: the leader hands out the assignments; every member gets its own.

        Args:
            protocol_type, protocol_name: v5+; checked against the group's when given.
            assignments: the leader's, by member id (ignored from followers).

        Returns:
            ``Pending`` for a follower that syncs before the leader.
        """
        self._schedule_expiry(now_ms)

        def fail(code: ErrorCode) -> Outcome[SyncGroupResult]:
            return Outcome((), SyncGroupResult(code))

        group, error = self._member_of_generation(
            group_id, member_id, group_instance_id, generation_id
        )
        if group is None:
            return fail(error)
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return fail(ErrorCode.REBALANCE_IN_PROGRESS)
        member = group.members[member_id]
        group.pending_sync.discard(member_id)
        if group.is_in(GroupState.STABLE):
            member.last_heartbeat_ms = now_ms
            return Outcome((), rebalance.sync_response(group, member))
        effects = Effects()
        ticket = next(self._tickets)
        rebalance.answer_sync(member, effects, SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_ticket = ticket
        if group.is_leader(member_id):
            rebalance.complete_sync(group, now_ms, dict(assignments or {}), effects)
        return self._outcome(effects, None, ticket, group)

    def heartbeat(
        self,
        now_ms: int,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None = None,
    ) -> Outcome[HeartbeatResult]:
        """Heartbeat: keeps the member's session; REBALANCE_IN_PROGRESS tells it to rejoin."""
        self._schedule_expiry(now_ms)

        def answer(code: ErrorCode) -> Outcome[HeartbeatResult]:
            return Outcome((), HeartbeatResult(code))

        group, error = self._member_of_generation(
            group_id, member_id, group_instance_id, generation_id
        )
        if group is None:
            return answer(error)
        group.members[member_id].last_heartbeat_ms = now_ms
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return answer(ErrorCode.REBALANCE_IN_PROGRESS)
        return answer(ErrorCode.NONE)

    def leave_group(
        self, now_ms: int, *, group_id: str, members: Sequence[LeavingMember]
    ) -> Outcome[LeaveGroupResult]:
        """LeaveGroup (v3+: a batch): each member named leaves and the rest rebalance. A
        static member may be named by instance id alone (member id "")."""
        self._schedule_expiry(now_ms)
        if not group_id:
            return Outcome((), LeaveGroupResult(ErrorCode.INVALID_GROUP_ID))
        group = self._groups.get(group_id)
        results: list[LeaveMemberResult] = []
        effects = Effects()
        for leaving in members:
            error = ErrorCode.UNKNOWN_MEMBER_ID
            if group is not None:
                error = self._remove_leaving(group, leaving, now_ms, effects)
            results.append(LeaveMemberResult(leaving.member_id, leaving.group_instance_id, error))
        response = LeaveGroupResult(ErrorCode.NONE, tuple(results))
        return self._outcome(effects, response, None, group)

    def _remove_leaving(
        self, group: ClassicGroup, leaving: LeavingMember, now_ms: int, effects: Effects
    ) -> ErrorCode:
        if leaving.group_instance_id is not None:
            member_id = group.static_member_id(leaving.group_instance_id)
            if member_id is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if leaving.member_id and leaving.member_id != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        else:
            member_id = leaving.member_id
            if group.is_static_member_fenced(member_id, None):
                return ErrorCode.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        rebalance.remove_member_and_update_group(
            group,
            member,
            now_ms,
            self._config.group_initial_rebalance_delay_ms,
            effects,
            f"member {member_id} left",
        )
        return ErrorCode.NONE
