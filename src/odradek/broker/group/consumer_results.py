"""What the coordinator answers to the KIP-848 APIs: ConsumerGroupHeartbeat and
ConsumerGroupDescribe, as plain values the handlers map to wire responses."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.broker.group.consumer_records import Assignment
from odradek.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResult:
    """ConsumerGroupHeartbeat's answer. ``assignment`` is None when the member's assignment
    did not change (the client keeps what it has), else the whole assignment."""

    error_code: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass(frozen=True, slots=True)
class DescribedConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: Assignment
    target_assignment: Assignment


@dataclass(frozen=True, slots=True)
class DescribedConsumerGroup:
    """A consumer group as ConsumerGroupDescribe reports it (GROUP_ID_NOT_FOUND for a group
    that does not exist or is not a consumer group)."""

    error_code: ErrorCode
    group_id: str
    group_state: str = "Dead"
    group_epoch: int = -1
    assignment_epoch: int = -1
    assignor_name: str = ""
    members: tuple[DescribedConsumerMember, ...] = ()
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeResult:
    groups: tuple[DescribedConsumerGroup, ...]
