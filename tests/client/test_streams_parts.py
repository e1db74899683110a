"""Unit tests of the streams API's parts without a broker: topic filters, the router's one
stream per partition, and a stream's bounded queue, purge, end and timeout."""

from __future__ import annotations

import pytest

from odradek import (
    Blacklist,
    ConsumerConnector,
    ConsumerRecord,
    ConsumerTimeoutError,
    TopicPartition,
    Whitelist,
)
from odradek._clock import MockClock
from odradek.client.config import ClientConfig
from odradek.client.streams.config import CONSUMER_CONNECTOR, ConnectorSettings
from odradek.client.streams.router import StreamRouter
from odradek.client.streams.stream import ConsumedOffsets, MessageStream
from odradek.errors import ConfigError, KafkaError
from odradek.records.batch import TimestampType


def record(topic: str, partition: int, offset: int) -> ConsumerRecord:
    return ConsumerRecord(
        topic, partition, offset, 1_000 + offset, TimestampType.CREATE_TIME,
        b"k", b"v%d" % offset, (), 1, 2, -1, 0,
    )  # fmt: skip


# ---------------------------------------------------------------------- filters


def test_whitelist_matches_whole_names_and_commas_separate_alternatives() -> None:
    wl = Whitelist(" 'orders, pay.*' ")
    assert wl.regex == "orders|pay.*"
    assert wl.is_topic_allowed("orders")
    assert wl.is_topic_allowed("payments")
    assert not wl.is_topic_allowed("orders-eu")
    assert not wl.is_topic_allowed("x-payments")
    assert wl.pattern().search("payments")
    assert not wl.pattern().search("orders-eu")


def test_blacklist_pattern_finds_exactly_the_other_topics() -> None:
    bl = Blacklist("secret.*,audit")
    for topic in ["public", "audit-log", "x-secret", "audits"]:
        assert bl.is_topic_allowed(topic)
        assert bl.pattern().search(topic), topic
    for topic in ["secret", "secrets", "audit"]:
        assert not bl.is_topic_allowed(topic)
        assert not bl.pattern().search(topic), topic


def test_filters_refuse_empty_or_invalid_expressions_and_compare_by_value() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        Whitelist("  ")
    with pytest.raises(ValueError, match="invalid topic filter"):
        Whitelist("a(")
    assert Whitelist("a,b") == Whitelist("a|b")
    assert Whitelist("a") != Blacklist("a")
    assert len({Whitelist("a"), Whitelist(" a ")}) == 1


# ---------------------------------------------------------------------- router


def tps(topic: str, count: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in range(count)]


def test_router_spreads_partitions_evenly_over_the_topics_streams() -> None:
    router = StreamRouter(lambda topic: {"a": (0, 1), "b": (2,)}.get(topic, ()))
    placed = router.add([*tps("a", 5), *tps("b", 2)])
    assert router.partitions_of(0) == [TopicPartition("a", p) for p in (0, 2, 4)]
    assert router.partitions_of(1) == [TopicPartition("a", p) for p in (1, 3)]
    assert router.partitions_of(2) == tps("b", 2)
    assert placed == router.partitions()
    with pytest.raises(ValueError, match="no stream"):
        router.add([TopicPartition("c", 0)])


def test_router_keeps_placed_partitions_and_fills_the_emptiest_stream() -> None:
    router = StreamRouter(lambda _topic: (0, 1))
    router.add(tps("t", 4))
    assert router.remove(TopicPartition("t", 0)) == 0
    assert router.remove(TopicPartition("t", 2)) == 0
    assert router.remove(TopicPartition("t", 2)) is None
    # Placed partitions stay; new ones go to the stream feeding fewer.
    router.add([*tps("t", 4), TopicPartition("t", 4)])
    assert router.stream_for(TopicPartition("t", 1)) == 1
    assert router.stream_for(TopicPartition("t", 3)) == 1
    assert router.partitions_of(0) == [TopicPartition("t", p) for p in (0, 2, 4)]  # 2-2 tie
    # Each partition feeds exactly one stream.
    assert sorted(router.partitions()) == tps("t", 5)


