"""Streaming reads: ``spark.readStream.format("odradek")``.

A micro-batch covers, per partition, the offsets from the previous batch's end to the end
``latestOffset`` chose; Spark logs both in its checkpoint, and a restarted query replays an
unfinished batch's exact range (``read`` is deterministic for a range). The offsets are
canonical JSON (``offsets``).

- ``initialOffset``: ``startingOffsets`` (default latest) / the timestamp options, resolved once
  and memoized (Spark asks twice for a new checkpoint).
- ``latestOffset(start, limit)``: refreshes the partitions (new partitions, and new topics for
  ``subscribePattern``, join and start at their earliest offset); applies
  ``maxOffsetsPerTrigger`` (Spark's ``ReadMaxRows`` limit) in proportion to each partition's
  backlog; with ``minOffsetsPerTrigger`` it waits (returns ``start``) until that many offsets
  are waiting or ``maxTriggerDelay`` has passed since the last batch; after
  ``prepareForTriggerAvailableNow`` it never goes past the offsets latest at that moment.
- Data loss (a partition gone, a log that now ends before the committed offset, offsets
  below the log start) fails the query with ``failOnDataLoss`` and is skipped otherwise.
- With the ``groupId`` option, the end offsets of each finished batch are committed to that
  consumer group (``odradek groups describe`` then shows the query's lag). Spark calls
  ``commit(end)`` a batch late (and never for the last batch of an ``availableNow`` run), so
  the commit is made from ``latestOffset(start, ...)`` instead: Spark plans the next batch only
  once the previous one is done (after a restart, it first re-runs an unfinished logged batch),
  so ``start`` there is always the end of a finished batch. Commits only move forward.

Driver-side calls share one ``OffsetReader``, opened lazily: the reader object Spark ships to
executors for ``read`` carries options only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from odradek.client import TopicPartition
from odradek.spark.batch_reader import RangePartition
from odradek.spark.offset_reader import OffsetReader
from odradek.spark.offsets import from_json, to_json
from odradek.spark.options import SourceOptions
from odradek.spark.planning import rate_limit, split_ranges
from odradek.spark.read_task import read_partition, report_data_loss

__all__ = ["StreamReader"]

logger = logging.getLogger(__name__)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The micro-batch stream of a streaming read (see the module docstring)."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._offset_reader: OffsetReader | None = None
        self._initial: dict[str, dict[str, int]] | None = None
        self._target: dict[TopicPartition, int] | None = None
        self._last_batch_at = time.monotonic()
        self._committed: dict[TopicPartition, int] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_offset_reader"] = None  # connections stay on the driver
        return state

    @property
    def _reader(self) -> OffsetReader:
        if self._offset_reader is None:
            self._offset_reader = OffsetReader(self._options)
        return self._offset_reader

    # ------------------------------------------------------------------ offsets

    def initialOffset(self) -> dict[str, dict[str, int]]:  # noqa: N802
        if self._initial is None:
            partitions = self._reader.partitions()
            starts = self._reader.resolve(self._options.starting, partitions, which="starting")
            self._initial = to_json(starts)
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        limit = self._options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit is not None else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self._target = self._reader.latest(self._reader.partitions())

    def latestOffset(  # noqa: N802
        self, start: Mapping[str, Mapping[str, int]], limit: ReadLimit
    ) -> dict[str, dict[str, int]]:
        self._commit_group(from_json(start))
        starts = self._current_starts(from_json(start))
        latest = self._reader.latest(list(starts))
        if self._target is not None:
            latest = {tp: min(off, self._target.get(tp, starts[tp])) for tp, off in latest.items()}
        for tp, offset in latest.items():
            if offset < starts[tp]:
                self._lost(
                    f"{tp}: the log now ends at {offset}, before the next offset to read "
                    f"{starts[tp]}"
                )
                starts[tp] = offset
        if self._should_wait(starts, latest):
            return to_json(starts)
        if isinstance(limit, ReadMaxRows):
            ends = rate_limit(starts, latest, limit.max_rows)
        else:
            ends = dict(latest)
        if ends != starts:
            self._last_batch_at = time.monotonic()
        return to_json(ends)

    def _current_starts(self, known: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """``known`` plus newly seen partitions (at their earliest offset), minus gone ones."""
        partitions = self._reader.partitions()
        gone = set(known) - set(partitions)
        if gone:
            self._lost(f"partitions {sorted(str(tp) for tp in gone)} are gone")
        new = [tp for tp in partitions if tp not in known]
        if self._target is not None:
            new = [tp for tp in new if tp in self._target]
        starts = {tp: off for tp, off in known.items() if tp not in gone}
        if new:
            logger.info("new partitions %s: reading from their earliest offsets", new)
            starts.update(self._reader.earliest(new))
        return starts

    def _should_wait(
        self, starts: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]
    ) -> bool:
        """``minOffsetsPerTrigger``: too little waiting and ``maxTriggerDelay`` not over."""
        minimum = self._options.min_offsets_per_trigger
        if minimum is None or self._target is not None:
            return False
        waiting = sum(max(latest[tp] - starts[tp], 0) for tp in starts)
        elapsed_ms = (time.monotonic() - self._last_batch_at) * 1000
        return waiting < minimum and elapsed_ms < self._options.max_trigger_delay_ms

    def _lost(self, message: str) -> None:
        report_data_loss(message, self._options.fail_on_data_loss, "some data may have been missed")

    # ------------------------------------------------------------------ batches

    def partitions(
        self, start: Mapping[str, Mapping[str, int]], end: Mapping[str, Mapping[str, int]]
    ) -> Sequence[InputPartition]:
        ends = from_json(end)
        starts = from_json(start)
        new = [tp for tp in ends if tp not in starts]
        if new:  # joined since the previous batch: they start at their earliest offset
            starts.update(self._reader.earliest(new))
        ranges = split_ranges(
            starts,
            ends,
            min_partitions=self._options.min_partitions,
            max_records_per_partition=self._options.max_records_per_partition,
        )
        return [RangePartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self._options, partition)

    def commit(self, end: Mapping[str, Mapping[str, int]]) -> None:
        """Nothing to do: group offsets are committed from ``latestOffset`` (see above)."""

    def _commit_group(self, finished: dict[TopicPartition, int]) -> None:
        group = self._options.group_id
        if group is None or finished == self._committed:
            return
        ahead = {tp: off for tp, off in finished.items() if off > self._committed.get(tp, -1)}
        if not ahead:
            return
        try:
            self._reader.commit_group(group, ahead)
        except Exception:
            logger.exception("could not commit the offsets of group %s", group)
            return
        self._committed.update(ahead)

    def stop(self) -> None:
        if self._offset_reader is not None:
            self._offset_reader.close()
            self._offset_reader = None
