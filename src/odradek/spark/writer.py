"""The write side of the ``odradek`` data source: ``BatchWriter`` (``df.write``) and
``StreamWriter`` (``df.writeStream``), on Spark's Arrow writer path.

On the driver, the constructor checks the input schema against Spark's Kafka sink columns
(``_rows_to_records``: Spark's rules and messages) and the producer settings (our client's
``ConfigError``), so a bad job fails before any task runs. The writer is then pickled into every
task; it holds plain data only (the options, the column positions, the producer settings).

In a task, ``write`` gets the task's Arrow record batches, makes one ``Producer`` (Kafka
settings: ``acks=all`` unless set, then every ``kafka.*`` option without its prefix), sends every
row, flushes, and checks every delivery. Rows are sent on the fast path when the producer has
the default partitioner and no interceptors: each Arrow batch is grouped by target partition
and encoded straight from its buffers into v2 record batches (``_arrow_batches``), handed to
``Producer.send_encoded`` — no Python object per row. Otherwise, and for an Arrow batch the
fast path declines (a row the producer would refuse: the per-row path reports it), whole
columns become Python lists and each row is one ``send``. A record that was not delivered
fails the task with the reason (the Kafka error name, the topic and partition, the client's or
broker's message); a task stops sending at the first failure it sees. The task's commit
message counts the rows acknowledged per partition.

Guarantee: at-least-once by default, like Spark's Kafka sink. A task that fails after sending
some rows, a retried task and a micro-batch replayed after a restart send rows again; nothing is
staged, so ``commit`` and ``abort`` have nothing to publish or undo and only log. With
``deliveryGuarantee=exactlyOnce`` each task sends its rows in one Kafka transaction together
with a progress marker, and an attempt that finds its batch's marker committed sends nothing:
read_committed readers see each row once (the contract and its limits: ``exactly_once``). The
task's commit message then says ``replayed``; ``commit`` and ``abort`` still only log.

Save modes: a batch write says ``.mode("append")``. Spark (4.x) plans a Python data source's
batch write as a DataSource V2 table write, which takes Append, and Overwrite (handed to
``writer`` as ``overwrite=True``, refused here with a message after Spark's Kafka sink's); the
default ErrorIfExists and Ignore are refused by Spark before the data source is asked
(``UNSUPPORTED_DATA_SOURCE_SAVE_MODE``). Spark's Kafka sink takes ErrorIfExists only because
Spark plans it as a V1 source (``spark.sql.sources.useV1SourceList``), which a Python data
source cannot be. Streaming writes have no save mode: every output mode is accepted.
"""

from __future__ import annotations

import gc
import logging
import random
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter
from typing import Final

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek.client import TopicPartition
from odradek.client.config import PRODUCER, ClientConfig
from odradek.client.producer import Producer, RecordFuture
from odradek.client.producer.config import ProducerSettings
from odradek.client.producer.future import BatchResult
from odradek.errors import KafkaError, OdradekError, error_for_code
from odradek.spark._arrow_batches import EncodedBatch, encode_arrow_batch
from odradek.spark._rows_to_records import (
    NULL_TOPIC_MESSAGE,
    RecordColumns,
    SinkColumns,
    plan_columns,
    record_columns,
)
from odradek.spark.exactly_once import (
    TaskTransaction,
    abort_task,
    commit_task,
    new_write_id,
    open_task_producer,
    task_transaction,
)
from odradek.spark.options import SinkOptions

__all__ = [
    "OVERWRITE_REFUSED",
    "BatchWriter",
    "StreamWriter",
    "WriteCommitMessage",
    "producer_config",
]

logger = logging.getLogger(__name__)

