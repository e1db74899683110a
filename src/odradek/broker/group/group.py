"""One classic group's state: its members, generation, protocol, leader and committed offsets.

Owns the bookkeeping a group keeps true by itself: the static-member index follows the
members, the leader is always a member (or None when there is none), the protocol type is set
by the first member. It makes no protocol decisions (``rebalance`` and ``coordinator`` do) and
never reads the clock: callers pass ``now_ms``.

Mutable and single-threaded: the coordinator that holds it is its only user.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from odradek._types import TopicPartition
from odradek.broker.group.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitValue,
)
from odradek.broker.group.state import GroupState, check_transition

#: How many replaced static member ids a group remembers to fence.
FENCED_MEMBERS_KEPT = 256

#: The protocol type of Kafka consumers: their subscriptions name topics (OffsetDelete and
#: offset expiry look at them).
CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(slots=True, eq=False)
class Member:
    """A member of a classic group.

    ``protocols`` are the (name, metadata) pairs it supports, most preferred first.
    ``join_ticket`` / ``sync_ticket`` are set while its JoinGroup / SyncGroup waits; such a
    member is kept alive (its session does not run) until the request is answered.
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    last_heartbeat_ms: int = 0
    join_ticket: int | None = None
    sync_ticket: int | None = None

    @property
    def session_deadline_ms(self) -> int:
        return self.last_heartbeat_ms + self.session_timeout_ms

    @property
    def awaiting_join(self) -> bool:
        return self.join_ticket is not None

    @property
    def awaiting_response(self) -> bool:
        return self.join_ticket is not None or self.sync_ticket is not None

    def protocol_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.protocols)

    def metadata(self, protocol: str) -> bytes | None:
        """Its metadata for ``protocol``, or None if it does not support it."""
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return None

    def matches(self, protocols: Sequence[tuple[str, bytes]]) -> bool:
        """Whether it already supports exactly these protocols, in this order, with this
        metadata (a rejoin that changes nothing)."""
        return self.protocols == tuple(protocols)

    def vote(self, candidates: Iterable[str]) -> str:
        """Its most preferred protocol among ``candidates`` (all of which it supports)."""
        allowed = set(candidates)
        for name, _ in self.protocols:
            if name in allowed:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(allowed)}")

    def to_metadata(self, protocol: str) -> MemberMetadata:
        return MemberMetadata(
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            client_id=self.client_id,
            client_host=self.client_host,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            session_timeout_ms=self.session_timeout_ms,
            subscription=self.metadata(protocol) or b"",
            assignment=self.assignment,
        )


