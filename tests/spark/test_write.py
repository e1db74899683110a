"""Batch and streaming writes through a real local SparkSession (``spark.writer``), checked by
reading the topics back with ``SimpleConsumer``: every field of every row, the topic option
and column, string and binary columns, delivery failures with the broker's reason, and Spark's
schema errors. The commit message is checked by calling ``write`` directly."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import BinaryType, StringType, StructField, StructType, TimestampType

from odradek import AdminClient, Broker, NewTopic, SimpleConsumer, TopicPartition
from odradek.client import Message
from odradek.client.partitioner import default_partition
from odradek.errors import ConfigError, OdradekError
from odradek.spark import writer as writer_module
from odradek.spark._rows_to_records import SinkColumns, record_columns
from odradek.spark.options import parse_sink_options
from odradek.spark.writer import BatchWriter, WriteCommitMessage

pytestmark = [pytest.mark.spark]

BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def admin(broker: Broker) -> Iterator[AdminClient]:
    client = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    yield client
    client.close()


@pytest.fixture(scope="module")
def consumer(broker: Broker) -> Iterator[SimpleConsumer]:
    client = SimpleConsumer({"bootstrap.servers": broker.bootstrap_servers})
    yield client
    client.close()


def new_topic(admin: AdminClient, prefix: str, partitions: int = 1, **configs: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, partitions, 1, configs=configs)]).all()
    return name


def read_back(consumer: SimpleConsumer, topic: str, partitions: int = 1) -> list[Message]:
    """Every message of the topic, partition by partition, in offset order."""
    messages: list[Message] = []
    for partition in range(partitions):
        end = consumer.latest_offset(topic, partition)
        offset = 0
        while offset < end:
            fetched = consumer.fetch(topic, partition, offset)
            messages.extend(m for m in fetched if m.offset < end)
            offset = fetched[-1].next_offset
    return messages


def writer(df: DataFrame, broker: Broker, **options: str) -> None:
    out = df.write.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap_servers)
    for key, value in options.items():
        out = out.option(key, value)
    out.mode("append").save()


# ---------------------------------------------------------------------- batch writes


def test_every_row_lands_with_every_field(
    spark: SparkSession, broker: Broker, admin: AdminClient, consumer: SimpleConsumer
) -> None:
    topic = new_topic(admin, "exact", partitions=3)
    rows = 600
    df = spark.range(rows).selectExpr(
        "id",
        "CASE WHEN id % 5 = 0 THEN NULL ELSE CAST(concat('k', id) AS BINARY) END AS key",
        "CASE WHEN id % 11 = 0 THEN NULL ELSE CAST(repeat(concat('v', id), 1 + id % 3)"
        " AS BINARY) END AS value",
        "CASE WHEN id % 7 = 0 THEN NULL ELSE CAST(id % 3 AS INT) END AS partition",
        "CASE WHEN id % 4 = 0 THEN NULL WHEN id % 4 = 1 THEN array() ELSE array("
        "named_struct('key', 'h', 'value', CAST(CAST(id AS STRING) AS BINARY)),"
        "named_struct('key', 'n', 'value', CAST(NULL AS BINARY))) END AS headers",
        f"timestamp_millis({BASE_TS} + id) AS timestamp",
    )
    writer(df.drop("id"), broker, topic=topic)

    got = read_back(consumer, topic, partitions=3)
    assert len(got) == rows
    by_ts = {m.timestamp - BASE_TS: m for m in got}
    assert sorted(by_ts) == list(range(rows))
    for i, m in by_ts.items():
        assert m.key == (None if i % 5 == 0 else f"k{i}".encode())
        assert m.value == (None if i % 11 == 0 else f"v{i}".encode() * (1 + i % 3))
        if i % 7:
            assert m.partition == i % 3
        expected_headers = () if i % 4 < 2 else (("h", str(i).encode()), ("n", None))
        assert m.headers == expected_headers


def test_topic_column_and_topic_option(
    spark: SparkSession, broker: Broker, admin: AdminClient, consumer: SimpleConsumer
) -> None:
    first, second, override = (new_topic(admin, name) for name in ("col-a", "col-b", "opt"))
    # String key and value, the topic from a column.
    df = spark.range(40).selectExpr(
        f"IF(id % 2 = 0, '{first}', '{second}') AS topic",
        "CAST(id AS STRING) AS key",
        "concat('välue-', id) AS value",
    )
    writer(df, broker)
    evens, odds = read_back(consumer, first), read_back(consumer, second)
    assert sorted((m.key, m.value) for m in evens) == sorted(
        (str(i).encode(), f"välue-{i}".encode()) for i in range(0, 40, 2)
    )
    assert len(odds) == 20
    assert all(int(m.key or b"") % 2 == 1 for m in odds)

    # The topic option wins over the column, as in Spark.
    writer(df, broker, topic=override)
    assert len(read_back(consumer, override)) == 40
    assert len(read_back(consumer, first)) == 20
    assert len(read_back(consumer, second)) == 20


def test_a_row_for_a_missing_partition_fails_the_job(
    spark: SparkSession, broker: Broker, admin: AdminClient
) -> None:
    topic = new_topic(admin, "nopart")
    df = spark.range(10).selectExpr("CAST(id AS STRING) AS value", "IF(id = 7, 5, 0) AS partition")
    with pytest.raises(Exception, match=r"UNKNOWN_TOPIC_OR_PARTITION") as raised:
        writer(df, broker, topic=topic)
    assert f"topic '{topic}' partition 5" in str(raised.value)


def test_a_record_the_broker_refuses_fails_the_job_with_its_reason(
    spark: SparkSession, broker: Broker, admin: AdminClient
) -> None:
    topic = new_topic(admin, "toolarge", **{"max.message.bytes": "2000"})
    df = spark.range(4).selectExpr("repeat('x', IF(id = 2, 5000, 10)) AS value")
    with pytest.raises(Exception, match=r"MESSAGE_TOO_LARGE") as raised:
        writer(df.coalesce(1), broker, topic=topic)
    assert f"topic '{topic}' partition 0" in str(raised.value)


def test_a_null_topic_fails_the_job(
    spark: SparkSession, broker: Broker, admin: AdminClient
) -> None:
    topic = new_topic(admin, "nulltopic")
    df = spark.range(3).selectExpr(f"IF(id = 1, NULL, '{topic}') AS topic", "'v' AS value")
    with pytest.raises(Exception, match=r"null topic present in the data"):
        writer(df, broker)


@pytest.mark.parametrize(
    ("columns", "options", "message"),
    [
        (["'x' AS key"], {"topic": "t"}, r"Required attribute 'value' not found"),
        (
            ["'x' AS value"],
            {},
            r"topic option required when no 'topic' attribute is present\. Use the topic "
            r"option for setting a topic\.",
        ),
        (
            ["'x' AS value"],
            {"topic": "t", "kafka.lingerms": "5"},
            r"unknown configuration 'lingerms' for a producer client \(did you mean 'linger\.ms'",
        ),
    ],
    ids=["no-value", "no-topic", "unknown-setting"],
)
def test_invalid_writes_fail_before_any_task(
    spark: SparkSession,
    broker: Broker,
    columns: list[str],
    options: dict[str, str],
    message: str,
) -> None:
    with pytest.raises(AnalysisException, match=message):
        writer(spark.range(1).selectExpr(*columns), broker, **options)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            "topic string, value int",
            r"^value attribute unsupported type int\. value must be a\(n\) string or binary$",
        ),
        (
            "topic string, key int, value string",
            r"^key attribute unsupported type int\. key must be a\(n\) string or binary$",
        ),
        (
            "topic binary, value string",
            r"^topic attribute unsupported type binary\. topic must be a\(n\) string$",
        ),
        (
            "topic string, value string, partition bigint",
            r"^partition attribute unsupported type bigint\. partition must be a\(n\) int$",
        ),
        (
            "topic string, value string, headers array<string>",
            r"^headers attribute unsupported type array<string>\. headers must be a\(n\) "
            r"array<struct<key:string,value:binary>>$",
        ),
        (
            "topic string, value string, timestamp timestamp_ntz",
            r"^timestamp attribute unsupported type timestamp_ntz\. timestamp must be a\(n\) "
            r"double or timestamp$",
        ),
    ],
    ids=["value", "key", "topic", "partition", "headers", "timestamp"],
)
def test_column_types_are_checked_like_spark(
    spark: SparkSession, fields: str, message: str
) -> None:
    """On the driver, with Spark's messages (``spark`` only parses the DDL)."""
    options = parse_sink_options({"kafka.bootstrap.servers": "127.0.0.1:1"})
    with pytest.raises(ValueError, match=message):
        BatchWriter(options, StructType.fromDDL(fields))


