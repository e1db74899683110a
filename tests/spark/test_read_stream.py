"""Streaming reads through a real local SparkSession: rate limits, restarts from a checkpoint,
replay of a failed batch, new topics, data loss, group offsets."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from odradek import AdminClient, Broker, TopicPartition

from ._data import create_topic, produce, unique

pytestmark = [pytest.mark.spark]


class Batches:
    """A foreachBatch sink that remembers each batch's (partition key, offset) rows in order."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.batches: list[tuple[int, list[tuple[str, int, int]]]] = []
        self.fail_on = fail_on
        self.lock = threading.Lock()

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        rows = [(r["topic"], r["partition"], r["offset"]) for r in df.collect()]
        if self.fail_on == batch_id:
            self.fail_on = None
            raise RuntimeError(f"injected failure in batch {batch_id}")
        with self.lock:
            self.batches.append((batch_id, rows))

    def rows(self) -> list[tuple[str, int, int]]:
        with self.lock:
            return [row for _, rows in self.batches for row in rows]


def stream(spark: SparkSession, broker: Broker, **options: str) -> DataFrame:
    reader = spark.readStream.format("odradek").option(
        "kafka.bootstrap.servers", broker.bootstrap_servers
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def run_available_now(df: DataFrame, sink: Batches, checkpoint: Path) -> StreamingQuery:
    query = (
        df.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    with contextlib.suppress(StreamingQueryException):
        query.awaitTermination(120)  # raises the query's failure, which query.exception() keeps
    return query


def offsets_log(checkpoint: Path, batch_id: int) -> dict[str, dict[str, int]]:
    """The end offsets Spark logged for ``batch_id`` (its offset log's last line)."""
    lines = (checkpoint / "offsets" / str(batch_id)).read_text().splitlines()
    data: dict[str, dict[str, int]] = json.loads(lines[-1])
    return data


def positions(expected: list[Any]) -> list[tuple[str, int, int]]:
    return [(r[2], r[3], r[4]) for r in expected]


def assert_each_once_in_order(
    got: list[tuple[str, int, int]], expected: list[tuple[str, int, int]]
) -> None:
    assert len(got) == len(set(got)), "duplicates"
    assert sorted(got) == sorted(expected), "missing or extra records"
    per_partition: dict[tuple[str, int], list[int]] = {}
    for topic, partition, offset in got:
        per_partition.setdefault((topic, partition), []).append(offset)
    for offsets in per_partition.values():
        assert offsets == sorted(offsets), "per-partition order broken"


def test_rate_limit_then_restart_from_checkpoint(
    spark: SparkSession, broker: Broker, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap_servers, unique("rate"), partitions=3)
    first = produce(broker.bootstrap_servers, topic, 300, partitions=3)
    checkpoint = tmp_path / "checkpoint"
    options = {"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "50"}
    sink = Batches()
    query = run_available_now(stream(spark, broker, **options), sink, checkpoint)
    assert query.exception() is None
    sizes = [len(rows) for _, rows in sink.batches if rows]
    assert len(sizes) >= 6
    assert max(sizes) <= 50 + 3  # a partition with a share below one offset still moves by one
    assert_each_once_in_order(sink.rows(), positions(first))

    second = produce(broker.bootstrap_servers, topic, 200, partitions=3, start=300)
    query = run_available_now(stream(spark, broker, **options), sink, checkpoint)
    assert query.exception() is None
    assert_each_once_in_order(sink.rows(), positions(first + second))


def test_a_failed_batch_replays_exactly_its_range(
    spark: SparkSession, broker: Broker, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap_servers, unique("replay"), partitions=2)
    expected = produce(broker.bootstrap_servers, topic, 120, partitions=2)
    checkpoint = tmp_path / "checkpoint"
    options = {"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "40"}
    sink = Batches(fail_on=1)
    failed = run_available_now(stream(spark, broker, **options), sink, checkpoint)
    assert failed.exception() is not None
    assert "injected failure in batch 1" in str(failed.exception())
    start, end = offsets_log(checkpoint, 0)[topic], offsets_log(checkpoint, 1)[topic]

    run_available_now(stream(spark, broker, **options), sink, checkpoint)
    replayed = dict(sink.batches)[1]
    want = [(topic, p, o) for p in (0, 1) for o in range(start[str(p)], end[str(p)])]
    assert sorted(replayed) == want
    assert_each_once_in_order(sink.rows(), positions(expected))


def wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.2)


@pytest.fixture
def running() -> Iterator[list[StreamingQuery]]:
    queries: list[StreamingQuery] = []
    yield queries
    for query in queries:
        query.stop()


def test_subscribe_pattern_picks_up_a_new_topic(
    spark: SparkSession, broker: Broker, tmp_path: Path, running: list[StreamingQuery]
) -> None:
    tag = unique("grow")
    first = create_topic(broker.bootstrap_servers, f"{tag}-a")
    expected = produce(broker.bootstrap_servers, first, 10)
    sink = Batches()
    query = (
        stream(spark, broker, subscribePattern=f"^{tag}-", startingOffsets="earliest")
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    running.append(query)
    wait_for(lambda: len(sink.rows()) >= 10)
    second = create_topic(broker.bootstrap_servers, f"{tag}-b", partitions=2)
    expected += produce(broker.bootstrap_servers, second, 20, partitions=2)
    wait_for(lambda: len(sink.rows()) >= 30)
    query.stop()
    assert_each_once_in_order(sink.rows(), positions(expected))


@pytest.fixture(scope="module")
def retaining_broker() -> Iterator[Broker]:
    """A broker that enforces retention every 100 ms."""
    with Broker(config={"log.retention.check.interval.ms": "100"}) as started:
        yield started


def earliest(bootstrap: str, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        return admin.list_offsets({TopicPartition(topic, 0): -2})[TopicPartition(topic, 0)].offset
    finally:
        admin.close()


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_fail_on_data_loss_after_retention(
    spark: SparkSession, retaining_broker: Broker, tmp_path: Path, fail_on_data_loss: bool
) -> None:
    broker = retaining_broker
    topic = create_topic(
        broker.bootstrap_servers,
        unique("retained"),
        **{"segment.bytes": "1024", "retention.bytes": "2048"},
    )
    first = produce(broker.bootstrap_servers, topic, 20, batch_size=256)
    checkpoint = tmp_path / "checkpoint"
    options = {
        "subscribe": topic,
        "startingOffsets": "earliest",
        "failOnDataLoss": str(fail_on_data_loss).lower(),
    }
    sink = Batches()
    run_available_now(stream(spark, broker, **options), sink, checkpoint)
    assert_each_once_in_order(sink.rows(), positions(first))

    later = produce(broker.bootstrap_servers, topic, 200, start=20, batch_size=256)
    wait_for(lambda: earliest(broker.bootstrap_servers, topic) > 40)
    log_start = earliest(broker.bootstrap_servers, topic)
    query = run_available_now(stream(spark, broker, **options), sink, checkpoint)
    if fail_on_data_loss:
        assert query.exception() is not None
        assert "failOnDataLoss" in str(query.exception())
        assert "were deleted" in str(query.exception())
    else:
        assert query.exception() is None
        got = sink.rows()[len(first) :]
        assert got, "nothing read after the loss"
        # Retention may go on deleting while the query runs: what is read is the whole tail
        # of the log from some offset at or after the log start seen before the query.
        resumed = got[0][2]
        assert resumed >= log_start
        assert_each_once_in_order(got, positions([r for r in later if r[4] >= resumed]))


def test_group_offsets_match_what_the_query_processed(
    spark: SparkSession, broker: Broker, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap_servers, unique("lag"), partitions=2)
    expected = produce(broker.bootstrap_servers, topic, 100, partitions=2)
    group = unique("pipeline")
    options = {
        "subscribe": topic,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "30",
        "groupId": group,
    }
    sink = Batches()
    run_available_now(stream(spark, broker, **options), sink, tmp_path / "checkpoint")
    assert_each_once_in_order(sink.rows(), positions(expected))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    try:
        committed = admin.list_group_offsets(group)
    finally:
        admin.close()
    ends: dict[int, int] = {}
    for _, partition, offset in sink.rows():
        ends[partition] = max(ends.get(partition, 0), offset + 1)
    got = {
        tp.partition: meta.offset
        for tp, meta in committed.values_by_item.items()
        if tp.topic == topic and meta is not None
    }
    assert got == ends
