"""The values ``AdminClient`` takes and returns: frozen dataclasses, Kafka's names.

``AdminResult`` is how per-item outcomes come back from a call that names many items (topics,
partitions, config resources): a read-only mapping in which each item's value is its result,
and looking up an item that failed raises that item's ``KafkaError`` subclass
(``errors.error_for_code``). ``all()`` returns every result or raises the first failure.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from odradek._types import TopicPartition
from odradek.client.cluster import BrokerMetadata
from odradek.errors import KafkaError

__all__ = [
    "AdminResult",
    "AlterConfigOp",
    "AlterConfigOpType",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSource",
    "DeletedRecords",
    "ElectionType",
    "ListOffsetsResultInfo",
    "LogDirDescription",
    "NewPartitions",
    "NewTopic",
    "OffsetSpec",
    "PartitionDescription",
    "PartitionReassignment",
    "ReplicaInfo",
    "TopicDescription",
]

K = TypeVar("K")
V = TypeVar("V")


class AdminResult(Mapping[K, V], Generic[K, V]):
    """Per-item results of one admin call, in request order (see the module docstring).

    ``result[item]`` returns the item's value or raises its error; ``errors`` maps the failed
    items to their errors; ``values`` the succeeded ones to their values.
    """

    __slots__ = ("_errors", "_order", "_values")

    def __init__(
        self, order: Sequence[K], values: Mapping[K, V], errors: Mapping[K, KafkaError]
    ) -> None:
        self._order = tuple(order)
        self._values = dict(values)
        self._errors = dict(errors)

    def __getitem__(self, item: K) -> V:
        error = self._errors.get(item)
        if error is not None:
            raise error
        return self._values[item]

    def __iter__(self) -> Iterator[K]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    @property
    def errors(self) -> dict[K, KafkaError]:
        return dict(self._errors)

    @property
    def values_by_item(self) -> dict[K, V]:
        return dict(self._values)

    def all(self) -> dict[K, V]:
        """Every item's value.

        Raises:
            KafkaError: the first failed item's error (in request order).
        """
        for item in self._order:
            error = self._errors.get(item)
            if error is not None:
                raise error
        return {item: self._values[item] for item in self._order}

    def __repr__(self) -> str:
        parts = [
            f"{item!r}: {self._errors[item]!r}"
            if item in self._errors
            else f"{item!r}: {self._values.get(item)!r}"
            for item in self._order
        ]
        return "AdminResult({" + ", ".join(parts) + "})"


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create. ``-1`` partitions or replication factor: the broker's defaults
    (``num.partitions``, ``default.replication.factor``; CreateTopics v4+, KIP-464).
    ``replica_assignment`` (partition → broker ids) excludes both counts."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)
    replica_assignment: Mapping[int, Sequence[int]] | None = None


@dataclass(frozen=True, slots=True)
class NewPartitions:
    """The new total partition count of a topic, and optionally the new partitions' replicas."""

    total_count: int
    assignments: Sequence[Sequence[int]] | None = None


class ConfigResourceType(enum.IntEnum):
    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


@dataclass(frozen=True, slots=True)
class ConfigResource:
    """A resource with configs: a topic by name, or a broker by its id as a string."""

    type: ConfigResourceType
    name: str

    @classmethod
    def topic(cls, name: str) -> ConfigResource:
        return cls(ConfigResourceType.TOPIC, name)

    @classmethod
    def broker(cls, broker_id: int) -> ConfigResource:
        return cls(ConfigResourceType.BROKER, str(broker_id))


class ConfigSource(enum.IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One config of a resource, as DescribeConfigs reports it."""

    name: str
    value: str | None
    source: ConfigSource = ConfigSource.UNKNOWN
    is_read_only: bool = False
    is_sensitive: bool = False
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...] = ()
    config_type: int = 0
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        return self.source is ConfigSource.DEFAULT_CONFIG


class AlterConfigOpType(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class AlterConfigOp:
    """One IncrementalAlterConfigs operation on one config (KIP-339)."""

    name: str
    value: str | None = None
    op_type: AlterConfigOpType = AlterConfigOpType.SET


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """What ``list_offsets`` looks up: the earliest offset, the latest (log end) offset, the
    offset of the record with the largest timestamp, or the first offset whose timestamp is at
    or after a time. ``timestamp`` is the ListOffsets request's value (-2, -1, -3, or ms)."""

    timestamp: int

    EARLIEST_TIMESTAMP = -2
    LATEST_TIMESTAMP = -1
    MAX_TIMESTAMP = -3

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls(cls.EARLIEST_TIMESTAMP)

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls(cls.LATEST_TIMESTAMP)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        return cls(cls.MAX_TIMESTAMP)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        if timestamp_ms < 0:
            raise ValueError(f"a timestamp is >= 0, got {timestamp_ms}")
        return cls(timestamp_ms)


@dataclass(frozen=True, slots=True)
class ListOffsetsResultInfo:
    """A ``list_offsets`` answer: offset -1 when no record is at or after the timestamp."""

    offset: int
    timestamp: int
    leader_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class DeletedRecords:
    """A ``delete_records`` answer: the partition's new log start offset."""

    low_watermark: int


@dataclass(frozen=True, slots=True)
class PartitionDescription:
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    is_internal: bool
    partitions: tuple[PartitionDescription, ...]

    @property
    def topic_partitions(self) -> list[TopicPartition]:
        return [TopicPartition(self.name, p.partition) for p in self.partitions]


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int | None
    brokers: tuple[BrokerMetadata, ...]


class ElectionType(enum.IntEnum):
    """The kind of leader election ``elect_leaders`` asks for (ElectLeaders v1, KIP-460)."""

    #: The preferred (first) replica leads again, if it is live and in the ISR.
    PREFERRED = 0
    #: A live replica leads a partition that has no live leader, even one out of the ISR.
    UNCLEAN = 1


@dataclass(frozen=True, slots=True)
class PartitionReassignment:
    """A reassignment in progress (Kafka's ``PartitionReassignment``, KIP-455): the whole
    replica set while it moves, and the replicas being added and removed (the target is
    ``replicas`` without ``removing_replicas``)."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    """One partition's log in a broker's log dir (Kafka's ``ReplicaInfo``)."""

    #: Bytes of the log's segments.
    size: int
    #: How far the log end offset is behind the high watermark (a future log: behind the
    #: current log's end).
    offset_lag: int
    #: A log being moved into this dir to replace the current one.
    is_future: bool


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    """One log dir of a broker (Kafka's ``LogDirDescription``); ``error`` set: the dir is
    offline and holds no replicas here. Total and usable bytes of its volume are ``None``
    when the broker does not tell them (DescribeLogDirs before v4)."""

    path: str
    error: KafkaError | None
    replicas: Mapping[TopicPartition, ReplicaInfo]
    total_bytes: int | None = None
    usable_bytes: int | None = None
