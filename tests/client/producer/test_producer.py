"""``Producer`` against a live embedded broker: send/flush/close, the convenience and record
forms, sync mode, callbacks and interceptors, every codec read back by kafka-python, keyed
records where Java's partitioner puts them, sticky unkeyed batches, acks 0/1/all."""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from odradek import Broker
from odradek.client.partitioner import default_partition
from odradek.client.producer import Producer, ProducerRecord, RecordMetadata
from odradek.records.batch import CompressionType, iter_batches

from .conftest import PARTITIONS, TIMEOUT_S, read_back

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.partitioner.default import DefaultPartitioner as KafkaPythonPartitioner

BASE_TS = 1_700_000_000_000

MakeProducer = Callable[..., Producer]


def records(tag: str, count: int) -> list[ProducerRecord]:
    """Keyed and unkeyed records with varied headers and explicit timestamps."""
    made = []
    for seq in range(count):
        headers: tuple[tuple[str, bytes | None], ...] = (
            (),
            (("trace", f"t{seq}".encode()),),
            (("dup", b"1"), ("dup", b"2"), ("empty", b"")),
        )[seq % 3]
        made.append(
            ProducerRecord(
                topic=tag,
                value=f"{tag}|{seq}|".encode() + bytes(range(seq % 50)),
                key=f"key-{seq % 7}".encode() if seq % 2 == 0 else None,
                timestamp_ms=BASE_TS + seq,
                headers=headers,
            )
        )
    return made


def test_send_flush_and_read_back(broker: Broker, make_producer: MakeProducer) -> None:
    producer = make_producer(linger_ms=50)
    sent = records("plain", 300)
    futures = producer.send(sent)
    assert len(futures) == 300
    producer.flush(TIMEOUT_S)
    assert all(f.done() for f in futures)
    metadata = [f.result() for f in futures]
    back = read_back(broker.bootstrap_servers, "plain", 300)
    by_place = {(r.partition, r.offset): r for r in back}
    for record, meta in zip(sent, metadata, strict=True):
        assert meta.topic == "plain"
        assert meta.timestamp == record.timestamp_ms
        assert meta.serialized_key_size == (-1 if record.key is None else len(record.key))
        assert meta.serialized_value_size == len(record.value)
        got = by_place[(meta.partition, meta.offset)]
        assert (got.key, got.value, got.timestamp) == (
            record.key,
            record.value,
            record.timestamp_ms,
        )
        assert got.headers == tuple(record.headers)
        assert got.timestamp_type == 0
    # Send order is offset order within each partition.
    for partition in range(PARTITIONS):
        offsets = [m.offset for m in metadata if m.partition == partition]
        assert offsets == sorted(offsets)


def test_convenience_form_serializers_and_timestamps(
    broker: Broker, make_producer: MakeProducer
) -> None:
    producer = make_producer(key_serializer="str", value_serializer="json")
    before = producer._clock.now_ms()
    future = producer.send("conv", {"a": [1, 2]}, "k1", partition=2, headers=[("h", b"v")])
    meta = future.result(TIMEOUT_S)
    assert (meta.partition, meta.offset) == (2, 0)
    assert before <= meta.timestamp <= producer._clock.now_ms()
    [got] = read_back(broker.bootstrap_servers, "conv", 1)
    assert (got.key, got.value, got.headers) == (b"k1", b'{"a":[1,2]}', (("h", b"v"),))
    tombstone = producer.send("conv", None, "k1", partition=2).result(TIMEOUT_S)
    assert tombstone.serialized_value_size == -1


def test_sync_mode_waits_for_the_acknowledgement(
    broker: Broker, make_producer: MakeProducer
) -> None:
    producer = make_producer(producer_type="sync", linger_ms=60_000, delivery_timeout_ms=120_000)
    future = producer.send("sync", b"v")  # would linger a minute in async mode
    assert future.done()
    assert future.result().offset == 0
    futures = producer.send([ProducerRecord("sync", b"a"), ProducerRecord("sync", b"b")])
    assert all(f.done() for f in futures)
    assert sorted(f.result().offset for f in futures if f.result().partition == 0) == sorted(
        f.result().offset for f in futures if f.result().partition == 0
    )


