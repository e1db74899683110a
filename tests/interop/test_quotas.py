"""A producer quota end to end with confluent-kafka (librdkafka): a client id held to 1 MB/s
while it tries 50 MB/s gets within 10 % of 1 MB/s over 30 s, and librdkafka reports the
throttle times the broker answered (KIP-219). The quota is set through the broker's quota
store, as AlterClientQuotas sets it (tests/broker/auth covers that path)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from odradek import Broker
from odradek.broker.auth.quotas import PRODUCER_BYTE_RATE, QuotaEntity

pytestmark = [pytest.mark.interop, pytest.mark.slow]

QUOTA_BYTES_PER_S = 1_000_000
ATTEMPTED_BYTES_PER_S = 50_000_000
DURATION_S = 30.0
VALUE = b"q" * 10_000
CLIENT_ID = "held-producer"


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config={"num.partitions": "1"}) as running:
        yield running


def test_a_producer_is_held_to_its_byte_rate_and_sees_throttle_times(broker: Broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic("held", 1, 1)])["held"].result(10)
    store = broker.app.ctx.quota_store if broker.app.ctx is not None else None
    assert store is not None
    store.alter(QuotaEntity(None, CLIENT_ID), {PRODUCER_BYTE_RATE: QUOTA_BYTES_PER_S}, [])

    throttles: list[int] = []
    delivered: list[tuple[float, int]] = []

    def on_delivery(error: KafkaError | None, message: object) -> None:
        if error is None:
            delivered.append((time.monotonic(), len(VALUE)))

    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "client.id": CLIENT_ID,
            "linger.ms": 5,
            "queue.buffering.max.kbytes": 20_000,
            "throttle_cb": lambda event: throttles.append(int(event.throttle_time * 1000)),
        }
    )
    start = time.monotonic()
    end = start + DURATION_S
    attempted = 0  # bytes offered at 50 MB/s, whether the full local queue took them or not
    while (now := time.monotonic()) < end:
        if attempted >= (now - start) * ATTEMPTED_BYTES_PER_S:
            producer.poll(0.005)
            continue
        attempted += len(VALUE)
        try:
            producer.produce("held", VALUE, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0)
    producer.purge()
    producer.flush(5)
    in_time = sum(size for at, size in delivered if at <= end)
    rate = in_time / DURATION_S
    assert attempted > 0.8 * DURATION_S * ATTEMPTED_BYTES_PER_S  # it really tried
    assert 0.9 * QUOTA_BYTES_PER_S <= rate <= 1.1 * QUOTA_BYTES_PER_S, rate
    assert throttles
    assert max(throttles) > 0
    del producer, admin  # before the broker stops: no reconnect noise
