"""The values the console's pages show, built from the admin client's answers. Pure: no I/O, no
clock (``now_ms`` is passed in), no HTML — the templates lay these values out and escape them.

Kafka's vocabulary throughout: ``log_start_offset``, ``log_end_offset``, ``isr``; a partition is
offline when it has no leader, and under-replicated when it has one and its ISR is smaller than
its replica set (as Kafka's metrics count them: an offline partition is not also
under-replicated).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from odradek._types import TopicPartition
from odradek.client.admin_groups import ConsumerGroupDescription, GroupListing
from odradek.client.admin_types import (
    ClusterDescription,
    ConfigEntry,
    LogDirDescription,
    TopicDescription,
)
from odradek.client.simple_consumer import Message
from odradek.console.inputs import ResetSpec
from odradek.console.lag import GroupLag
from odradek.console.render import RenderedBytes, format_timestamp_ms, render_bytes

__all__ = [
    "BrokerRow",
    "ClusterView",
    "ConfigRow",
    "GroupRow",
    "GroupView",
    "LagRow",
    "MemberRow",
    "MessageRow",
    "PartitionRow",
    "RebalanceRow",
    "RebalancesView",
    "ResetRow",
    "TopicRow",
    "TopicView",
    "cluster_view",
    "config_rows",
    "group_rows",
    "group_view",
    "message_rows",
    "partition_sizes",
    "reset_plan",
    "topic_rows",
    "topic_view",
]

#: What a sensitive config's value is shown as.
HIDDEN = "(hidden)"


@dataclass(frozen=True, slots=True)
class BrokerRow:
    broker_id: int
    host: str
    port: int
    rack: str | None
    is_controller: bool

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ClusterView:
    cluster_id: str | None
    controller_id: int | None
    brokers: tuple[BrokerRow, ...]


def cluster_view(description: ClusterDescription) -> ClusterView:
    """The brokers by id, the controller marked."""
    rows = tuple(
        BrokerRow(b.node_id, b.host, b.port, b.rack, b.node_id == description.controller_id)
        for b in sorted(description.brokers, key=lambda b: b.node_id)
    )
    return ClusterView(description.cluster_id, description.controller_id, rows)


def partition_sizes(
    log_dirs: Mapping[int, Mapping[str, LogDirDescription]],
    leaders: Mapping[TopicPartition, int | None],
) -> dict[TopicPartition, int]:
    """Each partition's size in bytes: its leader's replica, or the largest replica when the
    leader's log dirs were not described (sizes of a topic's partitions add up to its size)."""
    by_broker: dict[TopicPartition, dict[int, int]] = {}
    for broker_id, dirs in log_dirs.items():
        for description in dirs.values():
            for tp, replica in description.replicas.items():
                if not replica.is_future:
                    by_broker.setdefault(tp, {})[broker_id] = replica.size
    sizes = {}
    for tp, replicas in by_broker.items():
        leader = leaders.get(tp)
        sizes[tp] = replicas[leader] if leader in replicas else max(replicas.values())
    return sizes


@dataclass(frozen=True, slots=True)
class TopicRow:
    name: str
    is_internal: bool
    partition_count: int
    records: int
    size_bytes: int | None
    under_replicated: int
    offline: int


def topic_rows(
    descriptions: Sequence[TopicDescription],
    log_start_offsets: Mapping[TopicPartition, int],
    log_end_offsets: Mapping[TopicPartition, int],
    sizes: Mapping[TopicPartition, int],
) -> list[TopicRow]:
    """One row per topic, by name. ``records`` counts the offsets between each partition's log
    start and log end (a compacted topic holds fewer); a size is None when no partition's was
    described."""
    rows = []
    for topic in sorted(descriptions, key=lambda d: d.name):
        tps = topic.topic_partitions
        records = sum(
            max(log_end_offsets.get(tp, 0) - log_start_offsets.get(tp, 0), 0) for tp in tps
        )
        known = [sizes[tp] for tp in tps if tp in sizes]
        rows.append(
            TopicRow(
                topic.name,
                topic.is_internal,
                len(tps),
                records,
                sum(known) if known else None,
                sum(
                    1
                    for p in topic.partitions
                    if p.leader is not None and len(p.isr) < len(p.replicas)
                ),
                sum(1 for p in topic.partitions if p.leader is None),
            )
        )
    return rows


@dataclass(frozen=True, slots=True)
class PartitionRow:
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    log_start_offset: int | None
    log_end_offset: int | None
    size_bytes: int | None

    @property
    def under_replicated(self) -> bool:
        return self.leader is not None and len(self.isr) < len(self.replicas)

    @property
    def offline(self) -> bool:
        return self.leader is None


@dataclass(frozen=True, slots=True)
class ConfigRow:
    name: str
    value: str
    source: str
    is_default: bool
    is_read_only: bool


def config_rows(configs: Mapping[str, ConfigEntry]) -> list[ConfigRow]:
    """The configs by name; a sensitive value hidden, a null one shown empty."""
    rows = []
    for name in sorted(configs):
        entry = configs[name]
        value = HIDDEN if entry.is_sensitive else (entry.value or "")
        rows.append(ConfigRow(name, value, entry.source.name, entry.is_default, entry.is_read_only))
    return rows


@dataclass(frozen=True, slots=True)
class TopicView:
    name: str
    is_internal: bool
    partitions: tuple[PartitionRow, ...]
    configs: tuple[ConfigRow, ...]

    @property
    def size_bytes(self) -> int | None:
        known = [p.size_bytes for p in self.partitions if p.size_bytes is not None]
        return sum(known) if known else None

    @property
    def records(self) -> int:
        return sum(
            max((p.log_end_offset or 0) - (p.log_start_offset or 0), 0) for p in self.partitions
        )


def topic_view(
    description: TopicDescription,
    log_start_offsets: Mapping[TopicPartition, int],
    log_end_offsets: Mapping[TopicPartition, int],
    sizes: Mapping[TopicPartition, int],
    configs: Mapping[str, ConfigEntry],
) -> TopicView:
    """A topic's partitions (by number) with their offsets and sizes, and its configs."""
    rows = []
    for p in sorted(description.partitions, key=lambda p: p.partition):
        tp = TopicPartition(description.name, p.partition)
        rows.append(
            PartitionRow(
                p.partition,
                p.leader,
                p.replicas,
                p.isr,
                log_start_offsets.get(tp),
                log_end_offsets.get(tp),
                sizes.get(tp),
            )
        )
    return TopicView(
        description.name, description.is_internal, tuple(rows), tuple(config_rows(configs))
    )


