"""CleanerConfig: defaults and the broker's log.cleaner.* settings."""

from __future__ import annotations

import pytest

from odradek.errors import ConfigError
from odradek.storage.cleaner.config import CleanerConfig


def test_defaults_are_kafkas() -> None:
    config = CleanerConfig()
    assert (config.enable, config.threads, config.backoff_ms) == (True, 1, 15_000)
    assert config.dedupe_buffer_size == 128 * 1024 * 1024
    assert config.io_buffer_load_factor == 0.9


def test_broker_settings() -> None:
    config = CleanerConfig.from_broker_settings(
        {
            "log.cleaner.enable": "false",
            "log.cleaner.threads": 2,
            "log.cleaner.dedupe.buffer.size": "1048576",
            "log.cleaner.backoff.ms": "100",
            "log.retention.hours": "1",  # not the cleaner's
        }
    )
    assert (config.enable, config.threads, config.backoff_ms) == (False, 2, 100)
    assert config.dedupe_buffer_per_thread == 524_288


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("log.cleaner.enable", "yes"),
        ("log.cleaner.threads", "0"),
        ("log.cleaner.io.buffer.load.factor", "1.5"),
        ("log.cleaner.backoff.ms", "soon"),
    ],
)
def test_bad_values_are_refused(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name.replace(".", r"\.")):
        CleanerConfig.from_broker_settings({name: value})
