"""The transaction coordinator's runtime: the pure coordinators of ``__transaction_state`` on
the broker's event loop (the twin of ``broker.group.runtime`` for transactional ids).

Owns one ``TransactionCoordinator`` per ``__transaction_state`` partition this broker leads
(a *shard*), the creation of that topic on first need (compacted, ``transaction.state.log.*``),
loading each shard from its log, appending the records operations return, the marker jobs,
and the periodic abort of timed-out transactions and removal of expired ids.

Rules kept:

- an operation's records are appended as one batch and its response released only once the
  ISR holds them (the high watermark passed them); marker jobs start after that, and a job's
  completion record is appended once all its markers are written. An append or replication
  failure answers NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE (Kafka's mapping) and reloads
  the shard from its log, so memory never runs ahead of what the log holds;
- while a shard loads its ids answer COORDINATOR_LOAD_IN_PROGRESS; an id whose partition this
  broker does not lead, NOT_COORDINATOR; before the topic exists, COORDINATOR_NOT_AVAILABLE;
- failover: a new leader of a partition replays it up to the log end offset it had when it
  took over (once the high watermark got there), then finishes the transactions that were
  being committed or aborted (their markers are sent again: writing a marker twice is
  harmless); open transactions are aborted when their timeout passes. The coordinator epoch
  is the partition's leader epoch.

Thread safety: the event loop thread only (loading reads the log on the executor).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from odradek._clock import Clock
from odradek._types import TopicPartition
from odradek.broker.acks import check_enough_replicas, parse_acks
from odradek.broker.group.runtime import coordinator_error, read_coordinator_records
from odradek.broker.ports import ProducerIdsPort
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.replication.partition import Partition
from odradek.broker.topic_manager import TopicManager
from odradek.broker.txn.config import TransactionConfig, transaction_state_topic_configs
from odradek.broker.txn.coordinator import (
    InitProducerIdResult,
    MarkerJob,
    TransactionCoordinator,
    TxnOutcome,
)
from odradek.broker.txn.markers import MarkerWriter
from odradek.broker.txn.records import (
    TRANSACTION_STATE_TOPIC,
    TransactionMetadata,
    partition_for_transactional_id,
)
from odradek.errors import ErrorCode, KafkaError, MetadataStoreError
from odradek.records.codec import SimpleRecord, build_batch

__all__ = ["TransactionCoordinatorRuntime"]

logger = logging.getLogger(__name__)

R = TypeVar("R")
_HIGH_WATERMARK_POLL_S = 0.01
_ACKS_ALL = parse_acks(-1)


@dataclass(eq=False)
class _Shard:
    index: int
    partition: Partition
    coordinator: TransactionCoordinator
    coordinator_epoch: int
    loaded: bool = False
    load_task: asyncio.Task[None] | None = None
    jobs: set[asyncio.Task[None]] = field(default_factory=set)


class TransactionCoordinatorRuntime:
    """See the module docstring.

    Args:
        broker_id: this broker.
        config: the ``transaction.*`` settings.
        topics: creates ``__transaction_state``.
        replicas: the partitions this broker leads.
        clock: the time coordinators see.
        markers: sends the markers.
        producer_ids: where new producer ids come from (None: a local counter, tests).
        live_brokers: how many brokers there are (caps the replication factor).
        timeout_ms: how long an append waits for its replication.
        in_touch: whether this broker's ZooKeeper connection is up (False: NOT_COORDINATOR).

    Legal call order: ``start`` once on the loop, then requests, then ``stop``.
    """

    def __init__(
        self,
        broker_id: int,
        config: TransactionConfig,
        topics: TopicManager,
        replicas: ReplicaManager,
        clock: Clock,
        markers: MarkerWriter,
        *,
        producer_ids: ProducerIdsPort | None = None,
        live_brokers: Callable[[], int] = lambda: 1,
        timeout_ms: int = 5_000,
        in_touch: Callable[[], bool] | None = None,
    ) -> None:
        self._broker_id = broker_id
        self.config = config
        self._topics = topics
        self._replicas = replicas
        self._clock = clock
        self.markers = markers
        self._producer_ids = producer_ids
        self._next_local_id = 1 << 40
        self._live_brokers = live_brokers
        self._timeout_ms = timeout_ms
        self._in_touch = in_touch
        self._shards: dict[int, _Shard] = {}
        self._stopped = False
        self._ticker: asyncio.Task[None] | None = None

    # --- life cycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Takes the shards of an existing ``__transaction_state`` and starts the timer."""
        if self._topics.exists(TRANSACTION_STATE_TOPIC):
            self._take_led_partitions()
        self._ticker = asyncio.get_running_loop().create_task(self._tick_forever())

    async def stop(self) -> None:
        self._stopped = True
        tasks: list[asyncio.Task[None]] = []
        if self._ticker is not None:
            self._ticker.cancel()
            tasks.append(self._ticker)
        for shard in self._shards.values():
            tasks.extend(self._cancel(shard))
        self._shards.clear()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self.markers.close()

    def ensure_topic(self) -> bool:
        """Creates ``__transaction_state`` if missing and takes the partitions led here;
        returns whether the topic exists now."""
        if self._stopped:
            return False
        if not self._topics.exists(TRANSACTION_STATE_TOPIC):
            config = self.config
            factor = max(
                1, min(config.transaction_state_log_replication_factor, self._live_brokers())
            )
            try:
                self._topics.create_topic(
                    TRANSACTION_STATE_TOPIC,
                    config.transaction_state_log_num_partitions,
                    factor,
                    configs=transaction_state_topic_configs(config, factor),
                )
            except KafkaError as error:
                if error.error_code is not ErrorCode.TOPIC_ALREADY_EXISTS:
                    logger.warning("cannot create %s: %s", TRANSACTION_STATE_TOPIC, error)
                    return False
        self._take_led_partitions()
        return True

    def _take_led_partitions(self) -> None:
        for index in range(self._topics.partition_count(TRANSACTION_STATE_TOPIC)):
            if index not in self._shards:
                self.take_partition(index)

    def take_partition(self, index: int) -> None:
        """This broker leads ``__transaction_state`` partition ``index``: load its ids."""
        partition = self._replicas.get(TopicPartition(TRANSACTION_STATE_TOPIC, index))
        if self._stopped or partition is None or not partition.is_leader:
            return
        shard = self._shards.get(index)
        if (
            shard is not None
            and shard.partition is partition
            and shard.coordinator_epoch == partition.leader_epoch
        ):
            return
        if shard is not None:
            self.release_partition(index)
        shard = _Shard(
            index,
            partition,
            TransactionCoordinator(self.config.transaction_max_timeout_ms),
            partition.leader_epoch,
        )
        self._shards[index] = shard
        shard.load_task = asyncio.get_running_loop().create_task(self._load(shard))

    def release_partition(self, index: int) -> None:
        """This broker stopped leading partition ``index``: its ids answer NOT_COORDINATOR."""
        shard = self._shards.pop(index, None)
        if shard is not None:
            self._cancel(shard)

    def _cancel(self, shard: _Shard) -> list[asyncio.Task[None]]:
        tasks = list(shard.jobs)
        if shard.load_task is not None:
            tasks.append(shard.load_task)
        for task in tasks:
            task.cancel()
        return tasks

    async def _load(self, shard: _Shard) -> None:
        partition = shard.partition
        target = partition.log_end_offset
        while partition.high_watermark < target:
            await asyncio.sleep(_HIGH_WATERMARK_POLL_S)
        try:
            records = await asyncio.get_running_loop().run_in_executor(
                None, read_coordinator_records, partition.log, target
            )
            jobs = shard.coordinator.load(records)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("%s-%d: loading failed", TRANSACTION_STATE_TOPIC, shard.index)
            return
        shard.loaded = True
        logger.info(
            "%s-%d: loaded %d transactional ids (coordinator epoch %d); finishing %d",
            TRANSACTION_STATE_TOPIC,
            shard.index,
            len(shard.coordinator.transactions()),
            shard.coordinator_epoch,
            len(jobs),
        )
        for job in jobs:
            self._start_job(shard, job)

    # --- routing --------------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        count = (
            self._topics.partition_count(TRANSACTION_STATE_TOPIC)
            if self._topics.exists(TRANSACTION_STATE_TOPIC)
            else self.config.transaction_state_log_num_partitions
        )
        return partition_for_transactional_id(transactional_id, count)

    def is_coordinator_for(self, transactional_id: str) -> bool:
        return not self._stopped and self.partition_for(transactional_id) in self._shards

    def _shard_for(self, transactional_id: str) -> _Shard:
        """The loaded shard of an id.

        Raises:
            KafkaError: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
                COORDINATOR_LOAD_IN_PROGRESS.
        """
        if self._stopped or (self._in_touch is not None and not self._in_touch()):
            raise KafkaError("not the coordinator now", code=ErrorCode.NOT_COORDINATOR)
        if not self._topics.exists(TRANSACTION_STATE_TOPIC):
            raise KafkaError("no transaction state yet", code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
        shard = self._shards.get(self.partition_for(transactional_id))
        if shard is None or not shard.partition.is_leader:
            raise KafkaError(
                f"not the coordinator of {transactional_id!r}", code=ErrorCode.NOT_COORDINATOR
            )
        if not shard.loaded:
            raise KafkaError("loading", code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        return shard

    # --- operations -----------------------------------------------------------------------

    async def run(
        self,
        transactional_id: str,
        operation: Callable[[TransactionCoordinator, int], TxnOutcome[R]],
    ) -> R:
        """Runs ``operation(coordinator, now_ms)`` on the id's shard, appends its records,
        waits for their replication, starts its marker jobs and returns its response.

        Raises:
            KafkaError: the shard's error (see ``_shard_for``), or the coordinator error of
                a failed append or replication.
        """
        shard = self._shard_for(transactional_id)
        outcome = operation(shard.coordinator, self._clock.now_ms())
        await self._commit(shard, outcome)
        return outcome.response

    async def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected_producer_id: int = -1,
        expected_epoch: int = -1,
    ) -> InitProducerIdResult:
        """InitProducerId with a transactional id (a fresh producer id reserved first when
        the id needs one).

        Raises:
            KafkaError: as ``run``; COORDINATOR_NOT_AVAILABLE when no id can be reserved.
        """
        shard = self._shard_for(transactional_id)
        new_id = None
        if shard.coordinator.needs_producer_id(transactional_id):
            new_id = await self._new_producer_id()
        return await self.run(
            transactional_id,
            lambda coordinator, now_ms: coordinator.init_producer_id(
                now_ms,
                transactional_id,
                timeout_ms,
                new_producer_id=new_id,
                expected_producer_id=expected_producer_id,
                expected_epoch=expected_epoch,
            ),
        )

    async def _new_producer_id(self) -> int:
        ids = self._producer_ids
        if ids is None:
            self._next_local_id += 1
            return self._next_local_id
        found = ids.try_next_id()
        if found is not None:
            return found
        try:
            return await asyncio.to_thread(ids.next_id)
        except MetadataStoreError as error:
            raise KafkaError(
                f"cannot reserve producer ids: {error}", code=ErrorCode.COORDINATOR_NOT_AVAILABLE
            ) from None

    def transactions(self) -> tuple[ErrorCode, list[TransactionMetadata]]:
        """Every id of every loaded shard (COORDINATOR_LOAD_IN_PROGRESS while one loads)."""
        error = ErrorCode.NONE
        found: list[TransactionMetadata] = []
        for shard in self._shards.values():
            if not shard.loaded:
                error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
                continue
            found.extend(shard.coordinator.transactions())
        return error, found

    def describe(self, transactional_id: str) -> TransactionMetadata:
        """The state of one id.

        Raises:
            KafkaError: as ``_shard_for``; TRANSACTIONAL_ID_NOT_FOUND.
        """
        meta = self._shard_for(transactional_id).coordinator.get(transactional_id)
        if meta is None:
            raise KafkaError(
                f"unknown transactional id {transactional_id!r}",
                code=ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
            )
        return meta

    # --- appends and markers --------------------------------------------------------------

    async def _commit(self, shard: _Shard, outcome: TxnOutcome[R]) -> None:
        """Appends ``outcome``'s records, waits until they are replicated, then starts its
        jobs (see ``run``)."""
        if outcome.records:
            partition = shard.partition
            try:
                batch = build_batch(
                    SimpleRecord(self._clock.now_ms(), key, value) for key, value in outcome.records
                )
                check_enough_replicas(_ACKS_ALL, partition)
                partition.append_as_leader(batch)
            except Exception as error:
                code = (
                    coordinator_error(error.error_code)
                    if isinstance(error, KafkaError)
                    else ErrorCode.NOT_COORDINATOR
                )
                self._reload(shard, f"append failed ({error})")
                raise KafkaError("the append failed", code=code) from error
            errors = await self._replicas.delayed_produce.wait(
                [(partition, partition.log_end_offset)], self._timeout_ms
            )
            if errors[0]:
                self._reload(shard, f"records not replicated ({errors[0].name})")
                raise KafkaError("not replicated", code=coordinator_error(errors[0]))
        for job in outcome.markers:
            self._start_job(shard, job)

    def _reload(self, shard: _Shard, why: str) -> None:
        if self._shards.get(shard.index) is not shard:
            return
        logger.warning("%s-%d: %s; reloading", TRANSACTION_STATE_TOPIC, shard.index, why)
        for task in shard.jobs:
            task.cancel()
        shard.loaded = False
        shard.coordinator = TransactionCoordinator(self.config.transaction_max_timeout_ms)
        shard.load_task = asyncio.get_running_loop().create_task(self._load(shard))

    def _start_job(self, shard: _Shard, job: MarkerJob) -> None:
        task = asyncio.get_running_loop().create_task(self._run_job(shard, job))
        shard.jobs.add(task)
        task.add_done_callback(shard.jobs.discard)

    async def _run_job(self, shard: _Shard, job: MarkerJob) -> None:
        def alive() -> bool:
            return self._shards.get(shard.index) is shard and shard.loaded

        while alive():
            written = await self.markers.write(job, shard.coordinator_epoch, alive)
            if not written:
                return
            try:
                outcome = shard.coordinator.complete(self._clock.now_ms(), job)
                await self._commit(shard, outcome)
                return
            except KafkaError as error:
                logger.info("completing %s: %s", job.transactional_id, error)
                return  # the shard reloads and resumes the job

    # --- time -----------------------------------------------------------------------------

    async def _tick_forever(self) -> None:
        config = self.config
        interval_ms = config.transaction_abort_timed_out_transaction_cleanup_interval_ms
        expire_every = max(
            1, config.transaction_remove_expired_transaction_cleanup_interval_ms // interval_ms
        )
        ticks = 0
        while not self._stopped:
            await asyncio.sleep(interval_ms / 1000)
            ticks += 1
            for shard in list(self._shards.values()):
                if not shard.loaded:
                    continue
                now_ms = self._clock.now_ms()
                with contextlib.suppress(KafkaError):  # logged; the shard reloads
                    aborted = shard.coordinator.abort_timed_out(now_ms)
                    if aborted.response:
                        logger.info("aborting timed-out transactions %s", aborted.response)
                    await self._commit(shard, aborted)
                    if ticks % expire_every == 0:
                        expired = shard.coordinator.expire_ids(
                            now_ms, config.transactional_id_expiration_ms
                        )
                        await self._commit(shard, expired)

    def statistics(self) -> dict[str, int]:
        return {
            "shards": len(self._shards),
            "loading": sum(1 for shard in self._shards.values() if not shard.loaded),
            "marker_jobs": sum(len(shard.jobs) for shard in self._shards.values()),
            "markers_written": self.markers.markers_written,
        }
