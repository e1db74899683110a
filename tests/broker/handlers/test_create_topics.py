"""CreateTopics against a live broker: kafka-python's admin client, and raw requests of each
served version for defaults, manual assignments and every per-topic error."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient

from odradek import Broker
from odradek.broker.handlers._admin import topic_uuid
from odradek.errors import ErrorCode

from .conftest import RawClient, ms, partition_dirs, schema, unique_topic

VERSIONS = (2, 3)


def create_request(
    version: int, topics: Sequence[Mapping[str, Any]], *, validate_only: bool = False
) -> Any:
    """A CreateTopics request; each topic is ``{"name", "partitions"=-1, "rf"=-1,
    "assignments"={partition: [brokers]}, "configs"={name: value}}``."""
    m = schema("create_topics", version)
    return m.CreateTopicsRequest(
        topics=tuple(
            m.CreatableTopic(
                name=t["name"],
                num_partitions=t.get("partitions", -1),
                replication_factor=t.get("rf", -1),
                assignments=tuple(
                    m.CreatableReplicaAssignment(partition_index=p, broker_ids=tuple(b))
                    for p, b in t.get("assignments", {}).items()
                ),
                configs=tuple(
                    m.CreatableTopicConfig(name=k, value=v) for k, v in t.get("configs", {}).items()
                ),
            )
            for t in topics
        ),
        timeout=ms(5000),
        validate_only=validate_only,
    )


def results(response: Any) -> dict[str, tuple[int, str | None]]:
    return {t.name: (int(t.error_code), t.error_message) for t in response.topics}


def partition_count(admin: KafkaAdminClient, topic: str) -> int:
    (described,) = admin.describe_topics([topic])
    assert described["error_code"] == 0
    assert all(p["leader_id"] == 0 for p in described["partitions"])
    return len(described["partitions"])


# --- success -------------------------------------------------------------------------------


def test_admin_client_creates_topic_with_partitions_and_configs(
    broker: Broker, admin: KafkaAdminClient, topic: str
) -> None:
    response = admin.create_topics(
        {topic: {"num_partitions": 2, "replication_factor": 1, "configs": {"retention.ms": "1234"}}}
    )

    (created,) = response["topics"]
    assert (created["name"], created["error_code"], created["error_message"]) == (topic, 0, None)
    # kafka-python now sends v7: the topic comes back with its id and description (v5+).
    assert created["topic_id"] == str(topic_uuid(broker.app.topics.metadata.topic_id(topic)))
    assert (created["num_partitions"], created["replication_factor"]) == (2, 1)
    assert created["configs"]["retention.ms"]["value"] == "1234"
    assert partition_count(admin, topic) == 2
    assert [p.name for p in partition_dirs(broker, topic)] == [f"{topic}-0", f"{topic}-1"]
    assert broker.app.topics.log_config_for(topic).retention_ms == 1234


@pytest.mark.parametrize("version", VERSIONS)
def test_minus_one_takes_the_broker_defaults(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient, version: int
) -> None:
    name = unique_topic(f"defaults-v{version}")

    response = raw.send(create_request(version, [{"name": name}]))

    assert results(response) == {name: (0, None)}
    assert partition_count(admin, name) == 3  # num.partitions of the test broker


@pytest.mark.parametrize("version", VERSIONS)
def test_manual_assignment(admin: KafkaAdminClient, raw: RawClient, version: int) -> None:
    name = unique_topic(f"manual-v{version}")

    response = raw.send(
        create_request(version, [{"name": name, "assignments": {0: [0], 1: [0], 2: [0], 3: [0]}}])
    )

    assert results(response) == {name: (0, None)}
    assert partition_count(admin, name) == 4


def test_validate_only_creates_nothing(broker: Broker, raw: RawClient, topic: str) -> None:
    good = {"name": topic, "partitions": 2, "rf": 1}
    bad = {"name": unique_topic("bad"), "partitions": 0, "rf": 1}

    response = raw.send(create_request(3, [good, bad], validate_only=True))

    assert results(response)[topic] == (0, None)
    assert results(response)[bad["name"]][0] == ErrorCode.INVALID_PARTITIONS
    assert not broker.app.topics.exists(topic)
    assert partition_dirs(broker, topic) == []


def test_validate_only_checks_a_manual_assignment(broker: Broker, raw: RawClient) -> None:
    name = unique_topic("validate-assignment")

    response = raw.send(
        create_request(3, [{"name": name, "assignments": {0: [0], 2: [0]}}], validate_only=True)
    )

    assert results(response)[name][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert not broker.app.topics.exists(name)


# --- errors, each topic on its own ---------------------------------------------------------


def test_existing_topic(admin: KafkaAdminClient, topic: str) -> None:
    admin.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}})

    response = admin.create_topics(
        {topic: {"num_partitions": 1, "replication_factor": 1}}, raise_errors=False
    )

    ((result),) = response["topics"]
    assert result["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS
    assert topic in result["error_message"]


@pytest.mark.parametrize(
    "name",
    ["", ".", "..", "has space", "slash/name", "ü-topic", "x" * 250],
    ids=["empty", "dot", "dotdot", "space", "slash", "non-ascii", "too-long"],
)
def test_invalid_topic_names(broker: Broker, raw: RawClient, name: str) -> None:
    response = raw.send(create_request(3, [{"name": name, "partitions": 1, "rf": 1}]))

    code, message = results(response)[name]
    assert code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert message


def test_names_that_collide_in_metric_names(admin: KafkaAdminClient, raw: RawClient) -> None:
    base = unique_topic("collide")
    admin.create_topics({f"{base}.x": {"num_partitions": 1, "replication_factor": 1}})

    response = raw.send(create_request(3, [{"name": f"{base}_x", "partitions": 1, "rf": 1}]))

    code, message = results(response)[f"{base}_x"]
    assert code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert f"{base}.x" in (message or "")


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"partitions": 0, "rf": 1}, ErrorCode.INVALID_PARTITIONS),
        ({"partitions": -2, "rf": 1}, ErrorCode.INVALID_PARTITIONS),
        ({"partitions": 1, "rf": 0}, ErrorCode.INVALID_REPLICATION_FACTOR),
        ({"partitions": 1, "rf": 2}, ErrorCode.INVALID_REPLICATION_FACTOR),
        ({"assignments": {0: [0], 2: [0]}}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ({"assignments": {0: [0, 0]}}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ({"assignments": {0: []}}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ({"assignments": {0: [7]}}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ({"partitions": 1, "assignments": {0: [0]}}, ErrorCode.INVALID_REQUEST),
    ],
    ids=[
        "zero-partitions",
        "negative-partitions",
        "zero-rf",
        "rf-above-brokers",
        "assignment-gap",
        "assignment-repeats-broker",
        "assignment-empty-replicas",
        "assignment-unknown-broker",
        "assignment-with-count",
    ],
)
def test_bad_shapes(broker: Broker, raw: RawClient, spec: dict[str, Any], code: int) -> None:
    name = unique_topic("shape")

    response = raw.send(create_request(3, [{"name": name, **spec}]))

    error, message = results(response)[name]
    assert error == code
    assert message
    assert not broker.app.topics.exists(name)
    assert partition_dirs(broker, name) == []


@pytest.mark.parametrize(
    ("configs", "named"),
    [
        ({"retention.ms": "abc"}, "retention.ms"),
        ({"segment.bytes": "1"}, "segment.bytes"),
        ({"cleanup.policy": "shred"}, "cleanup.policy"),
        ({"no.such.config": "1"}, "no.such.config"),
    ],
    ids=["not-a-number", "out-of-range", "bad-choice", "unknown-name"],
)
def test_bad_configs_name_the_setting(
    broker: Broker, raw: RawClient, configs: dict[str, str], named: str
) -> None:
    name = unique_topic("config")

    response = raw.send(create_request(3, [{"name": name, "partitions": 1, "configs": configs}]))

    code, message = results(response)[name]
    assert code == ErrorCode.INVALID_CONFIG
    assert named in (message or "")
    assert not broker.app.topics.exists(name)


def test_null_config_value(raw: RawClient) -> None:
    name = unique_topic("null-config")

    response = raw.send(create_request(3, [{"name": name, "configs": {"retention.ms": None}}]))

    code, message = results(response)[name]
    assert code == ErrorCode.INVALID_CONFIG
    assert "retention.ms" in (message or "")


def test_duplicate_names_fail_alone(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient
) -> None:
    twice = unique_topic("twice")
    good = unique_topic("good")
    bad = unique_topic("bad")

    response = raw.send(
        create_request(
            3,
            [
                {"name": twice, "partitions": 1},
                {"name": good, "partitions": 2},
                {"name": twice, "partitions": 1},
                {"name": bad, "partitions": 1, "configs": {"retention.ms": "abc"}},
            ],
        )
    )

    assert [t.name for t in response.topics] == [twice, good, bad]
    by_name = results(response)
    assert by_name[twice][0] == ErrorCode.INVALID_REQUEST
    assert by_name[good] == (0, None)
    assert by_name[bad][0] == ErrorCode.INVALID_CONFIG
    assert not broker.app.topics.exists(twice)
    assert partition_count(admin, good) == 2


def test_advertised_versions(raw: RawClient) -> None:
    m = schema("api_versions", 3)
    response = raw.send(m.ApiVersionsRequest(client_software_name="t", client_software_version="1"))

    versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert versions[19] == (2, 7)
