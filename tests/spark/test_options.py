"""Option parsing and validation: Spark's Kafka connector rules and messages."""

from __future__ import annotations

import re

import pytest

from odradek.client import TopicPartition
from odradek.spark.options import (
    Assign,
    GlobalTimestamp,
    PartitionOffsets,
    PartitionTimestamps,
    Subscribe,
    SubscribePattern,
    parse_sink_options,
    parse_source_options,
)
from odradek.spark.writer import producer_config

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def parse(streaming: bool = False, **options: str) -> object:
    return parse_source_options({**BOOT, **options}, streaming=streaming)


def test_strategies() -> None:
    assign = parse_source_options({**BOOT, "assign": '{"a":[0,1],"b":[2]}'}, streaming=False)
    assert assign.strategy == Assign(
        (TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 2))
    )
    sub = parse_source_options({**BOOT, "subscribe": " a, b ,,"}, streaming=False)
    assert sub.strategy == Subscribe(("a", "b"))
    pattern = parse_source_options({**BOOT, "subscribePattern": "ev.*"}, streaming=True)
    assert isinstance(pattern.strategy, SubscribePattern)
    assert pattern.strategy.matches("prefix-events")
    assert not pattern.strategy.matches("x")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "One of the following options must be specified for Kafka source"),
        ({"subscribe": "a", "assign": '{"a":[0]}'}, "Only one of the following options"),
        ({"assign": "a"}, "No topicpartitions to assign as specified value for option 'assign'"),
        ({"subscribe": " , "}, "No topics to subscribe to"),
        ({"subscribePattern": "  "}, "Pattern to subscribe is empty"),
        ({"subscribe": "a", "minPartitions": "0"}, "minPartitions must be positive"),
        ({"subscribe": "a", "maxRecordsPerPartition": "-1"}, "must be positive"),
        ({"subscribe": "a", "kafka.auto.offset.reset": "x"}, "'auto.offset.reset' is not"),
        ({"subscribe": "a", "kafka.key.deserializer": "x"}, "'key.deserializer' is not supported"),
        ({"subscribe": "a", "kafka.enable.auto.commit": "x"}, "'enable.auto.commit' is not"),
        ({"subscribe": "a", "startingOffsets": "latest"}, "starting offset can't be latest"),
        ({"subscribe": "a", "endingOffsets": "earliest"}, "ending offset can't be earliest"),
        ({"subscribe": "a", "startingOffsets": '{"a":{"0":-1}}'}, "can't be latest for batch"),
        ({"subscribe": "a", "startingOffsets": "{bad"}, "Expected e.g."),
        ({"subscribe": "a", "startingTimestamp": "soon"}, "Expected a single long value"),
        (
            {"subscribe": "a", "minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"},
            "minOffsetPerTrigger(10) is higher than the maxOffsetsPerTrigger(5)",
        ),
        (
            {
                "assign": '{"a":[0]}',
                "startingOffsets": '{"a":{"0":5}}',
                "endingOffsets": '{"a":{"0":3}}',
            },
            "greater than the end offset",
        ),
    ],
)
def test_invalid_batch_options(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_source_options({**BOOT, **options}, streaming=False)


def test_bootstrap_servers_required_and_accepted_without_prefix() -> None:
    with pytest.raises(ValueError, match=re.escape("'kafka.bootstrap.servers' must be specified")):
        parse_source_options({"subscribe": "a"}, streaming=False)
    options = parse_source_options({"subscribe": "a", "bootstrap.servers": "h:1"}, streaming=True)
    assert options.bootstrap_servers == "h:1"
    assert options.client_config == {"bootstrap.servers": "h:1"}


def test_isolation_level() -> None:
    default = parse_source_options({**BOOT, "subscribe": "a"}, streaming=False)
    assert not default.read_committed
    for streaming in (False, True):
        options = parse_source_options(
            {**BOOT, "subscribe": "a", "kafka.isolation.level": "read_committed"},
            streaming=streaming,
        )
        assert options.read_committed
        assert options.client_config["isolation.level"] == "read_committed"
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Invalid value committed for configuration isolation.level: String must be one "
            "of: read_uncommitted, read_committed"
        ),
    ):
        parse_source_options(
            {**BOOT, "subscribe": "a", "kafka.isolation.level": "committed"}, streaming=False
        )


def test_streaming_refuses_ending_offsets() -> None:
    with pytest.raises(ValueError, match="ending offset not valid in streaming queries"):
        parse_source_options({**BOOT, "subscribe": "a", "endingOffsets": "latest"}, streaming=True)


