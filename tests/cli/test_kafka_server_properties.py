"""``odradek serve`` started from the ``server.properties`` Kafka's distribution ships (ZooKeeper
mode), unchanged: the settings odradek implements are honoured, every other Kafka setting is
accepted with one warning line naming it, and DescribeConfigs tells the two kinds apart."""

from __future__ import annotations

import signal
from pathlib import Path

from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic
from tests._zookeeper import zookeeper, zookeeper_chroot

from odradek.broker.config import NOT_IMPLEMENTED_DOC, BrokerConfig

from .conftest import ServeFactory, fetch_values, produce

__all__ = ["zookeeper", "zookeeper_chroot"]

KAFKA_PROPERTIES = Path(__file__).parent / "kafka-server.properties"
#: The settings of that file odradek has no use for (one event loop, the kernel's socket
#: buffers); its transaction.state.log.* settings are the transaction coordinator's.
NOT_IMPLEMENTED = {
    "num.io.threads",
    "num.network.threads",
    "num.recovery.threads.per.data.dir",
    "socket.receive.buffer.bytes",
    "socket.send.buffer.bytes",
}


def test_the_file_parses_with_its_unimplemented_settings_named() -> None:
    config = BrokerConfig.from_properties(KAFKA_PROPERTIES)
    assert {name for name, _value in config.unimplemented} == NOT_IMPLEMENTED
    assert config.log_config.retention_ms == 168 * 3_600_000
    assert config.zookeeper_connect == "localhost:2181"
    assert config.zookeeper_connection_timeout_ms == 18_000
    assert config.group_initial_rebalance_delay_ms == 0
    warnings = config.unimplemented_warnings()
    assert len(warnings) == len(NOT_IMPLEMENTED)
    assert all(any(f"'{name}'" in line for line in warnings) for name in NOT_IMPLEMENTED)


def test_serve_starts_from_kafkas_file_unchanged(
    serve: ServeFactory, zookeeper_chroot: str
) -> None:
    # Only what a test must change is overridden: its ZooKeeper, free port and own directory.
    served = serve(None, f"zookeeper.connect={zookeeper_chroot}", config_path=KAFKA_PROPERTIES)
    admin = AdminClient({"bootstrap.servers": served.bootstrap})
    admin.create_topics([NewTopic("kafka-file", 1, 1)])["kafka-file"].result(timeout=30)
    assert produce(served.bootstrap, "kafka-file", [b"a", b"b"]) == 0
    assert fetch_values(served.bootstrap, "kafka-file") == [b"a", b"b"]

    warned = [line for line in served.log().splitlines() if "does not implement" in line]
    assert len(warned) == len(NOT_IMPLEMENTED)
    assert all(any(f"'{name}'" in line for line in warned) for name in NOT_IMPLEMENTED)

    resource = ConfigResource(ConfigResource.Type.BROKER, "0")
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    assert entries["num.io.threads"].value == "8"
    assert entries["num.io.threads"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert entries["log.retention.hours"].value == "168"
    assert entries["ssl.key.password"].is_sensitive
    del admin  # librdkafka's handle goes before the broker does
    assert served.signal(signal.SIGTERM) == 0
    assert "Traceback" not in served.log()


def test_describe_configs_types_and_documents_the_settings() -> None:
    config = BrokerConfig.from_mapping({"num.io.threads": "4", "log.retention.hours": "1"})
    described = config.describe()
    assert described["num.io.threads"].value == "4"
    assert not described["num.io.threads"].implemented
    assert described["num.io.threads"].documentation == NOT_IMPLEMENTED_DOC
    assert described["num.network.threads"].value == "3"  # Kafka's default, not given
    assert described["num.network.threads"].is_default
    assert described["log.retention.hours"].implemented
    assert described["log.retention.hours"].kafka_type == "INT"
    assert described["auto.create.topics.enable"].kafka_type == "BOOLEAN"
    assert described["log.cleanup.policy"].kafka_type == "LIST"
    assert described["ssl.keystore.password"].sensitive
    assert "num.io.threads" not in config.settings()
