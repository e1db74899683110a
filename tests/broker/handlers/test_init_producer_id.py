"""InitProducerId against a live broker: fresh ids with epoch 0 for idempotent producers (what
kafka-python's default producer asks for), and transactional ids through the transaction
coordinator."""

from __future__ import annotations

import time
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


def test_a_transactional_id_goes_to_the_transaction_coordinator(raw: RawClient) -> None:
    # Before anyone looked the coordinator up, __transaction_state does not exist yet.
    answer = raw.send(init_request("tx-1"))
    assert int(answer.error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert (answer.producer_id, answer.producer_epoch) == (-1, -1)
    find = schema("find_coordinator", 1).FindCoordinatorRequest(key="tx-1", key_type=1)
    assert int(raw.send(find).error_code) == ErrorCode.NONE
    deadline = time.monotonic() + 30
    while int((answer := raw.send(init_request("tx-1"))).error_code):
        assert answer.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert time.monotonic() < deadline
        time.sleep(0.05)
    again = raw.send(init_request("tx-1"))
    # One producer id per transactional id; each call bumps its epoch (fencing the last).
    assert (again.producer_id, again.producer_epoch) == (
        answer.producer_id,
        answer.producer_epoch + 1,
    )


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
