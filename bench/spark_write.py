"""Rows/s of ``df.write.format("odradek")`` (the Arrow writer path), at-least-once and
exactly-once (``deliveryGuarantee=exactlyOnce``: each task's rows in one transaction with its
progress marker), next to two baselines in the same run, on the same DataFrame: Spark's
``noop`` sink (Spark producing the rows, no Python) and a do-nothing Python Arrow writer (Spark
producing the rows and handing them to Python workers as
Arrow batches: the ceiling of any Python sink).

Workload: ``spark.range(rows)`` → one 100-byte binary ``value`` column (the id, left-padded),
``local[2]`` (two write tasks), written with the writer's defaults (``acks=all``) to a
1-partition topic of an ``odradek serve`` child process. The clock runs from ``save()`` to its
return (job scheduling included). The three writes alternate, one warm-up round first; each
keeps its best of ``--rounds``. The machine's other load shows in the figures.

    .venv/bin/python bench/spark_write.py [--rows 1000000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from odradek import AdminClient, NewTopic
from odradek.testing.serve import start_serve, stop_serve
from odradek.testing.spark import local_session

VALUE_BYTES: Final = 100


@dataclass
class Counted(WriterCommitMessage):
    rows: int


class NullArrowWriter(DataSourceArrowWriter):
    """Takes the Arrow batches and drops them."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Counted:
        return Counted(sum(batch.num_rows for batch in iterator))


class NullArrowSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench_null_arrow"

    def writer(self, schema: StructType, overwrite: bool) -> NullArrowWriter:
        return NullArrowWriter()


def session() -> SparkSession:
    spark = local_session("odradek-bench-spark-write")
    spark.dataSource.register(NullArrowSink)
    return spark


def timed(save: Callable[[], None]) -> float:
    started = time.perf_counter()
    save()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    rows: int = args.rows

    spark = session()
    with tempfile.TemporaryDirectory(prefix="odradek-bench-spark-") as data_dir:
        server, bootstrap = start_serve(data_dir, {"num.partitions": "1"})
        admin = AdminClient({"bootstrap.servers": bootstrap})
        try:
            df: DataFrame = spark.range(rows).selectExpr(
                f"CAST(lpad(CAST(id AS STRING), {VALUE_BYTES}, 'x') AS BINARY) AS value"
            )

            def to_odradek(guarantee: str) -> None:
                topic = f"bench-{uuid.uuid4().hex[:8]}"
                admin.create_topics([NewTopic(topic, 1, 1)]).all()
                df.write.format("odradek").option("kafka.bootstrap.servers", bootstrap).option(
                    "topic", topic
                ).option("deliveryGuarantee", guarantee).mode("append").save()

            writes: dict[str, Callable[[], None]] = {
                "noop sink": lambda: df.write.format("noop").mode("overwrite").save(),
                "null Arrow writer": lambda: (
                    df.write.format("bench_null_arrow").mode("append").save()
                ),
                "odradek": lambda: to_odradek("atLeastOnce"),
                "odradek exactly-once": lambda: to_odradek("exactlyOnce"),
            }
            for save in writes.values():  # warm-up: JIT, Python workers, connections
                save()
            seconds: dict[str, list[float]] = {name: [] for name in writes}
            for _ in range(args.rounds):
                for name, save in writes.items():
                    seconds[name].append(timed(save))
            best = {name: min(values) for name, values in seconds.items()}
        finally:
            admin.close()
            stop_serve(server)
    spark.stop()

    rates = {name: rows / value for name, value in best.items()}
    print(
        f"{rows:,} rows x {VALUE_BYTES} B, local[2], acks=all, 1 partition; "
        f"best of {args.rounds} rounds"
    )
    print(f"{'write':<20} {'rows/s':>12} {'MB/s':>8}")
    for name, rate in rates.items():
        print(f"{name:<20} {rate:>12,.0f} {rate * VALUE_BYTES / 1e6:>8.1f}")
    print(
        f"odradek = {rates['odradek'] / rates['noop sink']:.2f}x the noop sink, "
        f"{rates['odradek'] / rates['null Arrow writer']:.2f}x the null Arrow writer"
    )
    exactly_once = rates["odradek exactly-once"]
    print(
        f"odradek exactly-once = {exactly_once / rates['null Arrow writer']:.2f}x the null Arrow "
        f"writer, {exactly_once / rates['odradek']:.2f}x at-least-once"
    )


if __name__ == "__main__":
    main()
