"""The group coordinator's runtime: the pure coordinators of ``__consumer_offsets`` on the
broker's event loop.

Owns one ``GroupCoordinator`` per ``__consumer_offsets`` partition this broker leads (a
*shard*), the creation of that topic on first need, the loading of each shard from its log,
the appends of the records the coordinators return, the requests waiting on a ``Pending``
ticket, and one timer per shard driven by ``next_deadline_ms``.

The rule it keeps (``results``' contract): the records of an outcome are appended to the
shard's partition as one batch before its response and completions are released, and with
``offsets.commit.required.acks`` -1 (Kafka's default) they are released only once the high
watermark passed the shard's last append — the records are replicated to the ISR — through
the replica manager's delayed-produce purgatory (an outcome without records waits for the
appends before it, as Kafka's coordinator runtime does: it may answer from state they made).
If the append fails, every waiting request of the shard is answered NOT_COORDINATOR (or
COORDINATOR_NOT_AVAILABLE while the ISR is below ``min.insync.replicas``) and the shard is
rebuilt from its log; if replication does not come within ``offsets.commit.timeout.ms``, or
the ISR shrank below ``min.insync.replicas``, the outcome's requests are answered
COORDINATOR_NOT_AVAILABLE (NOT_COORDINATOR when the partition's leadership moved), the
mapping Kafka's group coordinator applies, and the state stays (the records may still
commit). While a shard loads, its groups answer
COORDINATOR_LOAD_IN_PROGRESS; a group whose partition this broker does not lead answers
NOT_COORDINATOR; before ``__consumer_offsets`` exists, COORDINATOR_NOT_AVAILABLE.

Loading reads the partition's log up to the high watermark on the default executor (the log
is thread-safe for reads, and nothing appends to a shard that is not loaded), decodes its
batches (control batches skipped, tombstones kept as ``None`` values), then replays them into
the coordinator on the loop. With one replica the high watermark passes an append at once,
so the release follows the append directly, with no timer or future.

Thread safety: the event loop thread only (loading reads the log on the executor).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from odradek._clock import Clock
from odradek._types import TopicPartition
from odradek.broker.acks import check_enough_replicas, parse_acks
from odradek.broker.config import BrokerConfig
from odradek.broker.group.config import GroupConfig
from odradek.broker.group.coordinator import GroupCoordinator
from odradek.broker.group.history import RebalanceRecord
from odradek.broker.group.offsets import java_string_length
from odradek.broker.group.records import (
    CoordinatorRecord,
    OffsetCommitKey,
    OffsetCommitValue,
    partition_for_group,
)
from odradek.broker.group.results import (
    Completion,
    JoinGroupResult,
    ListedGroup,
    ListGroupsResult,
    OffsetCommitPartition,
    Outcome,
    Pending,
    SyncGroupResult,
)
from odradek.broker.purgatory import FetchPurgatory
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.replication.partition import Partition
from odradek.broker.topic_manager import TopicManager
from odradek.errors import ErrorCode, KafkaError
from odradek.records.batch import LOG_OVERHEAD, read_prefix
from odradek.records.codec import SimpleRecord, build_batch, decode_batch
from odradek.records.control import ControlType, control_type
from odradek.storage.log import Log

logger = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
#: Kafka's ``offsets.topic.segment.bytes`` default.
OFFSETS_TOPIC_SEGMENT_BYTES = 100 * 1024 * 1024
#: How much of the log one read takes while loading.
LOAD_CHUNK_BYTES = 1024 * 1024

R = TypeVar("R")
_Waiting = asyncio.Future[JoinGroupResult | SyncGroupResult]
_KeyValue = tuple[bytes | None, bytes | None]


def offsets_topic_configs() -> dict[str, str]:
    """The topic configs ``__consumer_offsets`` is created with (Kafka's)."""
    return {"cleanup.policy": "compact", "segment.bytes": str(OFFSETS_TOPIC_SEGMENT_BYTES)}


def read_coordinator_records(
    log: Log, end_offset: int, pending: dict[int, list[_KeyValue]] | None = None
) -> list[_KeyValue]:
    """Every (key, value) of ``log`` below ``end_offset`` in offset order, for
    ``GroupCoordinator.load``. The records of a transactional batch (TxnOffsetCommit) count
    at their producer's COMMIT marker and are dropped at its ABORT marker; those of
    transactions still open at ``end_offset`` go to ``pending`` by producer id.

    Raises:
        CorruptRecordError: a batch does not decode.
    """
    records: list[_KeyValue] = []
    open_txns: dict[int, list[_KeyValue]] = {} if pending is None else pending
    offset = log.log_start_offset
    while offset < end_offset:
        data = log.read(offset, LOAD_CHUNK_BYTES, max_offset=end_offset).read_bytes()
        position = 0
        while len(data) - position >= LOG_OVERHEAD:
            _, size = read_prefix(data, position)
            if position + size > len(data):
                break  # the read ended inside this batch: read it again next time
            batch = decode_batch(data, position)
            header = batch.header
            if header.is_transactional:
                kind = control_type(data, header, position) if header.is_control else None
                txn = open_txns.pop(header.producer_id, []) if kind is not None else None
                if kind is None:
                    open_txns.setdefault(header.producer_id, []).extend(
                        (record.key, record.value) for record in batch.records
                    )
                elif kind == ControlType.COMMIT and txn:
                    records.extend(txn)
            elif not header.is_control:
                records.extend((record.key, record.value) for record in batch.records)
            offset = batch.header.next_offset
            position += size
        if position == 0:
            break  # nothing more below end_offset (compacted away)
    return records


#: How often a loading coordinator looks whether the high watermark reached the log end offset
#: it must replay to (a few fetch rounds of its followers after a leader change).
_HIGH_WATERMARK_POLL_S = 0.01


@dataclass(eq=False)
class _Shard:
    """One ``__consumer_offsets`` partition led here and its coordinator."""

    index: int
    partition: Partition
    coordinator: GroupCoordinator
    loaded: bool = False
    failed: bool = False
    waiting: dict[int, _Waiting] = field(default_factory=dict)
    timer: asyncio.TimerHandle | None = None
    load_task: asyncio.Task[None] | None = None
    #: The offset the high watermark must reach for every append so far to be committed.
    written_offset: int = 0
    #: TxnOffsetCommit records of open transactions, by producer id (``txn_offsets``).
    txn_offsets: dict[int, list[_KeyValue]] = field(default_factory=dict)
    #: Markers that arrived while the shard loaded: (producer id, commit).
    deferred_markers: list[tuple[int, bool]] = field(default_factory=list)


class GroupCoordinatorRuntime:
    """The shards of this broker and the way requests reach them (see the module docstring).

    Args:
        config: the broker's settings (``offsets.topic.*``, ``group.*``).
        topics: creates ``__consumer_offsets``.
        replicas: the partitions this broker leads.
        clock: the time coordinators see.
        purgatory: woken after each append, for fetchers of ``__consumer_offsets``.
        group_config: the coordinators' settings (default: from ``config``).
        in_touch: whether this broker's ZooKeeper connection is up (a cluster); while it is
            not, every group answers NOT_COORDINATOR.

    Legal call order: ``start`` once on the loop, then requests, then ``stop``.
    """

    def __init__(
        self,
        config: BrokerConfig,
        topics: TopicManager,
        replicas: ReplicaManager,
        clock: Clock,
        *,
        purgatory: FetchPurgatory | None = None,
        group_config: GroupConfig | None = None,
        in_touch: Callable[[], bool] | None = None,
    ) -> None:
        self._config = config
        self._in_touch = in_touch
        self._topics = topics
        self._replicas = replicas
        self._clock = clock
        self._purgatory = purgatory
        self._group_config = group_config or config.group_config
        self._acks = parse_acks(config.offsets_commit_required_acks)
        self._shards: dict[int, _Shard] = {}
        self._stopped = False

    # --- life cycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Takes the shards of an existing ``__consumer_offsets`` (loading in the background)."""
        if self._topics.exists(OFFSETS_TOPIC):
            self._take_led_partitions()

    async def stop(self) -> None:
        """Cancels timers and loads; answers every waiting request NOT_COORDINATOR."""
        self._stopped = True
        tasks = []
        for shard in self._shards.values():
            self._release_shard(shard)
            if shard.load_task is not None:
                shard.load_task.cancel()
                tasks.append(shard.load_task)
        self._shards.clear()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def ensure_offsets_topic(self) -> bool:
        """Creates ``__consumer_offsets`` if missing and takes its partitions; returns whether
        the topic exists now (False when it cannot be created, e.g. too few brokers for
        ``offsets.topic.replication.factor``)."""
        if self._stopped:
            return False
        if not self._topics.exists(OFFSETS_TOPIC):
            live = {b.broker_id for b in self._topics.metadata.registered_brokers()}
            live.add(self._config.broker_id)
            factor = max(1, min(self._config.offsets_topic_replication_factor, len(live)))
            try:
                self._topics.create_topic(
                    OFFSETS_TOPIC,
                    self._config.offsets_topic_num_partitions,
                    factor,
                    configs=offsets_topic_configs(),
                )
            except KafkaError as error:
                if error.error_code is not ErrorCode.TOPIC_ALREADY_EXISTS:
                    logger.warning("cannot create %s: %s", OFFSETS_TOPIC, error)
                    return False
        self._take_led_partitions()
        return True

    def _take_led_partitions(self) -> None:
        for index in range(self._topics.partition_count(OFFSETS_TOPIC)):
            if index in self._shards:
                continue
            partition = self._replicas.get(TopicPartition(OFFSETS_TOPIC, index))
            if partition is not None and partition.is_leader:
                self._become_leader(index, partition)

    def take_partition(self, index: int) -> None:
        """This broker became the leader of ``__consumer_offsets`` partition ``index``
        (cluster mode): load its groups."""
        partition = self._replicas.get(TopicPartition(OFFSETS_TOPIC, index))
        if self._stopped or partition is None or not partition.is_leader:
            return
        shard = self._shards.get(index)
        if shard is not None and shard.partition is partition:
            return
        if shard is not None:
            self.release_partition(index)
        self._become_leader(index, partition)

    def release_partition(self, index: int) -> None:
        """This broker stopped leading ``__consumer_offsets`` partition ``index``: its groups
        answer NOT_COORDINATOR from now on."""
        shard = self._shards.pop(index, None)
        if shard is None:
            return
        self._release_shard(shard)
        if shard.load_task is not None:
            shard.load_task.cancel()

    def _become_leader(self, index: int, partition: Partition) -> None:
        shard = _Shard(index, partition, GroupCoordinator(self._group_config))
        self._shards[index] = shard
        if partition.log_end_offset <= partition.log_start_offset:
            self._finish_load(shard, [])  # nothing to replay: ready at once
        else:
            shard.load_task = asyncio.get_running_loop().create_task(self._load(shard))

    async def _load(self, shard: _Shard) -> None:
        """Replays the partition up to the log end offset it had when this broker became its
        leader, once the high watermark has reached it (COORDINATOR_LOAD_IN_PROGRESS until
        then). A new leader's high watermark lags: it is what it knew as a follower, and
        commits its old leader acknowledged may lie above it; replaying only up to it answered
        OffsetFetch with offsets older than acknowledged commits (found by the fault suite).
        Every record below that end offset was written before this leadership, and the new
        leader's log is the one its followers converge to."""
        loop = asyncio.get_running_loop()
        started_ms = self._clock.monotonic_ms()
        partition = shard.partition
        target = partition.log_end_offset
        while partition.high_watermark < target:
            await asyncio.sleep(_HIGH_WATERMARK_POLL_S)  # cancelled when the shard is released
        try:
            records = await loop.run_in_executor(
                None,
                read_coordinator_records,
                partition.log,
                target,
                shard.txn_offsets,
            )
            self._finish_load(shard, records)
            for producer_id, commit in shard.deferred_markers:
                self.complete_transaction(shard.index, producer_id, commit)
            shard.deferred_markers.clear()
        except asyncio.CancelledError:
            raise
        except Exception:
            shard.failed = True
            logger.exception(
                "%s-%d: loading the group coordinator failed", OFFSETS_TOPIC, shard.index
            )
            return
        logger.info(
            "%s-%d: loaded %d records in %d ms",
            OFFSETS_TOPIC,
            shard.index,
            len(records),
            self._clock.monotonic_ms() - started_ms,
        )

    def _finish_load(self, shard: _Shard, records: Iterable[_KeyValue]) -> None:
        shard.coordinator.load(records, self._clock.now_ms())
        shard.loaded = True
        shard.failed = False
        self._reschedule(shard)

    # --- routing --------------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition of a group."""
        count = (
            self._topics.partition_count(OFFSETS_TOPIC)
            if self._topics.exists(OFFSETS_TOPIC)
            else self._config.offsets_topic_num_partitions
        )
        return partition_for_group(group_id, count)

    def is_coordinator_for(self, group_id: str) -> bool:
        """Whether this broker leads the group's partition (loaded or not)."""
        return not self._stopped and self.partition_for(group_id) in self._shards

    def _shard_for(self, group_id: str) -> _Shard:
        """The loaded shard of a group.

        Raises:
            KafkaError: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS.
        """
        if self._stopped:
            raise KafkaError("the broker is stopping", code=ErrorCode.NOT_COORDINATOR)
        if self._in_touch is not None and not self._in_touch():
            # Cut off from ZooKeeper, this broker may have lost the partition's leadership
            # already; answering from memory would hand out offsets older than the new
            # coordinator's (found by the fault suite). Clients look the coordinator up again.
            raise KafkaError(
                "this broker lost touch with ZooKeeper; the group may have moved",
                code=ErrorCode.NOT_COORDINATOR,
            )
        if not self._topics.exists(OFFSETS_TOPIC):
            raise KafkaError(
                f"{OFFSETS_TOPIC} does not exist", code=ErrorCode.COORDINATOR_NOT_AVAILABLE
            )
        shard = self._shards.get(self.partition_for(group_id))
        if shard is None:
            raise KafkaError(f"not the coordinator of {group_id!r}", code=ErrorCode.NOT_COORDINATOR)
        if shard.failed:
            raise KafkaError(
                "the coordinator failed to load", code=ErrorCode.COORDINATOR_NOT_AVAILABLE
            )
        if not shard.loaded:
            raise KafkaError("loading", code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        return shard

    async def run(
        self, group_id: str, operation: Callable[[GroupCoordinator, int], Outcome[R]]
    ) -> R:
        """Runs ``operation(coordinator, now_ms)`` on the group's shard, appends its records,
        releases its completions and returns its response (waiting for a ``Pending`` one).

        Raises:
            KafkaError: the shard's error (see ``_shard_for``), or NOT_COORDINATOR when the
                append failed.
        """
        shard = self._shard_for(group_id)
        outcome = operation(shard.coordinator, self._clock.now_ms())
        waiting: _Waiting | None = None
        if isinstance(outcome.response, Pending):
            waiting = asyncio.get_running_loop().create_future()
            shard.waiting[outcome.response.ticket] = waiting
        try:
            committing = self._apply(shard, outcome)
        except KafkaError:
            if waiting is not None:
                waiting.exception()  # answered by the raise below, not by the future
            raise
        if waiting is not None:
            return await waiting  # type: ignore[return-value]  # the ticket's request type
        if committing is not None:
            code = await committing
            if code:
                raise KafkaError("the records were not replicated", code=code)
        assert not isinstance(outcome.response, Pending)
        if outcome.response is None:
            raise KafkaError("the coordinator has failed over", code=ErrorCode.NOT_COORDINATOR)
        return outcome.response

    async def run_each(
        self,
        group_ids: Sequence[str],
        operation: Callable[[GroupCoordinator, int, list[str]], Outcome[R]],
    ) -> tuple[list[tuple[list[str], R]], dict[str, ErrorCode]]:
        """Runs ``operation(coordinator, now_ms, group_ids_of_that_shard)`` once per shard
        for operations that answer without a ``Pending`` ticket (DescribeGroups,
        DeleteGroups); returns, once each shard's records are committed, the responses with
        the groups they cover, and the error of each group no shard took."""
        by_shard: dict[int, list[str]] = {}
        errors: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            try:
                shard = self._shard_for(group_id)
            except KafkaError as error:
                errors[group_id] = error.error_code
                continue
            by_shard.setdefault(shard.index, []).append(group_id)
        answered = []
        for index, ids in by_shard.items():
            shard = self._shards[index]
            outcome = operation(shard.coordinator, self._clock.now_ms(), ids)
            try:
                committing = self._apply(shard, outcome)
            except KafkaError as error:
                errors.update(dict.fromkeys(ids, error.error_code))
                continue
            assert not isinstance(outcome.response, Pending)
            assert outcome.response is not None
            answered.append((ids, outcome.response, committing))
        answers = []
        for ids, response, committing in answered:
            code = ErrorCode.NONE if committing is None else await committing
            if code:
                errors.update(dict.fromkeys(ids, code))
            else:
                answers.append((ids, response))
        return answers, errors

    def list_groups(
        self, states_filter: Sequence[str] = (), types_filter: Sequence[str] = ()
    ) -> ListGroupsResult:
        """Every group of every loaded shard; COORDINATOR_LOAD_IN_PROGRESS (with the groups
        known so far) while a shard loads."""
        groups: list[ListedGroup] = []
        error = ErrorCode.NONE
        for shard in self._shards.values():
            if not shard.loaded:
                error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
                continue
            outcome = shard.coordinator.list_groups(states_filter, types_filter)
            assert isinstance(outcome.response, ListGroupsResult)
            groups.extend(outcome.response.groups)
        return ListGroupsResult(error, tuple(groups))

    # --- appends, completions and time ----------------------------------------------------

    def _apply(self, shard: _Shard, outcome: Outcome[R]) -> asyncio.Future[ErrorCode] | None:
        """Appends the outcome's records and re-arms the timer; releases its completions now
        when the shard's appends are committed (None returned), or else once they are: the
        future returned then tells the outcome's error (NONE, or the coordinator error of a
        failed replication) when its completions were released or failed.

        Raises:
            KafkaError: NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE when the append failed
                (the shard then reloads).
        """
        if outcome.records:
            try:
                self._append(shard, outcome.records)
            except Exception as error:
                logger.warning(
                    "%s-%d: append failed (%s); reloading the coordinator",
                    OFFSETS_TOPIC,
                    shard.index,
                    error,
                )
                self._release_shard(shard)
                shard.loaded = False
                shard.load_task = asyncio.get_running_loop().create_task(self._load(shard))
                code = (
                    coordinator_error(error.error_code)
                    if isinstance(error, KafkaError)
                    else ErrorCode.NOT_COORDINATOR
                )
                raise KafkaError("the append failed", code=code) from error
        self._reschedule(shard)
        partition = shard.partition
        if not self._acks.waits_for_replication or partition.high_watermark >= shard.written_offset:
            self._complete(shard, outcome.completions)
            return None
        committed: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self._replicas.delayed_produce.watch(
            [(partition, shard.written_offset)],
            self._config.offsets_commit_timeout_ms,
            functools.partial(self._on_replicated, shard, outcome.completions, committed),
        )
        return committed

    def _on_replicated(
        self,
        shard: _Shard,
        completions: Sequence[Completion],
        committed: asyncio.Future[ErrorCode],
        errors: list[ErrorCode],
    ) -> None:
        """The delayed produce of an outcome settled: release or fail its completions."""
        code = coordinator_error(errors[0]) if errors[0] else ErrorCode.NONE
        if code:
            logger.warning(
                "%s-%d: records not replicated (%s): answering %s",
                OFFSETS_TOPIC,
                shard.index,
                errors[0].name,
                code.name,
            )
            for completion in completions:
                waiting = shard.waiting.pop(completion.ticket, None)
                if waiting is not None and not waiting.done():
                    waiting.set_exception(KafkaError("not replicated", code=code))
        else:
            self._complete(shard, completions)
        if not committed.done():
            committed.set_result(code)

    def _complete(self, shard: _Shard, completions: Sequence[Completion]) -> None:
        for completion in completions:
            waiting = shard.waiting.pop(completion.ticket, None)
            if waiting is not None and not waiting.done():
                waiting.set_result(completion.response)

    def _append(self, shard: _Shard, records: Sequence[CoordinatorRecord]) -> None:
        now_ms = self._clock.now_ms()
        batch = build_batch(SimpleRecord(now_ms, *record.encode()) for record in records)
        check_enough_replicas(self._acks, shard.partition)
        shard.partition.append_as_leader(batch)
        shard.written_offset = shard.partition.log_end_offset
        if self._purgatory is not None:
            self._purgatory.notify(shard.partition.topic_partition)

    def _release_shard(self, shard: _Shard) -> None:
        """Cancels the shard's timer and answers its waiting requests NOT_COORDINATOR."""
        if shard.timer is not None:
            shard.timer.cancel()
            shard.timer = None
        waiting, shard.waiting = shard.waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(
                    KafkaError("the coordinator moved", code=ErrorCode.NOT_COORDINATOR)
                )

    def _reschedule(self, shard: _Shard) -> None:
        if shard.timer is not None:
            shard.timer.cancel()
            shard.timer = None
        deadline_ms = shard.coordinator.next_deadline_ms()
        if deadline_ms is None or self._stopped:
            return
        delay_s = max(0, deadline_ms - self._clock.now_ms()) / 1000
        shard.timer = asyncio.get_running_loop().call_later(delay_s, self._on_timer, shard)

    def _on_timer(self, shard: _Shard) -> None:
        shard.timer = None
        if self._shards.get(shard.index) is not shard or not shard.loaded:
            return
        with contextlib.suppress(KafkaError):  # logged by _apply; the shard reloads
            self._apply(shard, shard.coordinator.tick(self._clock.now_ms()))

    # --- transactional offsets (KIP-98) ---------------------------------------------------

    async def txn_offset_commit(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[OffsetCommitPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: appends the offsets as a transactional batch of the producer
        and keeps them pending until its marker (``complete_transaction``); returns the
        error of each partition once they are replicated.

        Raises:
            KafkaError: the shard's error (see ``_shard_for``), or the coordinator error of
                a failed append or replication.
        """
        shard = self._shard_for(group_id)
        now_ms = self._clock.now_ms()
        errors: dict[TopicPartition, ErrorCode] = {}
        pending: list[_KeyValue] = []
        max_bytes = self._group_config.offset_metadata_max_bytes
        for requested in partitions:
            tp = TopicPartition(requested.topic, requested.partition)
            metadata = requested.committed_metadata or ""
            if java_string_length(metadata) > max_bytes:
                errors[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            value = OffsetCommitValue(
                requested.committed_offset,
                requested.committed_leader_epoch,
                metadata,
                now_ms,
                -1,
            )
            pending.append(
                CoordinatorRecord(OffsetCommitKey(group_id, tp.topic, tp.partition), value).encode()
            )
            errors[tp] = ErrorCode.NONE
        if not pending:
            return errors
        batch = build_batch(
            (SimpleRecord(now_ms, key, value) for key, value in pending),
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            transactional=True,
        )
        partition = shard.partition
        try:
            check_enough_replicas(self._acks, partition)
            partition.append_transactional_as_coordinator(batch)
        except KafkaError as error:
            raise KafkaError(
                "the append failed", code=coordinator_error(error.error_code)
            ) from error
        except OSError as error:
            raise KafkaError("the append failed", code=ErrorCode.NOT_COORDINATOR) from error
        shard.txn_offsets.setdefault(producer_id, []).extend(pending)
        shard.written_offset = partition.log_end_offset
        if self._acks.waits_for_replication:
            code = (
                await self._replicas.delayed_produce.wait(
                    [(partition, shard.written_offset)], self._config.offsets_commit_timeout_ms
                )
            )[0]
            if code:
                raise KafkaError("not replicated", code=coordinator_error(code))
        return errors

    def complete_transaction(self, index: int, producer_id: int, commit: bool) -> None:
        """A marker of ``producer_id`` was appended to ``__consumer_offsets`` partition
        ``index`` here: its pending offsets take effect (COMMIT) or are dropped (ABORT)."""
        shard = self._shards.get(index)
        if shard is None:
            return
        if not shard.loaded:
            shard.deferred_markers.append((producer_id, commit))
            return
        records = shard.txn_offsets.pop(producer_id, [])
        if commit and records:
            shard.coordinator.apply_offset_records(records, self._clock.now_ms())

    # --- inspection -----------------------------------------------------------------------

    def coordinators(self) -> list[GroupCoordinator]:
        """The loaded coordinators, for inspection (metrics): callers change nothing."""
        return [shard.coordinator for shard in self._shards.values() if shard.loaded]

    def rebalance_history(self, group_id: str) -> tuple[RebalanceRecord, ...] | None:
        """The group's last rebalances (``group.history``); None when this broker does not
        coordinate it or does not know it.

        Raises:
            KafkaError: as the group APIs (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...).
        """
        coordinator = self._shard_for(group_id).coordinator
        for group in coordinator.groups():
            if group.group_id == group_id:
                return group.rebalances.records()
        for consumer_group in coordinator.consumer_groups():
            if consumer_group.group_id == group_id:
                return consumer_group.rebalances.records()
        return None

    def statistics(self) -> dict[str, int]:
        """Shards (led, loading) and the waiting requests."""
        return {
            "shards": len(self._shards),
            "loading": sum(1 for shard in self._shards.values() if not shard.loaded),
            "waiting": sum(len(shard.waiting) for shard in self._shards.values()),
        }


def coordinator_error(code: ErrorCode) -> ErrorCode:
    """The error a group request gets when its records were not appended or not replicated
    (Kafka's group coordinator mapping)."""
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.INVALID_FETCH_SIZE,
    ):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    if code in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.NOT_COORDINATOR
