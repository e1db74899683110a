"""``client.config``: Kafka names, keyword arguments with underscores, defaults per client type,
unknown keys named, values coerced and checked."""

from __future__ import annotations

import pytest

from odradek.client.config import (
    ADMIN,
    COMMON,
    ClientConfig,
    ConfigKey,
    keys_for,
    register_keys,
)
from odradek.errors import ConfigError


def test_mapping_and_keywords_are_the_same_setting() -> None:
    by_name = ClientConfig({"request.timeout.ms": 5})
    by_keyword = ClientConfig(request_timeout_ms=5)
    assert by_name["request.timeout.ms"] == by_keyword["request.timeout.ms"] == 5


def test_keyword_wins_over_mapping() -> None:
    config = ClientConfig({"client.id": "a"}, client_id="b")
    assert config.get_str("client.id") == "b"
    assert config.given == {"client.id": "b"}


def test_kafka_defaults() -> None:
    config = ClientConfig()
    assert config.get_int("request.timeout.ms") == 30_000
    assert config.get_int("metadata.max.age.ms") == 300_000
    assert config.get_int("reconnect.backoff.ms") == 50
    assert config.get_int("reconnect.backoff.max.ms") == 1000
    assert config.get_int("retry.backoff.ms") == 100
    assert config.get_int("connections.max.idle.ms") == 540_000
    assert config.get_int("socket.connection.setup.timeout.ms") == 10_000
    assert config.get_bool("api.version.request") is True
    assert config.get_list("bootstrap.servers") == []


def test_a_type_may_override_a_common_default() -> None:
    assert ClientConfig(client_type=ADMIN).get_int("connections.max.idle.ms") == 300_000
    assert ClientConfig(client_type=ADMIN).get_int("default.api.timeout.ms") == 60_000


@pytest.mark.parametrize("name", ["linger.ms", "bootstrap.server", "no.such.key"])
def test_unknown_key_is_named(name: str) -> None:
    with pytest.raises(ConfigError, match=repr(name).replace(".", r"\.")):
        ClientConfig({name: 1})


def test_unknown_keyword_is_named_with_a_suggestion() -> None:
    with pytest.raises(
        ConfigError, match=r"'request\.timeout\.mss'.*did you mean 'request\.timeout\.ms'"
    ):
        ClientConfig(request_timeout_mss=1)


def test_keys_of_another_client_type_are_unknown() -> None:
    with pytest.raises(ConfigError, match=r"default\.api\.timeout\.ms"):
        ClientConfig({"default.api.timeout.ms": 1}, client_type=COMMON)


def test_values_are_coerced() -> None:
    config = ClientConfig(
        {
            "request.timeout.ms": "250",
            "api.version.request": "false",
            "bootstrap.servers": "a:1, b:2",
        }
    )
    assert config.get_int("request.timeout.ms") == 250
    assert config.get_bool("api.version.request") is False
    assert config.get_list("bootstrap.servers") == ["a:1", "b:2"]
    assert ClientConfig(bootstrap_servers=["a:1"]).get_list("bootstrap.servers") == ["a:1"]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("request.timeout.ms", "soon", "request.timeout.ms: invalid value"),
        ("request.timeout.ms", 0, "request.timeout.ms: 0 is below 1"),
        ("api.version.request", "maybe", "api.version.request: invalid value"),
        ("security.protocol", "TLS", "security.protocol: invalid value 'TLS'"),
        ("client.id", 5, "client.id: invalid value"),
        ("request.timeout.ms", True, "request.timeout.ms: invalid value"),
    ],
)
def test_invalid_values_are_named(name: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        ClientConfig({name: value})


def test_typed_getters_check_the_kind() -> None:
    config = ClientConfig()
    with pytest.raises(ConfigError, match=r"client\.id"):
        config.get_int("client.id")
    with pytest.raises(ConfigError, match=r"no\.such"):
        config["no.such"]


def test_registered_keys_belong_to_their_type_only() -> None:
    register_keys("test_widget", [ConfigKey("widget.size", int, 3, "a test key", 1)])
    assert ClientConfig(client_type="test_widget").get_int("widget.size") == 3
    assert ClientConfig({"widget.size": "7"}, client_type="test_widget")["widget.size"] == 7
    assert "widget.size" not in keys_for(COMMON)
    assert "bootstrap.servers" in keys_for("test_widget")


def test_unknown_client_type() -> None:
    with pytest.raises(ConfigError, match="nobody"):
        ClientConfig(client_type="nobody")


def test_with_overrides_and_for_type() -> None:
    base = ClientConfig({"client.id": "x", "default.api.timeout.ms": 5}, client_type=ADMIN)
    assert base.with_overrides(client_id="y").get_str("client.id") == "y"
    assert base.with_overrides(client_id="y").client_type == ADMIN
    common = base.for_type(COMMON)
    assert common.given == {"client.id": "x"}


def test_config_is_immutable_mapping() -> None:
    config = ClientConfig(client_id="x")
    assert dict(config)["client.id"] == "x"
    assert len(config) == len(keys_for(COMMON))
    assert "client.id" in repr(config)
