"""Typed, read-only views of the KIP-848 request bodies: ConsumerGroupHeartbeat and
ConsumerGroupDescribe (same rules as ``protocol.group_requests``: the fields every decoded
version has, as the broker reads them; the accessors return ``Request.body`` itself)."""

from __future__ import annotations

import datetime
import operator
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from odradek.protocol.codec import Request

__all__ = [
    "ConsumerGroupDescribeRequestBody",
    "ConsumerGroupHeartbeatRequestBody",
    "HeartbeatTopicPartitions",
    "consumer_group_describe_body",
    "consumer_group_heartbeat_body",
]


class HeartbeatTopicPartitions(Protocol):
    @property
    def topic_id(self) -> uuid.UUID | None: ...
    @property
    def partitions(self) -> Sequence[int]: ...


class ConsumerGroupHeartbeatRequestBody(Protocol):
    """v0-v1 (v1: the member id is the client's, KIP-1082; ``subscribed_topic_regex`` is
    v1's only)."""

    @property
    def group_id(self) -> str: ...
    @property
    def member_id(self) -> str: ...
    @property
    def member_epoch(self) -> int: ...
    @property
    def instance_id(self) -> str | None: ...
    @property
    def rack_id(self) -> str | None: ...
    @property
    def rebalance_timeout(self) -> datetime.timedelta: ...
    @property
    def subscribed_topic_names(self) -> Sequence[str] | None: ...
    @property
    def server_assignor(self) -> str | None: ...
    @property
    def topic_partitions(self) -> Sequence[HeartbeatTopicPartitions] | None: ...


class ConsumerGroupDescribeRequestBody(Protocol):
    @property
    def group_ids(self) -> Sequence[str]: ...


#: The body of a ConsumerGroupHeartbeat request as its view.
consumer_group_heartbeat_body: Callable[[Request], ConsumerGroupHeartbeatRequestBody] = (
    operator.attrgetter("body")
)
#: The body of a ConsumerGroupDescribe request as its view.
consumer_group_describe_body: Callable[[Request], ConsumerGroupDescribeRequestBody] = (
    operator.attrgetter("body")
)
