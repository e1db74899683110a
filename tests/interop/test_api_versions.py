"""Clients see a Kafka 4 broker (issue 19): kafka-python infers 4.x from ApiVersions and then
lets CreateTopics leave partitions and replication to the broker; librdkafka (confluent-kafka)
negotiates the newest versions it has — flexible Produce and Fetch by topic id — read from
its own ``debug=protocol`` log of the requests it sends."""

from __future__ import annotations

import logging
import re
import uuid
import warnings
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek import Broker

from .conftest import DEFAULT_PARTITIONS, wait_until

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaAdminClient

pytestmark = pytest.mark.interop

TIMEOUT_S = 10.0
#: librdkafka's log line for each request it writes: "Sent ProduceRequest (v10, ...".
SENT = re.compile(r"Sent (\w+)Request \(v(\d+),")


@pytest.fixture
def kafka_python_admin(broker: Broker) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, client_id="versions")
    try:
        yield client
    finally:
        client.close()


def test_kafka_python_infers_a_kafka_4_broker(kafka_python_admin: KafkaAdminClient) -> None:
    # kafka-python reads the broker's age from ApiVersions: ListOffsets v10 means 4.0, v11 4.2.
    inferred = kafka_python_admin._manager.broker_version
    assert inferred >= (4, 0), inferred


def test_kafka_python_create_topics_with_the_broker_defaults(
    broker: Broker, kafka_python_admin: KafkaAdminClient
) -> None:
    topic = f"defaults-{uuid.uuid4().hex[:8]}"
    # A bare name: num_partitions and replication_factor -1, which kafka-python refuses to
    # send to a broker it thinks is older than 2.4.
    result = kafka_python_admin.create_topics([topic], timeout_ms=10_000, wait_for_metadata=True)
    (created,) = result["topics"]
    assert created["error_code"] == 0, created
    assert created["num_partitions"] == DEFAULT_PARTITIONS
    assert created["replication_factor"] == 1
    assert broker.app.topics is not None
    assert broker.app.topics.partition_count(topic) == DEFAULT_PARTITIONS


class SentRequests(logging.Handler):
    """The highest version of each request librdkafka logged sending."""

    def __init__(self) -> None:
        super().__init__()
        self.versions: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        for name, version in SENT.findall(record.getMessage()):
            self.versions[name] = max(self.versions.get(name, -1), int(version))


def test_librdkafka_uses_the_newest_versions(broker: Broker) -> None:
    topic = f"newest-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT_S)
    sent = SentRequests()
    logger = logging.getLogger(f"librdkafka-{topic}")
    logger.addHandler(sent)
    logger.setLevel(logging.DEBUG)
    common = {"bootstrap.servers": broker.bootstrap_servers, "debug": "protocol", "logger": logger}
    producer = Producer(common)
    producer.produce(topic, key=b"k", value=b"v")
    assert producer.flush(TIMEOUT_S) == 0
    consumer = Consumer({**common, "group.id": f"g-{topic}", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        received = []

        def got_one() -> bool:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                received.append(message.value())
            return bool(received)

        wait_until(got_one, TIMEOUT_S, "the record to come back")
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert received == [b"v"]
    versions = sent.versions
    # librdkafka 2.16 sends at most Produce v10, Fetch v16, Metadata v13, OffsetCommit v9,
    # ApiVersions v4: against odradek it must get to each (Kafka 2.x-era versions before).
    assert versions["ApiVersion"] >= 3
    assert versions["Produce"] == 10
    assert versions["Fetch"] == 16  # flexible, by topic id, KIP-951 fields
    assert versions["Metadata"] >= 12
    assert versions["OffsetCommit"] >= 8