def test_callbacks_and_interceptors(broker: Broker, make_producer: MakeProducer) -> None:
    seen: list[tuple[str, RecordMetadata, BaseException | None]] = []
    threads: set[str] = set()

    class Stamp:
        def on_send(self, record: ProducerRecord) -> ProducerRecord:
            return ProducerRecord(
                record.topic,
                record.value,
                record.key,
                record.partition,
                record.timestamp_ms,
                (*record.headers, ("stamped", b"yes")),
            )

        def on_acknowledgement(
            self, metadata: RecordMetadata, exception: BaseException | None
        ) -> None:
            seen.append(("interceptor", metadata, exception))

    def callback(metadata: RecordMetadata, exception: BaseException | None) -> None:
        threads.add(threading.current_thread().name)
        seen.append(("callback", metadata, exception))

    producer = make_producer(interceptor_classes=[Stamp()])
    futures = [producer.send("cb", b"v%d" % i, partition=0, callback=callback) for i in range(5)]
    producer.flush(TIMEOUT_S)
    assert [kind for kind, _, _ in seen] == ["interceptor", "callback"] * 5
    assert [m.offset for kind, m, _ in seen if kind == "callback"] == [0, 1, 2, 3, 4]
    assert all(e is None for _, _, e in seen)
    assert threads == {producer._thread.name}, "callbacks run on the sender thread"
    assert [f.result().offset for f in futures] == [0, 1, 2, 3, 4]
    back = read_back(broker.bootstrap_servers, "cb", 5)
    assert all(r.headers == (("stamped", b"yes"),) for r in back)


def test_a_failing_callback_does_not_stop_the_producer(
    broker: Broker, make_producer: MakeProducer, caplog: pytest.LogCaptureFixture
) -> None:
    producer = make_producer()

    def broken(metadata: RecordMetadata, exception: BaseException | None) -> None:
        raise RuntimeError("callback bug")

    first = producer.send("cbfail", b"1", partition=0, callback=broken)
    first.add_done_callback(lambda f: 1 / 0)
    producer.flush(TIMEOUT_S)
    assert first.result().offset == 0
    assert producer.send("cbfail", b"2", partition=0).result(TIMEOUT_S).offset == 1
    assert producer._thread.is_alive()
    messages = [r.getMessage() for r in caplog.records]
    assert any("delivery callback" in m and "cbfail-0" in m for m in messages)
    assert any("done-callback" in m for m in messages)


def stored_codecs(broker: Broker, topic: str) -> set[CompressionType]:
    codecs = set()
    for segment in Path(broker.data_dir).glob(f"{topic}-*/*.log"):
        codecs.update(header.compression for _, header in iter_batches(segment.read_bytes()))
    return codecs


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_reads_back_identically(
    broker: Broker, make_producer: MakeProducer, codec: str
) -> None:
    topic = f"codec-{codec}"
    producer = make_producer(compression_type=codec, linger_ms=20, batch_size=4096)
    sent = records(topic, 200)
    futures = producer.send(sent)
    producer.flush(TIMEOUT_S)
    places = {
        (f.result().partition, f.result().offset): r for f, r in zip(futures, sent, strict=True)
    }
    back = read_back(broker.bootstrap_servers, topic, 200)
    for got in back:
        record = places[(got.partition, got.offset)]
        assert (got.key, got.value, got.timestamp) == (
            record.key,
            record.value,
            record.timestamp_ms,
        )
        assert got.headers == tuple(record.headers)
    assert stored_codecs(broker, topic) == {CompressionType[codec.upper()]}


class _KafkaPythonCluster:
    """What kafka-python's DefaultPartitioner asks of its cluster argument."""

    def topics(self) -> set[str]:
        return {"keys"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(PARTITIONS))

    def available_partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(PARTITIONS))


def test_keyed_records_land_where_java_and_kafka_python_put_them(
    broker: Broker, make_producer: MakeProducer
) -> None:
    producer = make_producer()
    keys = [f"user-{i}".encode() for i in range(60)] + [b"", b"a", b"foobar"]
    futures = [producer.send("keys", b"v", key) for key in keys]
    producer.flush(TIMEOUT_S)
    reference = KafkaPythonPartitioner()
    for key, future in zip(keys, futures, strict=True):
        partition = future.result().partition
        assert partition == default_partition(key, PARTITIONS)
        assert partition == reference.partition(
            "keys", None, key, None, None, _KafkaPythonCluster()
        )
    # Java's murmur2 golden values: "a" -> -1563381124, "foobar" -> -790332482.
    assert futures[-2].result().partition == (-1563381124 & 0x7FFFFFFF) % PARTITIONS
    assert futures[-1].result().partition == (-790332482 & 0x7FFFFFFF) % PARTITIONS


