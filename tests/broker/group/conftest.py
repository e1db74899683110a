"""A fake runtime around the pure coordinator: a fake ``now_ms``, ticks at every deadline, an
in-memory ``__consumer_offsets`` log of every record, and the answers of pending requests."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence
from typing import Any

import pytest

from odradek.broker.group import (
    GroupConfig,
    GroupCoordinator,
    JoinGroupResult,
    LeavingMember,
    OffsetCommitPartition,
    Outcome,
    Pending,
    SyncGroupResult,
)

CONFIG = GroupConfig(
    group_min_session_timeout_ms=1_000,
    group_max_session_timeout_ms=60_000,
    group_initial_rebalance_delay_ms=0,
    offsets_retention_minutes=10,
    offsets_retention_check_interval_ms=1_000,
)

RANGE = (("range", b"sub"),)


def make_config(**changes: int) -> GroupConfig:
    """The test config with some settings changed."""
    fields = {name: getattr(CONFIG, name) for name in CONFIG.__dataclass_fields__}
    return GroupConfig(**{**fields, **changes})


def subscription(*topics: str) -> bytes:
    """A consumer protocol subscription v0 naming ``topics`` (null user data)."""
    parts = [struct.pack(">hi", 0, len(topics))]
    for topic in topics:
        encoded = topic.encode()
        parts.append(struct.pack(">h", len(encoded)) + encoded)
    parts.append(struct.pack(">i", -1))
    return b"".join(parts)


class Harness:
    """Drives a coordinator as the runtime would; every pending ticket must be answered once."""

    def __init__(self, config: GroupConfig = CONFIG) -> None:
        self.now = 0
        self._ids = itertools.count(1)
        self.coordinator = GroupCoordinator(config, new_uuid=lambda: f"u{next(self._ids)}")
        self.coordinator.load([], self.now)
        self.log: list[tuple[bytes, bytes | None]] = []
        self.answers: dict[int, JoinGroupResult | SyncGroupResult] = {}
        self.outcomes: list[Outcome[Any]] = []
        #: The generation ``stable_group`` reached.
        self.generation = -1

    def absorb(self, outcome: Outcome[Any]) -> Any:
        self.outcomes.append(outcome)
        for record in outcome.records:
            self.log.append(record.encode())
        for completion in outcome.completions:
            assert completion.ticket not in self.answers, "a ticket was answered twice"
            self.answers[completion.ticket] = completion.response
        if isinstance(outcome.response, Pending):
            assert outcome.response.ticket not in self.answers
        return outcome.response

    def answer(self, pending: Any) -> Any:
        """The answer a pending request got (fails if it has none yet)."""
        assert isinstance(pending, Pending), pending
        assert pending.ticket in self.answers, f"ticket {pending.ticket} is still pending"
        return self.answers[pending.ticket]

    def is_pending(self, pending: Any) -> bool:
        return isinstance(pending, Pending) and pending.ticket not in self.answers

    def advance(self, ms: int) -> None:
        """Moves time forward, ticking at every deadline on the way (and at the end)."""
        target = self.now + ms
        while (deadline := self.coordinator.next_deadline_ms()) is not None and deadline <= target:
            self.now = max(self.now, deadline)
            self.absorb(self.coordinator.tick(self.now))
        self.now = target
        self.absorb(self.coordinator.tick(self.now))

    # --- requests with test defaults ----------------------------------------------------------

    def join(
        self,
        member_id: str = "",
        *,
        group: str = "g",
        instance: str | None = None,
        client_id: str = "c",
        protocols: Sequence[tuple[str, bytes]] = RANGE,
        protocol_type: str = "consumer",
        session_ms: int = 10_000,
        rebalance_ms: int = 30_000,
        skip_assignment: bool = False,
    ) -> Any:
        return self.absorb(
            self.coordinator.join_group(
                self.now,
                group_id=group,
                member_id=member_id,
                group_instance_id=instance,
                client_id=client_id,
                client_host="/127.0.0.1",
                session_timeout_ms=session_ms,
                rebalance_timeout_ms=rebalance_ms,
                protocol_type=protocol_type,
                protocols=protocols,
                supports_skip_assignment=skip_assignment,
            )
        )

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        group: str = "g",
        instance: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> Any:
        return self.absorb(
            self.coordinator.sync_group(
                self.now,
                group_id=group,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=assignments,
            )
        )

    def heartbeat(
        self, member_id: str, generation: int, *, group: str = "g", instance: str | None = None
    ) -> Any:
        return self.absorb(
            self.coordinator.heartbeat(
                self.now,
                group_id=group,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance,
            )
        ).error_code

    def leave(self, *members: LeavingMember | str, group: str = "g") -> Any:
        named = [m if isinstance(m, LeavingMember) else LeavingMember(m) for m in members]
        return self.absorb(self.coordinator.leave_group(self.now, group_id=group, members=named))

    def commit(
        self,
        offsets: dict[tuple[str, int], int],
        *,
        group: str = "g",
        generation: int = -1,
        member_id: str = "",
        instance: str | None = None,
        metadata: str | None = None,
        retention_ms: int = -1,
    ) -> Any:
        partitions = [
            OffsetCommitPartition(topic, partition, offset, 1, metadata)
            for (topic, partition), offset in offsets.items()
        ]
        return self.absorb(
            self.coordinator.commit_offsets(
                self.now,
                group_id=group,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance,
                partitions=partitions,
                retention_time_ms=retention_ms,
            )
        )

    def state(self, group: str = "g") -> str | None:
        state = self.coordinator.group_state(group)
        return None if state is None else state.value

    def stable_group(self, count: int, *, group: str = "g", **join: Any) -> list[str]:
        """Builds a Stable group of ``count`` members (the first leads); returns member ids."""
        latest = [self.join(group=group, client_id=f"c{i}", **join) for i in range(count)]
        # Each newcomer rebalances the members already answered: they rejoin, as a client
        # does on REBALANCE_IN_PROGRESS.
        while self.state(group) == "PreparingRebalance":
            for index, request in enumerate(latest):
                answered = (
                    self.answers.get(request.ticket) if isinstance(request, Pending) else request
                )
                if answered is not None and self.state(group) == "PreparingRebalance":
                    latest[index] = self.join(
                        answered.member_id, group=group, client_id=f"c{index}", **join
                    )
        results = [self.answer(r) if isinstance(r, Pending) else r for r in latest]
        generation = self.generation = results[-1].generation_id
        ids = [r.member_id for r in results]
        leader = results[-1].leader
        followers = [self.sync(m, generation, group=group) for m in ids if m != leader]
        self.sync(leader, generation, {m: m.encode() for m in ids}, group=group)
        for pending in followers:
            if isinstance(pending, Pending):
                assert self.answer(pending).error_code == 0
        assert self.state(group) == "Stable"
        return ids

    def replayed(self) -> GroupCoordinator:
        """A new coordinator loaded from this one's log."""
        other = GroupCoordinator(self.coordinator.config)
        other.load(self.log, self.now)
        return other


@pytest.fixture
def h() -> Harness:
    return Harness()
