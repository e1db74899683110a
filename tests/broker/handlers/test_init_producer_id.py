"""InitProducerId against a live broker: fresh ids with epoch 0 for idempotent producers (what
kafka-python's default producer asks for), and a refusal for transactional ids."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient

from odradek.errors import ErrorCode

from .conftest import RawClient, ms, schema


def init_request(transactional_id: str | None = None) -> Any:
    return schema("init_producer_id", 0).InitProducerIdRequest(
        transactional_id=transactional_id, transaction_timeout=ms(60_000)
    )


def test_each_request_gets_a_fresh_id_with_epoch_zero(raw: RawClient) -> None:
    answers = [raw.send(init_request()) for _ in range(5)]

    assert all(int(a.error_code) == ErrorCode.NONE for a in answers)
    assert all(a.producer_epoch == 0 for a in answers)
    ids = [a.producer_id for a in answers]
    assert all(0 <= i < 2**63 for i in ids)
    assert len(set(ids)) == 5
    assert ids == sorted(ids)


def test_transactional_id_is_refused(raw: RawClient) -> None:
    answer = raw.send(init_request("tx-1"))

    assert int(answer.error_code) == ErrorCode.INVALID_REQUEST
    assert (answer.producer_id, answer.producer_epoch) == (-1, -1)


def test_idempotent_kafka_python_producer_writes(
    admin: KafkaAdminClient,
    producer: KafkaProducer,
    consumer_factory: Callable[..., KafkaConsumer],
    topic: str,
) -> None:
    assert producer.config["enable_idempotence"]
    admin.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}})

    offsets = [producer.send(topic, b"v%d" % i).get(timeout=10).offset for i in range(3)]

    assert offsets == [0, 1, 2]
    consumer = consumer_factory(consumer_timeout_ms=5000)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    values = [record.value for _, record in zip(range(3), consumer, strict=False)]
    assert values == [b"v0", b"v1", b"v2"]