#: Settings under the user's ``kafka.*`` options (which win).
#: ``batch.size`` 256 KiB (the producer's own default is 16 KiB): a task writes rows in bulk, the
#: fast path cuts its Arrow runs at ``batch.size``, and a transactional producer has one request
#: in flight per partition, so each round trip carries one batch of a partition. 1 M rows of
#: 100 B (bench/spark_write.py, one run): at-least-once 0.57x -> 0.79x the null Arrow writer.
PRODUCER_DEFAULTS: Final[Mapping[str, str]] = {
    "acks": "all",
    "client.id": "odradek-spark-writer",
    "batch.size": str(256 * 1024),
}
#: Settle the futures of sent rows once this many are pending (and then each time their number
#: doubles): failures show early, and a long task does not keep a future per row.
SETTLE_EVERY: Final = 65_536

#: The message for ``.mode("overwrite")``, after Spark's Kafka sink's.
OVERWRITE_REFUSED: Final = (
    "Save mode Overwrite not allowed for odradek: a topic is appended to, never truncated. "
    "Allowed save mode: Append (.mode('append')), like Spark's Kafka sink."
)

#: Why rows of an aborted write stay, per guarantee.
_ABORT_NOTE: Final = "the sink is at-least-once"
_ABORT_NOTE_EXACTLY_ONCE: Final = (
    "committed in their tasks' transactions; a replay of the batch skips those tasks"
)

#: The batch outcome a record's future shares with the rest of its batch: deliveries are
#: checked per batch, not per row (a per-row ``metadata()`` costs ~1 µs, a quarter of a send).
_batch_of: Final = attrgetter("batch")


@dataclass(frozen=True)
class WriteCommitMessage(WriterCommitMessage):
    """What one write task sent: the rows acknowledged, per topic-partition; ``replayed``:
    an earlier attempt had committed the task's rows (exactly-once), so it sent none."""

    rows: Mapping[TopicPartition, int] = field(default_factory=dict)
    replayed: bool = False

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())


def producer_config(options: SinkOptions) -> dict[str, str]:
    """The producer's settings for a write: ``PRODUCER_DEFAULTS``, then the ``kafka.*`` options
    (``bootstrap.servers`` among them)."""
    config = dict(PRODUCER_DEFAULTS)
    config.update(options.client_config)
    return config


