"""The connector's configuration: every consumer key, plus the classic high-level consumer's
own keys, and ``ConnectorSettings``, the typed view read once.

This module owns the ``CONSUMER_CONNECTOR`` client type in ``client.config`` (registered at
import): the consumer's keys as they are registered when this module loads, plus

- ``queued.max.message.chunks`` (default 2, the classic default): the chunks a stream's queue
  holds before its partitions are paused (a chunk is one partition's records from one poll,
  at most ``max.poll.records``);
- ``auto.commit.enable``: the classic name of ``enable.auto.commit``; when given it wins;
- ``metadata.max.age.ms`` defaults to 10 s instead of 5 minutes: the classic connector heard
  of new topics at once (ZooKeeper watches), and a topic filter finds them only on a refresh.

The connector commits by itself (what the streams handed out), so the inner consumer always
runs with ``enable.auto.commit=false``; ``consumer_config`` is the configuration it gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from odradek.client.config import CONSUMER, ClientConfig, ConfigKey, keys_for, register_keys
from odradek.errors import ConfigError

__all__ = ["CONSUMER_CONNECTOR", "ConnectorSettings"]

CONSUMER_CONNECTOR: Final = "consumer_connector"

register_keys(CONSUMER_CONNECTOR, keys_for(CONSUMER).values())
register_keys(
    CONSUMER_CONNECTOR,
    (
        ConfigKey("queued.max.message.chunks", int, 2, "chunks a stream queues before pausing", 1),
        ConfigKey(
            "metadata.max.age.ms", int, 10_000, "refresh metadata (and filters) this often", 0
        ),
        ConfigKey(
            "auto.commit.enable",
            bool,
            True,
            "classic name of enable.auto.commit (wins when given)",
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class ConnectorSettings:
    """The connector's settings, read once from a checked ``ClientConfig``."""

    config: ClientConfig
    consumer_config: ClientConfig
    group_id: str
    queued_max_message_chunks: int
    auto_commit: bool
    auto_commit_interval_ms: int
    consumer_timeout_ms: int
    default_api_timeout_ms: int

    @classmethod
    def from_config(cls, config: ClientConfig) -> ConnectorSettings:
        """Raises ``ConfigError`` when ``group.id`` is missing."""
        group_id = config.get_optional_str("group.id")
        if not group_id:
            raise ConfigError("a ConsumerConnector needs a group.id")
        if "auto.commit.enable" in config.given:
            auto_commit = config.get_bool("auto.commit.enable")
        else:
            auto_commit = config.get_bool("enable.auto.commit")
        consumer_config = config.for_type(CONSUMER).with_overrides(
            {
                "enable.auto.commit": False,
                "metadata.max.age.ms": config.get_int("metadata.max.age.ms"),
            }
        )
        return cls(
            config=config,
            consumer_config=consumer_config,
            group_id=group_id,
            queued_max_message_chunks=config.get_int("queued.max.message.chunks"),
            auto_commit=auto_commit,
            auto_commit_interval_ms=config.get_int("auto.commit.interval.ms"),
            consumer_timeout_ms=config.get_int("consumer.timeout.ms"),
            default_api_timeout_ms=config.get_int("default.api.timeout.ms"),
        )