# ---------------------------------------------------------------------- stream


def make_stream(consumed: ConsumedOffsets, **kwargs: int) -> MessageStream:
    kwargs.setdefault("max_chunks", 2)
    return MessageStream("s", consumed, clock=MockClock(), **kwargs)


def test_stream_queue_is_bounded_by_chunks_and_records_what_it_hands_out() -> None:
    consumed = ConsumedOffsets()
    stream = make_stream(consumed, max_chunks=2)
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    assert stream.offer(a, [record("t", 0, 0), record("t", 0, 1)])
    assert stream.offer(b, [record("t", 1, 7)])
    assert not stream.has_room()
    assert not stream.offer(a, [record("t", 0, 2)])
    first = next(stream)
    assert (first.topic, first.partition, first.offset) == ("t", 0, 0)
    assert (first.key, first.message, first.value, first.timestamp) == (b"k", b"v0", b"v0", 1_000)
    assert consumed.snapshot() == {a: 1}
    assert not stream.has_room()  # the first chunk is not used up yet
    assert next(stream).offset == 1
    assert stream.has_room()
    assert next(stream).offset == 7
    assert consumed.snapshot() == {a: 2, b: 8}
    assert stream.statistics() == {"queued_chunks": 0, "queued_records": 0, "handed_out": 3}


def test_purge_drops_a_partitions_queued_records_only() -> None:
    consumed = ConsumedOffsets()
    stream = make_stream(consumed, max_chunks=3, consumer_timeout_ms=0)
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    stream.offer(a, [record("t", 0, 0), record("t", 0, 1)])
    stream.offer(b, [record("t", 1, 0)])
    stream.offer(a, [record("t", 0, 2)])
    assert next(stream).offset == 0
    assert stream.purge(a) == 2
    message = next(stream)
    assert (message.partition, message.offset) == (1, 0)
    with pytest.raises(ConsumerTimeoutError):
        next(stream)
    assert consumed.snapshot() == {a: 1, b: 1}


def test_timeout_leaves_the_stream_usable_and_end_stops_iteration() -> None:
    stream = make_stream(ConsumedOffsets(), consumer_timeout_ms=0)
    with pytest.raises(ConsumerTimeoutError):
        next(stream)
    stream.offer(TopicPartition("t", 0), [record("t", 0, 5)])
    assert next(stream).offset == 5
    stream.offer(TopicPartition("t", 0), [record("t", 0, 6)])
    stream.end()
    assert stream.ended
    assert list(stream) == []  # queued records are dropped at the end
    assert not stream.offer(TopicPartition("t", 0), [record("t", 0, 7)])


def test_a_failure_is_raised_once_then_the_stream_ends() -> None:
    stream = make_stream(ConsumedOffsets())
    stream.end(KafkaError("broken"))
    with pytest.raises(KafkaError, match="broken"):
        next(stream)
    with pytest.raises(StopIteration):
        next(stream)


def test_connector_config_needs_a_group_and_knows_its_keys() -> None:
    with pytest.raises(ConfigError, match=r"group\.id"):
        ConsumerConnector(bootstrap_servers="127.0.0.1:1")
    with pytest.raises(ConfigError, match=r"queued\.max\.message\.chunks"):
        ConsumerConnector(bootstrap_servers="127.0.0.1:1", group_id="g", queued_max_message_chunk=2)


def test_connector_refreshes_metadata_more_often_than_a_consumer() -> None:
    settings = ConnectorSettings.from_config(
        ClientConfig({"group.id": "g", "auto.commit.enable": False}, client_type=CONSUMER_CONNECTOR)
    )
    assert settings.consumer_config["metadata.max.age.ms"] == 10_000
    assert settings.consumer_config["enable.auto.commit"] is False
    assert not settings.auto_commit