def test_with_the_topic_option_a_topic_column_of_any_type_is_ignored(spark: SparkSession) -> None:
    """And types match ignoring nullability and the case of the header fields, as in Spark."""
    options = parse_sink_options({"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t"})
    schema = "topic int, value binary, headers array<struct<KEY:string not null,value:binary>>"
    BatchWriter(options, StructType.fromDDL(schema))


# ---------------------------------------------------------------------- streaming writes


def test_streaming_write_lands_every_row(
    spark: SparkSession,
    broker: Broker,
    admin: AdminClient,
    consumer: SimpleConsumer,
    tmp_path: Path,
) -> None:
    topic = new_topic(admin, "stream", partitions=2)
    source = tmp_path / "in"
    source.mkdir()
    for part in range(2):  # two files, one micro-batch each
        lines = (
            json.dumps({"key": f"k{i}", "value": f"v{i}"}) for i in range(part * 50, part * 50 + 50)
        )
        (source / f"part-{part}.json").write_text("\n".join(lines) + "\n")
    schema = StructType([StructField("key", StringType()), StructField("value", StringType())])
    query = (
        spark.readStream.schema(schema)
        .option("maxFilesPerTrigger", 1)
        .json(str(source))
        .writeStream.format("odradek")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("topic", topic)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(120)
        assert query.exception() is None
        batches = {p.batchId: p.numInputRows for p in query.recentProgress if p.numInputRows}
        assert batches == {0: 50, 1: 50}  # two micro-batches, two commits
    finally:
        query.stop()
    got = read_back(consumer, topic, partitions=2)
    assert sorted((m.key, m.value) for m in got) == sorted(
        (f"k{i}".encode(), f"v{i}".encode()) for i in range(100)
    )


# ---------------------------------------------------------------------- the task itself


def test_write_returns_the_rows_per_partition(
    broker: Broker, admin: AdminClient, consumer: SimpleConsumer
) -> None:
    """``write`` as Spark calls it in a task: Arrow batches in, a commit message out."""
    topic = new_topic(admin, "direct", partitions=2)
    schema = StructType([StructField("value", BinaryType())])
    options = parse_sink_options(
        {"kafka.bootstrap.servers": broker.bootstrap_servers, "topic": topic}
    )
    sink = BatchWriter(options, schema)
    batches = [
        pa.record_batch([pa.array([b"a", b"b", b"c"])], names=["value"]),
        pa.record_batch([pa.array([], pa.binary())], names=["value"]),
        pa.record_batch([pa.array([b"d"])], names=["value"]),
    ]
    message = sink.write(iter(batches))
    assert isinstance(message, WriteCommitMessage)
    assert message.total_rows == 4
    landed = Counter(TopicPartition(m.topic, m.partition) for m in read_back(consumer, topic, 2))
    assert message.rows == landed
    # A task without rows makes no producer and reports nothing.
    assert sink.write(iter([])) == WriteCommitMessage({})


def test_producer_settings_are_checked_on_the_driver(broker: Broker) -> None:
    schema = StructType([StructField("value", BinaryType())])
    options = parse_sink_options(
        {"kafka.bootstrap.servers": broker.bootstrap_servers, "topic": "t", "kafka.acks": "2"}
    )
    with pytest.raises(ConfigError, match=r"acks"):
        BatchWriter(options, schema)


def test_rows_become_record_fields_column_by_column() -> None:
    """``record_columns``: strings as UTF-8 bytes, a double timestamp as seconds (NaN: now),
    all-null columns as absent, and a null header key refused before anything is sent."""
    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    batch = pa.record_batch(
        {
            "value": pa.array(["é", None, "c"]),
            "key": pa.array([None, None, None], pa.binary()),
            "partition": pa.array([None, None, None], pa.int32()),
            "timestamp": pa.array([1.5, float("nan"), -0.0015]),
            "headers": pa.array([[("a", b"1"), ("b", None)], None, []], pa.list_(header)),
        }
    )
    columns = SinkColumns(
        value=0, key=1, partition=2, timestamp=3, timestamp_seconds=True, headers=4
    )
    rows = record_columns(batch, columns)
    assert rows.values == ["é".encode(), None, b"c"]
    assert rows.keys is None
    assert rows.partitions is None
    assert rows.timestamps_ms == [1500, None, -1]
    assert rows.headers == [(("a", b"1"), ("b", None)), (), ()]
    assert rows.topics is None

    bad = pa.record_batch(
        {"value": pa.array([b"v"]), "headers": pa.array([[(None, b"1")]], pa.list_(header))}
    )
    with pytest.raises(ValueError, match=r"null header key"):
        record_columns(bad, SinkColumns(value=0, headers=1))


def test_whole_batches_from_arrow_and_rows_refused_take_the_per_row_path(
    broker: Broker, admin: AdminClient, consumer: SimpleConsumer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Arrow batches go out as encoded batches (no per-row ``send``), keyed rows in the default
    partitioner's partition, in order; a batch with a row the producer would refuse (a
    negative timestamp) goes the per-row way, which fails the task with the producer's
    reason."""
    per_row_calls: list[int] = []
    send_rows = writer_module._send_rows

    def spy(producer: Any, topic: Any, rows: Any, pending: Any) -> None:
        per_row_calls.append(rows.count)
        send_rows(producer, topic, rows, pending)

    monkeypatch.setattr(writer_module, "_send_rows", spy)
    topic = new_topic(admin, "fast", partitions=3)
    schema = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    options = parse_sink_options(
        {"kafka.bootstrap.servers": broker.bootstrap_servers, "topic": topic}
    )
    sink = BatchWriter(options, schema)
    keys = [f"k{i % 7}" for i in range(2_000)]
    values = [b"v%d" % i for i in range(2_000)]
    batches = [
        pa.record_batch([pa.array(keys[:1_500]), pa.array(values[:1_500])], names=["key", "value"]),
        pa.record_batch([pa.array(keys[1_500:]), pa.array(values[1_500:])], names=["key", "value"]),
    ]
    message = sink.write(iter(batches))
    assert per_row_calls == []
    assert message.total_rows == 2_000
    landed = read_back(consumer, topic, 3)
    expected = {
        p: [
            (k.encode(), v)
            for k, v in zip(keys, values, strict=True)
            if default_partition(k.encode(), 3) == p
        ]
        for p in range(3)
    }
    assert {p: [(m.key, m.value) for m in landed if m.partition == p] for p in range(3)} == expected

    timed = StructType(
        [StructField("value", BinaryType()), StructField("timestamp", TimestampType())]
    )
    sink = BatchWriter(options, timed)
    early = pa.record_batch(
        [pa.array([b"a", b"b"]), pa.array([0, -1_000_000], pa.timestamp("us", tz="UTC"))],
        names=["value", "timestamp"],
    )
    with pytest.raises(OdradekError, match="invalid timestamp -1000"):
        sink.write(iter([early]))
    assert per_row_calls == [2]
