"""DeleteTopics against a live broker: the topic leaves the metadata and its data directories go;
per-topic errors leave the other topics of the request alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient

from odradek import Broker
from odradek.broker.handlers._admin import topic_uuid
from odradek.errors import ErrorCode

from .conftest import RawClient, ms, partition_dirs, schema, unique_topic, wait_for


def delete_request(*names: str) -> Any:
    return schema("delete_topics", 1).DeleteTopicsRequest(topic_names=names, timeout=ms(5000))


def results(response: Any) -> dict[str, int]:
    return {r.name: int(r.error_code) for r in response.responses}


def create(admin: KafkaAdminClient, topic: str, partitions: int = 2) -> None:
    admin.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1}})


def test_admin_client_deletes_topic_and_its_data(
    broker: Broker, admin: KafkaAdminClient, producer: KafkaProducer, topic: str
) -> None:
    create(admin, topic)
    producer.send(topic, b"doomed", partition=1).get(timeout=10)
    assert len(partition_dirs(broker, topic)) == 2
    topic_id = str(topic_uuid(broker.app.topics.metadata.topic_id(topic)))

    response = admin.delete_topics([topic])

    # kafka-python now sends v6: a topic deleted by name is answered with its id too.
    assert response["topics"] == [
        {"name": topic, "topic_id": topic_id, "error_code": 0, "error_message": None}
    ]
    assert topic not in admin.list_topics()
    assert not broker.app.topics.exists(topic)
    wait_for(lambda: partition_dirs(broker, topic) == [], f"{topic}'s directories to go")


def test_recreated_topic_starts_empty(
    admin: KafkaAdminClient,
    producer: KafkaProducer,
    consumer_factory: Callable[..., KafkaConsumer],
    topic: str,
) -> None:
    create(admin, topic, partitions=1)
    for _ in range(5):
        producer.send(topic, b"old", partition=0)
    producer.flush()
    admin.delete_topics([topic])

    create(admin, topic, partitions=1)

    consumer = consumer_factory()
    partition = TopicPartition(topic, 0)
    assert consumer.end_offsets([partition]) == {partition: 0}


def test_unknown_topic_fails_alone(admin: KafkaAdminClient, raw: RawClient, topic: str) -> None:
    create(admin, topic)
    missing = unique_topic("missing")

    response = raw.send(delete_request(missing, topic))

    assert [r.name for r in response.responses] == [missing, topic]
    assert results(response) == {missing: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic: 0}
    assert topic not in admin.list_topics()


def test_deleting_twice(admin: KafkaAdminClient, raw: RawClient, topic: str) -> None:
    create(admin, topic)

    first = raw.send(delete_request(topic))
    second = raw.send(delete_request(topic))

    assert results(first) == {topic: 0}
    assert results(second) == {topic: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_duplicate_names_are_not_deleted(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient, topic: str
) -> None:
    create(admin, topic)
    other = unique_topic("other")
    create(admin, other)

    response = raw.send(delete_request(topic, other, topic))

    assert [r.name for r in response.responses] == [topic, other]
    assert results(response) == {topic: ErrorCode.INVALID_REQUEST, other: 0}
    assert broker.app.topics.exists(topic)
    assert not broker.app.topics.exists(other)


def test_illegal_name_is_unknown(raw: RawClient) -> None:
    response = raw.send(delete_request("no such/topic"))

    assert results(response) == {"no such/topic": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_deletion_disabled() -> None:
    with Broker(config={"delete.topic.enable": "false"}) as broker:
        raw = RawClient(broker.host, broker.port)
        try:
            create_request = schema("create_topics", 3)
            raw.send(
                create_request.CreateTopicsRequest(
                    topics=(
                        create_request.CreatableTopic(
                            name="kept",
                            num_partitions=1,
                            replication_factor=1,
                            assignments=(),
                            configs=(),
                        ),
                    ),
                    timeout=ms(5000),
                    validate_only=False,
                )
            )

            response = raw.send(delete_request("kept"))
        finally:
            raw.close()

        assert results(response) == {"kept": ErrorCode.TOPIC_DELETION_DISABLED}
        assert broker.app.topics.exists("kept")
        assert len(partition_dirs(broker, "kept")) == 1
