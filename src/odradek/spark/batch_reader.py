"""Batch reads: ``spark.read.format("odradek")``.

On the driver, ``partitions()`` resolves the partitions the options cover and their
starting and ending offsets, and cuts the ranges between them into Spark input partitions
(``minPartitions``, ``maxRecordsPerPartition``). On executors, ``read()`` streams one range as
Arrow record batches (``read_task``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from odradek.spark.offset_reader import OffsetReader
from odradek.spark.options import SourceOptions
from odradek.spark.planning import OffsetRange, split_ranges
from odradek.spark.read_task import read_partition, report_data_loss

__all__ = ["BatchReader", "RangePartition", "plan_batch"]

logger = logging.getLogger(__name__)


class RangePartition(InputPartition):
    """One Spark input partition: an ``OffsetRange`` (plain, picklable data)."""

    def __init__(self, value: OffsetRange) -> None:
        super().__init__(value)


class BatchReader(DataSourceReader):
    """Reads the options' offset ranges once (see the module docstring)."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options

    def partitions(self) -> Sequence[InputPartition]:
        return [RangePartition(r) for r in plan_batch(self._options)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self._options, partition)


def plan_batch(options: SourceOptions) -> list[OffsetRange]:
    """The ranges a batch read covers.

    Raises:
        DataLossError: a start offset below the log start offset or past the ending offset,
            with ``failOnDataLoss`` (otherwise such ranges are narrowed or dropped).
    """
    with OffsetReader(options) as reader:
        partitions = reader.partitions()
        starts = reader.resolve(options.starting, partitions, which="starting")
        ends = reader.resolve(options.ending, partitions, which="ending")
        log_starts = reader.earliest(partitions)
    for tp, start in list(starts.items()):
        if start < log_starts.get(tp, 0):
            report_data_loss(
                f"{tp}: starting offset {start} is before the log start offset {log_starts[tp]}",
                options.fail_on_data_loss,
                "starting there instead",
            )
            starts[tp] = log_starts[tp]
        if start > ends.get(tp, start):
            report_data_loss(
                f"{tp}: starting offset {start} is after the ending offset {ends[tp]}",
                options.fail_on_data_loss,
                "nothing read from it",
            )
    return split_ranges(
        starts,
        ends,
        min_partitions=options.min_partitions,
        max_records_per_partition=options.max_records_per_partition,
    )
