"""``metrics.port``, ``metrics.host`` and Kafka's ``metric.reporters`` in ``BrokerConfig``."""

from __future__ import annotations

import pytest

from odradek.broker.config import BrokerConfig
from odradek.broker.metrics import DEFAULT_METRICS_PORT, PROMETHEUS_REPORTER, metrics_endpoint
from odradek.errors import ConfigError


def endpoint(settings: dict[str, str]) -> tuple[str, int] | None:
    config = BrokerConfig.from_mapping({"listeners": "PLAINTEXT://10.0.0.5:9092", **settings})
    return metrics_endpoint(
        config.metrics_port,
        config.metrics_host,
        config.metric_reporters,
        config.listeners[0].host,
    )


def test_off_by_default_and_on_by_port_or_reporter() -> None:
    assert endpoint({}) is None
    assert endpoint({"metrics.port": "9100"}) == ("10.0.0.5", 9100)
    assert endpoint({"metrics.port": "0", "metrics.host": "127.0.0.1"}) == ("127.0.0.1", 0)
    assert endpoint({"metric.reporters": "prometheus"}) == ("10.0.0.5", DEFAULT_METRICS_PORT)
    assert endpoint({"metric.reporters": PROMETHEUS_REPORTER, "metrics.port": "7071"}) == (
        "10.0.0.5",
        7071,
    )
    # Kafka's default reporter is accepted and changes nothing.
    assert endpoint({"metric.reporters": "org.apache.kafka.common.metrics.JmxReporter"}) is None


def test_the_settings_are_described_as_given() -> None:
    config = BrokerConfig.from_mapping({"metric.reporters": "prometheus", "metrics.port": "1"})
    described = config.describe()
    assert described["metric.reporters"].value == PROMETHEUS_REPORTER
    assert described["metric.reporters"].implemented
    assert described["metrics.port"].value == "1"
    assert not any("metric.reporters" in line for line in config.unimplemented_warnings())


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"metrics.port": "x"}, "metrics.port: expected an integer"),
        ({"metrics.port": "70000"}, "metrics.port: must be at most 65535"),
        ({"metrics.port": "-2"}, "metrics.port: must be at least -1"),
        ({"metric.reporters": "com.example.Reporter"}, "unknown reporter 'com.example.Reporter'"),
    ],
)
def test_bad_values_are_refused_by_name(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.from_mapping(settings)