def test_offset_limits_by_preference_and_defaults() -> None:
    batch = parse_source_options({**BOOT, "subscribe": "a"}, streaming=False)
    assert (batch.starting, batch.ending) == ("earliest", "latest")
    stream = parse_source_options({**BOOT, "subscribe": "a"}, streaming=True)
    assert stream.starting == "latest"
    both = parse_source_options(
        {
            **BOOT,
            "subscribe": "a",
            "startingTimestamp": "1000",
            "startingOffsetsByTimestamp": '{"a":{"0":5}}',
            "startingOffsets": "earliest",
        },
        streaming=True,
    )
    assert both.starting == GlobalTimestamp(1000)
    by_ts = parse_source_options(
        {**BOOT, "subscribe": "a", "startingOffsetsByTimestamp": '{"a":{"0":5,"1":7}}'},
        streaming=True,
    )
    assert by_ts.starting == PartitionTimestamps(
        {TopicPartition("a", 0): 5, TopicPartition("a", 1): 7}
    )
    specific = parse_source_options(
        {**BOOT, "subscribe": "a", "STARTINGOFFSETS": '{"a":{"0":-2,"1":3}}'}, streaming=False
    )
    assert specific.starting == PartitionOffsets(
        {TopicPartition("a", 0): -2, TopicPartition("a", 1): 3}
    )


def test_trigger_options() -> None:
    options = parse_source_options(
        {
            **BOOT,
            "subscribe": "a",
            "maxOffsetsPerTrigger": "100",
            "minOffsetsPerTrigger": "10",
            "maxTriggerDelay": "30s",
            "groupId": "pipeline",
            "includeHeaders": "TRUE",
            "failOnDataLoss": "false",
        },
        streaming=True,
    )
    assert options.max_offsets_per_trigger == 100
    assert options.min_offsets_per_trigger == 10
    assert options.max_trigger_delay_ms == 30_000
    assert options.group_id == "pipeline"
    assert options.include_headers is True
    assert options.fail_on_data_loss is False
    with pytest.raises(ValueError, match="'failondataloss' must be 'true' or 'false'"):
        parse_source_options({**BOOT, "subscribe": "a", "failOnDataLoss": "maybe"}, streaming=True)


def test_sink_options() -> None:
    sink = parse_sink_options({**BOOT, "topic": " out ", "kafka.acks": "1"})
    assert sink.topic == "out"
    assert sink.client_config == {"bootstrap.servers": "127.0.0.1:9092", "acks": "1"}
    with pytest.raises(ValueError, match=re.escape("'key.serializer' is not supported")):
        parse_sink_options({**BOOT, "kafka.key.serializer": "x"})
    with pytest.raises(ValueError, match=re.escape("'value.serializer' is not supported")):
        parse_sink_options({**BOOT, "kafka.value.serializer": "x"})
    with pytest.raises(ValueError, match="must be specified for configuring Kafka producer"):
        parse_sink_options({"topic": "x"})


def test_delivery_guarantee_options() -> None:
    assert parse_sink_options(BOOT).exactly_once is False
    sink = parse_sink_options({**BOOT, "deliveryGuarantee": "exactlyonce"})
    assert sink.exactly_once is True
    assert sink.transactional_id_prefix == "odradek-spark-"
    sink = parse_sink_options(
        {**BOOT, "deliveryGuarantee": "atLeastOnce", "transactionalIdPrefix": "etl-"}
    )
    assert (sink.exactly_once, sink.transactional_id_prefix) == (False, "etl-")
    with pytest.raises(ValueError, match="'deliveryGuarantee' must be 'atLeastOnce' or"):
        parse_sink_options({**BOOT, "deliveryGuarantee": "exactly-twice"})
    with pytest.raises(ValueError, match="'transactionalIdPrefix' must not be empty"):
        parse_sink_options({**BOOT, "transactionalIdPrefix": " "})
    with pytest.raises(ValueError, match=r"'transactional\.id' is not supported"):
        parse_sink_options({**BOOT, "kafka.transactional.id": "mine"})


def test_writes_batch_256_kib_unless_the_options_say_otherwise() -> None:
    for guarantee in ("atLeastOnce", "exactlyOnce"):
        options = {**BOOT, "deliveryGuarantee": guarantee}
        config = producer_config(parse_sink_options(options))
        assert (config["batch.size"], config["acks"]) == (str(256 * 1024), "all")
        chosen = producer_config(parse_sink_options({**options, "kafka.batch.size": "4096"}))
        assert chosen["batch.size"] == "4096"
