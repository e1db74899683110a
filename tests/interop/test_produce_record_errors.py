"""confluent-kafka (librdkafka) and Produce v8+ per-record errors (KIP-467): one batch of keyed
and keyless records to a compacted topic.

What librdkafka 2.16 does with the answer (INVALID_RECORD naming the keyless records), seen
here and asserted exactly: the keyless records' delivery reports carry INVALID_RECORD (87,
"Broker: Broker failed to validate record": librdkafka keeps its own text, not the broker's
message), the batch's keyed records ``_INVALID_DIFFERENT_RECORD`` (-138, "an invalid record in
the same batch caused the failure of this message too"); neither is retriable or fatal, and
librdkafka does not resend the keyed records (one ProduceRequest, ``txretries`` 0) — like
Java's producer, the application has to send them again. With ``enable.idempotence`` the same
happens, and the producer goes on: a keyed record sent afterwards is written at offset 0.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek import Broker

from .conftest import wait_until

pytestmark = pytest.mark.interop

TIMEOUT_S = 15.0
KEYLESS = frozenset({2, 5})
RECORDS = 8
SENT_PRODUCE = re.compile(r"Sent ProduceRequest \(v(\d+)")


class ProduceRequests(logging.Handler):
    """The versions of the ProduceRequests librdkafka logged sending."""

    def __init__(self) -> None:
        super().__init__()
        self.versions: list[int] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.versions.extend(int(v) for v in SENT_PRODUCE.findall(record.getMessage()))


def reporter(
    reports: dict[int, KafkaError | None], index: int
) -> Callable[[KafkaError | None, Message], None]:
    def report(error: KafkaError | None, message: Message) -> None:
        reports[index] = error

    return report


@pytest.mark.parametrize("idempotence", [False, True])
def test_only_the_keyless_records_fail_with_invalid_record(
    broker: Broker, idempotence: bool
) -> None:
    topic = f"compacted-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])[
        topic
    ].result(TIMEOUT_S)
    requests = ProduceRequests()
    logger = logging.getLogger(f"librdkafka-{topic}")
    logger.addHandler(requests)
    logger.setLevel(logging.DEBUG)
    statistics: list[dict[str, Any]] = []
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "enable.idempotence": idempotence,
            "linger.ms": 500,  # every record in one batch
            "debug": "protocol",
            "logger": logger,
            "statistics.interval.ms": 100,
            "stats_cb": lambda text: statistics.append(json.loads(text)),
        }
    )
    reports: dict[int, KafkaError | None] = {}
    for index in range(RECORDS):
        producer.produce(
            topic,
            value=b"v%d" % index,
            key=None if index in KEYLESS else b"k%d" % index,
            partition=0,
            on_delivery=reporter(reports, index),
        )
    assert producer.flush(TIMEOUT_S) == 0
    assert sorted(reports) == list(range(RECORDS))
    for index, error in reports.items():
        assert error is not None, index
        assert not error.retriable(), error
        assert not error.fatal(), error
        if index in KEYLESS:
            assert error.code() == KafkaError.INVALID_RECORD, error
        else:
            assert error.code() == KafkaError._INVALID_DIFFERENT_RECORD, error
    assert requests.versions == [10], "one ProduceRequest (v10, so v8+ record errors): no retry"
    statistics.clear()  # those from after the delivery reports (stats_cb runs in poll)
    wait_until(lambda: producer.poll(0.1) >= 0 and bool(statistics), TIMEOUT_S, "statistics")
    assert sum(b["txretries"] for b in statistics[-1]["brokers"].values()) == 0

    reports.clear()
    producer.produce(topic, value=b"after", key=b"k", partition=0, on_delivery=reporter(reports, 0))
    assert producer.flush(TIMEOUT_S) == 0
    assert reports == {0: None}, "the producer goes on after the refused batch"
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"g-{topic}",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        read: list[tuple[int, bytes | None]] = []

        def got_one() -> bool:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                read.append((message.offset(), message.value()))
            return bool(read)

        wait_until(got_one, TIMEOUT_S, "the record after the refused batch")
        assert consumer.poll(0.5) is None
    finally:
        consumer.close()
    assert read == [(0, b"after")], "nothing of the refused batch was written"