class _ArrowSink:
    """What ``BatchWriter`` and ``StreamWriter`` share: the driver-side checks and ``write``.

    Args:
        options: the write's options (``parse_sink_options``).
        schema: the input DataFrame's schema.
        write_id: an exactly-once batch write's id (``None``: a streaming write, whose tasks
            take the query id).

    Raises:
        ValueError: the schema breaks a rule of Spark's Kafka sink (Spark's message).
        ConfigError: a ``kafka.*`` option the producer does not take, or a bad value.
    """

    def __init__(
        self, options: SinkOptions, schema: StructType, write_id: str | None = None
    ) -> None:
        self._topic = options.topic
        self._columns: SinkColumns = plan_columns(schema, options.topic)
        self._config = producer_config(options)
        self._exactly_once = options.exactly_once
        self._prefix = options.transactional_id_prefix
        self._write_id = write_id
        checked = dict(self._config)
        if self._exactly_once:  # the rules of a transactional producer (acks=all)
            checked["transactional.id"] = f"{self._prefix}check"
        ProducerSettings.from_config(ClientConfig(checked, client_type=PRODUCER))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteCommitMessage:
        """Sends every row of the task's batches; returns the rows acknowledged.

        Raises:
            ValueError: a row that cannot be a record (a null topic, a null header key).
            KafkaError: a record was not delivered (the message names the error, the topic
                and the partition).
            OdradekError: a record was not delivered for another reason (a bad timestamp).
        """
        with _cyclic_gc_paused():
            return self._write(iterator)

    def _write(self, iterator: Iterator[pa.RecordBatch]) -> WriteCommitMessage:
        producer: Producer | None = None
        fast: _FastPath | None = None
        deliveries = _Deliveries()
        task: TaskTransaction | None = None
        marker_topic = ""
        if self._exactly_once:
            task = task_transaction(self._prefix, self._write_id)
        try:
            for batch in iterator:
                if not batch.num_rows:
                    continue
                if producer is None:
                    if (
                        self._columns.topic is not None
                        and batch.column(self._columns.topic).null_count
                    ):
                        raise ValueError(NULL_TOPIC_MESSAGE)  # before connecting
                    if task is None:
                        producer = Producer(self._config)
                    else:
                        marker_topic = self._marker_topic(batch)
                        producer = open_task_producer(self._config, task, marker_topic)
                        if producer is None:  # an earlier attempt committed the batch
                            for _ in iterator:
                                pass
                            return WriteCommitMessage(replayed=True)
                    if producer.takes_encoded:
                        fast = _FastPath(producer, SYSTEM_CLOCK)
                encoded = None if fast is None else fast.encode(batch, self._columns, self._topic)
                if encoded is None:
                    rows = record_columns(batch, self._columns)
                    _send_rows(producer, self._topic, rows, deliveries.pending)
                else:
                    _send_encoded(producer, encoded, deliveries)
                deliveries.settle_if_due()
            if producer is not None:
                producer.flush()
                deliveries.settle(final=True)
                if task is not None:
                    commit_task(producer, task, marker_topic)
        except BaseException:
            if producer is not None:
                if task is not None:
                    abort_task(producer, task)
                else:
                    producer.close(0)  # what is still queued fails at once, unsent
            raise
        if producer is not None:
            producer.close()
        message = WriteCommitMessage(deliveries.rows)
        logger.debug(
            "write task sent %d rows to %d partitions", message.total_rows, len(message.rows)
        )
        return message

    def _marker_topic(self, first: pa.RecordBatch) -> str:
        """Where the task's progress marker is kept: the ``topic`` option, else the topic of
        the task's first row (the same on every attempt of the task)."""
        if self._topic is not None:
            return self._topic
        assert self._columns.topic is not None
        topic = first.column(self._columns.topic)[0].as_py()
        return topic.decode() if isinstance(topic, bytes) else str(topic)


class _FastPath:
    """A task's state for ``encode_arrow_batch``: the topics' partition counts (asked once)
    and the clock for rows without a timestamp."""

    __slots__ = ("_clock", "_counts", "_producer", "_random")

    def __init__(self, producer: Producer, clock: Clock) -> None:
        self._producer = producer
        self._clock = clock
        self._counts: dict[str, int | None] = {}
        self._random = random.Random()

    def encode(
        self, batch: pa.RecordBatch, columns: SinkColumns, topic: str | None
    ) -> list[EncodedBatch] | None:
        return encode_arrow_batch(
            batch,
            columns,
            topic,
            partition_count=self._partition_count,
            sticky_partition=self._sticky_partition,
            key_partition=self._producer.key_partition,
            record_size=self._producer.estimated_record_size,
            now_ms=self._clock.now_ms(),
            limit_bytes=self._producer.batch_size_bytes,
            max_record_bytes=self._producer.max_record_bytes,
        )

    def _partition_count(self, topic: str) -> int | None:
        if topic not in self._counts:
            try:
                self._counts[topic] = len(self._producer.partitions_for(topic))
            except OdradekError:
                self._counts[topic] = None  # the per-row path reports it
        return self._counts[topic]

    def _sticky_partition(self, topic: str, count: int) -> int:
        return self._random.randrange(count)


