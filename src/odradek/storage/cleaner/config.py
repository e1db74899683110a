"""Broker-level settings of the log cleaner (Kafka's ``log.cleaner.*`` names).

Per-topic settings (``cleanup.policy``, ``delete.retention.ms``, ``min.cleanable.dirty.ratio``,
``min.compaction.lag.ms``, ``max.compaction.lag.ms``, ``segment.bytes``) live in
``storage.config.LogConfig``; this value holds what is shared by every log of a broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from odradek.errors import ConfigError

_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """What the cleaner threads obey.

    Attributes:
        enable: ``log.cleaner.enable``: start the cleaner threads. ``LogCleaner.clean_once``
            works either way (tests drive the cleaner by hand with ``enable=False``).
        threads: ``log.cleaner.threads``: threads cleaning different logs at once.
        dedupe_buffer_size: ``log.cleaner.dedupe.buffer.size``: the memory, shared by all
            threads, that bounds the offset maps (see ``OffsetMap``).
        io_buffer_load_factor: ``log.cleaner.io.buffer.load.factor``: how full an offset map
            may get.
        io_buffer_size: ``log.cleaner.io.buffer.size``: bytes read and written per I/O.
        backoff_ms: ``log.cleaner.backoff.ms``: the pause when no log needs cleaning.
    """

    enable: bool = True
    threads: int = 1
    dedupe_buffer_size: int = 128 * _MIB
    io_buffer_load_factor: float = 0.9
    io_buffer_size: int = _MIB // 2
    backoff_ms: int = 15_000

    def __post_init__(self) -> None:
        _check(self.threads >= 1, "log.cleaner.threads")
        _check(self.dedupe_buffer_size >= 1024 * self.threads, "log.cleaner.dedupe.buffer.size")
        _check(0.0 < self.io_buffer_load_factor <= 1.0, "log.cleaner.io.buffer.load.factor")
        _check(self.io_buffer_size >= 4096, "log.cleaner.io.buffer.size")
        _check(self.backoff_ms >= 1, "log.cleaner.backoff.ms")

    @property
    def dedupe_buffer_per_thread(self) -> int:
        return self.dedupe_buffer_size // self.threads

    @classmethod
    def from_broker_settings(cls, settings: Mapping[str, str | int | float]) -> CleanerConfig:
        """Builds the config from broker settings; other names are ignored.

        Raises:
            ConfigError: a value of the wrong type or range (the message names the setting).
        """
        changes: dict[str, Any] = {}
        for name, (field, kind) in BROKER_NAMES.items():
            if name not in settings:
                continue
            raw = settings[name]
            try:
                if kind is bool:
                    text = str(raw).strip().lower()
                    if text not in ("true", "false"):
                        raise ValueError(text)
                    changes[field] = text == "true"
                else:
                    changes[field] = kind(str(raw).strip())
            except ValueError:
                raise ConfigError(f"invalid value {raw!r} for {name}") from None
        return cls(**changes)


#: Broker setting → (field, type).
BROKER_NAMES: dict[str, tuple[str, type]] = {
    "log.cleaner.enable": ("enable", bool),
    "log.cleaner.threads": ("threads", int),
    "log.cleaner.dedupe.buffer.size": ("dedupe_buffer_size", int),
    "log.cleaner.io.buffer.load.factor": ("io_buffer_load_factor", float),
    "log.cleaner.io.buffer.size": ("io_buffer_size", int),
    "log.cleaner.backoff.ms": ("backoff_ms", int),
}


def _check(ok: bool, name: str) -> None:
    if not ok:
        raise ConfigError(f"invalid value for {name}")
