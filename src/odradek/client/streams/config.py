"""The connector's configuration: every consumer key, plus the classic high-level consumer's
own keys, and ``ConnectorSettings``, the typed view read once.

This module owns the ``CONSUMER_CONNECTOR`` client type in ``client.config`` (registered at
import): the consumer's keys as they are registered when this module loads, plus

- ``queued.max.message.chunks`` (default 2, the classic default): the chunks a stream's queue
  holds before its partitions are paused (a chunk is one partition's records from one poll,
  at most ``max.poll.records``);
- ``auto.commit.enable``: the classic name of ``enable.auto.commit``; when given it wins;
- ``metadata.max.age.ms`` defaults to 10 s instead of 5 minutes: the classic connector heard
  of new topics at once (ZooKeeper watches), and a topic filter finds them only on a refresh;
- ``auto.offset.reset`` also takes the classic names ``smallest`` and ``largest``;
- the ZooKeeper-coordinated group (``ZooKeeperSettings``, used when ``zookeeper.connect`` is
  given): ``zookeeper.connect`` (with an optional chroot), ``zookeeper.session.timeout.ms`` and
  ``zookeeper.connection.timeout.ms`` (6 s each, the classic consumer's defaults),
  ``consumer.id``, ``offsets.storage`` (``zookeeper``, the default with ``zookeeper.connect``,
  or ``kafka``), ``dual.commit.enabled`` (default true: with ``offsets.storage=kafka`` commit to
  ZooKeeper too and read the greater of both), ``rebalance.max.retries`` (4) and
  ``rebalance.backoff.ms`` (2 s).

The connector commits by itself (what the streams handed out), so the inner consumer always
runs with ``enable.auto.commit=false``; ``consumer_config`` is the configuration it gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from odradek.client.config import CONSUMER, ClientConfig, ConfigKey, keys_for, register_keys
from odradek.errors import ConfigError

__all__ = ["CONSUMER_CONNECTOR", "ConnectorSettings", "ZooKeeperSettings"]

_MAX_INT32: Final = 2**31 - 1

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
        ConfigKey(
            "auto.offset.reset",
            str,
            "latest",
            "where to start without a valid offset (smallest/largest: classic names)",
            choices=("earliest", "latest", "none", "smallest", "largest"),
        ),
        ConfigKey(
            "zookeeper.connect",
            str,
            None,
            "host:port[,host:port...][/chroot]: coordinate the group through ZooKeeper",
        ),
        ConfigKey(
            "zookeeper.session.timeout.ms", int, 6_000, "ZooKeeper session timeout", 1, _MAX_INT32
        ),
        ConfigKey(
            "zookeeper.connection.timeout.ms",
            int,
            6_000,
            "longest wait for a ZooKeeper session",
            1,
            _MAX_INT32,
        ),
        ConfigKey("consumer.id", str, None, "this member's id in the ZooKeeper group"),
        ConfigKey(
            "offsets.storage",
            str,
            None,
            "where offsets are committed (default: zookeeper with zookeeper.connect)",
            choices=("zookeeper", "kafka"),
        ),
        ConfigKey(
            "dual.commit.enabled",
            bool,
            True,
            "with offsets.storage=kafka, commit to ZooKeeper too (migration)",
        ),
        ConfigKey("rebalance.max.retries", int, 4, "ZooKeeper rebalance attempts", 1, 1_000),
        ConfigKey(
            "rebalance.backoff.ms", int, 2_000, "wait between ZooKeeper rebalance attempts", 0
        ),
    ),
)

#: The classic names of ``auto.offset.reset``'s values.
_CLASSIC_RESET: Final = {"smallest": "earliest", "largest": "latest"}


@dataclass(frozen=True, slots=True)
class ZooKeeperSettings:
    """The ZooKeeper-coordinated group's settings (see the module docstring)."""

    connect: str
    session_timeout_ms: int
    connection_timeout_ms: int
    consumer_id: str | None
    offsets_storage: str
    dual_commit: bool
    rebalance_max_retries: int
    rebalance_backoff_ms: int
    auto_offset_reset: str
    exclude_internal_topics: bool = True

    @property
    def commits_to_zookeeper(self) -> bool:
        return self.offsets_storage == "zookeeper" or self.dual_commit

    @property
    def commits_to_kafka(self) -> bool:
        return self.offsets_storage == "kafka"


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
    zookeeper: ZooKeeperSettings | None = None

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
        reset = config.get_str("auto.offset.reset")
        reset = _CLASSIC_RESET.get(reset, reset)
        zookeeper = _zookeeper_settings(config, reset)
        overrides: dict[str, object] = {
            "enable.auto.commit": False,
            "metadata.max.age.ms": config.get_int("metadata.max.age.ms"),
        }
        if zookeeper is not None and not zookeeper.commits_to_kafka:
            overrides["group.id"] = None  # no Kafka group: assign() only, offsets in ZooKeeper
        classic_free = config.with_overrides({"auto.offset.reset": reset})
        consumer_config = classic_free.for_type(CONSUMER).with_overrides(overrides)
        return cls(
            config=config,
            consumer_config=consumer_config,
            group_id=group_id,
            queued_max_message_chunks=config.get_int("queued.max.message.chunks"),
            auto_commit=auto_commit,
            auto_commit_interval_ms=config.get_int("auto.commit.interval.ms"),
            consumer_timeout_ms=config.get_int("consumer.timeout.ms"),
            default_api_timeout_ms=config.get_int("default.api.timeout.ms"),
            zookeeper=zookeeper,
        )


def _zookeeper_settings(config: ClientConfig, reset: str) -> ZooKeeperSettings | None:
    connect = config.get_optional_str("zookeeper.connect")
    if not connect:
        if "offsets.storage" in config.given and config["offsets.storage"] == "zookeeper":
            raise ConfigError("offsets.storage=zookeeper needs zookeeper.connect")
        return None
    storage = config.get_optional_str("offsets.storage") or "zookeeper"
    return ZooKeeperSettings(
        connect=connect,
        session_timeout_ms=config.get_int("zookeeper.session.timeout.ms"),
        connection_timeout_ms=config.get_int("zookeeper.connection.timeout.ms"),
        consumer_id=config.get_optional_str("consumer.id"),
        offsets_storage=storage,
        dual_commit=storage == "kafka" and config.get_bool("dual.commit.enabled"),
        rebalance_max_retries=config.get_int("rebalance.max.retries"),
        rebalance_backoff_ms=config.get_int("rebalance.backoff.ms"),
        auto_offset_reset=reset,
        exclude_internal_topics=config.get_bool("exclude.internal.topics"),
    )
