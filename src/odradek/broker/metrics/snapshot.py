"""What a scrape sees: a ``BrokerSnapshot`` of values, taken on the event loop.

The broker's objects belong to its event loop; the endpoint serves scrapes on a thread of its
own. So a scrape asks the loop for one snapshot (``take_snapshot``, which only reads: the
``statistics()`` of long-lived objects, partition counters, group states, and the lag, see
``lag``) and formats it off the loop. Everything here is a frozen value the console or a test
may hold on to.

What is read is described by ports (``typing.Protocol``) and a ``BrokerParts`` of callables the
app wires, so this package imports nothing of the broker's modules.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from odradek._types import TopicPartition
from odradek.broker.metrics.lag import (
    GroupLag,
    LaggingPartition,
    LagReader,
    LeaderPosition,
    remote_pairs,
)
from odradek.broker.metrics.requests import ApiTimes

# --- ports ------------------------------------------------------------------------------------


class LogPort(Protocol):
    @property
    def size_bytes(self) -> int: ...

    def segments(self) -> Sequence[object]: ...

    @property
    def flushes(self) -> int: ...

    @property
    def flush_seconds(self) -> float: ...


class PartitionPort(LaggingPartition, Protocol):
    """A partition this broker hosts (``broker.replication.partition.Partition``)."""

    @property
    def is_leader(self) -> bool: ...

    @property
    def isr(self) -> Sequence[int]: ...

    @property
    def replicas(self) -> Sequence[int]: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def log_start_offset(self) -> int: ...

    @property
    def min_insync_replicas(self) -> int: ...

    @property
    def log(self) -> LogPort: ...

    @property
    def bytes_in(self) -> int: ...

    @property
    def messages_in(self) -> int: ...

    @property
    def bytes_out(self) -> int: ...


class CommittedOffset(Protocol):
    @property
    def offset(self) -> int: ...


class HistoryPort(Protocol):
    @property
    def total(self) -> int: ...


class GroupPort(Protocol):
    """A classic group (``broker.group.group.ClassicGroup``)."""

    @property
    def group_id(self) -> str: ...

    @property
    def state(self) -> enum.Enum: ...

    @property
    def members(self) -> Mapping[str, object]: ...

    @property
    def offsets(self) -> Mapping[TopicPartition, CommittedOffset]: ...

    @property
    def rebalances(self) -> HistoryPort: ...


class CoordinatorPort(Protocol):
    def groups(self) -> Sequence[GroupPort]: ...


@dataclass(slots=True)
class BrokerParts:
    """How to reach what a snapshot reads; every callable runs on the event loop."""

    broker_id: int
    partitions: Callable[[], Mapping[TopicPartition, PartitionPort]]
    coordinators: Callable[[], Sequence[CoordinatorPort]]
    #: Whether this broker is the active controller.
    controller_active: Callable[[], bool] = lambda: False
    #: Partitions without a leader (the active controller's view; 0 elsewhere).
    offline_partitions: Callable[[], int] = lambda: 0
    #: ISR shrinks and expands so far (committed changes).
    isr_changes: Callable[[], tuple[int, int]] = lambda: (0, 0)
    connections: Callable[[], int] = lambda: 0
    #: The leaders' positions at (partition, offset) pairs led elsewhere
    #: (``broker.leader_positions``); None: a lone broker, every partition is local.
    leader_positions: (
        Callable[
            [Collection[tuple[TopicPartition, int]]],
            Awaitable[Mapping[tuple[TopicPartition, int], LeaderPosition]],
        ]
        | None
    ) = None


# --- values -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionStats:
    topic: str
    partition: int
    leader: bool
    replicas: int
    isr: int
    min_insync_replicas: int
    size_bytes: int
    segments: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    bytes_in: int
    messages_in: int
    bytes_out: int

    @property
    def under_replicated(self) -> bool:
        return self.leader and self.isr < self.replicas

    @property
    def under_min_isr(self) -> bool:
        return self.leader and self.isr < self.min_insync_replicas


@dataclass(frozen=True, slots=True)
class GroupStats:
    group_id: str
    state: str
    members: int
    rebalances: int


@dataclass(frozen=True, slots=True)
class BrokerSnapshot:
    """One scrape's worth of the broker (see the module docstring)."""

    broker_id: int
    taken_ms: int
    partitions: tuple[PartitionStats, ...]
    groups: tuple[GroupStats, ...]
    lags: tuple[GroupLag, ...]
    requests: tuple[ApiTimes, ...]
    active_controller: bool
    offline_partitions: int
    isr_shrinks: int
    isr_expands: int
    connections: int
    flushes: int
    flush_seconds: float


