"""Batch reads through a real local SparkSession: every field of every record, for each
option form."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import DataFrame, SparkSession

from odradek import AdminClient, Broker, TopicPartition

from ._data import as_expected, by_position, create_topic, produce, unique

pytestmark = [pytest.mark.spark]


def read(spark: SparkSession, broker: Broker, **options: str) -> DataFrame:
    reader = spark.read.format("odradek").option(
        "kafka.bootstrap.servers", broker.bootstrap_servers
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_subscribe_reads_every_field(spark: SparkSession, broker: Broker) -> None:
    topic = create_topic(broker.bootstrap_servers, unique("every"), partitions=3)
    expected = produce(broker.bootstrap_servers, topic, 300, partitions=3)
    rows = read(spark, broker, subscribe=topic, includeHeaders="true").collect()
    assert by_position(as_expected(rows)) == by_position(expected)


def test_without_headers_the_schema_has_no_headers_column(
    spark: SparkSession, broker: Broker
) -> None:
    topic = create_topic(broker.bootstrap_servers, unique("nohdr"))
    expected = produce(broker.bootstrap_servers, topic, 20)
    df = read(spark, broker, subscribe=topic)
    assert df.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    ]
    got = as_expected(df.collect(), headers=False)
    assert by_position(got) == by_position([(*r[:7], ()) for r in expected])


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches(spark: SparkSession, broker: Broker, compression: str) -> None:
    topic = create_topic(broker.bootstrap_servers, unique(compression), partitions=2)
    expected = produce(broker.bootstrap_servers, topic, 200, partitions=2, compression=compression)
    rows = read(spark, broker, subscribe=topic, includeHeaders="true").collect()
    assert by_position(as_expected(rows)) == by_position(expected)


def test_assign_with_specific_starting_and_ending_offsets(
    spark: SparkSession, broker: Broker
) -> None:
    topic = create_topic(broker.bootstrap_servers, unique("assign"), partitions=3)
    expected = produce(broker.bootstrap_servers, topic, 150, partitions=3)
    rows = read(
        spark,
        broker,
        assign=json.dumps({topic: [0, 2]}),
        startingOffsets=json.dumps({topic: {"0": 5, "2": -2}}),
        endingOffsets=json.dumps({topic: {"0": 20, "2": -1}}),
        includeHeaders="true",
    ).collect()
    want = [r for r in expected if (r[3] == 0 and 5 <= r[4] < 20) or r[3] == 2]
    assert by_position(as_expected(rows)) == by_position(want)


def test_subscribe_pattern_reads_matching_topics_only(spark: SparkSession, broker: Broker) -> None:
    tag = unique("pat")
    first = create_topic(broker.bootstrap_servers, f"{tag}-clicks")
    second = create_topic(broker.bootstrap_servers, f"{tag}-views", partitions=2)
    other = create_topic(broker.bootstrap_servers, f"other-{tag}")
    expected = produce(broker.bootstrap_servers, first, 10)
    expected += produce(broker.bootstrap_servers, second, 10, partitions=2)
    produce(broker.bootstrap_servers, other, 10)
    rows = read(spark, broker, subscribePattern=f"^{tag}-", includeHeaders="true").collect()
    assert by_position(as_expected(rows)) == by_position(expected)


def test_timestamps_select_offsets(spark: SparkSession, broker: Broker) -> None:
    topic = create_topic(broker.bootstrap_servers, unique("ts"), partitions=2)
    base = 1_700_000_000_000
    expected = produce(broker.bootstrap_servers, topic, 100, partitions=2, base_ts=base)
    start, end = base + 200, base + 600  # records i = 20 .. 59 (timestamps base + 10 i)
    rows = read(
        spark, broker, subscribe=topic, startingTimestamp=str(start), endingTimestamp=str(end)
    ).collect()
    want = [r[:7] for r in expected if start <= r[5] < end]
    assert by_position(r[:7] for r in as_expected(rows, headers=False)) == by_position(want)

    per_partition = read(
        spark,
        broker,
        subscribe=topic,
        startingOffsetsByTimestamp=json.dumps({topic: {"0": base + 500, "1": -2}}),
    ).collect()
    want = [r[:7] for r in expected if r[3] == 1 or r[5] >= base + 500]
    assert by_position(r[:7] for r in as_expected(per_partition, headers=False)) == by_position(
        want
    )


def test_a_timestamp_after_every_record(spark: SparkSession, broker: Broker) -> None:
    topic = create_topic(broker.bootstrap_servers, unique("late"))
    produce(broker.bootstrap_servers, topic, 10)
    future = str(4_000_000_000_000)
    with pytest.raises(Exception, match="No offset matched from request of topic-partition"):
        read(spark, broker, subscribe=topic, startingTimestamp=future).collect()
    rows = read(
        spark,
        broker,
        subscribe=topic,
        startingTimestamp=future,
        startingOffsetsByTimestampStrategy="latest",
    ).collect()
    assert rows == []


def test_min_partitions_and_max_records_split_the_work(spark: SparkSession, broker: Broker) -> None:
    topic = create_topic(broker.bootstrap_servers, unique("split"), partitions=2)
    expected = produce(broker.bootstrap_servers, topic, 400, partitions=2)
    wide = read(spark, broker, subscribe=topic, minPartitions="8", includeHeaders="true")
    assert wide.rdd.getNumPartitions() == 8
    assert by_position(as_expected(wide.collect())) == by_position(expected)
    capped = read(
        spark, broker, subscribe=topic, maxRecordsPerPartition="50", includeHeaders="true"
    )
    assert capped.rdd.getNumPartitions() == 8  # 200 per partition / 50
    assert by_position(as_expected(capped.collect())) == by_position(expected)


def test_log_append_time_topic(spark: SparkSession, broker: Broker) -> None:
    topic = create_topic(
        broker.bootstrap_servers, unique("lat"), **{"message.timestamp.type": "LogAppendTime"}
    )
    expected = produce(broker.bootstrap_servers, topic, 10)
    rows = read(spark, broker, subscribe=topic).collect()
    assert {row["timestampType"] for row in rows} == {1}
    assert [row["offset"] for row in rows] == [r[4] for r in expected]
    # The broker's append time, not the producer's 2023 create time.
    assert all(row["timestamp"].year >= 2025 for row in rows)


def test_empty_and_missing_topics_read_nothing(spark: SparkSession, broker: Broker) -> None:
    topic = create_topic(broker.bootstrap_servers, unique("empty"))
    assert read(spark, broker, subscribe=topic).collect() == []
    assert read(spark, broker, subscribe=unique("nosuch")).collect() == []


def test_deleted_records_are_data_loss_unless_tolerated(
    spark: SparkSession, broker: Broker
) -> None:
    topic = create_topic(broker.bootstrap_servers, unique("gone"))
    expected = produce(broker.bootstrap_servers, topic, 30)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    try:
        admin.delete_records({TopicPartition(topic, 0): 10}).all()
    finally:
        admin.close()
    offsets = json.dumps({topic: {"0": 0}})
    with pytest.raises(Exception, match="is before the log start offset 10"):
        read(spark, broker, subscribe=topic, startingOffsets=offsets).collect()
    rows = read(
        spark, broker, subscribe=topic, startingOffsets=offsets, failOnDataLoss="false"
    ).collect()
    assert [row["offset"] for row in rows] == [r[4] for r in expected[10:]]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "One of the following options must be specified for Kafka source"),
        ({"subscribe": "a", "startingOffsets": "latest"}, "starting offset can't be latest"),
        ({"subscribe": "a", "kafka.no.such.setting": "1"}, "no.such.setting"),
    ],
)
def test_bad_options_fail_with_a_clear_message(
    spark: SparkSession, broker: Broker, options: dict[str, str], message: str
) -> None:
    with pytest.raises(Exception, match=message):
        read(spark, broker, **options).collect()


def test_kafka_options_reach_the_client(spark: SparkSession, broker: Broker) -> None:
    topic = create_topic(broker.bootstrap_servers, unique("pass"))
    expected = produce(broker.bootstrap_servers, topic, 50)
    rows = read(
        spark,
        broker,
        subscribe=topic,
        **{"kafka.max.partition.fetch.bytes": "64", "kafka.check.crcs": "false"},
    ).collect()
    assert [row["offset"] for row in rows] == [r[4] for r in expected]