def _send_encoded(
    producer: Producer, encoded: Sequence[EncodedBatch], deliveries: _Deliveries
) -> None:
    for batch in encoded:
        result = producer.send_encoded(
            TopicPartition(batch.topic, batch.partition),
            batch.records,
            batch.count,
            batch.base_timestamp_ms,
            batch.max_timestamp_ms,
        )
        deliveries.add_batch(result, batch.count)


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pauses Python's cyclic garbage collector (reference counting goes on).

    A task holds a future per row until its batch is acknowledged; they are acyclic, but each
    young collection the allocations trigger walks them again, and they push the older
    generations into full collections of the whole worker: ~15% of a row's CPU time. A
    300,000-row write leaves ~50 objects in cycles (the producer's own), collected once the
    collector runs again after the task.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _send_rows(
    producer: Producer, topic: str | None, rows: RecordColumns, pending: list[RecordFuture]
) -> None:
    """One ``send`` per row, the futures appended to ``pending``."""
    send = producer.send
    values = rows.values
    if (
        rows.topics is None
        and rows.partitions is None
        and rows.headers is None
        and rows.timestamps_ms is None
    ):
        # The common shape (the topic option, value and maybe key): the loop runs in C.
        assert topic is not None
        keys: Iterable[bytes | None] = rows.keys if rows.keys is not None else repeat(None)
        pending.extend(map(send, repeat(topic), values, keys))
        return
    count = rows.count
    topics = rows.topics if rows.topics is not None else repeat(topic, count)
    keys_ = rows.keys if rows.keys is not None else repeat(None, count)
    partitions = rows.partitions if rows.partitions is not None else repeat(None, count)
    timestamps = rows.timestamps_ms if rows.timestamps_ms is not None else repeat(None, count)
    headers = rows.headers if rows.headers is not None else repeat((), count)
    append = pending.append
    for row_topic, key, value, partition, timestamp_ms, row_headers in zip(
        topics, keys_, values, partitions, timestamps, headers, strict=True
    ):
        append(
            send(
                row_topic,
                value,
                key,
                partition=partition,
                timestamp_ms=timestamp_ms,
                headers=row_headers,
            )
        )


class _Deliveries:
    """The futures of one task's sends, checked a batch at a time.

    ``pending`` collects futures; ``settle`` counts those whose batch completed (per
    topic-partition, into ``rows``), keeps the rest, and raises if a batch failed.
    """

    __slots__ = ("_batch_rows", "_batches", "_settle_at", "pending", "rows")

    def __init__(self) -> None:
        self.pending: list[RecordFuture] = []
        self.rows: dict[TopicPartition, int] = {}
        self._batches: list[tuple[BatchResult, int]] = []
        self._batch_rows = 0
        self._settle_at = SETTLE_EVERY

    def add_batch(self, result: BatchResult, rows: int) -> None:
        """A batch sent whole (``send_encoded``) with ``rows`` records."""
        self._batches.append((result, rows))
        self._batch_rows += rows

    def settle_if_due(self) -> None:
        if len(self.pending) + self._batch_rows >= self._settle_at:
            self.settle(final=False)
            self._settle_at = max(SETTLE_EVERY, 2 * (len(self.pending) + self._batch_rows))

    def settle(self, *, final: bool) -> None:
        """Counts what completed and keeps what has not.

        Args:
            final: every record should be complete (after ``flush``).

        Raises:
            KafkaError, OdradekError: a record was not delivered (see ``_delivery_error``).
        """
        per_batch: Counter[BatchResult] = Counter(map(_batch_of, self.pending))
        for batch_result, batch_rows in self._batches:
            per_batch[batch_result] += batch_rows
        incomplete: set[BatchResult] = set()
        failed: list[tuple[BatchResult, int]] = []
        rows = self.rows
        for result, count in per_batch.items():
            if not result.completed:
                incomplete.add(result)
            elif result.error is not None:
                failed.append((result, count))
            else:
                tp = TopicPartition(result.topic, result.partition)
                rows[tp] = rows.get(tp, 0) + count
        if failed:
            raise _delivery_error(failed)
        if final and incomplete:
            raise OdradekError(
                f"{sum(per_batch[r] for r in incomplete)} records were neither acknowledged nor "
                "failed after the producer's flush"
            )
        if incomplete:
            self.pending = [f for f in self.pending if _batch_of(f) in incomplete]
            self._batches = [(r, n) for r, n in self._batches if r in incomplete]
        else:
            self.pending = []
            self._batches = []
        self._batch_rows = sum(n for _, n in self._batches)


def _delivery_error(failed: Sequence[tuple[BatchResult, int]]) -> OdradekError:
    """The exception that fails the task: the first failure's reason, topic and partition,
    and how many records failed; a ``KafkaError`` keeps the error's code (and class)."""
    result, _ = failed[0]
    error = result.error
    assert error is not None
    records = sum(count for _, count in failed)
    name = error.error_code.name if isinstance(error, KafkaError) else type(error).__name__
    where = (
        f"topic '{result.topic}' partition {result.partition}"
        if result.partition >= 0
        else f"topic '{result.topic}'"
    )
    detail = str(error)
    reason = name if detail in ("", name) else f"{name}: {detail}"
    message = (
        f"Writing to odradek failed: {records} record{'s' if records != 1 else ''} not "
        f"delivered; {where}: {reason}"
    )
    if len(failed) > 1:
        message += f" (and {len(failed) - 1} more failed batches)"
    if isinstance(error, KafkaError):
        kafka_error = error_for_code(int(error.error_code), message)
        kafka_error.__cause__ = error
        return kafka_error
    wrapped = OdradekError(message)
    wrapped.__cause__ = error
    return wrapped


def _summary(messages: Sequence[WriterCommitMessage | None]) -> tuple[int, int, int]:
    """(rows acknowledged, topic-partitions written, tasks that finished)."""
    finished = [m for m in messages if isinstance(m, WriteCommitMessage)]
    partitions: set[TopicPartition] = set()
    for message in finished:
        partitions.update(message.rows)
    return sum(m.total_rows for m in finished), len(partitions), len(finished)


class BatchWriter(_ArrowSink, DataSourceArrowWriter):
    """``df.write.format("odradek")``: at-least-once, or exactly-once per task attempt (a
    retried task does not send its rows twice; see the module docstring).

    Save modes: Append only. Overwrite (``overwrite=True``) is refused here, as Spark's Kafka
    sink refuses it — a topic is appended to, never truncated. ErrorIfExists (the default) and
    Ignore never reach a Python data source: Spark refuses them first (module docstring).
    """

    def __init__(self, options: SinkOptions, schema: StructType, *, overwrite: bool = False):
        if overwrite:
            raise ValueError(OVERWRITE_REFUSED)
        super().__init__(options, schema, new_write_id() if options.exactly_once else None)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        rows, partitions, tasks = _summary(messages)
        logger.info(
            "odradek write committed: %d rows to %d partitions by %d tasks", rows, partitions, tasks
        )

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        rows, partitions, tasks = _summary(messages)
        logger.warning(
            "odradek write aborted: %d of %d tasks had finished and sent %d rows to %d "
            "partitions; those rows stay (%s)",
            tasks,
            len(messages),
            rows,
            partitions,
            _ABORT_NOTE_EXACTLY_ONCE if self._exactly_once else _ABORT_NOTE,
        )


class StreamWriter(_ArrowSink, DataSourceStreamArrowWriter):
    """``df.writeStream.format("odradek")``: at-least-once, a micro-batch replayed after a
    restart is sent again; or exactly-once (see the module docstring)."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        rows, partitions, tasks = _summary(messages)
        logger.info(
            "odradek micro-batch %d committed: %d rows to %d partitions by %d tasks",
            batchId,
            rows,
            partitions,
            tasks,
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        rows, partitions, tasks = _summary(messages)
        logger.warning(
            "odradek micro-batch %d aborted: %d of %d tasks had finished and sent %d rows to "
            "%d partitions; those rows stay (%s)",
            batchId,
            tasks,
            len(messages),
            rows,
            partitions,
            _ABORT_NOTE_EXACTLY_ONCE if self._exactly_once else _ABORT_NOTE,
        )
