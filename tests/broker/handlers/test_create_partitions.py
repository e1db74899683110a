"""CreatePartitions against a live broker: new partitions are led here and take writes; counts
that do not grow, bad assignments and unknown topics fail each topic on its own."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient

from odradek import Broker
from odradek.errors import ErrorCode

from .conftest import RawClient, ms, partition_dirs, schema, unique_topic

VERSIONS = (0, 1, 2, 3)


def grow_request(
    version: int,
    topics: Sequence[tuple[str, int, Sequence[Sequence[int]] | None]],
    *,
    validate_only: bool = False,
) -> Any:
    m = schema("create_partitions", version)
    return m.CreatePartitionsRequest(
        topics=tuple(
            m.CreatePartitionsTopic(
                name=name,
                count=count,
                assignments=None
                if assignments is None
                else tuple(m.CreatePartitionsAssignment(broker_ids=tuple(a)) for a in assignments),
            )
            for name, count, assignments in topics
        ),
        timeout=ms(5000),
        validate_only=validate_only,
    )


def results(response: Any) -> dict[str, tuple[int, str | None]]:
    return {r.name: (int(r.error_code), r.error_message) for r in response.results}


def create(admin: KafkaAdminClient, topic: str, partitions: int = 1) -> None:
    admin.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1}})


def partitions_of(broker: Broker, topic: str) -> int:
    return len(broker.app.topics.describe(topic))


def test_new_partitions_take_writes(
    broker: Broker,
    admin: KafkaAdminClient,
    producer: KafkaProducer,
    consumer_factory: Callable[..., KafkaConsumer],
    topic: str,
) -> None:
    create(admin, topic)

    admin.create_partitions({topic: 3})

    (described,) = admin.describe_topics([topic])
    assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1, 2]
    assert all(p["leader_id"] == 0 for p in described["partitions"])
    assert len(partition_dirs(broker, topic)) == 3
    metadata = producer.send(topic, b"new", partition=2).get(timeout=10)
    assert (metadata.partition, metadata.offset) == (2, 0)
    consumer = consumer_factory(consumer_timeout_ms=5000)
    consumer.assign([TopicPartition(topic, 2)])
    consumer.seek_to_beginning()
    record = next(consumer)
    assert (record.partition, record.offset, record.value) == (2, 0, b"new")


def test_manual_assignment(broker: Broker, admin: KafkaAdminClient, topic: str) -> None:
    create(admin, topic, partitions=2)

    admin.create_partitions({topic: {"count": 4, "assignments": [[0], [0]]}})

    assert partitions_of(broker, topic) == 4


@pytest.mark.parametrize("version", VERSIONS)
def test_count_must_grow(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient, version: int
) -> None:
    name = unique_topic(f"grow-v{version}")
    create(admin, name, partitions=3)

    same = raw.send(grow_request(version, [(name, 3, None)]))
    fewer = raw.send(grow_request(version, [(name, 2, None)]))

    for response in (same, fewer):
        code, message = results(response)[name]
        assert code == ErrorCode.INVALID_PARTITIONS
        assert "3 partitions" in (message or "")
    assert partitions_of(broker, name) == 3


@pytest.mark.parametrize("version", VERSIONS)
def test_versions_grow(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient, version: int
) -> None:
    name = unique_topic(f"versions-v{version}")
    create(admin, name)

    response = raw.send(grow_request(version, [(name, 2, None)]))

    assert results(response) == {name: (0, None)}
    assert partitions_of(broker, name) == 2


def test_validate_only_adds_nothing(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient, topic: str
) -> None:
    create(admin, topic)

    ok = raw.send(grow_request(3, [(topic, 5, None)], validate_only=True))
    bad = raw.send(grow_request(3, [(topic, 3, [[0], [9]])], validate_only=True))

    assert results(ok) == {topic: (0, None)}
    assert results(bad)[topic][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert partitions_of(broker, topic) == 1
    assert len(partition_dirs(broker, topic)) == 1


@pytest.mark.parametrize(
    "assignments",
    [[[0]], [[0], [0], [0]], [[0], [7]], [[0], []], [[0], [0, 0]], []],
    ids=["too-few", "too-many", "unknown-broker", "no-replicas", "repeated-broker", "empty"],
)
def test_bad_assignments(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient, assignments: list[list[int]]
) -> None:
    name = unique_topic("assign")
    create(admin, name)

    response = raw.send(grow_request(3, [(name, 3, assignments)]))

    code, message = results(response)[name]
    assert code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert message
    assert partitions_of(broker, name) == 1


def test_replication_factor_must_be_kept(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient, topic: str
) -> None:
    create(admin, topic)

    response = raw.send(grow_request(3, [(topic, 2, [[0, 1]])]))

    assert results(response)[topic][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert partitions_of(broker, topic) == 1


def test_each_topic_on_its_own(broker: Broker, admin: KafkaAdminClient, raw: RawClient) -> None:
    good, twice, missing = unique_topic("good"), unique_topic("twice"), unique_topic("missing")
    create(admin, good)
    create(admin, twice)

    response = raw.send(
        grow_request(3, [(twice, 2, None), (missing, 2, None), (good, 2, None), (twice, 3, None)])
    )

    assert [r.name for r in response.results] == [twice, missing, good]
    by_name = results(response)
    assert by_name[twice][0] == ErrorCode.INVALID_REQUEST
    assert by_name[missing][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert by_name[good] == (0, None)
    assert partitions_of(broker, good) == 2
    assert partitions_of(broker, twice) == 1
