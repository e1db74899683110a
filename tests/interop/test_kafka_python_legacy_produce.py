"""kafka-python pinned to old broker versions sends Produce v0-v2 with message format v0/v1:
the broker up-converts them to v2 batches, and a modern consumer reads the same records."""

from __future__ import annotations

import warnings

import pytest

from odradek import Broker

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

pytestmark = pytest.mark.interop

COUNT = 50


@pytest.mark.parametrize(
    ("api_version", "compression", "timestamps"),
    [
        pytest.param((0, 8, 2), None, False, id="produce-v0-magic-0"),
        pytest.param((0, 9), "gzip", False, id="produce-v1-magic-0-gzip"),
        pytest.param((0, 10, 0), None, True, id="produce-v2-magic-1"),
        pytest.param((0, 10, 0), "gzip", True, id="produce-v2-magic-1-gzip"),
    ],
)
def test_old_format_producers_are_read_back_by_a_modern_consumer(
    broker: Broker, api_version: tuple[int, ...], compression: str | None, timestamps: bool
) -> None:
    topic = f"legacy-{'-'.join(map(str, api_version))}-{compression or 'none'}"
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        api_version=api_version,
        compression_type=compression,
        acks=1,
        linger_ms=5,
    )
    try:
        futures = [
            producer.send(
                topic,
                key=f"k{i}".encode(),
                value=f"value-{i}".encode(),
                partition=0,
                timestamp_ms=1_700_000_000_000 + i if timestamps else None,
            )
            for i in range(COUNT)
        ]
        offsets = [future.get(timeout=30).offset for future in futures]
    finally:
        producer.close()
    assert offsets == list(range(COUNT))

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, consumer_timeout_ms=5000)
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        records = []
        while len(records) < COUNT:
            batch = consumer.poll(timeout_ms=5000).get(partition, [])
            assert batch, f"read {len(records)} of {COUNT} records"
            records.extend(batch)
    finally:
        consumer.close()
    assert [(r.offset, r.key, r.value) for r in records] == [
        (i, f"k{i}".encode(), f"value-{i}".encode()) for i in range(COUNT)
    ]
    if timestamps:
        assert [r.timestamp for r in records] == [1_700_000_000_000 + i for i in range(COUNT)]
    else:
        assert {r.timestamp for r in records} == {-1}  # magic 0 has no timestamp
