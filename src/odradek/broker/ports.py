"""The broker as handlers see it: narrow ``typing.Protocol`` ports of its services.

Handlers get a ``BrokerContext`` whose services are typed by these ports, never by the
concrete classes (``ReplicaManager``, ``Partition``, ``TopicManager``, ``FetchPurgatory``,
``GroupCoordinatorRuntime``), so a handler is tested with in-memory fakes and never sees a
storage type. The rules it keeps:

- a port lists what handlers call, with the concrete class's signature; the concrete classes
  satisfy the ports structurally (mypy checks it where ``BrokerApp`` builds the context);
- results are ports too (``AppendResult``, ``ReadResult``, ``TimestampOffset``, ...): the
  storage values (``AppendInfo``, ``LogReadInfo``, ``TimestampAndOffset``) satisfy them, and
  records travel as ``odradek.net.sendfile.FileRegion``, the socket shell's type;
- nothing here imports ``odradek.storage`` (import-linter: handlers ↛ storage).

Grow a port when a handler needs more, in the same change that uses it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from odradek._types import TopicPartition
from odradek.broker.group.coordinator import GroupCoordinator
from odradek.broker.group.results import ListGroupsResult, OffsetCommitPartition, Outcome
from odradek.broker.limits import MutationQuota
from odradek.broker.metadata_cache import LiveBroker, MetadataCache
from odradek.broker.txn.coordinator import (
    InitProducerIdResult,
    TransactionCoordinator,
    TxnOutcome,
)
from odradek.broker.txn.records import TransactionMetadata
from odradek.controller.cluster import ClusterController
from odradek.errors import ErrorCode
from odradek.net.sendfile import FileRegion

__all__ = [
    "AppendResult",
    "ClusterPort",
    "DelayedProducePort",
    "EpochEndOffsetResult",
    "GroupsPort",
    "LogDirDescription",
    "PartitionDescription",
    "PartitionPort",
    "ProducerIdsPort",
    "PurgatoryPort",
    "ReadResult",
    "ReplicaLogDescription",
    "ReplicasPort",
    "TimestampOffset",
    "TopicConfigDescription",
    "TopicIds",
    "TopicsPort",
]

R = TypeVar("R")

# ----------------------------------------------------------------- producer ids


class ProducerIdsPort(Protocol):
    """Producer ids for InitProducerId (``broker.producer_ids.ProducerIdManager``)."""

    def try_next_id(self) -> int | None:
        """The next id without blocking, or None when a new block must be reserved."""
        ...

    def next_id(self) -> int:
        """The next id; may block on the metadata store (call it off the event loop)."""
        ...


# ----------------------------------------------------------------- partitions


class AppendResult(Protocol):
    """What an append did, as Produce answers it."""

    @property
    def first_offset(self) -> int: ...
    @property
    def log_append_time_ms(self) -> int: ...
    @property
    def log_start_offset(self) -> int: ...


class ReadResult(Protocol):
    """What a read found: the records to send (``None``: none) and the log start offset."""

    @property
    def records(self) -> FileRegion | None: ...
    @property
    def log_start_offset(self) -> int: ...


class TimestampOffset(Protocol):
    """The first record at or after a timestamp (ListOffsets)."""

    @property
    def timestamp(self) -> int: ...
    @property
    def offset(self) -> int: ...


class EpochEndOffsetResult(Protocol):
    """Where a leader epoch ends in a log (OffsetForLeaderEpoch; -1, -1: unknown)."""

    @property
    def epoch(self) -> int: ...
    @property
    def end_offset(self) -> int: ...


class AbortedTxnLike(Protocol):
    """An aborted transaction of a partition (``storage.txn_index.AbortedTxn``)."""

    @property
    def producer_id(self) -> int: ...
    @property
    def first_offset(self) -> int: ...


class FollowerStateLike(Protocol):
    """A leader's view of one follower (``broker.replication.isr.FollowerState``)."""

    @property
    def log_end_offset(self) -> int: ...
    @property
    def last_caught_up_ms(self) -> int: ...


