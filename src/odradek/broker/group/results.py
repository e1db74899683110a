"""What the group coordinator returns: ``Outcome`` and the responses it carries.

Owns the value types between the pure coordinator and its runtime. Responses are plain
values named after Kafka's fields; the broker's handlers map them to wire responses of the
request's version (for example a None ``protocol_name`` becomes "" below JoinGroup v7).

The runtime's contract for an ``Outcome``:

1. Append ``records`` (if any) to the group's ``__consumer_offsets`` partition as one batch.
2. Once that append is acknowledged (replicated), send ``response`` unless it is ``Pending``,
   and deliver every ``Completion`` to the request waiting under its ticket.
3. A ``Pending`` response means: keep the request (under ``Pending.ticket``) until a later
   outcome completes that ticket. Every pending ticket is completed exactly once.
4. If the append fails, the coordinator's memory is ahead of its log: answer the waiting
   requests with NOT_COORDINATOR and rebuild the coordinator from the log (``load``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from odradek._types import TopicPartition
from odradek.broker.group.records import CoordinatorRecord
from odradek.errors import ErrorCode

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Pending:
    """The request's response comes later, in a ``Completion`` with this ticket."""

    ticket: int


@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    """A member as the leader's JoinGroup response lists it, with its metadata for the
    selected protocol."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResult:
    """JoinGroup's answer. ``members`` is filled for the leader only; ``skip_assignment``
    (KIP-814) tells a restarted static leader to keep the current assignment."""

    error_code: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: tuple[JoinGroupMember, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncGroupResult:
    """SyncGroup's answer: the member's assignment from the leader."""

    error_code: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class LeavingMember:
    """A member named by LeaveGroup: by member id, or (static, KIP-345) by instance id with
    member id "" or its current member id."""

    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveMemberResult:
    member_id: str
    group_instance_id: str | None
    error_code: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveGroupResult:
    """LeaveGroup's answer: a group-level error, and one result per member named (v3+; below
    v3 the handler reports the single member's error at the top)."""

    error_code: ErrorCode
    members: tuple[LeaveMemberResult, ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetCommitPartition:
    """One partition's offset in an OffsetCommit request (Kafka's field names)."""

    topic: str
    partition: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitResult:
    """OffsetCommit's answer: an error code per partition, in request order."""

    partitions: Mapping[TopicPartition, ErrorCode]


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    """A committed offset as OffsetFetch reports it: -1, -1, "" when there is none."""

    committed_offset: int
    committed_leader_epoch: int = -1
    metadata: str = ""
    error_code: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class OffsetFetchResult:
    """OffsetFetch's answer: a group-level error and the offsets asked for (all committed
    ones, in topic-partition order, when the request named no topics)."""

    error_code: ErrorCode
    partitions: Mapping[TopicPartition, FetchedOffset]


@dataclass(frozen=True, slots=True)
class DescribedMember:
    """A member as DescribeGroups reports it; metadata and assignment are empty unless the
    group is Stable."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    """A group as DescribeGroups reports it. ``protocol_data`` is the selected protocol when
    Stable, else "". A group that does not exist is reported Dead with error NONE (as Kafka
    does up to DescribeGroups v5; v6+ handlers answer GROUP_ID_NOT_FOUND for it)."""

    error_code: ErrorCode
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedMember, ...]


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"


@dataclass(frozen=True, slots=True)
class DescribeGroupsResult:
    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True, slots=True)
class ListGroupsResult:
    error_code: ErrorCode
    groups: tuple[ListedGroup, ...]


@dataclass(frozen=True, slots=True)
class DeleteGroupsResult:
    """DeleteGroups' answer: an error code per group, in request order."""

    groups: Mapping[str, ErrorCode]


@dataclass(frozen=True, slots=True)
class OffsetDeleteResult:
    """OffsetDelete's answer: a group-level error, else an error code per partition."""

    error_code: ErrorCode
    partitions: Mapping[TopicPartition, ErrorCode]


@dataclass(frozen=True, slots=True)
class Completion:
    """The response of an earlier request that answered ``Pending(ticket)``."""

    ticket: int
    response: JoinGroupResult | SyncGroupResult


@dataclass(frozen=True, slots=True)
class Outcome(Generic[R]):
    """Everything one coordinator event produced (see the module docstring for the contract).

    ``response`` is None for ``tick``.
    """

    records: tuple[CoordinatorRecord, ...]
    response: R | Pending
    completions: tuple[Completion, ...] = ()