@dataclass(frozen=True, slots=True)
class MessageRow:
    partition: int
    offset: int
    timestamp: str
    timestamp_type: str
    key: RenderedBytes
    value: RenderedBytes
    headers: tuple[tuple[str, RenderedBytes], ...]


def message_rows(messages: Sequence[Message]) -> list[MessageRow]:
    """Records as shown: keys, values and header values rendered (``render.render_bytes``)."""
    return [
        MessageRow(
            m.partition,
            m.offset,
            format_timestamp_ms(m.timestamp),
            m.timestamp_type.name,
            render_bytes(m.key),
            render_bytes(m.value),
            tuple((name, render_bytes(value)) for name, value in m.headers),
        )
        for m in messages
    ]


@dataclass(frozen=True, slots=True)
class GroupRow:
    group_id: str
    state: str
    protocol_type: str
    members: int | None


def group_rows(
    listings: Sequence[GroupListing], descriptions: Mapping[str, ConsumerGroupDescription]
) -> list[GroupRow]:
    """One row per group, by id; the state from the description when ListGroups gave none."""
    rows = []
    for listing in sorted(listings, key=lambda g: g.group_id):
        description = descriptions.get(listing.group_id)
        state = listing.state or (description.state if description else None) or "-"
        members = len(description.members) if description else None
        rows.append(GroupRow(listing.group_id, state, listing.protocol_type or "-", members))
    return rows


@dataclass(frozen=True, slots=True)
class MemberRow:
    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class LagRow:
    topic: str
    partition: int
    committed: int | None
    log_end_offset: int
    lag: int | None
    lag_ms: int | None
    next_timestamp: str
    member_id: str | None
    client_id: str | None
    host: str | None


@dataclass(frozen=True, slots=True)
class GroupView:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    coordinator: str | None
    members: tuple[MemberRow, ...]
    lags: tuple[LagRow, ...]
    lag: int
    lag_ms: int | None

    @property
    def is_inactive(self) -> bool:
        """Offsets may be reset only while the group has no members (Empty, or Dead: unknown)."""
        return self.state in ("Empty", "Dead")


