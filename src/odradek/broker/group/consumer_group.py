"""One KIP-848 consumer group's state: members, epochs, target assignment, partition owners.

Owns the bookkeeping a consumer group keeps true by itself: the static-member index follows
the members, ``owners`` says which member holds (or still has to revoke) each partition, and
every change of a member, of the target assignment or of an epoch comes with the record that
rebuilds it (``consumer_records``). The protocol decisions are ``consumer_membership``'s and
the reconciliation of one member is ``reconciliation``'s; nothing here reads the clock.

Epochs (KIP-848): the *group epoch* goes up whenever the members or their subscriptions or the
subscribed topics' metadata change; the *assignment epoch* is the group epoch the target
assignment was computed at; each *member epoch* reaches the assignment epoch once the member
has revoked what it must give up (its partitions not yet free stay promised to it).

Mutable and single-threaded: the coordinator shard that holds it is its only user.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from odradek._types import TopicPartition
from odradek.broker.group.consumer_records import (
    CURRENT_ASSIGNMENT_KEY_VERSION,
    MEMBER_METADATA_KEY_VERSION,
    METADATA_KEY_VERSION,
    TARGET_MEMBER_KEY_VERSION,
    TARGET_METADATA_KEY_VERSION,
    Assignment,
    ConsumerGroupEpochValue,
    ConsumerGroupKey,
    ConsumerMemberMetadataValue,
    CurrentAssignmentValue,
    TargetAssignmentValue,
)
from odradek.broker.group.history import RebalanceHistory
from odradek.broker.group.records import CoordinatorRecord, OffsetCommitValue

#: The member epoch of a member that left (KIP-848).
LEAVE_GROUP_MEMBER_EPOCH = -1
#: The member epoch of a static member that left for now and keeps its assignment.
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

EMPTY_ASSIGNMENT: Assignment = {}


class MemberState(enum.IntEnum):
    """Where a member's reconciliation is (Kafka's MemberState values, persisted)."""

    UNREVOKED_PARTITIONS = 0
    UNRELEASED_PARTITIONS = 1
    STABLE = 2
    UNKNOWN = 127


class ConsumerGroupState(enum.Enum):
    """A consumer group's state; the value is Kafka's name (ListGroups, describes)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class TopicImage:
    """What the coordinator needs of a topic: its id and partition count."""

    topic_id: uuid.UUID
    partitions: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """A member of a consumer group: what it asked for and where its assignment is."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = 300_000
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)

    def metadata_value(self) -> ConsumerMemberMetadataValue:
        return ConsumerMemberMetadataValue(
            self.instance_id,
            self.rack_id,
            self.client_id,
            self.client_host,
            self.subscribed_topic_names,
            self.subscribed_topic_regex,
            self.rebalance_timeout_ms,
            self.server_assignor,
        )

    def assignment_value(self) -> CurrentAssignmentValue:
        return CurrentAssignmentValue(
            self.member_epoch,
            self.previous_member_epoch,
            int(self.state),
            self.assigned,
            self.pending_revocation,
        )

    def with_metadata(self, value: ConsumerMemberMetadataValue) -> ConsumerGroupMember:
        return replace(
            self,
            instance_id=value.instance_id,
            rack_id=value.rack_id,
            client_id=value.client_id,
            client_host=value.client_host,
            subscribed_topic_names=value.subscribed_topic_names,
            subscribed_topic_regex=value.subscribed_topic_regex,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor,
        )

    def with_assignment(self, value: CurrentAssignmentValue) -> ConsumerGroupMember:
        try:
            state = MemberState(value.state)
        except ValueError:
            state = MemberState.UNKNOWN
        return replace(
            self,
            member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch,
            state=state,
            assigned=value.assigned,
            pending_revocation=value.pending_revocation,
        )


def assignment_size(assignment: Assignment) -> int:
    return sum(len(partitions) for partitions in assignment.values())


def same_assignment(left: Assignment, right: Assignment) -> bool:
    """Whether two assignments hold the same partitions (empty topics ignored)."""
    return {t: p for t, p in left.items() if p} == {t: p for t, p in right.items() if p}


def partitions_of(assignment: Assignment) -> Iterable[tuple[uuid.UUID, int]]:
    for topic_id, partitions in assignment.items():
        for partition in partitions:
            yield topic_id, partition


class ConsumerGroup:
    """A KIP-848 consumer group and its committed offsets (see the module docstring).

    ``subscribed_metadata`` is the metadata of the subscribed topics the target assignment was
    computed from; None after a load until the first heartbeat looks at the cluster again.
    """

    __slots__ = (
        "assignment_epoch",
        "group_epoch",
        "group_id",
        "members",
        "offsets",
        "owners",
        "rebalances",
        "revocation_deadlines",
        "session_deadlines",
        "state_timestamp_ms",
        "static_members",
        "subscribed_metadata",
        "target",
    )

    def __init__(self, group_id: str, now_ms: int) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target: dict[str, Assignment] = {}
        self.static_members: dict[str, str] = {}
        self.owners: dict[tuple[uuid.UUID, int], str] = {}
        self.subscribed_metadata: dict[str, TopicImage] | None = {}
        self.offsets: dict[TopicPartition, OffsetCommitValue] = {}
        self.state_timestamp_ms: int | None = now_ms
        #: Soft state, restarted on load: when each member's session ends, and when a member
        #: revoking partitions must have revoked them (its rebalance timeout).
        self.session_deadlines: dict[str, int] = {}
        self.revocation_deadlines: dict[str, int] = {}
        #: Why the group epoch went up lately (soft state too: see ``history``).
        self.rebalances = RebalanceHistory()

    def __repr__(self) -> str:
        return (
            f"ConsumerGroup({self.group_id!r}, epoch={self.group_epoch}, "
            f"assignment_epoch={self.assignment_epoch}, members={len(self.members)})"
        )

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for member in self.members.values():
            if member.member_epoch != self.assignment_epoch or member.state != MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    # --- records ------------------------------------------------------------------------------

    def _key(self, version: int, member_id: str = "") -> ConsumerGroupKey:
        return ConsumerGroupKey(version, self.group_id, member_id)

    def epoch_record(self) -> CoordinatorRecord:
        return CoordinatorRecord(
            self._key(METADATA_KEY_VERSION), ConsumerGroupEpochValue(self.group_epoch)
        )

    def assignment_epoch_record(self) -> CoordinatorRecord:
        return CoordinatorRecord(
            self._key(TARGET_METADATA_KEY_VERSION), ConsumerGroupEpochValue(self.assignment_epoch)
        )

    def member_record(self, member: ConsumerGroupMember) -> CoordinatorRecord:
        return CoordinatorRecord(
            self._key(MEMBER_METADATA_KEY_VERSION, member.member_id), member.metadata_value()
        )

    def current_assignment_record(self, member: ConsumerGroupMember) -> CoordinatorRecord:
        return CoordinatorRecord(
            self._key(CURRENT_ASSIGNMENT_KEY_VERSION, member.member_id),
            member.assignment_value(),
        )

    def target_record(self, member_id: str) -> CoordinatorRecord:
        return CoordinatorRecord(
            self._key(TARGET_MEMBER_KEY_VERSION, member_id),
            TargetAssignmentValue(dict(self.target.get(member_id, EMPTY_ASSIGNMENT))),
        )

    def member_tombstones(self, member_id: str) -> list[CoordinatorRecord]:
        """Tombstones for every record of a member (its assignment first, as Kafka orders
        them, so a replay never sees an assignment without its member)."""
        return [
            CoordinatorRecord.tombstone(self._key(CURRENT_ASSIGNMENT_KEY_VERSION, member_id)),
            CoordinatorRecord.tombstone(self._key(TARGET_MEMBER_KEY_VERSION, member_id)),
            CoordinatorRecord.tombstone(self._key(MEMBER_METADATA_KEY_VERSION, member_id)),
        ]

    def group_tombstones(self) -> list[CoordinatorRecord]:
        """Tombstones for the group's own records (after those of its members)."""
        return [
            CoordinatorRecord.tombstone(self._key(TARGET_METADATA_KEY_VERSION)),
            CoordinatorRecord.tombstone(self._key(METADATA_KEY_VERSION)),
        ]

    # --- members ------------------------------------------------------------------------------

    def update_member(self, member: ConsumerGroupMember) -> None:
        """Puts ``member`` in place of the member of its id (adding it if new), keeping the
        static index and the partition owners true."""
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        for key in partitions_of(member.assigned):
            self.owners[key] = member.member_id
        for key in partitions_of(member.pending_revocation):
            self.owners[key] = member.member_id

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        """Removes a member, its target assignment and its ownership of partitions."""
        member = self.members.pop(member_id, None)
        self.target.pop(member_id, None)
        self.session_deadlines.pop(member_id, None)
        self.revocation_deadlines.pop(member_id, None)
        if member is None:
            return None
        self._release(member)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == (
            member_id
        ):
            del self.static_members[member.instance_id]
        return member

    def _release(self, member: ConsumerGroupMember) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for key in partitions_of(assignment):
                if self.owners.get(key) == member.member_id:
                    del self.owners[key]

    def owner_of(self, topic_id: uuid.UUID, partition: int) -> str | None:
        return self.owners.get((topic_id, partition))

    def subscribed_topic_names(self) -> set[str]:
        """The topics named by some member's subscription (regexes not resolved)."""
        names: set[str] = set()
        for member in self.members.values():
            names.update(member.subscribed_topic_names)
        return names

    def regexes(self) -> set[str]:
        return {
            member.subscribed_topic_regex
            for member in self.members.values()
            if member.subscribed_topic_regex
        }

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members ask for (ties to the first asked), else
        ``default``."""
        votes: dict[str, int] = {}
        for member in self.members.values():
            if member.server_assignor:
                votes[member.server_assignor] = votes.get(member.server_assignor, 0) + 1
        return max(votes, key=lambda name: votes[name]) if votes else default

    def is_subscribed_to(self, topic: str) -> bool:
        """Whether a member may consume ``topic`` (by name, or a regex's resolution)."""
        if topic in self.subscribed_topic_names():
            return True
        return self.subscribed_metadata is not None and topic in self.subscribed_metadata
