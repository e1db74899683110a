"""The consumer's configuration keys (Kafka's names and defaults) and the settings read once.

This module owns the consumer's entries in ``client.config`` (registered for ``CONSUMER`` at
import) and ``ConsumerSettings``, the typed, immutable view the consumer's parts read. Defaults
are the Java consumer's, with two deliberate choices documented at the keys:
``partition.assignment.strategy`` defaults to ``range`` then ``cooperative-sticky`` (Java's
default since Kafka 3.0), so the group agrees on ``range`` unless every member prefers more; and
``receive.buffer.bytes`` defaults to -1 (the OS default), as kafka-python, aiokafka and
librdkafka have it, not Java's 64 KB.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from odradek.client.assignors import DEFAULT_PARTITION_ASSIGNMENT_STRATEGY
from odradek.client.config import CONSUMER, ClientConfig, ConfigKey, register_keys
from odradek.errors import ConfigError

__all__ = ["ConsumerSettings"]

_MAX_INT32: Final = 2**31 - 1

register_keys(
    CONSUMER,
    (
        ConfigKey("group.id", str, None, "the consumer group (none: assign() only)", nullable=True),
        ConfigKey("group.instance.id", str, None, "static membership id (KIP-345)", nullable=True),
        ConfigKey(
            "group.protocol",
            str,
            "classic",
            "the group protocol: classic (JoinGroup/SyncGroup) or consumer (KIP-848)",
            choices=("classic", "consumer"),
        ),
        ConfigKey(
            "group.remote.assignor",
            str,
            None,
            "group.protocol=consumer: the server assignor (none: the broker's default)",
            nullable=True,
        ),
        ConfigKey("session.timeout.ms", int, 45_000, "member expiry without heartbeats", 1),
        ConfigKey("heartbeat.interval.ms", int, 3_000, "time between heartbeats", 1),
        ConfigKey(
            "max.poll.interval.ms", int, 300_000, "longest gap between poll() calls", 1, _MAX_INT32
        ),
        ConfigKey("max.poll.records", int, 500, "records one poll() returns at most", 1),
        ConfigKey("enable.auto.commit", bool, True, "commit positions in the background"),
        ConfigKey("auto.commit.interval.ms", int, 5_000, "time between auto commits", 0),
        ConfigKey(
            "auto.offset.reset",
            str,
            "latest",
            "where to start without a valid offset",
            choices=("earliest", "latest", "none"),
        ),
        ConfigKey("fetch.min.bytes", int, 1, "bytes a fetch waits for (up to the wait)", 0),
        ConfigKey("fetch.max.bytes", int, 52_428_800, "bytes one Fetch response may hold", 0),
        ConfigKey("fetch.max.wait.ms", int, 500, "how long a fetch may wait for data", 0),
        ConfigKey("max.partition.fetch.bytes", int, 1_048_576, "bytes per partition per fetch", 0),
        ConfigKey(
            "partition.assignment.strategy",
            object,
            list(DEFAULT_PARTITION_ASSIGNMENT_STRATEGY),
            "assignors, preferred first (names, class names or objects)",
        ),
        ConfigKey("key.deserializer", object, "bytes", "how record keys are decoded"),
        ConfigKey("value.deserializer", object, "bytes", "how record values are decoded"),
        ConfigKey(
            "isolation.level",
            str,
            "read_uncommitted",
            "which records a fetch returns",
            choices=("read_uncommitted", "read_committed"),
        ),
        ConfigKey("check.crcs", bool, True, "verify each batch's CRC32C"),
        ConfigKey("default.api.timeout.ms", int, 60_000, "timeout of blocking calls", 1),
        ConfigKey("exclude.internal.topics", bool, True, "patterns never match internal topics"),
        ConfigKey("allow.auto.create.topics", bool, True, "metadata requests may create topics"),
        ConfigKey("client.rack", str, "", "sent in subscriptions and fetches"),
        ConfigKey(
            "consumer.timeout.ms",
            int,
            -1,
            "iteration stops after this long without a record (-1: never; kafka-python)",
            -1,
        ),
        ConfigKey("metadata.max.age.ms", int, 300_000, "refresh metadata at least this often", 0),
        # Not Java's 65,536: a fixed SO_RCVBUF turns off Linux's receive-buffer autotuning, and
        # a 1 MB fetch response then arrives in many small reads, each a wake-up of the fetcher
        # thread and a GIL hand-off (bench/consumer_perf.py: 100 B records 25-40% faster).
        ConfigKey("receive.buffer.bytes", int, -1, "SO_RCVBUF (-1: the OS default)", -1),
    ),
)


@dataclass(frozen=True, slots=True)
class ConsumerSettings:
    """The consumer's settings, read once from a checked ``ClientConfig``."""

    config: ClientConfig
    group_id: str | None
    group_instance_id: str | None
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    max_poll_records: int
    enable_auto_commit: bool
    auto_commit_interval_ms: int
    auto_offset_reset: str
    fetch_min_bytes: int
    fetch_max_bytes: int
    fetch_max_wait_ms: int
    max_partition_fetch_bytes: int
    assignment_strategy: Any
    key_deserializer: Any
    value_deserializer: Any
    isolation_level: int
    check_crcs: bool
    default_api_timeout_ms: int
    exclude_internal_topics: bool
    allow_auto_create_topics: bool
    client_rack: str
    consumer_timeout_ms: int
    request_timeout_ms: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    metadata_max_age_ms: int
    group_protocol: str = "classic"
    group_remote_assignor: str | None = None

    @classmethod
    def from_config(cls, config: ClientConfig) -> ConsumerSettings:
        return cls(
            config=config,
            group_id=config.get_optional_str("group.id"),
            group_instance_id=config.get_optional_str("group.instance.id"),
            session_timeout_ms=config.get_int("session.timeout.ms"),
            heartbeat_interval_ms=config.get_int("heartbeat.interval.ms"),
            max_poll_interval_ms=config.get_int("max.poll.interval.ms"),
            max_poll_records=config.get_int("max.poll.records"),
            enable_auto_commit=config.get_bool("enable.auto.commit"),
            auto_commit_interval_ms=config.get_int("auto.commit.interval.ms"),
            auto_offset_reset=config.get_str("auto.offset.reset"),
            fetch_min_bytes=config.get_int("fetch.min.bytes"),
            fetch_max_bytes=config.get_int("fetch.max.bytes"),
            fetch_max_wait_ms=config.get_int("fetch.max.wait.ms"),
            max_partition_fetch_bytes=config.get_int("max.partition.fetch.bytes"),
            assignment_strategy=config.get_object("partition.assignment.strategy"),
            key_deserializer=config.get_object("key.deserializer"),
            value_deserializer=config.get_object("value.deserializer"),
            isolation_level=1 if config.get_str("isolation.level") == "read_committed" else 0,
            check_crcs=config.get_bool("check.crcs"),
            default_api_timeout_ms=config.get_int("default.api.timeout.ms"),
            exclude_internal_topics=config.get_bool("exclude.internal.topics"),
            allow_auto_create_topics=config.get_bool("allow.auto.create.topics"),
            client_rack=config.get_str("client.rack"),
            consumer_timeout_ms=config.get_int("consumer.timeout.ms"),
            request_timeout_ms=config.get_int("request.timeout.ms"),
            retry_backoff_ms=config.get_int("retry.backoff.ms"),
            retry_backoff_max_ms=config.get_int("retry.backoff.max.ms"),
            metadata_max_age_ms=config.get_int("metadata.max.age.ms"),
            group_protocol=_group_protocol(config),
            group_remote_assignor=config.get_optional_str("group.remote.assignor"),
        )


#: Settings of the classic protocol that KIP-848 moves to the broker: Kafka's consumer refuses
#: them with ``group.protocol=consumer`` rather than ignore them silently.
_CLASSIC_ONLY: Final = (
    "partition.assignment.strategy",
    "session.timeout.ms",
    "heartbeat.interval.ms",
)


def _group_protocol(config: ClientConfig) -> str:
    """``group.protocol``, checked against the settings it excludes.

    Raises:
        ConfigError: ``consumer`` with a classic-only setting given, or
            ``group.remote.assignor`` with ``classic``.
    """
    protocol = config.get_str("group.protocol")
    given = config.given
    if protocol == "consumer":
        refused = [name for name in _CLASSIC_ONLY if name in given]
        if refused:
            raise ConfigError(
                f"{', '.join(refused)}: not used with group.protocol=consumer (the broker "
                "assigns partitions and sets the session and heartbeat interval, KIP-848; "
                "group.remote.assignor names the broker's assignor)"
            )
    elif given.get("group.remote.assignor") is not None:
        raise ConfigError("group.remote.assignor: needs group.protocol=consumer")
    return protocol
