"""Cross-client checks: records written by confluent-kafka and kafka-python producers (every
codec) are read by our consumer with the same keys, values, headers and timestamps; and our
consumer shares a group with a kafka-python consumer (both ``range``): each owns a disjoint half
of the partitions and together they read every record."""

from __future__ import annotations

import threading
import warnings

import pytest
from confluent_kafka import Producer as ConfluentProducer
from tests.client.consumer.conftest import MakeConsumer, Member, eventually, poll_until

from odradek import Broker, TopicPartition

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.coordinator.assignors.range import RangePartitionAssignor

BASE_MS = 1_700_000_000_000
COUNT = 50


def expected(codec: str) -> list[tuple[bytes | None, bytes, list[tuple[str, bytes]], int]]:
    return [
        (
            None if i % 10 == 0 else b"key-%d" % i,
            (b"%s-%d-" % (codec.encode(), i)) * (1 + i % 7),
            [("h", b"%d" % i)] if i % 2 else [],
            BASE_MS + i,
        )
        for i in range(COUNT)
    ]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_reads_what_confluent_kafka_wrote(
    broker: Broker, create_topic, make_consumer: MakeConsumer, codec: str
) -> None:  # type: ignore[no-untyped-def]
    topic = f"from-confluent-{codec}"
    create_topic(topic, 1)
    producer = ConfluentProducer(
        {"bootstrap.servers": broker.bootstrap_servers, "compression.type": codec, "linger.ms": 5}
    )
    for key, value, headers, timestamp in expected(codec):
        producer.produce(topic, value, key, partition=0, headers=headers, timestamp=timestamp)
    assert producer.flush(20) == 0
    consumer = make_consumer(auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic, 0)])
    got = poll_until(consumer, COUNT)
    assert [(r.key, r.value, list(r.headers), r.timestamp) for r in got] == expected(codec)
    assert [r.offset for r in got] == list(range(COUNT))


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_reads_what_kafka_python_wrote(
    broker: Broker, create_topic, make_consumer: MakeConsumer, codec: str | None
) -> None:  # type: ignore[no-untyped-def]
    topic = f"from-kafka-python-{codec}"
    create_topic(topic, 1)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        compression_type=codec,
        enable_idempotence=False,
        acks=1,
        linger_ms=5,
    )
    name = codec or "none"
    for key, value, headers, timestamp in expected(name):
        producer.send(
            topic, value=value, key=key, partition=0, headers=headers, timestamp_ms=timestamp
        )
    producer.flush(20)
    producer.close()
    consumer = make_consumer(auto_offset_reset="earliest", value_deserializer="bytes")
    consumer.assign([TopicPartition(topic, 0)])
    got = poll_until(consumer, COUNT)
    assert [(r.key, r.value, list(r.headers), r.timestamp) for r in got] == expected(name)


def test_shares_a_group_with_kafka_python(
    broker: Broker, create_topic, make_consumer: MakeConsumer
) -> None:  # type: ignore[no-untyped-def]
    create_topic("mixed", 4)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=False)
    for i in range(40):
        producer.send("mixed", value=b"%d" % i, partition=i % 4)
    producer.flush(20)
    producer.close()
    ours = Member(
        make_consumer(
            group_id="mixed",
            auto_offset_reset="earliest",
            partition_assignment_strategy="range",
            heartbeat_interval_ms=100,
        ),
        ["mixed"],
    )
    theirs_seen: list[tuple[int, int]] = []
    theirs_assignment: set[int] = set()
    stop = threading.Event()

    def run_kafka_python() -> None:
        consumer = KafkaConsumer(
            "mixed",
            bootstrap_servers=broker.bootstrap_servers,
            group_id="mixed",
            auto_offset_reset="earliest",
            partition_assignment_strategy=[RangePartitionAssignor],
            heartbeat_interval_ms=100,
        )
        try:
            while not stop.is_set():
                for batch in consumer.poll(100).values():
                    theirs_seen.extend((r.partition, r.offset) for r in batch)
                theirs_assignment.clear()
                theirs_assignment.update(tp.partition for tp in consumer.assignment())
        finally:
            consumer.close()

    thread = threading.Thread(target=run_kafka_python, daemon=True)
    thread.start()
    try:
        eventually(
            lambda: len(ours.current()) == 2 and len(theirs_assignment) == 2,
            what="two partitions each",
        )
        assert {tp.partition for tp in ours.current()} | theirs_assignment == {0, 1, 2, 3}
        assert not {tp.partition for tp in ours.current()} & theirs_assignment
        everything = {(p, o) for p in range(4) for o in range(10)}
        eventually(
            lambda: {(r.partition, r.offset) for r in ours.seen()} | set(theirs_seen) >= everything,
            what="every record read by one of the two",
        )
    finally:
        stop.set()
        thread.join(30)
        ours.stop()
