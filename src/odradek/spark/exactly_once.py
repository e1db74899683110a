"""Exactly-once writes of the ``odradek`` sink (``deliveryGuarantee=exactlyOnce``): one Kafka
transaction per write task, carrying the task's rows and a progress marker.

The contract:

- **Identity.** A write task of micro-batch *B*, Spark partition *P*, of the streaming query
  *Q* (its id, stable across restarts from a checkpoint) uses the transactional id
  ``<prefix><Q>-<P>`` (``transactionalIdPrefix``, default ``odradek-spark-``), and a progress
  group of the same name. A batch write (``df.write``) has no query: the driver draws a random
  write id once per write, and *B* is 0.
- **A task.** At its first row the task makes a transactional producer of that id and calls
  ``init_transactions``: the coordinator fences every older producer of the id (an earlier
  attempt of the task, a speculative copy, a zombie of a killed driver's executors) and
  finishes that producer's transaction — one still open is aborted, one being committed is
  completed first. Only then does the task read its progress marker (the group's committed
  offset of the marker partition: the ``topic`` option's, or the first row's topic,
  partition 0). A marker above *B* means an earlier attempt committed this task's rows for
  batch *B*: the task sends nothing and reports ``replayed``. Otherwise it begins a
  transaction, sends every row (on the Arrow fast path as at-least-once does), commits
  ``B + 1`` as the marker inside the transaction (``send_offsets_to_transaction``) and commits
  it. Rows and marker become visible together or not at all. A task that fails aborts its
  transaction (best effort: a retry's ``init_transactions`` aborts it anyway).
- **Why each row lands once.** Two attempts that both commit rows for (*Q*, *B*, *P*) would
  need the later one's ``init_transactions`` to come after the earlier one's commit (else the
  earlier is fenced and cannot commit); but then the later one reads the earlier's marker and
  sends nothing. Task retries, speculative execution and a replay after the driver died
  (Spark re-runs batch *B* from its offset log when its commit log lacks *B*) are all such
  pairs of attempts.
- **The driver.** ``commit`` and ``abort`` have nothing to publish: the tasks committed their
  own transactions. After ``abort`` (the job failed) the rows of tasks that committed stay
  visible; when the query is restarted the replayed batch skips those tasks and writes the
  others, so the topic still ends with each row once.

Limits:

- The replay of batch *B* must hand partition *P* the same rows as the first run: true for a
  query reading the ``odradek`` (or any deterministic-replay) source with deterministic
  transformations and unchanged partitioning settings; a non-deterministic step (random
  repartition, ``rand()``) breaks the guarantee, as it does for Spark's file sink.
- Readers see the output exactly once only with ``isolation.level=read_committed``
  (``kafka.isolation.level`` for the ``odradek`` source).
- A transaction left open by a lost executor is aborted by the coordinator after
  ``transaction.timeout.ms`` (``kafka.transaction.timeout.ms``, default 60 s) unless a retry of
  the task fences it first; meanwhile read_committed readers of its partitions wait (the last
  stable offset holds). A task that takes longer than the timeout fails with its transaction
  aborted: raise the timeout (up to the broker's ``transaction.max.timeout.ms``) for big tasks.
- Per write task the coordinator keeps a transactional id (expiring after the broker's
  ``transactional.id.expiration.ms`` unused) and a group with one committed offset (kept for
  ``offsets.retention.minutes``); a batch write makes new ones every time it runs.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from pyspark import TaskContext

from odradek.client import TopicPartition
from odradek.client.producer import Producer
from odradek.spark.clients import admin_client

__all__ = [
    "BATCH_ID_PROPERTY",
    "QUERY_ID_PROPERTY",
    "TaskTransaction",
    "abort_task",
    "commit_task",
    "new_write_id",
    "open_task_producer",
    "task_transaction",
]

logger = logging.getLogger(__name__)

#: The task's local properties that Spark sets for a streaming micro-batch.
QUERY_ID_PROPERTY: Final = "sql.streaming.queryId"
BATCH_ID_PROPERTY: Final = "streaming.sql.batchId"
#: How long a failing task waits for its transaction's abort (then leaves it to the fencing).
ABORT_TIMEOUT_S: Final = 10.0
#: The marker's partition of the marker topic.
MARKER_PARTITION: Final = 0


@dataclass(frozen=True, slots=True)
class TaskTransaction:
    """One write task's transactional id, progress group and batch id."""

    transactional_id: str
    batch_id: int

    @property
    def group_id(self) -> str:
        """The progress group: named as the transactional id."""
        return self.transactional_id