class ClassicGroup:
    """A classic group (the JoinGroup/SyncGroup protocol) and its committed offsets.

    ``state_timestamp_ms`` is when the group entered its state (None when loaded from a record
    that predates it); offsets of an Empty group expire relative to it. The join and sync
    deadlines are set by ``rebalance`` while a phase runs, else None.
    """

    __slots__ = (
        "fenced_members",
        "generation_id",
        "group_id",
        "in_initial_delay",
        "initial_delay_remaining_ms",
        "join_deadline_ms",
        "leader_id",
        "members",
        "new_member_added",
        "offsets",
        "pending_sync",
        "protocol_name",
        "protocol_type",
        "state",
        "state_timestamp_ms",
        "static_members",
        "sync_deadline_ms",
    )

    def __init__(self, group_id: str, now_ms: int) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.state_timestamp_ms: int | None = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        #: By member id, in join order (the leader is re-elected as the first of them).
        self.members: dict[str, Member] = {}
        #: group.instance.id → member id (KIP-345).
        self.static_members: dict[str, str] = {}
        #: Member ids a newer incarnation of their static member replaced (soft state, the
        #: latest ``FENCED_MEMBERS_KEPT``): their requests are FENCED_INSTANCE_ID even when they
        #: do not carry the instance id (Heartbeat below v3, SyncGroup below v3).
        self.fenced_members: dict[str, str] = {}
        #: Members that got this generation's JoinGroup response but have not sent SyncGroup.
        self.pending_sync: set[str] = set()
        self.offsets: dict[TopicPartition, OffsetCommitValue] = {}
        self.join_deadline_ms: int | None = None
        self.in_initial_delay = False
        self.initial_delay_remaining_ms = 0
        self.new_member_added = False
        self.sync_deadline_ms: int | None = None

    def __repr__(self) -> str:
        return (
            f"ClassicGroup({self.group_id!r}, {self.state.value}, "
            f"generation={self.generation_id}, members={len(self.members)})"
        )

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition(self, state: GroupState, now_ms: int) -> None:
        """Moves to ``state``.

        Raises:
            IllegalGroupStateTransitionError: the classic protocol does not allow it.
        """
        check_transition(self.group_id, self.state, state)
        self.state = state
        self.state_timestamp_ms = now_ms

    # --- members --------------------------------------------------------------------------

    def add_member(self, member: Member) -> None:
        """Adds a member; the first one sets the protocol type and any one leads if none does."""
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove_member(self, member_id: str) -> Member:
        """Removes a member (and its static index entry); a leaving leader is replaced by the
        first remaining member. Its pending requests are the caller's to answer."""
        member = self.members.pop(member_id)
        instance_id = member.group_instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, old_member_id: str, new_member: Member) -> Member:
        """Puts ``new_member`` (same group.instance.id, new member id) in the place of the
        old one, taking over its leadership and pending sync; returns the old member."""
        old = self.members.pop(old_member_id)
        if old.group_instance_id is not None:
            self.fenced_members[old_member_id] = old.group_instance_id
            while len(self.fenced_members) > FENCED_MEMBERS_KEPT:
                del self.fenced_members[next(iter(self.fenced_members))]
        self.members[new_member.member_id] = new_member
        if new_member.group_instance_id is not None:
            self.static_members[new_member.group_instance_id] = new_member.member_id
        if self.leader_id == old_member_id:
            self.leader_id = new_member.member_id
        if old_member_id in self.pending_sync:
            self.pending_sync.discard(old_member_id)
            self.pending_sync.add(new_member.member_id)
        return old

    def static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def is_static_member_fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """Whether the request comes from a stale incarnation of a static member (KIP-345):
        ``group_instance_id`` now belongs to another member id, or (without an instance id in
        the request) ``member_id`` was replaced by a newer incarnation. Answering the latter
        UNKNOWN_MEMBER_ID made the old process rejoin without a member id and take the
        instance id back, and the two replaced each other every few seconds."""
        if group_instance_id is None:
            return member_id not in self.members and member_id in self.fenced_members
        current = self.static_members.get(group_instance_id)
        return current is not None and current != member_id

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def all_members_joined(self) -> bool:
        return all(member.awaiting_join for member in self.members.values())

    def not_yet_rejoined(self) -> list[Member]:
        return [member for member in self.members.values() if not member.awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout of the members: how long a join phase may last."""
        return max((member.rebalance_timeout_ms for member in self.members.values()), default=0)

    # --- protocols ------------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        """The protocols every member supports."""
        members = iter(self.members.values())
        first = next(members, None)
        if first is None:
            return set()
        candidates = set(first.protocol_names())
        for member in members:
            candidates.intersection_update(member.protocol_names())
        return candidates

    def supports_protocols(self, protocol_type: str, protocol_names: Iterable[str]) -> bool:
        """Whether a member offering these protocols may join: any non-empty offer joins an
        Empty group; otherwise the type must match and one protocol must be a candidate."""
        names = set(protocol_names)
        if not protocol_type or not names:
            return False
        if not self.members:
            return True
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        """The protocol of the next generation, chosen by vote: each member votes for its most
        preferred candidate; most votes wins, ties go to the earliest-voted protocol.

        Raises:
            ValueError: there are no members, or no protocol all members support.
        """
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(f"group {self.group_id!r} has no protocol all members support")
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def subscribed_topics(self) -> frozenset[str] | None:
        """The topics the members consume, from their subscriptions to the selected protocol;
        None when unknown: not a consumer group, no protocol yet, or a subscription that does
        not parse."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            metadata = member.metadata(self.protocol_name)
            parsed = None if metadata is None else parse_subscription_topics(metadata)
            if parsed is None:
                return None
            topics.update(parsed)
        return frozenset(topics)

    def is_subscribed_to(self, topic: str) -> bool:
        """Whether a member may consume ``topic`` (True when the subscriptions are unknown)."""
        topics = self.subscribed_topics()
        return topics is None or topic in topics

    # --- persistence ----------------------------------------------------------------------

    def metadata_value(self) -> GroupMetadataValue:
        """The GroupMetadataValue that describes the group now."""
        protocol = self.protocol_name
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation_id,
            protocol=protocol,
            leader=self.leader_id,
            current_state_timestamp_ms=(
                -1 if self.state_timestamp_ms is None else self.state_timestamp_ms
            ),
            members=tuple(member.to_metadata(protocol or "") for member in self.members.values()),
        )

    def metadata_record(self) -> CoordinatorRecord:
        return CoordinatorRecord(GroupMetadataKey(self.group_id), self.metadata_value())

    @classmethod
    def from_metadata(cls, group_id: str, value: GroupMetadataValue, now_ms: int) -> ClassicGroup:
        """Rebuilds a group from its last GroupMetadataValue: Empty without members, else
        Stable at that generation with the stored assignments. Sessions restart at ``now_ms``.
        """
        group = cls(group_id, now_ms)
        group.state = GroupState.STABLE if value.members else GroupState.EMPTY
        timestamp = value.current_state_timestamp_ms
        group.state_timestamp_ms = None if timestamp == -1 else timestamp
        group.generation_id = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        protocol = value.protocol or ""
        for stored in value.members:
            group.add_member(
                Member(
                    member_id=stored.member_id,
                    group_instance_id=stored.group_instance_id,
                    client_id=stored.client_id,
                    client_host=stored.client_host,
                    rebalance_timeout_ms=stored.rebalance_timeout_ms,
                    session_timeout_ms=stored.session_timeout_ms,
                    protocol_type=value.protocol_type,
                    protocols=((protocol, stored.subscription),),
                    assignment=stored.assignment,
                    last_heartbeat_ms=now_ms,
                )
            )
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        return group


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def parse_subscription_topics(metadata: bytes) -> list[str] | None:
    """The topics of a consumer protocol subscription (any version: int16 version, then the
    topics as an int32 count of int16-length strings, then fields this does not need); None
    if it does not parse."""
    try:
        (version,) = _INT16.unpack_from(metadata, 0)
        (count,) = _INT32.unpack_from(metadata, 2)
        if version < 0 or count < 0:
            return None
        position = 6
        topics = []
        for _ in range(count):
            (size,) = _INT16.unpack_from(metadata, position)
            position += 2
            if size < 0 or position + size > len(metadata):
                return None
            topics.append(metadata[position : position + size].decode("utf-8"))
            position += size
    except (struct.error, UnicodeDecodeError):
        return None
    return topics
