"""The group coordinator's runtime: the pure coordinators of ``__consumer_offsets`` on the
broker's event loop.

Owns one ``GroupCoordinator`` per ``__consumer_offsets`` partition this broker leads (a
*shard*), the creation of that topic on first need, the loading of each shard from its log,
the appends of the records the coordinators return, the requests waiting on a ``Pending``
ticket, and one timer per shard driven by ``next_deadline_ms``.

The rule it keeps (``results``' contract): the records of an outcome are appended to the
shard's partition as one batch (acks=all) before its response and completions are released;
if the append fails, every waiting request of the shard is answered NOT_COORDINATOR and the
shard is rebuilt from its log. While a shard loads, its groups answer
COORDINATOR_LOAD_IN_PROGRESS; a group whose partition this broker does not lead answers
NOT_COORDINATOR; before ``__consumer_offsets`` exists, COORDINATOR_NOT_AVAILABLE.

Loading reads the partition's log up to the high watermark on the default executor (the log
is thread-safe for reads, and nothing appends to a shard that is not loaded), decodes its
batches (control batches skipped, tombstones kept as ``None`` values), then replays them into
the coordinator on the loop. With one replica the high watermark passes an append at once,
so the release follows the append directly; replication will wait for the high watermark here.

Thread safety: the event loop thread only (loading reads the log on the executor).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from odradek._clock import Clock
from odradek._types import TopicPartition
from odradek.broker.config import BrokerConfig
from odradek.broker.group.config import GroupConfig
from odradek.broker.group.coordinator import GroupCoordinator
from odradek.broker.group.records import CoordinatorRecord, partition_for_group
from odradek.broker.group.results import (
    JoinGroupResult,
    ListedGroup,
    ListGroupsResult,
    Outcome,
    Pending,
    SyncGroupResult,
)
from odradek.broker.purgatory import FetchPurgatory
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.replication.partition import ACKS_ALL, Partition
from odradek.broker.topic_manager import TopicManager
from odradek.errors import ErrorCode, KafkaError
from odradek.records.batch import LOG_OVERHEAD, read_prefix
from odradek.records.codec import SimpleRecord, build_batch, decode_batch
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


def read_coordinator_records(log: Log, end_offset: int) -> list[_KeyValue]:
    """Every (key, value) of ``log`` below ``end_offset`` in offset order, control batches
    skipped, for ``GroupCoordinator.load``.

    Raises:
        CorruptRecordError: a batch does not decode.
    """
    records: list[_KeyValue] = []
    offset = log.log_start_offset
    while offset < end_offset:
        data = log.read(offset, LOAD_CHUNK_BYTES, max_offset=end_offset).read_bytes()
        position = 0
        while len(data) - position >= LOG_OVERHEAD:
            _, size = read_prefix(data, position)
            if position + size > len(data):
                break  # the read ended inside this batch: read it again next time
            batch = decode_batch(data, position)
            if not batch.header.is_control:
                records.extend((record.key, record.value) for record in batch.records)
            offset = batch.header.next_offset
            position += size
        if position == 0:
            break  # nothing more below end_offset (compacted away)
    return records


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


class GroupCoordinatorRuntime:
    """The shards of this broker and the way requests reach them (see the module docstring).

    Args:
        config: the broker's settings (``offsets.topic.*``, ``group.*``).
        topics: creates ``__consumer_offsets``.
        replicas: the partitions this broker leads.
        clock: the time coordinators see.
        purgatory: woken after each append, for fetchers of ``__consumer_offsets``.
        group_config: the coordinators' settings (default: from ``config``).

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
    ) -> None:
        self._config = config
        self._topics = topics
        self._replicas = replicas
        self._clock = clock
        self._purgatory = purgatory
        self._group_config = group_config or config.group_config
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
            try:
                self._topics.create_topic(
                    OFFSETS_TOPIC,
                    self._config.offsets_topic_num_partitions,
                    self._config.offsets_topic_replication_factor,
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
        if partition.high_watermark <= partition.log_start_offset:
            self._finish_load(shard, [])  # nothing to replay: ready at once
        else:
            shard.load_task = asyncio.get_running_loop().create_task(self._load(shard))

    async def _load(self, shard: _Shard) -> None:
        loop = asyncio.get_running_loop()
        started_ms = self._clock.monotonic_ms()
        try:
            records = await loop.run_in_executor(
                None,
                read_coordinator_records,
                shard.partition.log,
                shard.partition.high_watermark,
            )
            self._finish_load(shard, records)
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
            self._apply(shard, outcome)
        except KafkaError:
            if waiting is not None:
                waiting.exception()  # answered by the raise below, not by the future
            raise
        if waiting is not None:
            return await waiting  # type: ignore[return-value]  # the ticket's request type
        assert not isinstance(outcome.response, Pending)
        if outcome.response is None:
            raise KafkaError("the coordinator has failed over", code=ErrorCode.NOT_COORDINATOR)
        return outcome.response

    def run_each(
        self,
        group_ids: Sequence[str],
        operation: Callable[[GroupCoordinator, int, list[str]], Outcome[R]],
    ) -> tuple[list[tuple[list[str], R]], dict[str, ErrorCode]]:
        """Runs ``operation(coordinator, now_ms, group_ids_of_that_shard)`` once per shard
        for operations that answer at once (DescribeGroups, DeleteGroups); returns the
        responses with the groups they cover, and the error of each group no shard took."""
        by_shard: dict[int, list[str]] = {}
        errors: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            try:
                shard = self._shard_for(group_id)
            except KafkaError as error:
                errors[group_id] = error.error_code
                continue
            by_shard.setdefault(shard.index, []).append(group_id)
        answers = []
        for index, ids in by_shard.items():
            shard = self._shards[index]
            outcome = operation(shard.coordinator, self._clock.now_ms(), ids)
            try:
                self._apply(shard, outcome)
            except KafkaError as error:
                errors.update(dict.fromkeys(ids, error.error_code))
                continue
            assert not isinstance(outcome.response, Pending)
            assert outcome.response is not None
            answers.append((ids, outcome.response))
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

    def _apply(self, shard: _Shard, outcome: Outcome[R]) -> None:
        """Appends the outcome's records, then releases its completions and re-arms the timer.

        Raises:
            KafkaError: NOT_COORDINATOR when the append failed (the shard then reloads).
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
                raise KafkaError("the append failed", code=ErrorCode.NOT_COORDINATOR) from error
        for completion in outcome.completions:
            waiting = shard.waiting.pop(completion.ticket, None)
            if waiting is not None and not waiting.done():
                waiting.set_result(completion.response)
        self._reschedule(shard)

    def _append(self, shard: _Shard, records: Sequence[CoordinatorRecord]) -> None:
        now_ms = self._clock.now_ms()
        batch = build_batch(SimpleRecord(now_ms, *record.encode()) for record in records)
        shard.partition.append_as_leader(batch, ACKS_ALL)
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

    # --- inspection -----------------------------------------------------------------------

    def statistics(self) -> dict[str, int]:
        """Shards (led, loading) and the waiting requests."""
        return {
            "shards": len(self._shards),
            "loading": sum(1 for shard in self._shards.values() if not shard.loaded),
            "waiting": sum(len(shard.waiting) for shard in self._shards.values()),
        }
