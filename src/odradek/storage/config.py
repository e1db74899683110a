"""Per-log configuration with Kafka's topic-level names, and the broker-level defaults map.

``LogConfig`` is an immutable value; a topic's overrides are applied with
``LogConfig.with_overrides({"retention.ms": "60000"})``. Broker settings (``log.segment.bytes``,
``log.retention.hours``, ...) become the defaults through ``LogConfig.from_broker_settings``.

Kafka 4's other topic configs (``UNIMPLEMENTED_TOPIC_CONFIGS``: ``compression.type``,
``segment.jitter.ms``, ``remote.storage.enable``, ...) are accepted as overrides without effect:
their values are checked against Kafka's type and then left out of the ``LogConfig``. A name
Kafka does not know is refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from odradek.errors import ConfigError

_MAX_LONG = 2**63 - 1
_MAX_INT = 2**31 - 1
_HOUR_MS = 3_600_000
_MINUTE_MS = 60_000


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The settings one partition log obeys. Field ↔ Kafka topic config in ``TOPIC_NAMES``."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * _HOUR_MS
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    flush_messages: int = _MAX_LONG
    flush_ms: int = _MAX_LONG
    retention_ms: int = 7 * 24 * _HOUR_MS
    retention_bytes: int = -1
    file_delete_delay_ms: int = 60_000
    max_message_bytes: int = 1024 * 1024 + 12
    message_timestamp_type: str = "CreateTime"
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 24 * _HOUR_MS
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = _MAX_LONG
    min_insync_replicas: int = 1
    #: Read by the cluster controller when it elects a leader (not by the log itself).
    unclean_leader_election_enable: bool = False

    def __post_init__(self) -> None:
        _check(self.segment_bytes >= 14 + 61 and self.segment_bytes <= _MAX_INT, "segment.bytes")
        _check(self.segment_ms >= 1, "segment.ms")
        _check(self.segment_index_bytes >= 12 * 4, "segment.index.bytes")
        _check(self.index_interval_bytes >= 0, "index.interval.bytes")
        _check(self.flush_messages >= 1, "flush.messages")
        _check(self.flush_ms >= 0, "flush.ms")
        _check(self.retention_ms >= -1, "retention.ms")
        _check(self.retention_bytes >= -1, "retention.bytes")
        _check(self.file_delete_delay_ms >= 0, "file.delete.delay.ms")
        _check(self.max_message_bytes >= 0, "max.message.bytes")
        _check(
            self.message_timestamp_type in ("CreateTime", "LogAppendTime"),
            "message.timestamp.type",
        )
        policies = set(self.cleanup_policy.replace(" ", "").split(","))
        _check(bool(policies) and policies <= {"delete", "compact"}, "cleanup.policy")
        _check(0.0 <= self.min_cleanable_dirty_ratio <= 1.0, "min.cleanable.dirty.ratio")
        _check(self.min_insync_replicas >= 1, "min.insync.replicas")

    @property
    def deletes(self) -> bool:
        """Whether time and size retention apply (``cleanup.policy`` contains ``delete``)."""
        return "delete" in self.cleanup_policy

    @property
    def compacts(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    def with_overrides(self, topic_configs: Mapping[str, str | int | float]) -> LogConfig:
        """Returns a copy with Kafka topic configs applied (e.g. ``{"retention.ms": 1000}``).

        Raises:
            ConfigError: an unknown name or a value of the wrong type or range; the message
                names the setting.
        """
        changes: dict[str, Any] = {}
        for name, raw in topic_configs.items():
            field = TOPIC_NAMES.get(name)
            if field is None and name in UNIMPLEMENTED_TOPIC_CONFIGS:
                _parse(name, raw, _KAFKA_KINDS[UNIMPLEMENTED_TOPIC_CONFIGS[name][0]])
                continue  # a Kafka topic config odradek accepts without effect
            if field is None:
                raise ConfigError(f"unknown topic config {name!r}")
            changes[field] = _parse(name, raw, _FIELD_TYPES[field])
        return dataclasses.replace(self, **changes)

    def topic_configs(self) -> dict[str, str]:
        """Every setting by its Kafka topic config name, as strings (DescribeConfigs)."""
        return {name: _render(getattr(self, field)) for name, field in TOPIC_NAMES.items()}

    @classmethod
    def from_broker_settings(cls, settings: Mapping[str, str | int | float]) -> LogConfig:
        """Builds the default LogConfig from broker settings (``log.*`` names).

        Follows Kafka's precedence: ``log.roll.ms`` over ``log.roll.hours``;
        ``log.retention.ms`` over ``.minutes`` over ``.hours``; same for flush.
        Unknown names are ignored here: the broker config validates the whole file.
        """
        changes: dict[str, Any] = {}
        for name, raw in settings.items():
            if name in _BROKER_DIRECT:
                field = _BROKER_DIRECT[name]
                changes[field] = _parse(name, raw, _FIELD_TYPES[field])
        for field, ladder in _BROKER_LADDERS.items():
            for name, factor in ladder:
                if name in settings:
                    value = _parse(name, settings[name], int)
                    changes[field] = value if value < 0 else value * factor
                    break
        return cls(**changes)


TOPIC_NAMES: dict[str, str] = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.index.bytes": "segment_index_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "flush.messages": "flush_messages",
    "flush.ms": "flush_ms",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "file.delete.delay.ms": "file_delete_delay_ms",
    "max.message.bytes": "max_message_bytes",
    "message.timestamp.type": "message_timestamp_type",
    "cleanup.policy": "cleanup_policy",
    "delete.retention.ms": "delete_retention_ms",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "min.insync.replicas": "min_insync_replicas",
    "unclean.leader.election.enable": "unclean_leader_election_enable",
}

#: Kafka 4's topic configs odradek accepts without effect: name → (Kafka's ConfigDef type, the
#: default Kafka renders). DescribeConfigs lists them with documentation saying so.
UNIMPLEMENTED_TOPIC_CONFIGS: dict[str, tuple[str, str]] = {
    "compression.gzip.level": ("INT", "-1"),
    "compression.lz4.level": ("INT", "9"),
    "compression.type": ("STRING", "producer"),
    "compression.zstd.level": ("INT", "3"),
    "follower.replication.throttled.replicas": ("LIST", ""),
    "leader.replication.throttled.replicas": ("LIST", ""),
    "local.retention.bytes": ("LONG", "-2"),
    "local.retention.ms": ("LONG", "-2"),
    "message.downconversion.enable": ("BOOLEAN", "true"),
    "message.timestamp.after.max.ms": ("LONG", "3600000"),
    "message.timestamp.before.max.ms": ("LONG", str(_MAX_LONG)),
    "preallocate": ("BOOLEAN", "false"),
    "remote.log.copy.disable": ("BOOLEAN", "false"),
    "remote.log.delete.on.disable": ("BOOLEAN", "false"),
    "remote.storage.enable": ("BOOLEAN", "false"),
    "segment.jitter.ms": ("LONG", "0"),
}


def is_topic_config(name: str) -> bool:
    """Whether ``name`` is a Kafka topic config (implemented or accepted without effect)."""
    return name in TOPIC_NAMES or name in UNIMPLEMENTED_TOPIC_CONFIGS


#: Broker settings that map one-to-one onto a LogConfig field.
_BROKER_DIRECT: dict[str, str] = {
    "log.segment.bytes": "segment_bytes",
    "log.index.size.max.bytes": "segment_index_bytes",
    "log.index.interval.bytes": "index_interval_bytes",
    "log.flush.interval.messages": "flush_messages",
    "log.retention.bytes": "retention_bytes",
    "log.segment.delete.delay.ms": "file_delete_delay_ms",
    "message.max.bytes": "max_message_bytes",
    "log.message.timestamp.type": "message_timestamp_type",
    "log.cleanup.policy": "cleanup_policy",
    "log.cleaner.delete.retention.ms": "delete_retention_ms",
    "log.cleaner.min.cleanable.ratio": "min_cleanable_dirty_ratio",
    "log.cleaner.min.compaction.lag.ms": "min_compaction_lag_ms",
    "log.cleaner.max.compaction.lag.ms": "max_compaction_lag_ms",
    "min.insync.replicas": "min_insync_replicas",
    "unclean.leader.election.enable": "unclean_leader_election_enable",
}

#: Broker settings given in several units: the first one present wins.
_BROKER_LADDERS: dict[str, tuple[tuple[str, int], ...]] = {
    "segment_ms": (("log.roll.ms", 1), ("log.roll.hours", _HOUR_MS)),
    "retention_ms": (
        ("log.retention.ms", 1),
        ("log.retention.minutes", _MINUTE_MS),
        ("log.retention.hours", _HOUR_MS),
    ),
    "flush_ms": (("log.flush.interval.ms", 1),),
}


def broker_synonyms(topic_config: str) -> tuple[str, ...]:
    """The broker settings a topic config takes its value from when the topic does not override
    it, in Kafka's order of precedence (``retention.ms``: ``log.retention.ms``, then
    ``.minutes``, then ``.hours``); empty for a name that is not a topic config."""
    field = TOPIC_NAMES.get(topic_config)
    if field is None:
        return ()
    if field in _BROKER_LADDERS:
        return tuple(name for name, _factor in _BROKER_LADDERS[field])
    return tuple(name for name, direct in _BROKER_DIRECT.items() if direct == field)


#: Every broker setting name LogConfig understands.
BROKER_NAMES: frozenset[str] = frozenset(_BROKER_DIRECT) | frozenset(
    name for ladder in _BROKER_LADDERS.values() for name, _ in ladder
)


def _boolean(raw: str) -> bool:
    lowered = raw.lower()
    if lowered not in ("true", "false"):
        raise ValueError(raw)
    return lowered == "true"


_boolean.__name__ = "true or false"

_KINDS: dict[str, Callable[[str], Any]] = {"int": int, "float": float, "str": str, "bool": _boolean}
_KAFKA_KINDS: dict[str, Callable[[str], Any]] = {
    "INT": int,
    "LONG": int,
    "DOUBLE": float,
    "BOOLEAN": _boolean,
    "STRING": str,
    "LIST": str,
}
_FIELD_TYPES: dict[str, Callable[[str], Any]] = {
    f.name: _KINDS[str(f.type)] for f in dataclasses.fields(LogConfig)
}


def _check(ok: bool, name: str) -> None:
    if not ok:
        raise ConfigError(f"invalid value for {name}")


def _parse(name: str, raw: str | int | float, kind: Callable[[str], Any]) -> Any:
    try:
        if kind is int and isinstance(raw, float):
            raise ValueError
        if kind is _boolean and isinstance(raw, bool):
            return raw
        return kind(str(raw).strip()) if isinstance(raw, str) else kind(raw)  # type: ignore[arg-type]
    except ValueError:
        raise ConfigError(f"invalid value {raw!r} for {name}: expected {kind.__name__}") from None


def _render(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # Kafka's spelling
    return str(value)