async def gather_snapshot(
    parts: BrokerParts,
    lag_reader: LagReader,
    requests: Callable[[], tuple[ApiTimes, ...]],
    now_ms: Callable[[], int],
) -> BrokerSnapshot:
    """A ``BrokerSnapshot`` with the lag of partitions led elsewhere too: first asks their
    leaders (``parts.leader_positions``) for the pairs the groups coordinated here committed
    on, then reads the broker at once (on its event loop: nothing moves between the reads
    of ``take_snapshot``)."""
    remote: Mapping[tuple[TopicPartition, int], LeaderPosition] = {}
    if parts.leader_positions is not None:
        wanted = remote_pairs(_committed(_groups(parts)), parts.partitions())
        if wanted:
            remote = await parts.leader_positions(wanted)
    return take_snapshot(parts, lag_reader, requests(), now_ms(), remote=remote)


def _groups(parts: BrokerParts) -> list[GroupPort]:
    return [g for c in parts.coordinators() for g in c.groups()]


def _committed(groups: Sequence[GroupPort]) -> dict[str, dict[TopicPartition, int]]:
    return {g.group_id: {tp: value.offset for tp, value in g.offsets.items()} for g in groups}


def take_snapshot(
    parts: BrokerParts,
    lag_reader: LagReader,
    requests: tuple[ApiTimes, ...],
    now_ms: int,
    *,
    remote: Mapping[tuple[TopicPartition, int], LeaderPosition] | None = None,
) -> BrokerSnapshot:
    """Reads the broker (on its event loop) into a ``BrokerSnapshot``; ``remote``: the
    positions of partitions led elsewhere (``lag``)."""
    hosted = parts.partitions()
    partitions = []
    flushes = 0
    flush_seconds = 0.0
    for tp, partition in sorted(hosted.items()):
        log = partition.log
        flushes += log.flushes
        flush_seconds += log.flush_seconds
        partitions.append(
            PartitionStats(
                tp.topic,
                tp.partition,
                partition.is_leader,
                len(partition.replicas),
                len(partition.isr),
                partition.min_insync_replicas,
                log.size_bytes,
                len(log.segments()),
                partition.log_start_offset,
                partition.log_end_offset,
                partition.high_watermark,
                partition.bytes_in,
                partition.messages_in,
                partition.bytes_out,
            )
        )
    groups = _groups(parts)
    group_stats = tuple(
        GroupStats(g.group_id, str(g.state.value), len(g.members), g.rebalances.total)
        for g in sorted(groups, key=lambda g: g.group_id)
    )
    committed = _committed(groups)
    shrinks, expands = parts.isr_changes()
    return BrokerSnapshot(
        broker_id=parts.broker_id,
        taken_ms=now_ms,
        partitions=tuple(partitions),
        groups=group_stats,
        lags=lag_reader.lags(committed, hosted, now_ms, remote),
        requests=requests,
        active_controller=parts.controller_active(),
        offline_partitions=parts.offline_partitions(),
        isr_shrinks=shrinks,
        isr_expands=expands,
        connections=parts.connections(),
        flushes=flushes,
        flush_seconds=flush_seconds,
    )
