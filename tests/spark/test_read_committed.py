"""``kafka.isolation.level`` through a real local SparkSession: a topic holding plain records,
a committed transaction, an aborted one, another committed one and one left open. With
read_committed a batch read and a streaming read see exactly the committed (and plain) rows,
in order, and end at the last stable offset without reporting data loss; with
read_uncommitted they see every record up to the high watermark."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from odradek import Broker, Producer

from ._data import create_topic, unique

pytestmark = [pytest.mark.spark]


def values(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}{i}".encode() for i in range(count)]


@pytest.fixture(scope="module")
def topic(broker: Broker) -> Iterator[str]:
    """The topic; its last transaction stays open until the module's tests are done."""
    name = create_topic(broker.bootstrap_servers, unique("rc"))
    bootstrap = broker.bootstrap_servers
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 0}) as plain:
        for value in values("p", 3):
            plain.send(name, value, partition=0).result(30)
    txn = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": unique("rc-txn"), "linger.ms": 0}
    )
    try:
        txn.init_transactions()
        for prefix, count, commit in (("c", 4, True), ("a", 5, False), ("d", 3, True)):
            txn.begin_transaction()
            for value in values(prefix, count):
                txn.send(name, value, partition=0).result(30)
            if commit:
                txn.commit_transaction(30)
            else:
                txn.abort_transaction(30)
        txn.begin_transaction()
        for value in values("o", 2):
            txn.send(name, value, partition=0).result(30)
        txn.flush(30)
        yield name
    finally:
        with contextlib.suppress(Exception):
            txn.abort_transaction(30)
        txn.close()


COMMITTED = values("p", 3) + values("c", 4) + values("d", 3)
EVERYTHING = values("p", 3) + values("c", 4) + values("a", 5) + values("d", 3) + values("o", 2)


def read(spark: SparkSession, broker: Broker, topic: str, isolation: str | None) -> DataFrame:
    reader = (
        spark.read.format("odradek")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", topic)
    )
    if isolation is not None:
        reader = reader.option("kafka.isolation.level", isolation)
    return reader.load()


def ordered_values(df: DataFrame) -> list[bytes]:
    rows = df.select("offset", "value").collect()
    offsets = [row["offset"] for row in rows]
    assert offsets == sorted(offsets)
    return [bytes(row["value"]) for row in rows]


def test_batch_read_committed_sees_the_committed_rows_only(
    spark: SparkSession, broker: Broker, topic: str
) -> None:
    assert ordered_values(read(spark, broker, topic, "read_committed")) == COMMITTED


@pytest.mark.parametrize("isolation", [None, "read_uncommitted"])
def test_batch_read_uncommitted_sees_every_record(
    spark: SparkSession, broker: Broker, topic: str, isolation: str | None
) -> None:
    assert ordered_values(read(spark, broker, topic, isolation)) == EVERYTHING


def test_batch_read_committed_with_headers_and_a_range_inside_the_aborted_transaction(
    spark: SparkSession, broker: Broker, topic: str
) -> None:
    """Starting in the middle of the aborted transaction still drops the rest of it."""
    all_rows = read(spark, broker, topic, None).select("offset", "value").collect()
    second_aborted = next(r["offset"] for r in all_rows if bytes(r["value"]) == b"a1")
    df = (
        spark.read.format("odradek")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("assign", f'{{"{topic}":[0]}}')
        .option("startingOffsets", f'{{"{topic}":{{"0":{second_aborted}}}}}')
        .option("includeHeaders", "true")
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    assert ordered_values(df) == values("d", 3)


@pytest.mark.parametrize(
    ("isolation", "expected"), [("read_committed", COMMITTED), ("read_uncommitted", EVERYTHING)]
)
def test_streaming_read(
    spark: SparkSession,
    broker: Broker,
    topic: str,
    tmp_path: Path,
    isolation: str,
    expected: list[bytes],
) -> None:
    got: list[bytes] = []

    def sink(df: DataFrame, _batch_id: int) -> None:
        got.extend(ordered_values(df))

    df = (
        spark.readStream.format("odradek")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", isolation)
        .load()
    )
    query = (
        df.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    with contextlib.suppress(StreamingQueryException):
        query.awaitTermination(120)
    assert query.exception() is None
    assert got == expected
