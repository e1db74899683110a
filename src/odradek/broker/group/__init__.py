"""The group coordinator: classic consumer groups and committed offsets, as a pure core.

``GroupCoordinator`` holds the groups of one ``__consumer_offsets`` partition and answers the
group APIs with ``Outcome`` values (records to append, a response or ``Pending``, completions
of earlier pending requests); ``records`` is the byte-compatible format of that topic and
``partition_for_group`` maps a group to its partition. The async runtime (handlers, timers,
appends) is built on this and adds no protocol logic.
"""

from odradek.broker.group.config import GroupConfig
from odradek.broker.group.coordinator import GroupCoordinator, GroupSnapshot
from odradek.broker.group.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
    partition_for_group,
)
from odradek.broker.group.results import (
    Completion,
    DeleteGroupsResult,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsResult,
    FetchedOffset,
    HeartbeatResult,
    JoinGroupMember,
    JoinGroupResult,
    LeaveGroupResult,
    LeaveMemberResult,
    LeavingMember,
    ListedGroup,
    ListGroupsResult,
    OffsetCommitPartition,
    OffsetCommitResult,
    OffsetDeleteResult,
    OffsetFetchResult,
    Outcome,
    Pending,
    SyncGroupResult,
)
from odradek.broker.group.state import GroupState

__all__ = [
    "Completion",
    "CoordinatorRecord",
    "DeleteGroupsResult",
    "DescribeGroupsResult",
    "DescribedGroup",
    "DescribedMember",
    "FetchedOffset",
    "GroupConfig",
    "GroupCoordinator",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "GroupSnapshot",
    "GroupState",
    "HeartbeatResult",
    "JoinGroupMember",
    "JoinGroupResult",
    "LeaveGroupResult",
    "LeaveMemberResult",
    "LeavingMember",
    "ListGroupsResult",
    "ListedGroup",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitPartition",
    "OffsetCommitResult",
    "OffsetCommitValue",
    "OffsetDeleteResult",
    "OffsetFetchResult",
    "Outcome",
    "Pending",
    "SyncGroupResult",
    "decode_record",
    "partition_for_group",
]