def group_view(description: ConsumerGroupDescription, lag: GroupLag) -> GroupView:
    """The group's members and its lag rows, each row with the member that owns the partition
    (rows for assigned partitions without a committed offset included, lag unknown)."""
    owners = {tp: m for m in description.members for tp in m.assignment}
    rows = []
    for p in lag.partitions:
        owner = owners.get(p.topic_partition)
        rows.append(
            LagRow(
                p.topic,
                p.partition,
                p.committed,
                p.log_end_offset,
                p.lag,
                p.lag_ms,
                format_timestamp_ms(p.next_timestamp_ms),
                owner.member_id if owner else None,
                owner.client_id if owner else None,
                owner.host if owner else None,
            )
        )
    members = tuple(
        MemberRow(m.member_id, m.client_id, m.host, m.group_instance_id, m.assignment)
        for m in sorted(description.members, key=lambda m: m.member_id)
    )
    coordinator = description.coordinator
    return GroupView(
        description.group_id,
        description.state,
        description.protocol_type or "-",
        description.protocol or "-",
        f"{coordinator.node_id} ({coordinator.host}:{coordinator.port})" if coordinator else None,
        members,
        tuple(rows),
        lag.lag,
        lag.lag_ms,
    )


@dataclass(frozen=True, slots=True)
class ResetRow:
    topic: str
    partition: int
    current: int | None
    new_offset: int


def reset_plan(
    spec: ResetSpec,
    partitions: Sequence[TopicPartition],
    committed: Mapping[TopicPartition, int],
    log_start_offsets: Mapping[TopicPartition, int],
    log_end_offsets: Mapping[TopicPartition, int],
    offsets_for_time: Mapping[TopicPartition, int] | None = None,
) -> list[ResetRow]:
    """The new offset of each partition, as Kafka's reset tool computes it: an offset or a
    shift clamped to [log start, log end]; a time gives the first offset at or after it, or
    the log end when no record is that recent (``offsets_for_time`` missing the partition). A
    shift starts from the committed offset (the log start when there is none). Partitions
    whose offsets are unknown are left out."""
    rows = []
    for tp in sorted(set(partitions)):
        start = log_start_offsets.get(tp)
        end = log_end_offsets.get(tp)
        if start is None or end is None:
            continue
        current = committed.get(tp)
        match spec.strategy:
            case "earliest":
                target = start
            case "latest":
                target = end
            case "offset":
                target = spec.value
            case "shift":
                target = (current if current is not None else start) + spec.value
            case "timestamp":
                target = (offsets_for_time or {}).get(tp, end)
        rows.append(ResetRow(tp.topic, tp.partition, current, min(max(target, start), end)))
    return rows


# --- rebalance history ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RebalanceRow:
    """One rebalance of a group as its coordinator remembers it (``broker.group.history``)."""

    started: str
    cause: str
    description: str
    from_generation: int
    generation_id: int | None
    members: int | None
    duration_ms: int | None


@dataclass(frozen=True, slots=True)
class RebalancesView:
    """A group's last rebalances, newest first, or why they cannot be shown (``note``)."""

    rows: tuple[RebalanceRow, ...]
    note: str | None


def rebalances_view(records: Sequence[Mapping[str, object]], note: str | None) -> RebalancesView:
    """The rows of the coordinator's ``/groups/<g>/rebalances`` records (oldest first there,
    newest first here); fields missing or of the wrong kind show as unknown."""

    def number(record: Mapping[str, object], name: str) -> int | None:
        value = record.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    rows = []
    for record in reversed(records):
        started = number(record, "started_ms")
        completed = number(record, "completed_ms")
        rows.append(
            RebalanceRow(
                started=format_timestamp_ms(started),
                cause=str(record.get("cause") or "-"),
                description=str(record.get("description") or "-"),
                from_generation=number(record, "from_generation") or 0,
                generation_id=number(record, "generation_id"),
                members=number(record, "members"),
                duration_ms=(
                    completed - started if started is not None and completed is not None else None
                ),
            )
        )
    if not rows and note is None:
        note = "No rebalance since the coordinator loaded the group."
    return RebalancesView(tuple(rows), note)
