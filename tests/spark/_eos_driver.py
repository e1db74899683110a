"""The driver of ``test_exactly_once``'s killed streaming query, run as its own process.

    python _eos_driver.py BOOTSTRAP SOURCE OUTPUT CHECKPOINT GUARANTEE BLOCK READY_FILE

It copies SOURCE (key, value) to OUTPUT with the ``odradek`` sink (``deliveryGuarantee``
GUARANTEE), ``maxOffsetsPerTrigger`` rows a micro-batch, ``trigger(availableNow=True)``, from
the checkpoint CHECKPOINT, and exits when the available rows are written. BLOCK stops the
query in micro-batch ``BLOCKED_BATCH`` for the test to SIGKILL this process there:

- ``commit``: every task of the batch committed; the driver's ``commit`` writes READY_FILE
  and never returns, so Spark's commit log lacks the batch (a restart replays it);
- ``task``: the task of Spark partition 1 has sent its rows (its transaction open) and then
  writes READY_FILE and never finishes; partition 0's task goes on and commits;
- ``none``: no stop (the restart).

A blocked process leaves when its parent does (the JVM, once this driver is killed).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from odradek.spark.options import parse_sink_options
from odradek.spark.source import OdradekDataSource
from odradek.spark.writer import StreamWriter, WriteCommitMessage
from odradek.testing.spark import local_session

BLOCKED_BATCH = 1
ROWS_PER_BATCH = 200


def block_forever(ready: str) -> None:
    Path(ready).write_text(str(os.getpid()))
    parent = os.getppid()
    idle = threading.Event()
    while os.getppid() == parent:  # until the process that ran us is gone
        idle.wait(0.05)
    os._exit(0)


class BlockingWriter(StreamWriter):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        super().__init__(parse_sink_options(options), schema)
        self._block = options["block"]
        self._ready = options["readyfile"]

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteCommitMessage:
        context = TaskContext.get()
        assert context is not None
        batch = int(context.getLocalProperty("streaming.sql.batchId") or -1)
        if self._block == "task" and batch == BLOCKED_BATCH and context.partitionId() == 1:

            def then_block() -> Iterator[pa.RecordBatch]:
                yield from iterator
                block_forever(self._ready)

            return super().write(then_block())
        return super().write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        if self._block == "commit" and batchId == BLOCKED_BATCH:
            block_forever(self._ready)
        super().commit(messages, batchId)


class BlockingSource(OdradekDataSource):
    @classmethod
    def name(cls) -> str:
        return "odradek_blocking"

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return BlockingWriter({k.lower(): v for k, v in self.options.items()}, schema)


def main() -> None:
    bootstrap, source, output, checkpoint, guarantee, block, ready = sys.argv[1:8]
    spark = local_session("odradek-eos-driver", conf={"spark.sql.shuffle.partitions": "2"})
    spark.dataSource.register(BlockingSource)
    rows = (
        spark.readStream.format("odradek")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(ROWS_PER_BATCH))
        .load()
        .select("key", "value")
    )
    query = (
        rows.writeStream.format("odradek_blocking")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", output)
        .option("deliveryGuarantee", guarantee)
        .option("block", block)
        .option("readyFile", ready)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
