"""``producer.config``: the producer's Kafka keys with Java's defaults, acks spellings, and the
cross-key rules."""

from __future__ import annotations

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
        ({"enable.idempotence": True}, "enable.idempotence"),
        ({"lingerms": 5}, "linger.ms"),
        ({"producer.type": "fast"}, "producer.type"),
    ],
)
def test_bad_settings_name_the_key(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        ProducerSettings.from_config(
            ClientConfig({"bootstrap.servers": "h:1", **kwargs}, client_type=PRODUCER)
        )
