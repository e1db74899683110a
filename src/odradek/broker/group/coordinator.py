"""The group coordinator of one ``__consumer_offsets`` partition, as a pure state machine.

Owns the classic groups that hash to one offsets partition (``partition_for_group``) and
answers their requests: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete. The rule it keeps: every
change of state is either rebuilt by replaying the records it returns (group metadata at each
generation, committed offsets, tombstones) or is soft state that restarts on load (sessions,
join and sync phases, waiting requests).

No I/O, no clock, no threads: each operation takes ``now_ms`` and returns an ``Outcome``
(records to append, the response or ``Pending``, completions of earlier pending requests; see
``results`` for the runtime's contract). ``tick(now_ms)`` fires what is due — expired
sessions, join phases whose initial delay or rebalance timeout passed, members that never
synced, expired offsets — and ``next_deadline_ms()`` says when to call it next.

Legal call order: ``load`` once (the partition's log, possibly empty) when this broker becomes
the partition's leader, then any operations and ticks, with ``now_ms`` never going backwards.
Not thread-safe: one event loop calls it.

Protocol notes: a JoinGroup without member id is given one at once (``client_id-<uuid>``, or
``group.instance.id-<uuid>`` for a static member) and joins; the KIP-394 MEMBER_ID_REQUIRED
round trip is never asked for. The protocol is chosen by vote among the protocols all members
support; the assignment is the leader client's.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from odradek._types import TopicPartition
from odradek.broker.group import consumer_loading, offsets, rebalance
from odradek.broker.group.config import GroupConfig
from odradek.broker.group.consumer_group import ConsumerGroup
from odradek.broker.group.consumer_membership import ConsumerGroupMembership
from odradek.broker.group.consumer_records import decode_consumer_key
from odradek.broker.group.group import CONSUMER_PROTOCOL_TYPE, ClassicGroup
from odradek.broker.group.history import CauseKind, RebalanceCause
from odradek.broker.group.membership import GroupMembership
from odradek.broker.group.rebalance import Effects
from odradek.broker.group.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
)
from odradek.broker.group.results import (
    DeleteGroupsResult,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsResult,
    ListedGroup,
    ListGroupsResult,
    OffsetCommitPartition,
    OffsetCommitResult,
    OffsetDeleteResult,
    OffsetFetchResult,
    Outcome,
)
from odradek.broker.group.shard import EXPIRE, Timer
from odradek.broker.group.state import GroupState
from odradek.errors import ErrorCode

logger = logging.getLogger(__name__)

_Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """A group's state as its records would rebuild it: ``metadata`` is None for a group
    that only commits offsets."""

    state: GroupState
    metadata: GroupMetadataValue | None
    offsets: Mapping[TopicPartition, OffsetCommitValue]


class GroupCoordinator(GroupMembership, ConsumerGroupMembership):
    """The classic groups of one ``__consumer_offsets`` partition (see the module docstring).

    Args:
        config: the ``group.*`` / ``offsets.*`` settings.
        new_uuid: where generated member ids get their unique suffix (tests pass a
            deterministic one).
    """

    # --- loading --------------------------------------------------------------------------

    def load(self, records: Iterable[tuple[_Buffer | None, _Buffer | None]], now_ms: int) -> None:
        """Rebuilds every group from the partition's records, in log order (key, value or None
        for a tombstone), replacing what this coordinator held. Records with no key or with a
        key of another kind (KIP-848 groups) are skipped. Loaded groups with members are
        Stable; their sessions start at ``now_ms``. Requests still pending from before are
        forgotten: the runtime answers them (NOT_COORDINATOR) itself.

        Raises:
            CoordinatorRecordError: a record of ours cannot be decoded.
        """
        metadata: dict[str, GroupMetadataValue | None] = {}
        committed: dict[str, dict[TopicPartition, OffsetCommitValue]] = {}
        skipped = 0
        consumer = consumer_loading.ConsumerGroupLoader()
        for key, value in records:
            record = None if key is None else decode_record(key, value)
            if record is None:
                consumer_key = None if key is None else decode_consumer_key(key)
                if consumer_key is None:
                    skipped += 1
                else:
                    consumer.add(consumer_key, value)
                continue
            if isinstance(record.key, GroupMetadataKey):
                assert record.value is None or isinstance(record.value, GroupMetadataValue)
                metadata[record.key.group_id] = record.value
            elif isinstance(record.key, OffsetCommitKey):
                assert record.value is None or isinstance(record.value, OffsetCommitValue)
                partition = TopicPartition(record.key.topic, record.key.partition)
                group_offsets = committed.setdefault(record.key.group_id, {})
                if record.value is None:
                    group_offsets.pop(partition, None)
                else:
                    group_offsets[partition] = record.value
        self._groups.clear()
        self._timers.clear()
        self._consumer_groups = consumer.build(now_ms)
        for group_id, stored in metadata.items():
            if stored is not None and group_id not in self._consumer_groups:
                self._groups[group_id] = ClassicGroup.from_metadata(group_id, stored, now_ms)
        for group_id, group_offsets in committed.items():
            if not group_offsets:
                continue
            consumer_group = self._consumer_groups.get(group_id)
            if consumer_group is not None:
                consumer_group.offsets.update(group_offsets)
                continue
            group = self._groups.get(group_id)
            if group is None:
                group = self._groups[group_id] = ClassicGroup(group_id, now_ms)
            group.offsets.update(group_offsets)
        for group in self._groups.values():
            for member in group.members.values():
                self._schedule_session(group, member)
        for consumer_group in self._consumer_groups.values():
            for member_id in consumer_group.members:
                deadline = now_ms + self._config.group_consumer_session_timeout_ms
                consumer_group.session_deadlines[member_id] = deadline
                self._timers.schedule(
                    Timer("consumer-session", consumer_group.group_id, member_id), deadline
                )
        self._schedule_expiry(now_ms)
        logger.info(
            "loaded %d classic and %d consumer groups (%d records skipped)",
            len(self._groups),
            len(self._consumer_groups),
            skipped,
        )

    # --- offsets --------------------------------------------------------------------------

    def commit_offsets(
        self,
        now_ms: int,
        *,
        group_id: str,
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
        partitions: Sequence[OffsetCommitPartition],
        retention_time_ms: int = -1,
    ) -> Outcome[OffsetCommitResult]:
        """OffsetCommit: from a member of the current generation, or (generation -1) from a
        consumer outside any group, which only an Empty or unknown group accepts.

        Args:
            retention_time_ms: OffsetCommit v2-v4's retention time; -1 for the broker's.
        """
        self._schedule_expiry(now_ms)
        requested = [TopicPartition(p.topic, p.partition) for p in partitions]

        def fail(code: ErrorCode) -> Outcome[OffsetCommitResult]:
            return Outcome((), OffsetCommitResult(dict.fromkeys(requested, code)))

        consumer_group = self._consumer_groups.get(group_id)
        if consumer_group is not None:
            error = _check_consumer_member(consumer_group, member_id, generation_id)
            if error is not ErrorCode.NONE:
                return fail(error)
            records: list[CoordinatorRecord] = []
            errors = offsets.commit(
                consumer_group,
                partitions,
                now_ms,
                retention_time_ms=retention_time_ms,
                metadata_max_bytes=self._config.offset_metadata_max_bytes,
                records=records,
            )
            return Outcome(tuple(records), OffsetCommitResult(errors))
        group = self._groups.get(group_id)
        if group is None:
            # A group the coordinator does not know: only a consumer outside any group may
            # create one by committing; a member's commit is from a generation long gone.
            if generation_id >= 0:
                return fail(ErrorCode.ILLEGAL_GENERATION)
            group = ClassicGroup(group_id, now_ms)
        elif group.is_in(GroupState.DEAD):
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        elif not (generation_id < 0 and group.is_in(GroupState.EMPTY)):
            if not member_id and generation_id != group.generation_id:
                # no member id: a consumer outside the group (Kafka checks the generation)
                error = ErrorCode.ILLEGAL_GENERATION
            else:
                error = self._check_member(group, member_id, group_instance_id)
            if error is ErrorCode.NONE and generation_id != group.generation_id:
                error = ErrorCode.ILLEGAL_GENERATION
            if error is ErrorCode.NONE and group.is_in(GroupState.COMPLETING_REBALANCE):
                # The member knows the new generation but has no assignment yet.
                error = ErrorCode.REBALANCE_IN_PROGRESS
            if error is not ErrorCode.NONE:
                return fail(error)
            group.members[member_id].last_heartbeat_ms = now_ms
        records = []
        errors = offsets.commit(
            group,
            partitions,
            now_ms,
            retention_time_ms=retention_time_ms,
            metadata_max_bytes=self._config.offset_metadata_max_bytes,
            records=records,
        )
        if group.offsets or group_id in self._groups:  # a refused first commit makes no group
            self._groups[group_id] = group
        return Outcome(tuple(records), OffsetCommitResult(errors))

    def apply_offset_records(
        self, records: Iterable[tuple[_Buffer | None, _Buffer | None]], now_ms: int
    ) -> None:
        """A committed transaction's offsets (TxnOffsetCommit) take effect: ``records`` are
        the offset commit records already in the log (other records are ignored)."""
        for key, value in records:
            record = None if key is None else decode_record(key, value)
            if record is None or not isinstance(record.key, OffsetCommitKey):
                continue
            assert record.value is None or isinstance(record.value, OffsetCommitValue)
            group_id = record.key.group_id
            group = self._groups.get(group_id)
            if group is None:
                group = self._groups[group_id] = ClassicGroup(group_id, now_ms)
            partition = TopicPartition(record.key.topic, record.key.partition)
            if record.value is None:
                group.offsets.pop(partition, None)
            else:
                group.offsets[partition] = record.value

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Sequence[TopicPartition] | None = None,
        *,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> Outcome[OffsetFetchResult]:
        """OffsetFetch: the committed offsets (-1 where none); all of them when
        ``partitions`` is None.

        Args:
            member_id, member_epoch: OffsetFetch v9+'s member of a consumer group; when given
                (epoch >= 0) they must be the member's (UNKNOWN_MEMBER_ID,
                STALE_MEMBER_EPOCH).
        """
        consumer_group = self._consumer_groups.get(group_id)
        if consumer_group is not None:
            if member_id is not None and member_epoch >= 0:
                error = _check_consumer_member(consumer_group, member_id, member_epoch)
                if error is not ErrorCode.NONE:
                    return Outcome((), OffsetFetchResult(error, {}))
            return Outcome((), offsets.fetch(consumer_group, partitions))
        return Outcome((), offsets.fetch(self._groups.get(group_id), partitions))

    def delete_offsets(
        self, now_ms: int, *, group_id: str, partitions: Sequence[TopicPartition]
    ) -> Outcome[OffsetDeleteResult]:
        """OffsetDelete: any offset of an Empty group; of a consumer group with members, only
        those of topics no member subscribes to (else GROUP_SUBSCRIBED_TO_TOPIC). An Empty
        group left without offsets is deleted with them."""
        self._schedule_expiry(now_ms)
        if not group_id:
            return Outcome((), OffsetDeleteResult(ErrorCode.INVALID_GROUP_ID, {}))
        consumer_group = self._consumer_groups.get(group_id)
        if consumer_group is not None:
            return self._delete_consumer_offsets(now_ms, consumer_group, partitions)
        group = self._groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return Outcome((), OffsetDeleteResult(ErrorCode.GROUP_ID_NOT_FOUND, {}))
        if not group.is_in(GroupState.EMPTY) and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return Outcome((), OffsetDeleteResult(ErrorCode.NON_EMPTY_GROUP, {}))
        errors: dict[TopicPartition, ErrorCode] = {}
        eligible = []
        for partition in partitions:
            if not group.is_in(GroupState.EMPTY) and group.is_subscribed_to(partition.topic):
                errors[partition] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                errors[partition] = ErrorCode.NONE
                eligible.append(partition)
        effects = Effects()
        offsets.remove(group, eligible, effects.records)
        if group.is_in(GroupState.EMPTY) and not group.offsets:
            self._delete_group(group, now_ms, effects, "its last offsets were deleted")
        return Outcome(tuple(effects.records), OffsetDeleteResult(ErrorCode.NONE, errors))

    def _delete_consumer_offsets(
        self, now_ms: int, group: ConsumerGroup, partitions: Sequence[TopicPartition]
    ) -> Outcome[OffsetDeleteResult]:
        errors: dict[TopicPartition, ErrorCode] = {}
        eligible = []
        for partition in partitions:
            if group.members and group.is_subscribed_to(partition.topic):
                errors[partition] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                errors[partition] = ErrorCode.NONE
                eligible.append(partition)
        effects = Effects()
        offsets.remove(group, eligible, effects.records)
        if not group.members and not group.offsets:
            self._delete_consumer_group(group, effects, "its last offsets were deleted")
        return Outcome(tuple(effects.records), OffsetDeleteResult(ErrorCode.NONE, errors))

    def _delete_consumer_group(self, group: ConsumerGroup, effects: Effects, reason: str) -> None:
        offsets.remove(group, sorted(group.offsets), effects.records)
        for member_id in list(group.members):
            effects.records.extend(group.member_tombstones(member_id))
        effects.records.extend(group.group_tombstones())
        del self._consumer_groups[group.group_id]
        logger.info("consumer group %s: removed: %s", group.group_id, reason)

    # --- administration -------------------------------------------------------------------

    def describe_groups(self, group_ids: Sequence[str]) -> Outcome[DescribeGroupsResult]:
        """DescribeGroups: state, protocol and members of each group (Dead if unknown)."""
        described = []
        for group_id in group_ids:
            consumer_group = self._consumer_groups.get(group_id)
            if consumer_group is not None:
                described.append(_describe_consumer_group(consumer_group, self._config))
                continue
            group = self._groups.get(group_id)
            if group is None:
                described.append(DescribedGroup(ErrorCode.NONE, group_id, "Dead", "", "", ()))
                continue
            stable = group.is_in(GroupState.STABLE)
            protocol = group.protocol_name or ""
            members = tuple(
                DescribedMember(
                    member.member_id,
                    member.group_instance_id,
                    member.client_id,
                    member.client_host,
                    (member.metadata(protocol) or b"") if stable else b"",
                    member.assignment if stable else b"",
                )
                for member in group.members.values()
            )
            described.append(
                DescribedGroup(
                    ErrorCode.NONE,
                    group_id,
                    group.state.value,
                    group.protocol_type or "",
                    protocol if stable else "",
                    members,
                )
            )
        return Outcome((), DescribeGroupsResult(tuple(described)))

    def list_groups(
        self, states_filter: Collection[str] = (), types_filter: Collection[str] = ()
    ) -> Outcome[ListGroupsResult]:
        """ListGroups: every group, optionally only those in the named states (v4+) or of the
        named group types (v5+: "classic" or "consumer", KIP-848); names match
        case-insensitively.
        """
        states = {name.lower() for name in states_filter}
        types = {name.lower() for name in types_filter}
        listed = [
            ListedGroup(group.group_id, group.protocol_type or "", group.state.value)
            for group in self._groups.values()
            if (not states or group.state.value.lower() in states)
            and (not types or "classic" in types)
        ]
        listed.extend(
            ListedGroup(group.group_id, CONSUMER_PROTOCOL_TYPE, group.state.value, "consumer")
            for group in self._consumer_groups.values()
            if (not states or group.state.value.lower() in states)
            and (not types or "consumer" in types)
        )
        return Outcome((), ListGroupsResult(ErrorCode.NONE, tuple(listed)))

    def delete_groups(self, now_ms: int, group_ids: Sequence[str]) -> Outcome[DeleteGroupsResult]:
        """DeleteGroups: an Empty group goes with its offsets (tombstones for all); a group
        with members is NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND."""
        self._schedule_expiry(now_ms)
        effects = Effects()
        errors: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            if group_id in errors:
                continue
            consumer_group = self._consumer_groups.get(group_id)
            if consumer_group is not None:
                if consumer_group.members:
                    errors[group_id] = ErrorCode.NON_EMPTY_GROUP
                else:
                    self._delete_consumer_group(consumer_group, effects, "deleted by request")
                    errors[group_id] = ErrorCode.NONE
                continue
            group = self._groups.get(group_id)
            if group is None or group.is_in(GroupState.DEAD):
                errors[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif not group.is_in(GroupState.EMPTY):
                errors[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                self._delete_group(group, now_ms, effects, "deleted by request")
                errors[group_id] = ErrorCode.NONE
        return Outcome(tuple(effects.records), DeleteGroupsResult(errors))

    def _delete_group(
        self, group: ClassicGroup, now_ms: int, effects: Effects, reason: str
    ) -> None:
        offsets.remove(group, sorted(group.offsets), effects.records)
        effects.records.append(CoordinatorRecord.tombstone(GroupMetadataKey(group.group_id)))
        group.transition(GroupState.DEAD, now_ms)
        del self._groups[group.group_id]
        logger.info("group %s: removed: %s", group.group_id, reason)

    # --- time -----------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """When ``tick`` has something to do next (None: nothing is scheduled)."""
        return self._timers.next_deadline_ms()

    def tick(self, now_ms: int) -> Outcome[None]:
        """Fires everything due at ``now_ms``: expired sessions (the member is removed and the
        group rebalances), join phases past their delay or rebalance timeout (members that did
        not rejoin are removed), sync phases past their timeout (members that never synced
        are removed), and the periodic offsets expiry."""
        effects = Effects()
        delay = self._config.group_initial_rebalance_delay_ms
        while (timer := self._timers.pop_due(now_ms)) is not None:
            if timer.kind == "expire":
                self._expire_offsets(now_ms, effects)
                self._timers.schedule(
                    EXPIRE, now_ms + self._config.offsets_retention_check_interval_ms
                )
                continue
            if timer.kind in ("consumer-session", "consumer-revoke"):
                self.on_consumer_timer(timer, now_ms, effects)
                continue
            group = self._groups.get(timer.group_id)
            if group is None:
                continue
            if timer.kind == "session":
                self._on_session_deadline(group, timer, now_ms, effects)
            elif timer.kind == "join":
                rebalance.on_join_deadline(group, now_ms, delay, effects)
            else:
                rebalance.on_sync_deadline(group, now_ms, delay, effects)
            self._schedule_group(group)
        return Outcome(tuple(effects.records), None, tuple(effects.completions))

    def _on_session_deadline(
        self, group: ClassicGroup, timer: Timer, now_ms: int, effects: Effects
    ) -> None:
        member = group.members.get(timer.member_id)
        if member is None:
            return
        if member.awaiting_response:
            # Blocked in JoinGroup or SyncGroup: alive until answered.
            self._timers.schedule(timer, now_ms + member.session_timeout_ms)
            return
        if member.session_deadline_ms > now_ms:
            self._timers.schedule(timer, member.session_deadline_ms)
            return
        logger.info(
            "group %s: member %s expired (no heartbeat for %d ms)",
            group.group_id,
            member.member_id,
            now_ms - member.last_heartbeat_ms,
        )
        rebalance.remove_member_and_update_group(
            group,
            member,
            now_ms,
            self._config.group_initial_rebalance_delay_ms,
            effects,
            RebalanceCause(CauseKind.SESSION_TIMEOUT, member.member_id, member.last_heartbeat_ms),
        )

    def _expire_offsets(self, now_ms: int, effects: Effects) -> None:
        retention_ms = self._config.offsets_retention_ms
        for group in list(self._groups.values()):
            expired = offsets.expired(group, now_ms, retention_ms)
            if expired:
                offsets.remove(group, expired, effects.records)
                logger.info("group %s: %d offsets expired", group.group_id, len(expired))
            if group.is_in(GroupState.EMPTY) and not group.offsets:
                self._delete_group(group, now_ms, effects, "empty, without offsets")
        for consumer_group in list(self._consumer_groups.values()):
            expired = _expired_consumer_offsets(consumer_group, now_ms, retention_ms)
            if expired:
                offsets.remove(consumer_group, expired, effects.records)
                logger.info("group %s: %d offsets expired", consumer_group.group_id, len(expired))
            if not consumer_group.members and not consumer_group.offsets:
                self._delete_consumer_group(consumer_group, effects, "empty, without offsets")

    # --- inspection -----------------------------------------------------------------------

    def groups(self) -> list[ClassicGroup]:
        """The groups, for inspection (metrics, rebalance history): callers change nothing."""
        return list(self._groups.values())

    def consumer_groups(self) -> list[ConsumerGroup]:
        """The KIP-848 groups, for inspection (rebalance history): callers change nothing."""
        return list(self._consumer_groups.values())

    def group_state(self, group_id: str) -> GroupState | None:
        group = self._groups.get(group_id)
        return None if group is None else group.state

    def snapshot(self) -> dict[str, GroupSnapshot]:
        """Every group as its records would rebuild it (equal after ``load`` of those records
        when no rebalance is under way)."""
        snapshots = {}
        for group_id, group in self._groups.items():
            has_metadata = group.protocol_type is not None
            snapshots[group_id] = GroupSnapshot(
                group.state,
                group.metadata_value() if has_metadata else None,
                dict(sorted(group.offsets.items())),
            )
        return snapshots

    def statistics(self) -> dict[str, int]:
        """Counts of groups (in total and by state), members and committed offsets."""
        stats = {
            "groups": len(self._groups),
            "members": sum(len(group.members) for group in self._groups.values()),
            "consumer_groups": len(self._consumer_groups),
            "consumer_members": sum(len(g.members) for g in self._consumer_groups.values()),
            "offsets": sum(len(group.offsets) for group in self._groups.values()),
            "timers": len(self._timers),
        }
        for state in GroupState:
            stats[f"groups_{state.value}"] = sum(
                1 for group in self._groups.values() if group.state is state
            )
        return stats


def _check_consumer_member(group: ConsumerGroup, member_id: str, member_epoch: int) -> ErrorCode:
    """Whether a commit or fetch may use a consumer group (KIP-848): from outside the group
    (no member id, epoch -1) only while it has no members; from a member, at its epoch."""
    if not member_id and member_epoch < 0:
        return ErrorCode.NONE if not group.members else ErrorCode.UNKNOWN_MEMBER_ID
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if member_epoch != member.member_epoch:
        return ErrorCode.STALE_MEMBER_EPOCH
    return ErrorCode.NONE


def _expired_consumer_offsets(
    group: ConsumerGroup, now_ms: int, retention_ms: int
) -> list[TopicPartition]:
    """A consumer group's expired offsets: all of them once it has been Empty for the
    retention; while it has members, those of topics nobody subscribes to, the retention
    after their commit (or at their explicit expire timestamp)."""
    result = []
    for partition, value in group.offsets.items():
        if group.members and group.is_subscribed_to(partition.topic):
            continue
        if value.expire_timestamp_ms != -1:
            if now_ms >= value.expire_timestamp_ms:
                result.append(partition)
            continue
        empty_since = group.state_timestamp_ms if not group.members else None
        base_ms = value.commit_timestamp_ms if empty_since is None else empty_since
        if now_ms - base_ms >= retention_ms:
            result.append(partition)
    return result


def _describe_consumer_group(group: ConsumerGroup, config: GroupConfig) -> DescribedGroup:
    """DescribeGroups of a KIP-848 group: its type, state and assignor, and its members
    (without classic metadata or assignment bytes: ConsumerGroupDescribe has those)."""
    members = tuple(
        DescribedMember(m.member_id, m.instance_id, m.client_id, m.client_host, b"", b"")
        for m in group.members.values()
    )
    return DescribedGroup(
        ErrorCode.NONE,
        group.group_id,
        group.state.value,
        CONSUMER_PROTOCOL_TYPE,
        group.preferred_assignor(config.group_consumer_assignors[0]),
        members,
    )
