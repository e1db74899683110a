"""``odradek serve`` started from a ``server.properties`` in the shape of Kafka 4.0's (KRaft mode:
a combined broker and controller), unchanged: the KRaft settings are accepted with one warning
line each saying what odradek runs instead, the controller listeners are not opened, and the
broker serves on the others."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from odradek.broker.config import BrokerConfig
from odradek.errors import ConfigError

from .conftest import ServeFactory, fetch_values, produce

KRAFT_PROPERTIES = Path(__file__).parent / "kafka-kraft-server.properties"
KRAFT = {"process.roles", "controller.quorum.bootstrap.servers", "controller.listener.names"}
#: The file's other Kafka settings odradek has no use for (one event loop, no share groups).
NOT_IMPLEMENTED = {
    "num.io.threads",
    "num.network.threads",
    "num.recovery.threads.per.data.dir",
    "share.coordinator.state.topic.min.isr",
    "share.coordinator.state.topic.replication.factor",
    "socket.receive.buffer.bytes",
    "socket.send.buffer.bytes",
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_file_parses_without_its_controller_listener() -> None:
    config = BrokerConfig.from_properties(KRAFT_PROPERTIES)
    assert config.broker_id == 1  # node.id
    assert [str(listener) for listener in config.listeners] == ["PLAINTEXT://:9092"]
    assert [str(listener) for listener in config.advertised_listeners] == [
        "PLAINTEXT://localhost:9092"
    ]
    assert config.security.inter_broker_listener_name == "PLAINTEXT"
    assert {name for name, _value in config.unimplemented} == KRAFT | NOT_IMPLEMENTED
    warnings = config.unimplemented_warnings()
    assert len(warnings) == len(KRAFT | NOT_IMPLEMENTED)
    kraft = [line for line in warnings if "KRaft setting" in line]
    assert sorted(name for name in KRAFT if any(f"'{name}'" in line for line in kraft)) == sorted(
        KRAFT
    )
    assert all("embedded metadata store (a single broker)" in line for line in kraft)
    (listeners_line,) = [line for line in kraft if "'controller.listener.names'" in line]
    assert "(CONTROLLER) are not opened" in listeners_line


def test_with_zookeeper_the_warning_names_zookeeper() -> None:
    config = BrokerConfig.from_mapping(
        {"process.roles": "broker", "zookeeper.connect": "localhost:2181"}
    )
    (line,) = config.unimplemented_warnings()
    assert "'process.roles'" in line
    assert "ZooKeeper" in line


def test_only_controller_listeners_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match="every listener is a controller listener"):
        BrokerConfig.from_mapping(
            {"listeners": "CONTROLLER://:9093", "controller.listener.names": "CONTROLLER"}
        )
    with pytest.raises(ConfigError, match=r"inter\.broker\.listener\.name"):
        BrokerConfig.from_mapping(
            {
                "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
                "controller.listener.names": "CONTROLLER",
                "inter.broker.listener.name": "CONTROLLER",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            }
        )


def test_serve_starts_from_the_kraft_file_unchanged(serve: ServeFactory) -> None:
    # Only what a test must change is overridden: free ports (the controller listener's too,
    # to show it stays closed) and the test's own directory (the factory's log.dirs).
    controller_port = _free_port()
    listeners = f"PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{controller_port}"
    served = serve(
        None,
        f"listeners={listeners}",
        f"advertised.listeners={listeners}",
        config_path=KRAFT_PROPERTIES,
    )
    assert served.line.startswith("odradek: broker 1 serving on 127.0.0.1:")
    admin = AdminClient({"bootstrap.servers": served.bootstrap})
    admin.create_topics([NewTopic("kraft-file", 1, 1)])["kraft-file"].result(timeout=30)
    assert produce(served.bootstrap, "kraft-file", [b"a", b"b"]) == 0
    assert fetch_values(served.bootstrap, "kraft-file") == [b"a", b"b"]
    metadata = admin.list_topics(timeout=30)
    assert [(b.id, b.port) for b in metadata.brokers.values()] == [(1, served.port)]
    with (
        pytest.raises(ConnectionRefusedError),
        socket.create_connection(("127.0.0.1", controller_port), timeout=5),
    ):
        pass

    log_lines = served.log().splitlines()
    kraft = [line for line in log_lines if "is a KRaft setting" in line]
    assert len(kraft) == len(KRAFT)
    assert any("(CONTROLLER) are not opened" in line for line in kraft)
    warned = [line for line in log_lines if "does not implement" in line]
    assert len(warned) == len(NOT_IMPLEMENTED)

    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    assert entries["process.roles"].value == "broker,controller"
    assert entries["controller.listener.names"].value == "CONTROLLER"
    assert entries["node.id"].value == "1"
    del admin  # librdkafka's handle goes before the broker does
    assert served.signal(signal.SIGTERM) == 0
    assert "Traceback" not in served.log()
