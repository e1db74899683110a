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

    def __post_init__(self) -> None:
        checks = (
            ("group.min.session.timeout.ms", self.group_min_session_timeout_ms, 0),
            ("group.max.session.timeout.ms", self.group_max_session_timeout_ms, 0),
            ("group.max.size", self.group_max_size, 1),
            ("group.initial.rebalance.delay.ms", self.group_initial_rebalance_delay_ms, 0),
            ("offsets.retention.minutes", self.offsets_retention_minutes, 1),
            ("offsets.retention.check.interval.ms", self.offsets_retention_check_interval_ms, 1),
            ("offset.metadata.max.bytes", self.offset_metadata_max_bytes, 0),
        )
        for name, value, minimum in checks:
            if value < minimum:
                raise ConfigError(f"invalid value for {name}: {value} (at least {minimum})")
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms:
            raise ConfigError(
                "invalid value for group.max.session.timeout.ms: below group.min.session.timeout.ms"
            )

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
