"""The group coordinator's settings, by Kafka's broker config names.

Owns the defaults (Kafka's) and their validation; the broker maps its ``BrokerConfig`` onto
``GroupConfig`` when it builds a coordinator.
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.errors import ConfigError

_MAX_INT = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """Fields are the Kafka settings of the same name (dots → underscores)."""

    #: ``group.min.session.timeout.ms``: the smallest session timeout a member may ask for.
    group_min_session_timeout_ms: int = 6_000
    #: ``group.max.session.timeout.ms``: the largest.
    group_max_session_timeout_ms: int = 1_800_000
    #: ``group.max.size``: members beyond this are refused (GROUP_MAX_SIZE_REACHED).
    group_max_size: int = _MAX_INT
    #: ``group.initial.rebalance.delay.ms``: how long an Empty group waits for more members
    #: before its first generation (extended while members keep arriving, up to the
    #: rebalance timeout).
    group_initial_rebalance_delay_ms: int = 3_000
    #: ``offsets.retention.minutes``: how long the offsets of an Empty group are kept after it
    #: became Empty (of a group that only commits: after the commit).
    offsets_retention_minutes: int = 7 * 24 * 60
    #: ``offsets.retention.check.interval.ms``: how often expired offsets are looked for.
    offsets_retention_check_interval_ms: int = 600_000
    #: ``offset.metadata.max.bytes``: the longest metadata string a commit may carry.
    offset_metadata_max_bytes: int = 4_096
    #: ``group.consumer.session.timeout.ms``: a KIP-848 member without a heartbeat for this
    #: long is removed from its group.
    group_consumer_session_timeout_ms: int = 45_000
    #: ``group.consumer.heartbeat.interval.ms``: how often KIP-848 members are told to
    #: heartbeat.
    group_consumer_heartbeat_interval_ms: int = 5_000
    #: ``group.consumer.max.size``: KIP-848 members beyond this are refused.
    group_consumer_max_size: int = _MAX_INT
    #: ``group.consumer.assignors``: the server assignors members may name; the first is the
    #: default.
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")
    #: ``group.coordinator.rebalance.protocols``: "classic" (JoinGroup/SyncGroup, always
    #: listed, as Kafka 4 requires) and "consumer" (KIP-848's ConsumerGroupHeartbeat, served
    #: only when listed).
    group_coordinator_rebalance_protocols: tuple[str, ...] = ("classic", "consumer")

    def __post_init__(self) -> None:
        checks = (
            ("group.min.session.timeout.ms", self.group_min_session_timeout_ms, 0),
            ("group.max.session.timeout.ms", self.group_max_session_timeout_ms, 0),
            ("group.max.size", self.group_max_size, 1),
            ("group.initial.rebalance.delay.ms", self.group_initial_rebalance_delay_ms, 0),
            ("offsets.retention.minutes", self.offsets_retention_minutes, 1),
            ("offsets.retention.check.interval.ms", self.offsets_retention_check_interval_ms, 1),
            ("offset.metadata.max.bytes", self.offset_metadata_max_bytes, 0),
            ("group.consumer.session.timeout.ms", self.group_consumer_session_timeout_ms, 1),
            ("group.consumer.heartbeat.interval.ms", self.group_consumer_heartbeat_interval_ms, 1),
            ("group.consumer.max.size", self.group_consumer_max_size, 1),
        )
        for name, value, minimum in checks:
            if value < minimum:
                raise ConfigError(f"invalid value for {name}: {value} (at least {minimum})")
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ConfigError(
                "invalid value for group.consumer.heartbeat.interval.ms: must be below "
                "group.consumer.session.timeout.ms"
            )
        unknown = set(self.group_consumer_assignors) - {"uniform", "range"}
        if unknown or not self.group_consumer_assignors:
            raise ConfigError(
                f"invalid value for group.consumer.assignors: {sorted(unknown) or 'empty'} "
                "(odradek's server assignors are uniform and range)"
            )
        protocols = set(self.group_coordinator_rebalance_protocols)
        if "classic" not in protocols or protocols - {"classic", "consumer"}:
            raise ConfigError(
                "invalid value for group.coordinator.rebalance.protocols: "
                f"{','.join(self.group_coordinator_rebalance_protocols)} (classic, optionally "
                "with consumer)"
            )
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms:
            raise ConfigError(
                "invalid value for group.max.session.timeout.ms: below group.min.session.timeout.ms"
            )

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
