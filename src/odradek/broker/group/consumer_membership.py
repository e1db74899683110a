"""KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe on a coordinator shard.

Owns the member-level protocol of consumer groups: joining (member epoch 0), heartbeats at
the member's epoch, leaving (epoch -1, or -2 for a static member that comes back), fencing
(FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID), session
and revocation timeouts, the group epoch bumps and the target assignment computed by the
server assignor (``server_assignors``); reconciliation of each member is ``reconciliation``'s.
An Empty classic group is upgraded to a consumer group by a member's first heartbeat.

Pure: every operation takes ``now_ms`` and the cluster's topics as values (``TopicImage`` by
name) and returns an ``Outcome`` whose records rebuild the group (``consumer_records``).

Regular expressions (``subscribed_topic_regex``): RE2 (linear time, RE2/J's syntax as KIP-848
specifies) matched against whole topic names, the matches cached per (pattern, topic set) by
``topic_regex``; a pattern RE2 refuses is answered INVALID_REGULAR_EXPRESSION. Topics whose name
starts with ``__`` (internal) never match.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace

from odradek.broker.group.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    TopicImage,
    same_assignment,
)
from odradek.broker.group.consumer_records import Assignment
from odradek.broker.group.consumer_results import (
    ConsumerGroupDescribeResult,
    ConsumerGroupHeartbeatResult,
    DescribedConsumerGroup,
    DescribedConsumerMember,
)
from odradek.broker.group.history import CauseKind, RebalanceCause
from odradek.broker.group.rebalance import Effects
from odradek.broker.group.reconciliation import reconcile
from odradek.broker.group.records import CoordinatorRecord, GroupMetadataKey
from odradek.broker.group.results import Outcome
from odradek.broker.group.server_assignors import ASSIGNORS, AssignmentSpec
from odradek.broker.group.shard import CoordinatorShard, Timer
from odradek.broker.group.topic_regex import InvalidRegexError, check_regex
from odradek.errors import ErrorCode

logger = logging.getLogger(__name__)

Topics = Mapping[str, TopicImage]
Owned = Mapping[uuid.UUID, frozenset[int]]


class _RefusedError(Exception):
    """A heartbeat answered with an error (internal: caught in ``consumer_group_heartbeat``)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class ConsumerGroupMembership(CoordinatorShard):
    """The KIP-848 requests of a coordinator shard (see the module docstring)."""

    def consumer_group_heartbeat(
        self,
        now_ms: int,
        *,
        group_id: str,
        member_id: str,
        member_epoch: int,
        topics: Topics,
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = -1,
        subscribed_topic_names: Sequence[str] | None = None,
        subscribed_topic_regex: str | None = None,
        server_assignor: str | None = None,
        owned: Owned | None = None,
        client_id: str = "",
        client_host: str = "",
        member_id_from_client: bool = True,
    ) -> Outcome[ConsumerGroupHeartbeatResult]:
        """ConsumerGroupHeartbeat (v0-v1).

        Args:
            topics: the cluster's topics by name (id and partition count).
            owned: the partitions the member owns (None: the request did not say).
            member_id_from_client: v1+ (KIP-1082): the client makes its member id; v0 may
                leave it empty on the first heartbeat and gets one.
        """
        self._schedule_expiry(now_ms)
        effects = Effects()
        try:
            result = self._heartbeat(
                now_ms,
                effects,
                group_id=group_id,
                member_id=member_id,
                member_epoch=member_epoch,
                topics=topics,
                instance_id=instance_id,
                rack_id=rack_id,
                rebalance_timeout_ms=rebalance_timeout_ms,
                names=None if subscribed_topic_names is None else tuple(subscribed_topic_names),
                regex=subscribed_topic_regex,
                server_assignor=server_assignor,
                owned=owned,
                client_id=client_id,
                client_host=client_host,
                member_id_from_client=member_id_from_client,
            )
        except _RefusedError as refused:
            return Outcome(
                tuple(effects.records),
                ConsumerGroupHeartbeatResult(refused.code, str(refused), member_id or None),
            )
        return Outcome(tuple(effects.records), result)

    def _heartbeat(
        self,
        now_ms: int,
        effects: Effects,
        *,
        group_id: str,
        member_id: str,
        member_epoch: int,
        topics: Topics,
        instance_id: str | None,
        rack_id: str | None,
        rebalance_timeout_ms: int,
        names: tuple[str, ...] | None,
        regex: str | None,
        server_assignor: str | None,
        owned: Owned | None,
        client_id: str,
        client_host: str,
        member_id_from_client: bool,
    ) -> ConsumerGroupHeartbeatResult:
        config = self._config
        if "consumer" not in config.group_coordinator_rebalance_protocols:
            raise _RefusedError(ErrorCode.UNSUPPORTED_VERSION, "the consumer protocol is disabled")
        self._validate(
            group_id, member_id, member_epoch, instance_id, rebalance_timeout_ms, names, regex,
            server_assignor, owned, member_id_from_client,
        )  # fmt: skip
        if not member_id:
            member_id = self._new_uuid()
        group = self._consumer_group_for(group_id, member_epoch, now_ms, effects)
        if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(group, member_id, instance_id, member_epoch, topics, effects, now_ms)
        old, member, joined = self._member_for(
            group, member_id, member_epoch, instance_id, owned, now_ms, effects
        )
        member = replace(
            member,
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=rack_id if rack_id is not None else member.rack_id,
            client_id=client_id or member.client_id,
            client_host=client_host or member.client_host,
            subscribed_topic_names=names if names is not None else member.subscribed_topic_names,
            subscribed_topic_regex=(
                (regex or None) if regex is not None else member.subscribed_topic_regex
            ),
            server_assignor=server_assignor if server_assignor else member.server_assignor,
            rebalance_timeout_ms=(
                rebalance_timeout_ms if rebalance_timeout_ms >= 0 else member.rebalance_timeout_ms
            ),
        )
        bump = joined
        cause = RebalanceCause(CauseKind.MEMBER_JOINED, member_id) if joined else None
        if old is None or member.metadata_value() != old.metadata_value():
            effects.records.append(group.member_record(member))
            if old is not None and (
                member.subscribed_topic_names != old.subscribed_topic_names
                or member.subscribed_topic_regex != old.subscribed_topic_regex
            ):
                bump = True
                cause = cause or RebalanceCause(CauseKind.SUBSCRIPTION_CHANGED, member_id)
        group.update_member(member)
        self._refresh_target(group, topics, bump, effects, now_ms, cause)
        target = group.target.get(member_id, {})
        updated = reconcile(member, group.assignment_epoch, target, group.owner_of, owned)
        if updated != member or joined:
            group.update_member(updated)
            effects.records.append(group.current_assignment_record(updated))
        self._track_revocation(group, old, updated, now_ms)
        group.session_deadlines[member_id] = now_ms + config.group_consumer_session_timeout_ms
        self._timers.schedule(
            Timer("consumer-session", group.group_id, member_id),
            group.session_deadlines[member_id],
        )
        send = (
            joined
            or old is None
            or not same_assignment(old.assigned, updated.assigned)
            or (owned is not None and not same_assignment(owned, updated.assigned))
        )
        return ConsumerGroupHeartbeatResult(
            ErrorCode.NONE,
            member_id=member_id,
            member_epoch=updated.member_epoch,
            heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
            assignment=dict(updated.assigned) if send else None,
        )

    def _validate(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        rebalance_timeout_ms: int,
        names: tuple[str, ...] | None,
        regex: str | None,
        server_assignor: str | None,
        owned: Owned | None,
        member_id_from_client: bool,
    ) -> None:
        if not group_id:
            raise _RefusedError(ErrorCode.INVALID_GROUP_ID, "GroupId can't be empty.")
        if member_epoch == 0:
            if not member_id and member_id_from_client:
                raise _RefusedError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
            if rebalance_timeout_ms == -1:
                raise _RefusedError(
                    ErrorCode.INVALID_REQUEST,
                    "RebalanceTimeoutMs must be provided in first request.",
                )
            if owned:
                raise _RefusedError(
                    ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."
                )
            if names is None and regex is None:
                raise _RefusedError(
                    ErrorCode.INVALID_REQUEST,
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
                )
        elif member_epoch > 0 or member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if not member_id:
                raise _RefusedError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if not member_id or instance_id is None:
                raise _RefusedError(
                    ErrorCode.INVALID_REQUEST, "InstanceId and MemberId can't be null."
                )
        else:
            raise _RefusedError(
                ErrorCode.INVALID_REQUEST, f"MemberEpoch {member_epoch} is invalid."
            )
        if server_assignor and server_assignor not in self._config.group_consumer_assignors:
            raise _RefusedError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {server_assignor} is not supported. Supported assignors: "
                f"{', '.join(self._config.group_consumer_assignors)}.",
            )
        if regex:
            try:
                check_regex(regex)
            except InvalidRegexError as error:
                raise _RefusedError(
                    ErrorCode.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex: {error}"
                ) from None

    def _consumer_group_for(
        self, group_id: str, member_epoch: int, now_ms: int, effects: Effects
    ) -> ConsumerGroup:
        """The consumer group, created by a joining member (an Empty classic group of that id
        is upgraded: its offsets move over and its metadata record is deleted)."""
        group = self._consumer_groups.get(group_id)
        if group is not None:
            return group
        classic = self._groups.get(group_id)
        if classic is not None and (classic.members or member_epoch != 0):
            raise _RefusedError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
            )
        if member_epoch != 0:
            raise _RefusedError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Group {group_id} has no such member."
            )
        group = ConsumerGroup(group_id, now_ms)
        if classic is not None:
            group.offsets.update(classic.offsets)
            del self._groups[group_id]
            effects.records.append(CoordinatorRecord.tombstone(GroupMetadataKey(group_id)))
            logger.info("group %s: upgraded from an empty classic group", group_id)
        self._consumer_groups[group_id] = group
        return group

    def _member_for(
        self,
        group: ConsumerGroup,
        member_id: str,
        member_epoch: int,
        instance_id: str | None,
        owned: Owned | None,
        now_ms: int,
        effects: Effects,
    ) -> tuple[ConsumerGroupMember | None, ConsumerGroupMember, bool]:
        """(the member before, the member to update, whether it joined now)."""
        if member_epoch == 0:
            current_id = None if instance_id is None else group.static_members.get(instance_id)
            if current_id is not None and current_id != member_id:
                previous = group.members[current_id]
                if previous.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise _RefusedError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {current_id} with instance id {instance_id} is still "
                        "a member of the group.",
                    )
                return None, self._replace_static(group, previous, member_id, effects), False
            existing = group.members.get(member_id)
            if existing is not None:
                # A rejoin (after a fencing the member saw, or a restart with the same id): it
                # owns nothing now, so its partitions are free; its target stays for stickiness.
                target = group.target.get(member_id)
                group.remove_member(member_id)
                if target is not None:
                    group.target[member_id] = target
            elif len(group.members) >= self._config.group_consumer_max_size:
                raise _RefusedError(
                    ErrorCode.GROUP_MAX_SIZE_REACHED,
                    f"The consumer group has reached its maximum capacity of "
                    f"{self._config.group_consumer_max_size} members.",
                )
            return None, ConsumerGroupMember(member_id, member_epoch=0), True
        member = group.members.get(member_id)
        if member is None:
            raise _RefusedError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not in the group."
            )
        if instance_id is not None and group.static_members.get(instance_id) != member_id:
            raise _RefusedError(
                ErrorCode.FENCED_INSTANCE_ID, f"Instance id {instance_id} is fenced."
            )
        if member_epoch > member.member_epoch or (
            member_epoch < member.member_epoch
            and not (
                member_epoch == member.previous_member_epoch
                and owned is not None
                and _is_within(owned, member.assigned)
            )
        ):
            raise _RefusedError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The member epoch {member_epoch} is not {member.member_epoch}.",
            )
        return member, member, False

    def _replace_static(
        self,
        group: ConsumerGroup,
        previous: ConsumerGroupMember,
        member_id: str,
        effects: Effects,
    ) -> ConsumerGroupMember:
        """A static member came back (epoch 0, same instance id, new member id) after leaving
        with epoch -2: it takes the old member's place, epoch and assignment, without a
        rebalance (KIP-848's static membership)."""
        target = group.target.get(previous.member_id, {})
        effects.records.extend(group.member_tombstones(previous.member_id))
        group.remove_member(previous.member_id)
        epoch = previous.previous_member_epoch
        member = replace(previous, member_id=member_id, member_epoch=epoch)
        group.update_member(member)
        group.target[member_id] = target
        effects.records.append(group.member_record(member))
        effects.records.append(group.target_record(member_id))
        effects.records.append(group.current_assignment_record(member))
        logger.info(
            "group %s: static member %s came back as %s (was %s)",
            group.group_id,
            member.instance_id,
            member_id,
            previous.member_id,
        )
        return member

    def _leave(
        self,
        group: ConsumerGroup,
        member_id: str,
        instance_id: str | None,
        member_epoch: int,
        topics: Topics,
        effects: Effects,
        now_ms: int,
    ) -> ConsumerGroupHeartbeatResult:
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                raise _RefusedError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown."
                )
            if current != member_id:
                raise _RefusedError(
                    ErrorCode.FENCED_INSTANCE_ID, f"Instance id {instance_id} is fenced."
                )
        member = group.members.get(member_id)
        if member is None:
            raise _RefusedError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not in the group."
            )
        if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # Keeps its partitions (nobody else gets them) until it comes back or its session
            # times out.
            left = replace(
                member,
                member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                previous_member_epoch=member.member_epoch,
            )
            group.update_member(left)
            effects.records.append(group.current_assignment_record(left))
        else:
            self._remove_consumer_member(
                group,
                member_id,
                effects,
                RebalanceCause(CauseKind.MEMBER_LEFT, member_id),
                now_ms,
                topics,
            )
        return ConsumerGroupHeartbeatResult(
            ErrorCode.NONE, member_id=member_id, member_epoch=member_epoch
        )

    def _remove_consumer_member(
        self,
        group: ConsumerGroup,
        member_id: str,
        effects: Effects,
        cause: RebalanceCause,
        now_ms: int,
        topics: Topics | None = None,
    ) -> None:
        """Removes a member (its records tombstoned), bumps the group epoch (for ``cause``)
        and recomputes the target so its partitions go to the others."""
        effects.records.extend(group.member_tombstones(member_id))
        group.remove_member(member_id)
        if not group.members:
            group.state_timestamp_ms = now_ms  # Empty from now: offsets expire from here
        self._timers.cancel(Timer("consumer-session", group.group_id, member_id))
        self._timers.cancel(Timer("consumer-revoke", group.group_id, member_id))
        logger.info("group %s: member %s removed: %s", group.group_id, member_id, cause)
        self._refresh_target(group, topics, True, effects, now_ms, cause)

    # --- the target assignment ------------------------------------------------------------------

    def _refresh_target(
        self,
        group: ConsumerGroup,
        topics: Topics | None,
        bump: bool,
        effects: Effects,
        now_ms: int,
        cause: RebalanceCause | None = None,
    ) -> None:
        """Bumps the group epoch when asked or when the subscribed topics' metadata changed,
        and computes a new target assignment when the group epoch passed the assignment
        epoch. ``topics`` None: use the metadata the last target was computed from. A bump
        is a rebalance in the group's history, for ``cause`` (or the metadata change)."""
        metadata = group.subscribed_metadata
        verify = False
        if topics is not None:
            current = self._subscribed_metadata(group, topics)
            if metadata is None:
                verify = True  # just loaded: the stored target stands unless it differs
            elif current != metadata:
                bump = True
                cause = cause or RebalanceCause(
                    CauseKind.METADATA_CHANGED, detail=metadata_change(metadata, current)
                )
            metadata = group.subscribed_metadata = current
        if bump and cause is not None:
            group.rebalances.started(now_ms, group.group_epoch, cause)
        if metadata is None:
            if bump:
                group.group_epoch += 1
                effects.records.append(group.epoch_record())
            return
        if bump:
            group.group_epoch += 1
            effects.records.append(group.epoch_record())
        if group.group_epoch <= group.assignment_epoch and not verify:
            return
        metadata_names = frozenset(metadata)  # once: the regex matches are cached by it
        specs = {
            member_id: AssignmentSpec(self._subscribed_ids(member, metadata, metadata_names))
            for member_id, member in group.members.items()
        }
        assignor = ASSIGNORS[group.preferred_assignor(self._config.group_consumer_assignors[0])]
        counts = {image.topic_id: image.partitions for image in metadata.values()}
        computed = assignor(specs, counts, group.target)
        changed = [
            m
            for m in specs
            if m not in group.target or not same_assignment(computed[m], group.target[m])
        ]
        if verify and not changed and group.group_epoch <= group.assignment_epoch:
            return
        if verify and group.group_epoch <= group.assignment_epoch:
            group.group_epoch += 1
            effects.records.append(group.epoch_record())
        for member_id in changed:
            group.target[member_id] = computed[member_id]
            effects.records.append(group.target_record(member_id))
        group.assignment_epoch = group.group_epoch
        effects.records.append(group.assignment_epoch_record())
        group.rebalances.completed(now_ms, group.group_epoch, len(group.members))

    def _subscribed_metadata(self, group: ConsumerGroup, topics: Topics) -> dict[str, TopicImage]:
        names = group.subscribed_topic_names()
        patterns = group.regexes()
        if patterns:
            topic_set = frozenset(topics)
            for pattern in patterns:
                names.update(self._regex_matcher.matches(pattern, topic_set))
        return {name: topics[name] for name in sorted(names) if name in topics}

    def _subscribed_ids(
        self, member: ConsumerGroupMember, metadata: Topics, metadata_names: frozenset[str]
    ) -> frozenset[uuid.UUID]:
        names = {name for name in member.subscribed_topic_names if name in metadata}
        if member.subscribed_topic_regex:
            regex = member.subscribed_topic_regex
            names.update(self._regex_matcher.matches(regex, metadata_names))
        return frozenset(metadata[name].topic_id for name in names)

    def _track_revocation(
        self,
        group: ConsumerGroup,
        old: ConsumerGroupMember | None,
        member: ConsumerGroupMember,
        now_ms: int,
    ) -> None:
        """A member must revoke within its rebalance timeout (else it is fenced)."""
        timer = Timer("consumer-revoke", group.group_id, member.member_id)
        if member.state != MemberState.UNREVOKED_PARTITIONS:
            group.revocation_deadlines.pop(member.member_id, None)
            self._timers.cancel(timer)
        elif old is None or old.state != MemberState.UNREVOKED_PARTITIONS:
            deadline = now_ms + member.rebalance_timeout_ms
            group.revocation_deadlines[member.member_id] = deadline
            self._timers.schedule(timer, deadline)

    def on_consumer_timer(self, timer: Timer, now_ms: int, effects: Effects) -> None:
        """A session or revocation deadline of a consumer group member fired."""
        group = self._consumer_groups.get(timer.group_id)
        if group is None or timer.member_id not in group.members:
            return
        deadlines = (
            group.session_deadlines
            if timer.kind == "consumer-session"
            else group.revocation_deadlines
        )
        deadline = deadlines.get(timer.member_id)
        if deadline is None:
            return
        if deadline > now_ms:
            self._timers.schedule(timer, deadline)
            return
        if timer.kind == "consumer-session":
            last_heartbeat_ms = deadline - self._config.group_consumer_session_timeout_ms
            cause = RebalanceCause(CauseKind.SESSION_TIMEOUT, timer.member_id, last_heartbeat_ms)
        else:
            cause = RebalanceCause(CauseKind.REVOCATION_TIMEOUT, timer.member_id)
        self._remove_consumer_member(group, timer.member_id, effects, cause, now_ms)

    # --- describe -------------------------------------------------------------------------------

    def consumer_group_describe(
        self, group_ids: Sequence[str]
    ) -> Outcome[ConsumerGroupDescribeResult]:
        """ConsumerGroupDescribe: each group's epochs, assignor and members."""
        described = []
        for group_id in group_ids:
            group = self._consumer_groups.get(group_id)
            if group is None:
                message = (
                    f"Group {group_id} is not a consumer group."
                    if group_id in self._groups
                    else f"Group {group_id} not found."
                )
                described.append(
                    DescribedConsumerGroup(
                        ErrorCode.GROUP_ID_NOT_FOUND, group_id, error_message=message
                    )
                )
                continue
            members = tuple(
                DescribedConsumerMember(
                    member.member_id,
                    member.instance_id,
                    member.rack_id,
                    member.member_epoch,
                    member.client_id,
                    member.client_host,
                    member.subscribed_topic_names,
                    member.subscribed_topic_regex,
                    member.assigned,
                    group.target.get(member.member_id, {}),
                )
                for member in group.members.values()
            )
            described.append(
                DescribedConsumerGroup(
                    ErrorCode.NONE,
                    group_id,
                    group.state.value,
                    group.group_epoch,
                    group.assignment_epoch,
                    group.preferred_assignor(self._config.group_consumer_assignors[0]),
                    members,
                )
            )
        return Outcome((), ConsumerGroupDescribeResult(tuple(described)))


def metadata_change(before: Topics, after: Topics) -> str:
    """What changed between two images of the subscribed topics, for a person: partitions
    added, topics created, topics deleted (``orders: 3 -> 6 partitions; new topic audit``)."""
    parts = []
    for name in sorted(after):
        if name not in before:
            parts.append(f"new topic {name}")
        elif after[name].topic_id != before[name].topic_id:
            parts.append(f"topic {name} recreated")
        elif after[name].partitions != before[name].partitions:
            parts.append(
                f"{name}: {before[name].partitions} -> {after[name].partitions} partitions"
            )
    parts.extend(f"topic {name} deleted" for name in sorted(before) if name not in after)
    return "; ".join(parts)


def _is_within(owned: Owned, assigned: Assignment) -> bool:
    """Whether every owned partition is in ``assigned``."""
    return all(parts <= assigned.get(topic_id, frozenset()) for topic_id, parts in owned.items())