def test_unkeyed_records_stick_to_a_partition_per_batch(
    broker: Broker, make_producer: MakeProducer
) -> None:
    record_size = 2 + 1 + 1 + 1 + 1 + 2 + 100 + 1  # length .. value, header count
    producer = make_producer(linger_ms=1000, batch_size=61 + 10 * record_size)
    futures = [producer.send("sticky", b"x" * 100) for _ in range(30)]
    producer.flush(TIMEOUT_S)
    partitions = [f.result().partition for f in futures]
    runs = [partitions[i : i + 10] for i in range(0, 30, 10)]
    # Each batch (10 records) went to one partition; the next batch moved elsewhere.
    assert all(len(set(run)) == 1 for run in runs), partitions
    assert runs[0][0] != runs[1][0] != runs[2][0]


def test_round_robin_partitioner(broker: Broker, make_producer: MakeProducer) -> None:
    producer = make_producer(partitioner_class="round_robin")
    futures = [producer.send("rr", b"v", b"same-key") for _ in range(8)]
    producer.flush(TIMEOUT_S)
    assert sorted(f.result().partition for f in futures) == [0, 0, 1, 1, 2, 2, 3, 3]


def test_custom_partitioner_object(broker: Broker, make_producer: MakeProducer) -> None:
    class Last:
        calls = 0

        def partition(self, topic, key, key_bytes, value, value_bytes, cluster) -> int:  # type: ignore[no-untyped-def]
            Last.calls += 1
            return cluster.partition_count(topic) - 1

    producer = make_producer(partitioner=Last())
    assert producer.send("custom", b"v").result(TIMEOUT_S).partition == PARTITIONS - 1
    assert Last.calls == 1


@pytest.mark.parametrize(("acks", "offset"), [(0, -1), (1, 0), ("all", 0)])
def test_acks(broker: Broker, make_producer: MakeProducer, acks: object, offset: int) -> None:
    producer = make_producer(acks=acks)
    topic = f"acks-{acks}"
    future = producer.send(topic, b"v", partition=1)
    assert future.result(TIMEOUT_S).offset == offset
    [got] = read_back(broker.bootstrap_servers, topic, 1)
    assert (got.partition, got.value) == (1, b"v")


def test_close_sends_what_is_pending(broker: Broker) -> None:
    producer = Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=60_000)
    futures = [producer.send("pending", b"%d" % i, partition=0) for i in range(50)]
    producer.close(TIMEOUT_S)
    assert [f.result(0).offset for f in futures] == list(range(50))
    assert len(read_back(broker.bootstrap_servers, "pending", 50)) == 50


def test_partitions_for_and_statistics(broker: Broker, make_producer: MakeProducer) -> None:
    producer = make_producer()
    partitions = producer.partitions_for("meta")
    assert [p.partition for p in partitions] == list(range(PARTITIONS))
    producer.send("meta", b"v").result(TIMEOUT_S)
    stats = producer.statistics()
    assert stats["sender"]["records_sent"] == 1
    assert stats["accumulator"]["incomplete_batches"] == 0


def confluent_read_back(bootstrap: str, topic: str, count: int) -> list[tuple[Any, ...]]:
    """(partition, offset, key, value, headers, timestamp) as librdkafka reads them."""
    consumer = ConfluentConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"producer-tests-{topic}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        consumer.assign([ConfluentTopicPartition(topic, i, 0) for i in range(PARTITIONS)])
        got: list[tuple[Any, ...]] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < count:
            assert time.monotonic() < deadline, f"read {len(got)} of {count}"
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            timestamp_type, timestamp = message.timestamp()
            assert timestamp_type == 1  # CreateTime
            got.append(
                (
                    message.partition(),
                    message.offset(),
                    message.key(),
                    message.value(),
                    tuple(message.headers() or ()),
                    timestamp,
                )
            )
        return got
    finally:
        consumer.close()


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_confluent_kafka_reads_every_codec_identically(
    broker: Broker, make_producer: MakeProducer, codec: str
) -> None:
    topic = f"rdk-{codec}"
    producer = make_producer(compression_type=codec, linger_ms=20)
    sent = records(topic, 60)
    futures = producer.send(sent)
    producer.flush(TIMEOUT_S)
    places = {
        (f.result().partition, f.result().offset): r for f, r in zip(futures, sent, strict=True)
    }
    for partition, offset, key, value, headers, timestamp in confluent_read_back(
        broker.bootstrap_servers, topic, 60
    ):
        record = places[(partition, offset)]
        assert (key, value, timestamp) == (record.key, record.value, record.timestamp_ms)
        assert headers == tuple(record.headers)
