"""``producer.config``: the producer's Kafka keys with Java's defaults, acks spellings, the
cross-key rules, and idempotence's rules (on by default; off, logged, when a conflicting
setting is given without ``enable.idempotence``; a ConfigError when it is given as true)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from odradek.client.config import PRODUCER, ClientConfig
from odradek.client.producer.config import ACKS_ALL, ProducerSettings
from odradek.errors import ConfigError
from odradek.records.batch import CompressionType


def settings(**kwargs: Any) -> ProducerSettings:
    return ProducerSettings.from_config(
        ClientConfig({"bootstrap.servers": "127.0.0.1:9092"}, client_type=PRODUCER, **kwargs)
    )


def test_defaults_are_kafkas() -> None:
    s = settings()
    assert s.acks == ACKS_ALL
    assert (s.batch_size, s.linger_ms, s.buffer_memory) == (16_384, 5, 33_554_432)
    assert (s.max_block_ms, s.max_request_size) == (60_000, 1_048_576)
    assert (s.delivery_timeout_ms, s.request_timeout_ms) == (120_000, 30_000)
    assert (s.retries, s.retry_backoff_ms, s.max_in_flight) == (2**31 - 1, 100, 5)
    assert s.compression is CompressionType.NONE
    assert not s.sync
    assert s.idempotent, "idempotent by default, as Java's producer since Kafka 3.0"


@pytest.mark.parametrize(
    ("given", "expected"), [("all", -1), ("-1", -1), (-1, -1), (0, 0), ("1", 1), ("ALL", -1)]
)
def test_acks_spellings(given: Any, expected: int) -> None:
    assert settings(acks=given).acks == expected


def test_names_from_a_mapping_and_keywords() -> None:
    config = ClientConfig(
        {"bootstrap.servers": "h:1", "compression.type": "zstd", "linger.ms": "20"},
        client_type=PRODUCER,
        producer_type="sync",
        batch_size=100,
    )
    s = ProducerSettings.from_config(config)
    assert (s.compression, s.linger_ms, s.sync, s.batch_size) == (
        CompressionType.ZSTD,
        20,
        True,
        100,
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"acks": 2}, "acks"),
        ({"compression.type": "brotli"}, "compression.type"),
        ({"delivery.timeout.ms": 1000}, "delivery.timeout.ms"),
        ({"max.request.size": 10, "buffer.memory": 5, "batch.size": 1}, "max.request.size"),
        ({"enable.idempotence": True, "acks": 1}, "acks"),
        ({"enable.idempotence": "true", "retries": 0}, "retries"),
        (
            {"enable.idempotence": True, "max.in.flight.requests.per.connection": 6},
            "max.in.flight.requests.per.connection",
        ),
        ({"transactional.id": "t", "acks": 1}, "transactional.id needs acks=all"),
        ({"transactional.id": "t", "acks": 1}, "got acks=1"),
        ({"transactional.id": "t", "enable.idempotence": False}, "got enable.idempotence=false"),
        ({"lingerms": 5}, "linger.ms"),
        ({"producer.type": "fast"}, "producer.type"),
    ],
)
def test_bad_settings_name_the_key(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        ProducerSettings.from_config(
            ClientConfig({"bootstrap.servers": "h:1", **kwargs}, client_type=PRODUCER)
        )


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"acks": 1}, "acks=1"),
        ({"acks": "0"}, "acks=0"),
        ({"retries": 0}, "retries=0"),
        ({"max_in_flight_requests_per_connection": 6}, "max.in.flight.requests.per.connection=6"),
    ],
)
def test_a_conflicting_setting_switches_idempotence_off_when_not_asked_for(
    kwargs: dict[str, Any], named: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="odradek.client.producer.config"):
        s = settings(**kwargs)
    assert not s.idempotent
    assert [r.levelno for r in caplog.records] == [logging.INFO]
    assert named in caplog.records[0].getMessage()


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"enable_idempotence": True},
        {"acks": "-1", "max_in_flight_requests_per_connection": 5, "retries": 1},
        {"transactional_id": "t"},
    ],
)
def test_idempotent_settings(kwargs: dict[str, Any]) -> None:
    assert settings(**kwargs).idempotent


def test_idempotence_switched_off_explicitly_allows_anything() -> None:
    s = settings(enable_idempotence=False, acks=1, max_in_flight_requests_per_connection=10)
    assert not s.idempotent
    assert (s.acks, s.max_in_flight) == (1, 10)
