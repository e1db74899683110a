"""The transaction coordinator's settings, by Kafka's names and with Kafka's defaults.

``TXN_SETTINGS`` lists them for ``broker.config`` (name, default, minimum: integers);
``TransactionConfig.from_settings`` reads them back from its parsed values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["TXN_SETTINGS", "TransactionConfig", "transaction_state_topic_configs"]

#: (name, default, minimum) of each setting.
TXN_SETTINGS: tuple[tuple[str, int, int], ...] = (
    ("transaction.max.timeout.ms", 900_000, 1),
    ("transaction.state.log.num.partitions", 50, 1),
    ("transaction.state.log.replication.factor", 3, 1),
    ("transaction.state.log.min.isr", 2, 1),
    ("transaction.state.log.segment.bytes", 104_857_600, 1),
    ("transactional.id.expiration.ms", 604_800_000, 1),
    ("transaction.abort.timed.out.transaction.cleanup.interval.ms", 10_000, 1),
    ("transaction.remove.expired.transaction.cleanup.interval.ms", 3_600_000, 1),
)


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    """``transaction.*`` settings (see Kafka's broker configuration reference)."""

    transaction_max_timeout_ms: int = 900_000
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_min_isr: int = 2
    transaction_state_log_segment_bytes: int = 104_857_600
    transactional_id_expiration_ms: int = 604_800_000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3_600_000

    @classmethod
    def from_settings(cls, get: Callable[[str], Any]) -> TransactionConfig:
        """Reads each setting with ``get(name)`` (the broker config's parsed values)."""
        return cls(**{name.replace(".", "_"): int(get(name)) for name, _, _ in TXN_SETTINGS})


def transaction_state_topic_configs(config: TransactionConfig, factor: int) -> dict[str, str]:
    """The topic configs ``__transaction_state`` is created with (Kafka's), for a
    replication factor of ``factor``."""
    return {
        "cleanup.policy": "compact",
        "segment.bytes": str(config.transaction_state_log_segment_bytes),
        "min.insync.replicas": str(min(config.transaction_state_log_min_isr, factor)),
    }
