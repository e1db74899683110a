"""Batch-read throughput of the ``odradek`` Spark data source, next to Spark's own intake ceiling
measured in the same run.

- odradek: ``spark.read.format("odradek")`` of N records of 100-byte values (2 partitions, one
  task each on ``local[2]``) into the ``noop`` sink: fetch, column-decode, Arrow batches.
- ceiling: a trivial Python data source whose ``read()`` yields prebuilt Arrow batches of the
  same schema and row count (no fetching, no decoding): what Spark itself can take in.

Each is run ``--rounds`` times, alternating; the best round of each is reported (this machine
is shared and noisy). The broker runs in its own process (``odradek serve``).

    .venv/bin/python bench/spark_source.py [--records 1000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from odradek import AdminClient, NewTopic, Producer
from odradek.spark.schema import arrow_read_schema, read_schema
from odradek.testing.serve import start_serve, stop_serve
from odradek.testing.spark import local_session

TOPIC = "spark-bench"
PARTITIONS = 2
VALUE_BYTES = 100


class CeilingSource(DataSource):
    """Prebuilt Arrow batches of the Kafka read schema: Spark's intake ceiling."""

    @classmethod
    def name(cls) -> str:
        return "odradek_bench_ceiling"

    def schema(self) -> StructType:
        return read_schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        return CeilingReader(int(self.options["rows"]))


class CeilingReader(DataSourceReader):
    def __init__(self, rows: int) -> None:
        self.rows = rows

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(p) for p in range(PARTITIONS)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        per_partition = self.rows // PARTITIONS
        chunk = 50_000
        batch = _prebuilt(chunk, partition.value)
        done = 0
        while done < per_partition:
            n = min(chunk, per_partition - done)
            yield batch if n == chunk else batch.slice(0, n)
            done += n


def _prebuilt(n: int, partition: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.array([b"key-%d" % (i % 1000) for i in range(n)], pa.binary()),
            pa.array([b"x" * VALUE_BYTES] * n, pa.binary()),
            pa.array([TOPIC] * n, pa.string()),
            pa.array([partition] * n, pa.int32()),
            pa.array(range(n), pa.int64()),
            pa.array([1_700_000_000_000_000] * n, pa.timestamp("us", tz="UTC")),
            pa.array([0] * n, pa.int32()),
        ],
        schema=arrow_read_schema(),
    )


def produce(bootstrap: str, records: int) -> float:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).all()
    admin.close()
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_048_576, "acks": 1}
    )
    value = b"x" * VALUE_BYTES
    started = time.perf_counter()
    for i in range(records):
        producer.send(TOPIC, value, b"key-%d" % (i % 1000), partition=i % PARTITIONS)
    producer.flush()
    producer.close()
    return time.perf_counter() - started


def timed(run: Any) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    data_dir = tempfile.mkdtemp(prefix="odradek-spark-bench-")
    process, bootstrap = start_serve(data_dir)
    try:
        seconds = produce(bootstrap, args.records)
        print(f"produced {args.records:,} records of {VALUE_BYTES} B in {seconds:.1f} s")
        spark = local_session("odradek-bench-spark-source")
        spark.dataSource.register(CeilingSource)

        def odradek_read() -> None:
            (
                spark.read.format("odradek")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", TOPIC)
                .load()
                .write.format("noop")
                .mode("overwrite")
                .save()
            )

        def ceiling_read() -> None:
            (
                spark.read.format("odradek_bench_ceiling")
                .option("rows", str(args.records))
                .load()
                .write.format("noop")
                .mode("overwrite")
                .save()
            )

        count = (
            spark.read.format("odradek")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", TOPIC)
            .load()
            .count()
        )
        assert count == args.records, count
        timed(ceiling_read)  # warm-up: workers started, code imported
        best = {"odradek": float("inf"), "ceiling": float("inf")}
        for _ in range(args.rounds):
            best["ceiling"] = min(best["ceiling"], timed(ceiling_read))
            best["odradek"] = min(best["odradek"], timed(odradek_read))
        spark.stop()
    finally:
        stop_serve(process)
        shutil.rmtree(data_dir, ignore_errors=True)
    rates = {name: args.records / seconds for name, seconds in best.items()}
    print(f"ceiling (prebuilt Arrow batches): {rates['ceiling']:>12,.0f} rows/s")
    print(f"odradek batch read:              {rates['odradek']:>12,.0f} rows/s")
    print(f"odradek / ceiling: {rates['odradek'] / rates['ceiling']:.0%}  (target >= 50%)")


if __name__ == "__main__":
    main()
