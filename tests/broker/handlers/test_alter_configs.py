"""AlterConfigs (the API before KIP-339) against a live broker: the given configs become the
topic's whole set of overrides (one not named is removed), in every version; bad values, null
values, duplicates and broker resources fail each resource on its own and change nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from odradek import Broker
from odradek._types import TopicPartition
from odradek.errors import ErrorCode

from .conftest import RawClient, schema, unique_topic

TOPIC = 2
BROKER = 4


def alter_request(
    version: int,
    resources: Sequence[tuple[int, str, Sequence[tuple[str, str | None]]]],
    *,
    validate_only: bool = False,
) -> Any:
    m = schema("alter_configs", version)
    return m.AlterConfigsRequest(
        resources=tuple(
            m.AlterConfigsResource(
                resource_type=kind,
                resource_name=name,
                configs=tuple(m.AlterableConfig(name=c, value=v) for c, v in configs),
            )
            for kind, name, configs in resources
        ),
        validate_only=validate_only,
    )


def answers(response: Any) -> list[tuple[str, int]]:
    return [(r.resource_name, int(r.error_code)) for r in response.responses]


def create(admin: KafkaAdminClient, configs: dict[str, str]) -> str:
    name = unique_topic("replace")
    admin.create_topics({name: {"num_partitions": 1, "replication_factor": 1, "configs": configs}})
    return name


def overrides(broker: Broker, topic: str) -> dict[str, str]:
    return broker.app.topics.metadata.topic_configs(topic)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_the_given_configs_replace_every_override(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient, version: int
) -> None:
    topic = create(admin, {"segment.ms": "3600000", "retention.bytes": "1000000"})

    response = raw.send(alter_request(version, [(TOPIC, topic, [("retention.ms", "5000")])]))

    assert answers(response) == [(topic, ErrorCode.NONE)]
    assert overrides(broker, topic) == {"retention.ms": "5000"}
    partition = broker.app.topics.replicas.get(TopicPartition(topic, 0))
    assert partition is not None
    assert partition.log.config.retention_ms == 5000
    assert partition.log.config.segment_ms == 7 * 24 * 3_600_000  # the override went


def test_through_kafka_python_forced_to_the_old_api(
    broker: Broker, admin: KafkaAdminClient
) -> None:
    topic = create(admin, {"retention.ms": "70000"})
    resource = ConfigResource(ConfigResourceType.TOPIC, topic, configs={"segment.ms": "600000"})

    admin.alter_configs([resource], incremental=False)

    # kafka-python re-sends the overrides it read first, as the old API asks of a client.
    assert overrides(broker, topic) == {"retention.ms": "70000", "segment.ms": "600000"}


def test_validate_only_and_errors_change_nothing(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient
) -> None:
    topic = create(admin, {"retention.ms": "70000"})
    missing = unique_topic("missing")
    checked = raw.send(
        alter_request(1, [(TOPIC, topic, [("segment.ms", "600000")])], validate_only=True)
    )
    failed = raw.send(
        alter_request(
            1,
            [
                (TOPIC, topic, [("segment.ms", "600000"), ("retention.ms", "abc")]),
                (TOPIC, missing, [("retention.ms", "1")]),
                (BROKER, "0", [("num.partitions", "2")]),
            ],
        )
    )
    nulls = raw.send(alter_request(1, [(TOPIC, topic, [("retention.ms", None)])]))
    twice = raw.send(
        alter_request(1, [(TOPIC, topic, [("retention.ms", "1"), ("retention.ms", "2")])])
    )

    assert answers(checked) == [(topic, ErrorCode.NONE)]
    assert answers(failed) == [
        (topic, ErrorCode.INVALID_CONFIG),
        (missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("0", ErrorCode.INVALID_REQUEST),
    ]
    assert answers(nulls) == [(topic, ErrorCode.INVALID_REQUEST)]
    assert answers(twice) == [(topic, ErrorCode.INVALID_REQUEST)]
    assert overrides(broker, topic) == {"retention.ms": "70000"}


def test_kafka_topic_configs_without_effect_are_accepted_and_unknown_names_are_not(
    broker: Broker, admin: KafkaAdminClient, raw: RawClient
) -> None:
    topic = create(admin, {"retention.ms": "70000"})
    accepted = raw.send(
        alter_request(
            1,
            [
                (
                    TOPIC,
                    topic,
                    [("compression.type", "zstd"), ("message.downconversion.enable", "true")],
                )
            ],
        )
    )
    assert answers(accepted) == [(topic, ErrorCode.NONE)]
    assert overrides(broker, topic) == {
        "compression.type": "zstd",
        "message.downconversion.enable": "true",
    }
    refused = raw.send(alter_request(1, [(TOPIC, topic, [("compression.typo", "zstd")])]))
    assert answers(refused) == [(topic, ErrorCode.INVALID_CONFIG)]
    assert "compression.typo" not in overrides(broker, topic)