def new_write_id() -> str:
    """The id of one batch write (``df.write``), drawn on the driver."""
    return f"batch-{uuid.uuid4().hex}"


def task_transaction(prefix: str, write_id: str | None) -> TaskTransaction:
    """The running task's ``TaskTransaction``.

    Args:
        prefix: ``transactionalIdPrefix``.
        write_id: a batch write's id; ``None`` for a streaming write (the query id and the
            batch id come from the task's local properties).

    Raises:
        RuntimeError: not in a Spark task, or a streaming task without the query's properties.
    """
    context = TaskContext.get()
    if context is None:
        raise RuntimeError("an exactly-once write runs in a Spark task")
    batch_id = 0
    if write_id is None:
        query_id = context.getLocalProperty(QUERY_ID_PROPERTY)
        batch = context.getLocalProperty(BATCH_ID_PROPERTY)
        if not query_id or batch is None:
            raise RuntimeError(
                "an exactly-once streaming write needs the query id and batch id of its task "
                f"({QUERY_ID_PROPERTY!r}, {BATCH_ID_PROPERTY!r}); Spark did not set them"
            )
        write_id, batch_id = query_id, int(batch)
    return TaskTransaction(f"{prefix}{write_id}-{context.partitionId()}", batch_id)


def open_task_producer(
    config: Mapping[str, str], task: TaskTransaction, marker_topic: str
) -> Producer | None:
    """The task's transactional producer, fenced in and with a transaction begun; ``None``
    when an earlier attempt already committed the task's batch (then nothing is to be sent).

    Raises:
        KafkaError: the coordinator's error (PRODUCER_FENCED: a newer attempt took over).
    """
    producer = Producer({**config, "transactional.id": task.transactional_id})
    try:
        producer.init_transactions()
        if _committed_batch(config, task, marker_topic) > task.batch_id:
            logger.info(
                "%s: batch %d was committed by an earlier attempt; nothing is sent",
                task.transactional_id,
                task.batch_id,
            )
            producer.close()
            return None
        producer.begin_transaction()
    except BaseException:
        producer.close(0)
        raise
    return producer


def commit_task(producer: Producer, task: TaskTransaction, marker_topic: str) -> None:
    """Commits the task's transaction with its marker (every row was flushed and delivered).

    Raises:
        KafkaError: the coordinator's error (PRODUCER_FENCED: a newer attempt took over;
            this attempt's rows are aborted).
    """
    producer.send_offsets_to_transaction(
        {TopicPartition(marker_topic, MARKER_PARTITION): task.batch_id + 1}, task.group_id
    )
    producer.commit_transaction()


def abort_task(producer: Producer, task: TaskTransaction) -> None:
    """Aborts the failing task's transaction if it can, then closes the producer at once."""
    try:
        producer.abort_transaction(ABORT_TIMEOUT_S)
    except Exception as error:  # fenced, or the broker is gone: the coordinator will abort
        logger.warning(
            "%s: could not abort the transaction of batch %d (%s); it is aborted when the task "
            "is retried or after transaction.timeout.ms",
            task.transactional_id,
            task.batch_id,
            error,
        )
    finally:
        producer.close(0)


def _committed_batch(config: Mapping[str, str], task: TaskTransaction, marker_topic: str) -> int:
    """The marker: the next batch id to write (-1 when nothing was committed)."""
    marker = TopicPartition(marker_topic, MARKER_PARTITION)
    admin = admin_client(config)
    try:
        result = admin.list_group_offsets(task.group_id, [marker])
    finally:
        admin.close()
    committed = result[marker]  # raises the partition's error
    return -1 if committed is None else committed.offset
