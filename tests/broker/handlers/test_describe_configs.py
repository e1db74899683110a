"""DescribeConfigs against a live broker: every topic config with its source (override or
default), the broker's settings (static or default, read-only), key filters, synonyms, and
per-resource errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from odradek import Broker
from odradek.errors import ErrorCode
from odradek.storage.config import TOPIC_NAMES, UNIMPLEMENTED_TOPIC_CONFIGS

from .conftest import RawClient, schema, unique_topic

VERSIONS = (1, 2, 3, 4)
TOPIC = 2
BROKER = 4
GROUP = 32
DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5


@pytest.fixture(scope="module")
def configured_topic(admin: KafkaAdminClient) -> str:
    """A topic with two overrides."""
    name = unique_topic("configured")
    admin.create_topics(
        {
            name: {
                "num_partitions": 1,
                "replication_factor": 1,
                "configs": {"retention.ms": "60000", "cleanup.policy": "compact"},
            }
        }
    )
    return name


def describe_request(
    version: int,
    resources: Sequence[tuple[int, str, Sequence[str] | None]],
    *,
    include_synonyms: bool = False,
) -> Any:
    m = schema("describe_configs", version)
    return m.DescribeConfigsRequest(
        resources=tuple(
            m.DescribeConfigsResource(
                resource_type=kind,
                resource_name=name,
                configuration_keys=None if keys is None else tuple(keys),
            )
            for kind, name, keys in resources
        ),
        include_synonyms=include_synonyms,
    )


def test_topic_configs_by_admin_client(admin: KafkaAdminClient, configured_topic: str) -> None:
    described = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, configured_topic)], config_filter="all"
    )

    configs = described["topic"][configured_topic]
    assert set(configs) == set(TOPIC_NAMES) | set(UNIMPLEMENTED_TOPIC_CONFIGS)
    assert configs["retention.ms"]["value"] == "60000"
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["retention.ms"]["config_type"] == "LONG"
    assert configs["cleanup.policy"]["value"] == "compact"
    assert configs["cleanup.policy"]["config_type"] == "LIST"
    assert configs["segment.bytes"]["value"] == str(1024**3)
    assert configs["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
    assert not any(entry["read_only"] or entry["is_sensitive"] for entry in configs.values())


def test_modified_filter_shows_the_overrides(
    admin: KafkaAdminClient, configured_topic: str
) -> None:
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, configured_topic)])

    assert set(described["topic"][configured_topic]) == {"retention.ms", "cleanup.policy"}


def test_broker_configs_by_admin_client(admin: KafkaAdminClient) -> None:
    described = admin.describe_configs(
        [ConfigResource(ConfigResourceType.BROKER, "0")], config_filter="all"
    )

    configs = described["broker"]["0"]
    assert configs["num.partitions"]["value"] == "3"
    assert configs["num.partitions"]["config_source"] == "STATIC_BROKER_CONFIG"
    assert configs["delete.topic.enable"]["value"] == "true"
    assert configs["delete.topic.enable"]["config_source"] == "DEFAULT_CONFIG"
    assert configs["log.retention.hours"]["value"] == "168"
    assert all(entry["read_only"] for entry in configs.values())


@pytest.mark.parametrize("version", VERSIONS)
def test_sources_in_every_version(raw: RawClient, configured_topic: str, version: int) -> None:
    response = raw.send(describe_request(version, [(TOPIC, configured_topic, None)]))

    (result,) = response.results
    assert int(result.error_code) == 0
    assert (result.resource_type, result.resource_name) == (TOPIC, configured_topic)
    sources = {c.name: c.config_source for c in result.configs}
    assert sources["retention.ms"] == DYNAMIC_TOPIC_CONFIG
    assert sources["min.insync.replicas"] == DEFAULT_CONFIG
    assert all(c.synonyms == () for c in result.configs)


@pytest.mark.parametrize("keys", [None, ()], ids=["null", "empty"])
def test_no_keys_means_every_config(raw: RawClient, configured_topic: str, keys: Any) -> None:
    response = raw.send(describe_request(4, [(TOPIC, configured_topic, keys)]))

    assert {c.name for c in response.results[0].configs} == set(TOPIC_NAMES) | set(
        UNIMPLEMENTED_TOPIC_CONFIGS
    )


def test_keys_filter_the_configs(raw: RawClient, configured_topic: str) -> None:
    keys = ["retention.ms", "segment.ms", "no.such.config"]

    topic = raw.send(describe_request(4, [(TOPIC, configured_topic, keys)]))
    broker = raw.send(describe_request(4, [(BROKER, "0", ["broker.id", "num.partitions"])]))

    assert {c.name: c.value for c in topic.results[0].configs} == {
        "retention.ms": "60000",
        "segment.ms": str(7 * 24 * 3_600_000),
    }
    assert {c.name: (c.value, c.config_source) for c in broker.results[0].configs} == {
        "broker.id": ("0", DEFAULT_CONFIG),
        "num.partitions": ("3", STATIC_BROKER_CONFIG),
    }


def test_synonyms(raw: RawClient, configured_topic: str) -> None:
    response = raw.send(
        describe_request(4, [(TOPIC, configured_topic, ["retention.ms"])], include_synonyms=True)
    )

    ((config),) = response.results[0].configs
    assert [(s.name, s.value, s.source) for s in config.synonyms] == [
        ("retention.ms", "60000", DYNAMIC_TOPIC_CONFIG),
        ("log.retention.hours", "168", DEFAULT_CONFIG),  # Kafka's default, the fallback
    ]


def test_topic_configs_fall_back_on_broker_settings_as_kafka_reports_them() -> None:
    settings = {"log.retention.hours": "72", "log.retention.minutes": "90"}
    with Broker(config=settings) as broker:
        topic = unique_topic("fallback")
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        raw = RawClient("127.0.0.1", broker.port)
        try:
            admin.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}})
            keys = ["retention.ms", "segment.ms", "min.insync.replicas"]
            request = describe_request(4, [(TOPIC, topic, keys)], include_synonyms=True)
            response = raw.send(request)
        finally:
            raw.close()
            admin.close()
    configs = {c.name: c for c in response.results[0].configs}
    retention = configs["retention.ms"]
    assert retention.value == str(90 * 60_000)  # minutes win over hours, as in Kafka
    assert retention.config_source == STATIC_BROKER_CONFIG
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("log.retention.minutes", "90", STATIC_BROKER_CONFIG),
        ("log.retention.hours", "72", STATIC_BROKER_CONFIG),
    ]
    segment = configs["segment.ms"]
    assert segment.config_source == DEFAULT_CONFIG
    assert [(s.name, s.value, s.source) for s in segment.synonyms] == [
        ("log.roll.hours", "168", DEFAULT_CONFIG)
    ]
    assert [(s.name, s.source) for s in configs["min.insync.replicas"].synonyms] == [
        ("min.insync.replicas", DEFAULT_CONFIG)
    ]


def test_each_resource_on_its_own(raw: RawClient, configured_topic: str) -> None:
    missing = unique_topic("missing")

    response = raw.send(
        describe_request(
            4,
            [
                (TOPIC, missing, None),
                (TOPIC, "bad name", None),
                (BROKER, "7", None),
                (BROKER, "zero", None),
                (GROUP, "", None),
                (TOPIC, configured_topic, ["retention.ms"]),
                (BROKER, "", None),
                (GROUP, "some-group", None),
            ],
        )
    )

    answers = [
        (r.resource_type, r.resource_name, int(r.error_code), len(r.configs))
        for r in response.results
    ]
    assert answers == [
        (TOPIC, missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0),
        (TOPIC, "bad name", ErrorCode.INVALID_TOPIC_EXCEPTION, 0),
        (BROKER, "7", ErrorCode.INVALID_REQUEST, 0),
        (BROKER, "zero", ErrorCode.INVALID_REQUEST, 0),
        (GROUP, "", ErrorCode.INVALID_REQUEST, 0),
        (TOPIC, configured_topic, 0, 1),
        (BROKER, "", 0, 0),
        (GROUP, "some-group", 0, 6),
    ]
    assert all(r.error_message for r in response.results[:5])
    assert missing in response.results[0].error_message


def test_broker_config_file_settings_are_static(broker: Broker, raw: RawClient) -> None:
    response = raw.send(describe_request(4, [(BROKER, "0", None)]))

    configs = {c.name: c for c in response.results[0].configs}
    assert configs["log.dirs"].value == broker.data_dir
    assert configs["log.dirs"].config_source == STATIC_BROKER_CONFIG
    assert configs["log.dir"].config_source == DEFAULT_CONFIG
    assert all(c.read_only for c in configs.values())
    # Kafka's PASSWORD settings are sensitive and carry no value; nothing else is.
    sensitive = {name for name, c in configs.items() if c.is_sensitive}
    assert "ssl.key.password" in sensitive
    assert all(configs[name].value is None for name in sensitive)
    assert not sensitive & {"log.dirs", "listeners", "zookeeper.connect", "broker.id"}


def test_broker_configs_carry_kafka_types_and_say_what_has_no_effect(raw: RawClient) -> None:
    m = schema("describe_configs", 4)
    request = m.DescribeConfigsRequest(
        resources=(
            m.DescribeConfigsResource(
                resource_type=BROKER,
                resource_name="0",
                configuration_keys=("num.io.threads", "log.retention.hours", "listeners"),
            ),
        ),
        include_synonyms=False,
        include_documentation=True,
    )
    configs = {c.name: c for c in raw.send(request).results[0].configs}
    assert configs["num.io.threads"].config_type == 3  # INT
    assert configs["num.io.threads"].value == "8"  # Kafka's default
    assert "no effect" in configs["num.io.threads"].documentation
    assert configs["log.retention.hours"].config_type == 3
    assert configs["listeners"].config_type == 2  # STRING
    assert configs["listeners"].documentation is None


def test_every_topic_config_listed_has_a_known_type(raw: RawClient, configured_topic: str) -> None:
    response = raw.send(describe_request(4, [(TOPIC, configured_topic, None)]))
    configs = {c.name: c for c in response.results[0].configs}
    assert set(configs) == set(TOPIC_NAMES) | set(UNIMPLEMENTED_TOPIC_CONFIGS)
    untyped = sorted(name for name, c in configs.items() if c.config_type == 0)
    assert untyped == []
    assert configs["unclean.leader.election.enable"].config_type == 1  # BOOLEAN
    kafka_types = {"INT": 3, "LONG": 5, "BOOLEAN": 1, "STRING": 2, "LIST": 7}
    for name, (kind, default) in UNIMPLEMENTED_TOPIC_CONFIGS.items():
        assert configs[name].config_type == kafka_types[kind], name
        assert configs[name].value == default, name


def test_kafka_topic_configs_odradek_lacks_are_accepted_without_effect(
    admin: KafkaAdminClient, raw: RawClient
) -> None:
    name = unique_topic("no-effect")
    admin.create_topics(
        {
            name: {
                "num_partitions": 1,
                "replication_factor": 1,
                "configs": {"segment.jitter.ms": "1000", "remote.storage.enable": "false"},
            }
        }
    )
    m = schema("describe_configs", 4)
    request = m.DescribeConfigsRequest(
        resources=(
            m.DescribeConfigsResource(
                resource_type=TOPIC,
                resource_name=name,
                configuration_keys=("segment.jitter.ms", "compression.type", "retention.ms"),
            ),
        ),
        include_synonyms=False,
        include_documentation=True,
    )
    configs = {c.name: c for c in raw.send(request).results[0].configs}
    assert configs["segment.jitter.ms"].value == "1000"
    assert configs["segment.jitter.ms"].config_source == DYNAMIC_TOPIC_CONFIG
    assert "no effect" in configs["segment.jitter.ms"].documentation
    assert configs["compression.type"].value == "producer"  # Kafka's default
    assert configs["compression.type"].config_source == DEFAULT_CONFIG
    assert configs["retention.ms"].documentation is None  # implemented


def test_group_configs_are_the_brokers_consumer_group_settings(raw: RawClient) -> None:
    m = schema("describe_configs", 4)
    request = m.DescribeConfigsRequest(
        resources=(
            m.DescribeConfigsResource(
                resource_type=GROUP, resource_name="any-group", configuration_keys=None
            ),
        ),
        include_synonyms=True,
        include_documentation=True,
    )
    result = raw.send(request).results[0]
    assert int(result.error_code) == 0
    configs = {c.name: c for c in result.configs}
    assert configs["consumer.session.timeout.ms"].value == "45000"
    assert configs["consumer.heartbeat.interval.ms"].value == "5000"
    assert configs["consumer.session.timeout.ms"].config_type == 3  # INT
    assert configs["consumer.session.timeout.ms"].documentation is None
    assert [s.name for s in configs["consumer.session.timeout.ms"].synonyms] == [
        "consumer.session.timeout.ms",
        "group.consumer.session.timeout.ms",
    ]
    assert "no effect" in configs["share.session.timeout.ms"].documentation
    assert configs["share.auto.offset.reset"].value == "latest"
