"""Typed, read-only views of the group API request bodies (the classic group protocol and
committed offsets), the cold-path companions of ``protocol.requests``.

Same rules as ``protocol.requests``: a view lists only the fields every decoded version of its
API has, with the types the broker reads them as (checked against kio's classes by
tests/protocol/test_requests.py); the accessors return ``Request.body`` itself. Fields that
only some versions carry (``group_instance_id``, ``rebalance_timeout``, ``retention_time``,
``protocol_type``/``protocol_name`` of SyncGroup, ...) are read from the body with
``broker.handlers._groups.optional``.
"""

from __future__ import annotations

import datetime
import operator
from collections.abc import Callable, Sequence
from typing import Protocol

from odradek.protocol.codec import Request

__all__ = [
    "DeleteGroupsRequestBody",
    "DescribeGroupsRequestBody",
    "FindCoordinatorRequestBody",
    "HeartbeatRequestBody",
    "JoinGroupProtocol",
    "JoinGroupRequestBody",
    "LeaveGroupRequestBody",
    "OffsetCommitPartitionRequest",
    "OffsetCommitRequestBody",
    "OffsetCommitTopicRequest",
    "OffsetDeletePartitionRequest",
    "OffsetDeleteRequestBody",
    "OffsetDeleteTopicRequest",
    "OffsetFetchRequestBody",
    "OffsetFetchTopicRequest",
    "SyncGroupAssignment",
    "SyncGroupRequestBody",
    "delete_groups_body",
    "describe_groups_body",
    "find_coordinator_body",
    "heartbeat_body",
    "join_group_body",
    "leave_group_body",
    "offset_commit_body",
    "offset_delete_body",
    "offset_fetch_body",
    "sync_group_body",
]


class FindCoordinatorRequestBody(Protocol):
    """``key_type`` exists from v1 (0, a group, before); v0-v3 name one ``key``, v4+ a batch of
    ``coordinator_keys`` (KIP-699): both are read through the body."""


class JoinGroupProtocol(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def metadata(self) -> bytes: ...


class JoinGroupRequestBody(Protocol):
    @property
    def group_id(self) -> str: ...
    @property
    def session_timeout(self) -> datetime.timedelta: ...
    @property
    def member_id(self) -> str: ...
    @property
    def protocol_type(self) -> str: ...
    @property
    def protocols(self) -> Sequence[JoinGroupProtocol]: ...


class SyncGroupAssignment(Protocol):
    @property
    def member_id(self) -> str: ...
    @property
    def assignment(self) -> bytes: ...


class SyncGroupRequestBody(Protocol):
    @property
    def group_id(self) -> str: ...
    @property
    def generation_id(self) -> int: ...
    @property
    def member_id(self) -> str: ...
    @property
    def assignments(self) -> Sequence[SyncGroupAssignment]: ...


class HeartbeatRequestBody(Protocol):
    @property
    def group_id(self) -> str: ...
    @property
    def generation_id(self) -> int: ...
    @property
    def member_id(self) -> str: ...


class LeaveGroupRequestBody(Protocol):
    """v0-v2 name one ``member_id``; v3+ a batch of ``members`` (read through the body)."""

    @property
    def group_id(self) -> str: ...


class OffsetCommitPartitionRequest(Protocol):
    @property
    def partition_index(self) -> int: ...
    @property
    def committed_offset(self) -> int: ...
    @property
    def committed_metadata(self) -> str | None: ...


class OffsetCommitTopicRequest(Protocol):
    """v2-v9 name the topic (``name``), v10 gives its ``topic_id`` instead."""

    @property
    def partitions(self) -> Sequence[OffsetCommitPartitionRequest]: ...


class OffsetCommitRequestBody(Protocol):
    @property
    def group_id(self) -> str: ...
    @property
    def generation_id_or_member_epoch(self) -> int: ...
    @property
    def member_id(self) -> str: ...
    @property
    def topics(self) -> Sequence[OffsetCommitTopicRequest]: ...


class OffsetFetchTopicRequest(Protocol):
    """v1-v9 name the topic (``name``), v10 gives its ``topic_id`` instead."""

    @property
    def partition_indexes(self) -> Sequence[int]: ...


class OffsetFetchRequestBody(Protocol):
    """v0-v7 name one ``group_id`` and its ``topics`` (null, v2+: every committed offset of
    the group); v8+ (KIP-709) a batch of ``groups``, each with its own ``topics``: both are
    read through the body."""


class OffsetDeletePartitionRequest(Protocol):
    @property
    def partition_index(self) -> int: ...


class OffsetDeleteTopicRequest(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[OffsetDeletePartitionRequest]: ...


class OffsetDeleteRequestBody(Protocol):
    @property
    def group_id(self) -> str: ...
    @property
    def topics(self) -> Sequence[OffsetDeleteTopicRequest]: ...


class DescribeGroupsRequestBody(Protocol):
    @property
    def groups(self) -> Sequence[str]: ...


class DeleteGroupsRequestBody(Protocol):
    @property
    def groups_names(self) -> Sequence[str]: ...


#: The body of a FindCoordinator request as its view.
find_coordinator_body: Callable[[Request], FindCoordinatorRequestBody] = operator.attrgetter("body")
#: The body of a JoinGroup request as its view.
join_group_body: Callable[[Request], JoinGroupRequestBody] = operator.attrgetter("body")
#: The body of a SyncGroup request as its view.
sync_group_body: Callable[[Request], SyncGroupRequestBody] = operator.attrgetter("body")
#: The body of a Heartbeat request as its view.
heartbeat_body: Callable[[Request], HeartbeatRequestBody] = operator.attrgetter("body")
#: The body of a LeaveGroup request as its view.
leave_group_body: Callable[[Request], LeaveGroupRequestBody] = operator.attrgetter("body")
#: The body of an OffsetCommit request as its view.
offset_commit_body: Callable[[Request], OffsetCommitRequestBody] = operator.attrgetter("body")
#: The body of an OffsetFetch request as its view.
offset_fetch_body: Callable[[Request], OffsetFetchRequestBody] = operator.attrgetter("body")
#: The body of an OffsetDelete request as its view.
offset_delete_body: Callable[[Request], OffsetDeleteRequestBody] = operator.attrgetter("body")
#: The body of a DescribeGroups request as its view.
describe_groups_body: Callable[[Request], DescribeGroupsRequestBody] = operator.attrgetter("body")
#: The body of a DeleteGroups request as its view.
delete_groups_body: Callable[[Request], DeleteGroupsRequestBody] = operator.attrgetter("body")
