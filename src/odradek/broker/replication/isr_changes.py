"""``IsrChangeManager``: a leader's ISR changes on their way to the controller, and the periodic
ISR shrink check (Kafka's ``AlterPartitionManager`` and ``isr-expiration`` task).

- ``submit`` (a ``Partition``'s ``on_isr_change``) queues a proposed ISR; one send loop takes
  every queued change into one AlterPartition request (``send``: to the controller, which may
  be this broker) and gives each partition its answer (``Partition.on_alter_partition_result``).
  A change whose partition proposed again meanwhile is superseded by the newer one. When the
  controller cannot be reached (NOT_CONTROLLER, a dropped connection) the changes still
  pending are sent again after ``retry_backoff_ms``.
- Every half ``replica.lag.time.max.ms`` (as Kafka checks) ``ReplicaManager.shrink_isrs``
  proposes dropping the followers that lag.

Thread safety: the broker's event loop only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from odradek._types import TopicPartition
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.replication.isr import IsrChange
from odradek.controller.cluster import IsrUpdate, IsrUpdateResult
from odradek.errors import KafkaError

logger = logging.getLogger(__name__)

#: How often ``stop`` repeats its cancellation while a loop has not ended.
_STOP_RETRY_S = 0.1

#: Sends one AlterPartition request; raises ``KafkaError`` (NOT_CONTROLLER, ...) when the
#: request as a whole failed.
SendIsrUpdates = Callable[[Sequence[IsrUpdate]], Awaitable[list[IsrUpdateResult]]]


class IsrChangeManager:
    """See the module docstring.

    Args:
        replicas: the partitions (answers go to them; shrink checks run over them).
        send: the AlterPartition request to the controller.
        replica_lag_time_max_ms: ``replica.lag.time.max.ms``.
        retry_backoff_ms: the pause before sending again after a failed request.
    """

    def __init__(
        self,
        replicas: ReplicaManager,
        send: SendIsrUpdates,
        *,
        replica_lag_time_max_ms: int,
        retry_backoff_ms: int = 100,
    ) -> None:
        self._replicas = replicas
        self._send = send
        self._lag_ms = replica_lag_time_max_ms
        self._retry_backoff_s = retry_backoff_ms / 1000
        self._queue: dict[TopicPartition, IsrChange] = {}
        self._wakeup = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = False
        #: AlterPartition requests sent, and the ISR changes they carried (figures).
        self.requests_sent = 0
        self.changes_sent = 0
        #: Committed ISR changes that dropped / added replicas (metrics).
        self.isr_shrinks = 0
        self.isr_expands = 0

    def start(self) -> None:
        self._tasks = [
            asyncio.get_running_loop().create_task(self._send_loop(), name="alter-partition"),
            asyncio.get_running_loop().create_task(self._check_loop(), name="isr-expiration"),
        ]

    async def stop(self) -> None:
        """Ends both loops. They also end at their next turn by a flag, and the cancellation
        is repeated until they do: a send in flight may swallow it (Python 3.11's
        ``asyncio.wait_for`` can, gh-86296), and the send loop would then wait for work
        forever — the stop of a broker whose ZooKeeper session expired hung that way."""
        self._stopped = True
        self._wakeup.set()
        for task in self._tasks:
            while not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=_STOP_RETRY_S)
        self._tasks = []

    def submit(self, change: IsrChange) -> None:
        """Queues a proposed ISR (a newer one for the same partition replaces it)."""
        self._queue[TopicPartition(change.topic, change.partition)] = change
        self._wakeup.set()

    async def _check_loop(self) -> None:
        interval_s = self._lag_ms / 2 / 1000
        while not self._stopped:
            await asyncio.sleep(interval_s)
            try:
                self._replicas.shrink_isrs(self._lag_ms)
            except Exception:
                logger.exception("the ISR shrink check failed")

    async def _send_loop(self) -> None:
        while not self._stopped:
            await self._wakeup.wait()
            self._wakeup.clear()
            if self._stopped or not self._queue:
                continue
            batch = list(self._queue.values())
            self._queue.clear()
            try:
                await self._send_batch(batch)
            except KafkaError as error:
                logger.info("AlterPartition of %d partitions failed: %s", len(batch), error)
                self._requeue(batch)
                await asyncio.sleep(self._retry_backoff_s)
                self._wakeup.set()
            except Exception:
                logger.exception("AlterPartition of %d partitions failed", len(batch))
                self._requeue(batch)
                await asyncio.sleep(self._retry_backoff_s)
                self._wakeup.set()

    async def _send_batch(self, batch: list[IsrChange]) -> None:
        updates = [
            IsrUpdate(
                TopicPartition(change.topic, change.partition),
                change.leader_epoch,
                change.new_isr,
                change.partition_epoch,
            )
            for change in batch
        ]
        self.requests_sent += 1
        self.changes_sent += len(updates)
        sent = {TopicPartition(change.topic, change.partition): change for change in batch}
        results = await self._send(updates)
        for result in results:
            partition = self._replicas.get(result.topic_partition)
            change = sent.get(result.topic_partition)
            if partition is None or change is None:
                continue
            before = len(partition.isr)
            if partition.on_alter_partition_result(
                change, result.error_code, result.leader_epoch, result.isr, result.partition_epoch
            ):
                self.isr_shrinks += len(partition.isr) < before
                self.isr_expands += len(partition.isr) > before

    def _requeue(self, batch: list[IsrChange]) -> None:
        for change in batch:
            tp = TopicPartition(change.topic, change.partition)
            partition = self._replicas.get(tp)
            still_pending = (
                partition is not None
                and partition.pending_isr == change.new_isr
                and partition.leader_epoch == change.leader_epoch
                and partition.partition_epoch == change.partition_epoch
            )
            if still_pending and tp not in self._queue:
                self._queue[tp] = change