class PartitionPort(Protocol):
    """A partition this broker leads (``odradek.broker.replication.partition.Partition``)."""

    @property
    def topic_partition(self) -> TopicPartition: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def is_leader(self) -> bool:
        """False on a follower (a cluster's controller made another broker the leader)."""
        ...

    @property
    def isr(self) -> Sequence[int]:
        """The in-sync replicas' broker ids."""
        ...

    @property
    def replicas(self) -> Sequence[int]:
        """Every replica's broker id (the assignment)."""
        ...

    @property
    def leader_id(self) -> int:
        """The leader's broker id (-1: none)."""
        ...

    #: Consumer fetches served here as a follower (KIP-392); the Fetch handler counts them.
    follower_reads: int

    def follower_state(self, replica_id: int) -> FollowerStateLike | None:
        """What this leader knows of a follower (None: not a follower here)."""
        ...

    @property
    def min_insync_replicas(self) -> int:
        """The topic's ``min.insync.replicas``."""
        ...

    def append_as_leader(self, data: bytes | bytearray) -> AppendResult:
        """Validates and appends one producer batch (acks is the caller's: ``broker.acks``).

        Raises:
            KafkaError: the batch's validation error (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, ...).
        """
        ...

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        min_one_message: bool = True,
        committed_only: bool = True,
        read_committed: bool = False,
    ) -> ReadResult:
        """Reads up to the high watermark (or the log end offset for followers, the last
        stable offset for read_committed consumers).

        Raises:
            OffsetOutOfRangeError: ``fetch_offset`` outside [log start offset, LEO].
        """
        ...

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, at most the high watermark."""
        ...

    def aborted_transactions(self, start: int, end: int) -> Sequence[AbortedTxnLike]:
        """Aborted transactions that may have records in [start, end)."""
        ...

    def active_producers(self) -> list[tuple[int, int, int, int, int]]:
        """(producer id, epoch, last sequence, last timestamp, open transaction's first
        offset or -1) of each producer the partition knows."""
        ...

    def verification_guard(self, producer_id: int) -> object | None:
        """KIP-890 part 1: None when the producer has a transaction open here, else the
        guard a batch verified by its coordinator is appended under."""
        ...

    def verification_holds(self, producer_id: int, guard: object) -> bool:
        """Whether the guard still stands (no marker for the producer since), or the
        producer has a transaction open here now."""
        ...

    def update_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int) -> None:
        """Records a follower's fetch at its log end offset (ISR, high watermark).

        Raises:
            KafkaError: NOT_LEADER_OR_FOLLOWER (not led here, or not a replica).
        """
        ...

    def delete_records_before(self, offset: int) -> int:
        """Moves the log start offset (-1: to the high watermark); returns the new one.

        Raises:
            OffsetOutOfRangeError: ``offset`` is past the high watermark.
        """
        ...

    def offset_for_timestamp(self, timestamp_ms: int) -> TimestampOffset | None:
        """The first record whose timestamp is at or after ``timestamp_ms``, or ``None``."""
        ...

    def offset_of_max_timestamp(self) -> TimestampOffset | None:
        """The first record with the largest timestamp below the high watermark, or ``None``
        (ListOffsets' MAX_TIMESTAMP, KIP-734)."""
        ...

    def end_offset_for_epoch(self, leader_epoch: int) -> EpochEndOffsetResult:
        """The largest epoch at or below ``leader_epoch`` this log holds and the offset where
        it ends (the log end offset for the latest epoch); -1, -1 when unknown (KIP-101)."""
        ...


@dataclass(frozen=True, slots=True)
class ReplicaLogDescription:
    """One partition's log in a log dir, as DescribeLogDirs reports it."""

    topic_partition: TopicPartition
    #: Bytes of the log's segments.
    size: int
    #: How far the log end offset is behind the high watermark (0 on a leader).
    offset_lag: int
    #: A log being moved here to replace the current one (never, until AlterReplicaLogDirs).
    is_future: bool = False


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    """One ``log.dirs`` directory: its logs and its volume's bytes (-1: unknown)."""

    path: str
    error_code: ErrorCode
    replicas: Sequence[ReplicaLogDescription]
    total_bytes: int = -1
    usable_bytes: int = -1


class DelayedProducePort(Protocol):
    """Where acks=all produces wait for the high watermark
    (``odradek.broker.replication.delayed_produce.DelayedProducePurgatory``)."""

    async def wait(
        self, appended: Sequence[tuple[PartitionPort, int]], timeout_ms: int
    ) -> list[ErrorCode]:
        """Each partition's outcome once its high watermark reached the offset given with it
        (NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER), or
        REQUEST_TIMED_OUT for those still waiting after ``timeout_ms``."""
        ...


class ReplicasPort(Protocol):
    """The partitions this broker holds (``odradek.broker.replica_manager.ReplicaManager``)."""

    @property
    def delayed_produce(self) -> DelayedProducePort: ...

    def get(self, topic_partition: TopicPartition) -> PartitionPort | None: ...

    def describe_log_dirs(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> list[LogDirDescription]:
        """Every log dir with the logs of ``partitions`` it holds (None: of every partition)."""
        ...


class PurgatoryPort(Protocol):
    """Where fetches wait for data (``odradek.broker.purgatory.FetchPurgatory``)."""

    def notify(self, topic_partition: TopicPartition) -> None: ...

    def notify_appended(self, topic_partition: TopicPartition) -> None: ...

    async def wait(
        self, partitions: Iterable[TopicPartition], timeout_ms: int, *, replica: bool = False
    ) -> bool: ...

    def watch(
        self, partitions: Iterable[TopicPartition], timeout_ms: int, *, replica: bool = False
    ) -> Any: ...

    async def wait_watched(self, watch: Any) -> bool: ...


# ----------------------------------------------------------------- topics


class PartitionDescription(Protocol):
    """A partition as Metadata describes it."""

    @property
    def partition(self) -> int: ...
    @property
    def leader(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def replicas(self) -> Sequence[int]: ...
    @property
    def isr(self) -> Sequence[int]: ...


class TopicConfigDescription(Protocol):
    """One topic config as DescribeConfigs reports it."""

    @property
    def name(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def is_default(self) -> bool: ...
    @property
    def implemented(self) -> bool: ...


class TopicIds(Protocol):
    """Topic ids as the metadata store keeps them (22 characters of URL-safe base64)."""

    def topic_id(self, topic: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class TopicPlan:
    """A checked topic change: partitions to add to ``topic`` (all of them for a new topic,
    whose ``configs`` are stored with it)."""

    topic: str
    new_topic: bool
    #: partition → replicas of the partitions to add only.
    assignment: Mapping[int, Sequence[int]]
    configs: Mapping[str, str]

    @property
    def first_partition(self) -> int:
        return min(self.assignment)


class TopicsPort(Protocol):
    """Topic lookups and changes (``odradek.broker.topic_manager.TopicManager``).

    The changes raise ``KafkaError`` with the code the admin APIs answer (see
    ``TopicManager``); handlers map them with ``handlers._admin.error_of``.
    """

    @property
    def metadata(self) -> TopicIds: ...

    def exists(self, topic: str) -> bool: ...
    def topic_names(self) -> list[str]: ...
    def topic_id(self, topic: str) -> str | None: ...
    def is_internal(self, topic: str) -> bool: ...
    def describe(self, topic: str) -> Sequence[PartitionDescription]: ...
    def topic_config_entries(self, topic: str) -> Sequence[TopicConfigDescription]: ...
    def maybe_auto_create(self, topic: str) -> bool: ...

    def create_topic(
        self,
        topic: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        *,
        assignment: Mapping[int, Sequence[int]] | None = None,
        configs: Mapping[str, str] | None = None,
        validate_only: bool = False,
    ) -> None: ...

    def delete_topic(self, topic: str) -> None: ...

    def create_partitions(
        self,
        topic: str,
        total_count: int,
        *,
        assignment: Sequence[Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> None: ...

    def alter_topic_configs(
        self,
        topic: str,
        set_configs: Mapping[str, str],
        delete_configs: Sequence[str] = (),
        *,
        validate_only: bool = False,
    ) -> None: ...

    # Changes off the event loop (CreateTopics, CreatePartitions, DeleteTopics), bounded by
    # ``broker.limits`` before they start; see ``TopicManager``.

    @property
    def quota(self) -> MutationQuota: ...

    def partition_count(self, topic: str) -> int: ...
    def is_busy(self, topic: str) -> bool: ...

    def plan_topic(
        self,
        topic: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        *,
        assignment: Mapping[int, Sequence[int]] | None = None,
        configs: Mapping[str, str] | None = None,
    ) -> TopicPlan: ...

    def plan_partitions(
        self, topic: str, total_count: int, *, assignment: Sequence[Sequence[int]] | None = None
    ) -> TopicPlan: ...

    def start_create(self, plan: TopicPlan) -> asyncio.Task[None]: ...
    def start_delete(self, topic: str) -> asyncio.Task[None]: ...
    def keep(self, work: Coroutine[object, object, None]) -> asyncio.Task[None]: ...
    async def wait_idle(self, topic: str) -> None: ...


# ----------------------------------------------------------------- groups


class GroupsPort(Protocol):
    """The group coordinator runtime (``odradek.broker.group.runtime``).

    ``run`` and ``run_each`` raise ``KafkaError`` (NOT_COORDINATOR,
    COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE) that group handlers put in their
    responses.
    """

    def ensure_offsets_topic(self) -> bool: ...
    def is_coordinator_for(self, group_id: str) -> bool: ...
    def partition_for(self, group_id: str) -> int: ...

    async def run(
        self, group_id: str, operation: Callable[[GroupCoordinator, int], Outcome[R]]
    ) -> R: ...

    async def run_each(
        self,
        group_ids: Sequence[str],
        operation: Callable[[GroupCoordinator, int, list[str]], Outcome[R]],
    ) -> tuple[list[tuple[list[str], R]], dict[str, ErrorCode]]: ...

    def list_groups(
        self, states_filter: Sequence[str] = (), types_filter: Sequence[str] = ()
    ) -> ListGroupsResult: ...

    async def txn_offset_commit(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[OffsetCommitPartition],
    ) -> dict[TopicPartition, ErrorCode]: ...

    def complete_transaction(self, index: int, producer_id: int, commit: bool) -> None: ...


# ----------------------------------------------------------------- transactions


class TransactionsPort(Protocol):
    """The transaction coordinator runtime (``odradek.broker.txn.runtime``); its coroutines
    raise ``KafkaError`` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE) that handlers put in their responses."""

    def ensure_topic(self) -> bool: ...
    def is_coordinator_for(self, transactional_id: str) -> bool: ...
    def partition_for(self, transactional_id: str) -> int: ...

    async def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected_producer_id: int = -1,
        expected_epoch: int = -1,
    ) -> InitProducerIdResult: ...

    async def run(
        self,
        transactional_id: str,
        operation: Callable[[TransactionCoordinator, int], TxnOutcome[R]],
    ) -> R: ...

    def transactions(self) -> tuple[ErrorCode, list[TransactionMetadata]]: ...
    def describe(self, transactional_id: str) -> TransactionMetadata: ...


class TxnVerifierPort(Protocol):
    """KIP-890 part 1 on the produce path (``odradek.broker.txn.verification``)."""

    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """Each partition's Produce error: NONE when it is in the producer's ongoing
        transaction (INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH, NOT_ENOUGH_REPLICAS)."""
        ...


# ----------------------------------------------------------------- cluster


class ClusterPort(Protocol):
    """This broker's part in a ZooKeeper cluster (``odradek.broker.cluster_member``): the
    metadata cache the controller feeds, the controller's requests, and the topic requests
    forwarded to the controller."""

    @property
    def cache(self) -> MetadataCache: ...
    @property
    def is_controller(self) -> bool: ...
    @property
    def controller(self) -> ClusterController: ...

    async def leader_and_isr(self, body: Any) -> dict[str, Any]:
        """Applies a LeaderAndIsr (new partitions' logs made off the event loop first)."""
        ...

    def update_metadata(self, body: Any) -> dict[str, Any]: ...
    async def stop_replica(self, body: Any) -> dict[str, Any]:
        """Applies a StopReplica, after the LeaderAndIsr requests that came before it."""
        ...

    async def run_on_controller(self, start: Callable[[], concurrent.futures.Future[R]]) -> R:
        """Runs work on this broker's controller thread and waits for its result."""
        ...

    async def forward(
        self, api_key: int, api_version: int, fields: dict[str, Any]
    ) -> dict[str, Any]:
        """Sends a request to the controller; its answer's fields (NotControllerError)."""
        ...

    def request_topic(
        self, topic: str, partitions: int, replication_factor: int, configs: dict[str, str]
    ) -> None:
        """Asks the controller to create a topic, without waiting."""
        ...

    def coordinator_for(self, group_id: str) -> LiveBroker | None:
        """The leader of the group's ``__consumer_offsets`` partition (None: none yet)."""
        ...

    def transaction_coordinator_for(self, transactional_id: str) -> LiveBroker | None:
        """The leader of the id's ``__transaction_state`` partition (None: none yet)."""
        ...
