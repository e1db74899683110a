"""A fake runtime for KIP-848 consumer groups: a fake clock, ticks at deadlines, the records
appended (encoded, so replays go through the byte format), and simulated members that revoke
before they take new partitions, as KIP-848 clients do."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping
from typing import Any

from odradek.broker.group import GroupConfig, GroupCoordinator, Outcome
from odradek.broker.group.consumer_group import TopicImage
from odradek.broker.group.consumer_results import ConsumerGroupHeartbeatResult
from odradek.errors import ErrorCode

CONFIG = GroupConfig(
    group_initial_rebalance_delay_ms=0,
    group_consumer_session_timeout_ms=10_000,
    group_consumer_heartbeat_interval_ms=1_000,
)

Owned = dict[uuid.UUID, frozenset[int]]


def topic_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_DNS, name)


class ConsumerHarness:
    """One coordinator shard driven as the runtime drives it."""

    def __init__(self, config: GroupConfig = CONFIG, **topics: int) -> None:
        self.config = config
        self.now = 0
        self._ids = itertools.count(1)
        self.coordinator = GroupCoordinator(config, new_uuid=lambda: f"u{next(self._ids)}")
        self.coordinator.load([], self.now)
        self.log: list[tuple[bytes, bytes | None]] = []
        self.topics: dict[str, TopicImage] = {}
        for name, count in topics.items():
            self.set_topic(name, count)

    def set_topic(self, name: str, partitions: int) -> None:
        self.topics[name] = TopicImage(topic_id(name), partitions)

    def apply(self, outcome: Outcome[Any]) -> Any:
        self.log.extend(record.encode() for record in outcome.records)
        return outcome.response

    def heartbeat(self, member_id: str, epoch: int, **fields: Any) -> ConsumerGroupHeartbeatResult:
        fields.setdefault("group_id", "g")
        if epoch == 0:
            fields.setdefault("rebalance_timeout_ms", 30_000)
            fields.setdefault("owned", {})
        result = self.apply(
            self.coordinator.consumer_group_heartbeat(
                self.now, member_id=member_id, member_epoch=epoch, topics=self.topics, **fields
            )
        )
        assert isinstance(result, ConsumerGroupHeartbeatResult)
        return result

    def advance(self, ms: int) -> None:
        """Moves the clock, firing every deadline on the way."""
        target = self.now + ms
        while True:
            deadline = self.coordinator.next_deadline_ms()
            if deadline is None or deadline > target:
                break
            self.now = max(self.now, deadline)
            self.apply(self.coordinator.tick(self.now))
        self.now = target

    def replayed(self) -> GroupCoordinator:
        """A new coordinator loaded from the log so far."""
        coordinator = GroupCoordinator(self.config)
        coordinator.load(self.log, self.now)
        return coordinator

    def group(self, group_id: str = "g") -> Any:
        return self.coordinator._consumer_groups[group_id]


class SimulatedMember:
    """A KIP-848 client: heartbeats with what it owns; on a new assignment it first gives up
    what is no longer in it (and reports that), then takes what is new."""

    def __init__(
        self,
        harness: ConsumerHarness,
        member_id: str,
        topics: tuple[str, ...] = ("t",),
        **extra: Any,
    ) -> None:
        self.harness = harness
        self.member_id = member_id
        self.topics = topics
        self.extra = extra
        self.epoch = 0
        self.owned: Owned = {}
        self.errors: list[ErrorCode] = []

    def heartbeat(self) -> ConsumerGroupHeartbeatResult:
        fields: dict[str, Any] = dict(self.extra)
        if self.epoch == 0:
            fields["subscribed_topic_names"] = self.topics
        result = self.harness.heartbeat(
            self.member_id, self.epoch, owned=dict(self.owned), **fields
        )
        if result.error_code is not ErrorCode.NONE:
            self.errors.append(result.error_code)
            if result.error_code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
                self.owned, self.epoch = {}, 0  # lose everything and rejoin
            return result
        self.epoch = result.member_epoch
        if result.assignment is not None:
            self.owned = {t: p for t, p in result.assignment.items() if p}
        return result

    def leave(self) -> ConsumerGroupHeartbeatResult:
        result = self.harness.heartbeat(self.member_id, -1)
        self.owned = {}
        return result

    def partitions(self) -> set[tuple[uuid.UUID, int]]:
        return {(t, p) for t, parts in self.owned.items() for p in parts}


def no_partition_owned_twice(members: Mapping[str, SimulatedMember]) -> bool:
    seen: set[tuple[uuid.UUID, int]] = set()
    for member in members.values():
        mine = member.partitions()
        if mine & seen:
            return False
        seen |= mine
    return True
