"""IncrementalAlterConfigs against a live broker: SET and DELETE reach the stored overrides, the
DescribeConfigs view and the partitions' logs; APPEND/SUBTRACT on list configs; bad values,
broker resources and duplicates fail each resource on its own and change nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from odradek import Broker
from odradek._types import TopicPartition
from odradek.errors import ErrorCode
from odradek.storage.config import LogConfig

from .conftest import RawClient, schema, unique_topic

TOPIC = 2
BROKER = 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DEFAULT_RETENTION_MS = LogConfig().retention_ms

Op = tuple[str, int, str | None]


def alter_request(
    version: int,
    resources: Sequence[tuple[int, str, Sequence[Op]]],
    *,
    validate_only: bool = False,
) -> Any:
    m = schema("incremental_alter_configs", version)
    return m.IncrementalAlterConfigsRequest(
        resources=tuple(
            m.AlterConfigsResource(
                resource_type=kind,
                resource_name=name,
                configs=tuple(
                    m.AlterableConfig(name=c, config_operation=op, value=v) for c, op, v in ops
                ),
            )
            for kind, name, ops in resources
        ),
        validate_only=validate_only,
    )


def answers(response: Any) -> list[tuple[str, int, str | None]]:
    return [(r.resource_name, int(r.error_code), r.error_message) for r in response.responses]


def create(admin: KafkaAdminClient, topic: str, configs: dict[str, str] | None = None) -> None:
    admin.create_topics(
        {topic: {"num_partitions": 2, "replication_factor": 1, "configs": configs or {}}}
    )


def overrides(broker: Broker, topic: str) -> dict[str, str]:
    return broker.app.topics.metadata.topic_configs(topic)


def log_configs(broker: Broker, topic: str) -> list[LogConfig]:
    replicas = broker.app.topics.replicas
    found = [replicas.get(TopicPartition(topic, index)) for index in range(2)]
    return [partition.log.config for partition in found if partition is not None]


def test_set_then_delete_through_admin_client(
    broker: Broker, admin: KafkaAdminClient, topic: str
) -> None:
    create(admin, topic)
    resource = ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "90000"})

    assert admin.alter_configs([resource]) == {"topic": {topic: "OK"}}

    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    assert described["topic"][topic]["retention.ms"]["value"] == "90000"
    assert described["topic"][topic]["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert [c.retention_ms for c in log_configs(broker, topic)] == [90000, 90000]

    reset = ConfigResource(ConfigResourceType.TOPIC, topic, configs=["retention.ms"])
    assert admin.reset_configs([reset]) == {"topic": {topic: "OK"}}

    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    assert "retention.ms" not in described["topic"][topic]
    assert overrides(broker, topic) == {}
    assert [c.retention_ms for c in log_configs(broker, topic)] == [DEFAULT_RETENTION_MS] * 2


@pytest.mark.parametrize("version", [0, 1])
def test_other_overrides_are_kept(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient, version: int
) -> None:
    name = unique_topic(f"keep-v{version}")
    create(admin, name, {"segment.ms": "3600000", "retention.bytes": "1000000"})

    response = raw.send(
        alter_request(
            version,
            [(TOPIC, name, [("retention.ms", SET, "5000"), ("retention.bytes", DELETE, None)])],
        )
    )

    assert answers(response) == [(name, 0, None)]
    assert overrides(broker, name) == {"segment.ms": "3600000", "retention.ms": "5000"}
    assert [(c.segment_ms, c.retention_ms) for c in log_configs(broker, name)] == [
        (3_600_000, 5000)
    ] * 2


def test_bad_value_names_the_setting_and_changes_nothing(
    broker: Broker, admin: KafkaAdminClient, topic: str
) -> None:
    create(admin, topic, {"retention.ms": "70000"})
    resource = ConfigResource(
        ConfigResourceType.TOPIC, topic, configs={"segment.ms": "1000", "retention.ms": "abc"}
    )

    result = admin.alter_configs([resource])

    message = result["topic"][topic]
    assert message.startswith("[Error 40]")  # INVALID_CONFIG
    assert "retention.ms" in message
    assert overrides(broker, topic) == {"retention.ms": "70000"}
    assert [c.retention_ms for c in log_configs(broker, topic)] == [70000, 70000]


@pytest.mark.parametrize(
    ("ops", "code", "named"),
    [
        ([("no.such.config", SET, "1")], ErrorCode.INVALID_CONFIG, "no.such.config"),
        ([("no.such.config", DELETE, None)], ErrorCode.INVALID_CONFIG, "no.such.config"),
        ([("segment.bytes", SET, "10")], ErrorCode.INVALID_CONFIG, "segment.bytes"),
        ([("retention.ms", SET, None)], ErrorCode.INVALID_REQUEST, "retention.ms"),
        ([("retention.ms", 9, "1")], ErrorCode.INVALID_REQUEST, "retention.ms"),
        ([("retention.ms", APPEND, "1")], ErrorCode.INVALID_CONFIG, "retention.ms"),
        (
            [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)],
            ErrorCode.INVALID_REQUEST,
            "retention.ms",
        ),
        ([("cleanup.policy", SUBTRACT, "delete")], ErrorCode.INVALID_CONFIG, "cleanup.policy"),
        ([("preallocate", SET, "maybe")], ErrorCode.INVALID_CONFIG, "preallocate"),
    ],
    ids=[
        "unknown-set",
        "unknown-delete",
        "out-of-range",
        "null-value",
        "unknown-operation",
        "append-to-non-list",
        "config-twice",
        "policy-left-empty",
        "no-effect-config-of-the-wrong-type",
    ],
)
def test_rejected_operations(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient, ops: list[Op], code: int, named: str
) -> None:
    name = unique_topic("rejected")
    create(admin, name, {"retention.ms": "70000"})

    response = raw.send(alter_request(1, [(TOPIC, name, ops)]))

    ((answer_name, answer_code, message),) = answers(response)
    assert (answer_name, answer_code) == (name, code)
    assert named in (message or "")
    assert overrides(broker, name) == {"retention.ms": "70000"}


def test_append_and_subtract_on_a_list_config(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient, topic: str
) -> None:
    create(admin, topic)

    appended = raw.send(alter_request(1, [(TOPIC, topic, [("cleanup.policy", APPEND, "compact")])]))
    after_append = broker.app.topics.log_config_for(topic).cleanup_policy
    subtracted = raw.send(
        alter_request(1, [(TOPIC, topic, [("cleanup.policy", SUBTRACT, "delete")])])
    )

    assert answers(appended) == [(topic, 0, None)]
    assert after_append == "delete,compact"
    assert answers(subtracted) == [(topic, 0, None)]
    assert overrides(broker, topic) == {"cleanup.policy": "compact"}
    assert all(c.compacts and not c.deletes for c in log_configs(broker, topic))


def test_validate_only_changes_nothing(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient, topic: str
) -> None:
    create(admin, topic)

    ok = raw.send(
        alter_request(1, [(TOPIC, topic, [("retention.ms", SET, "1000")])], validate_only=True)
    )
    bad = raw.send(
        alter_request(1, [(TOPIC, topic, [("retention.ms", SET, "x")])], validate_only=True)
    )

    assert answers(ok) == [(topic, 0, None)]
    assert answers(bad)[0][1] == ErrorCode.INVALID_CONFIG
    assert overrides(broker, topic) == {}
    assert [c.retention_ms for c in log_configs(broker, topic)] == [DEFAULT_RETENTION_MS] * 2


def test_broker_resources_are_refused(admin: KafkaAdminClient) -> None:
    resource = ConfigResource(ConfigResourceType.BROKER, "0", configs={"num.partitions": "5"})

    result = admin.alter_configs([resource], raise_on_unknown=False)

    message = result["broker"]["0"]
    assert message.startswith("[Error 42]")  # INVALID_REQUEST
    assert "dynamic broker configs are not supported yet" in message


def test_each_resource_on_its_own(broker: Broker, admin: KafkaAdminClient, raw: RawClient) -> None:
    good, twice, bad = unique_topic("good"), unique_topic("twice"), unique_topic("bad")
    missing = unique_topic("missing")
    for name in (good, twice, bad):
        create(admin, name)
    set_retention = [("retention.ms", SET, "4000")]

    response = raw.send(
        alter_request(
            1,
            [
                (TOPIC, twice, set_retention),
                (TOPIC, missing, set_retention),
                (TOPIC, bad, [("retention.ms", SET, "x")]),
                (TOPIC, good, set_retention),
                (TOPIC, twice, set_retention),
                (TOPIC, "bad name", set_retention),
                (16, "metrics", set_retention),
            ],
        )
    )

    codes = [(name, code) for name, code, _ in answers(response)]
    assert codes == [
        (twice, ErrorCode.INVALID_REQUEST),
        (missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (bad, ErrorCode.INVALID_CONFIG),
        (good, 0),
        (twice, ErrorCode.INVALID_REQUEST),
        ("bad name", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("metrics", ErrorCode.INVALID_REQUEST),
    ]
    assert overrides(broker, good) == {"retention.ms": "4000"}
    assert overrides(broker, twice) == {}
    assert overrides(broker, bad) == {}


def test_kafka_topic_configs_without_effect_are_set_and_deleted(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient
) -> None:
    name = unique_topic("no-effect")
    create(admin, name, {"retention.ms": "70000"})
    ops: list[Op] = [
        ("remote.storage.enable", SET, "false"),
        ("segment.jitter.ms", SET, "500"),
        ("leader.replication.throttled.replicas", APPEND, "0:0"),
    ]
    assert answers(raw.send(alter_request(1, [(TOPIC, name, ops)]))) == [(name, 0, None)]
    assert overrides(broker, name) == {
        "retention.ms": "70000",
        "remote.storage.enable": "false",
        "segment.jitter.ms": "500",
        "leader.replication.throttled.replicas": "0:0",
    }
    assert [c.retention_ms for c in log_configs(broker, name)] == [70000, 70000]
    delete: list[Op] = [("segment.jitter.ms", DELETE, None)]
    assert answers(raw.send(alter_request(1, [(TOPIC, name, delete)]))) == [(name, 0, None)]
    assert "segment.jitter.ms" not in overrides(broker, name)
