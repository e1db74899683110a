"""The producer's configuration: its Kafka keys (registered with ``client.config``) and the
typed, validated ``ProducerSettings`` the pipeline reads.

This module owns the producer's keys and the cross-key rules. Defaults are the Java client's
(Kafka 4), with two documented departures:

- ``key.serializer`` / ``value.serializer`` default to ``bytes`` (Java has no default);
- ``enable.idempotence`` defaults to ``false`` and ``true`` is refused: there are no
  producer ids or sequence numbers yet, so retries with more than one request in flight can
  reorder (and a retry after a lost response can duplicate) records, as with Java's producer
  when idempotence is off. ``max.in.flight.requests.per.connection=1`` keeps per-partition order.

Cross-key rules, checked when the settings are built (``ConfigError`` naming the keys):
``delivery.timeout.ms >= linger.ms + request.timeout.ms`` (as Java checks);
``max.request.size`` and ``batch.size`` no larger than ``buffer.memory``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Final

from odradek.client.config import PRODUCER, ClientConfig, ConfigKey, register_keys
from odradek.errors import ConfigError
from odradek.records.batch import CompressionType

__all__ = ["ACKS_ALL", "MAX_IN_FLIGHT_FOR_IDEMPOTENCE", "PRODUCER_KEYS", "ProducerSettings"]

logger = logging.getLogger(__name__)

_MAX_INT32: Final = 2**31 - 1
#: ``acks`` as the wire carries it for ``all``.
ACKS_ALL: Final = -1
COMPRESSION_TYPES: Final = ("none", "gzip", "snappy", "lz4", "zstd")
#: The most requests in flight per connection an idempotent producer may have (the broker
#: keeps the last 5 batches of each producer to recognise retries).
MAX_IN_FLIGHT_FOR_IDEMPOTENCE: Final = 5

PRODUCER_KEYS: Final[tuple[ConfigKey, ...]] = (
    ConfigKey("acks", object, "all", "acknowledgements the leader waits for: 0, 1 or all (-1)"),
    ConfigKey("batch.size", int, 16_384, "largest batch of one partition, in bytes", 1),
    ConfigKey("linger.ms", int, 5, "wait this long for more records before sending", 0),
    ConfigKey("buffer.memory", int, 33_554_432, "bytes of records awaiting delivery", 1),
    ConfigKey("max.block.ms", int, 60_000, "longest send() blocks (buffer, metadata)", 0),
    ConfigKey("max.request.size", int, 1_048_576, "largest Produce request (and record), bytes", 1),
    ConfigKey(
        "compression.type",
        str,
        "none",
        "codec of record batches",
        choices=COMPRESSION_TYPES,
    ),
    ConfigKey("retries", int, _MAX_INT32, "resends of a batch after a retriable error", 0),
    ConfigKey(
        "delivery.timeout.ms", int, 120_000, "upper bound from send() to success or failure", 1
    ),
    ConfigKey("key.serializer", object, "bytes", "bytes, str, int32, int64, int, json or object"),
    ConfigKey("value.serializer", object, "bytes", "bytes, str, int32, int64, int, json or object"),
    ConfigKey("partitioner.class", object, None, "default, round_robin, a class or an object"),
    ConfigKey("interceptor.classes", object, (), "objects with on_send/on_acknowledgement/close"),
    ConfigKey("producer.type", str, "async", "sync: send() waits", choices=("sync", "async")),
    ConfigKey(
        "enable.idempotence", bool, True, "producer id and sequences: retries never duplicate"
    ),
    ConfigKey("transactional.id", object, None, "makes the producer transactional (KIP-98)"),
    ConfigKey("transaction.timeout.ms", int, 60_000, "the coordinator aborts after this", 1),
)
register_keys(PRODUCER, PRODUCER_KEYS)


def _parse_acks(value: Any) -> int:
    text = str(value).strip().lower()
    if text == "all":
        return ACKS_ALL
    if text in ("-1", "0", "1"):
        return int(text)
    raise ConfigError(f"acks: invalid value {value!r}, expected one of 0, 1, all, -1")


def _idempotence(config: ClientConfig, acks: int) -> tuple[bool, str | None]:
    """``enable.idempotence`` after the rules of the module docstring, and the settings that
    switched it off (None when it is on, or off as given).

    Raises:
        ConfigError: idempotence was asked for explicitly and a setting conflicts with it.
    """
    if not config.get_bool("enable.idempotence"):
        return False, None
    explicit = "enable.idempotence" in config.given
    conflicts: list[tuple[str, str]] = []
    if acks != ACKS_ALL:
        conflicts.append(("acks", f"acks={config['acks']}, not all"))
    if config.get_int("retries") == 0:
        conflicts.append(("retries", "retries=0"))
    in_flight = config.get_int("max.in.flight.requests.per.connection")
    if in_flight > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
        conflicts.append(
            (
                "max.in.flight.requests.per.connection",
                f"max.in.flight.requests.per.connection={in_flight}, more than "
                f"{MAX_IN_FLIGHT_FOR_IDEMPOTENCE}",
            )
        )
    if not conflicts:
        return True, None
    key, setting = conflicts[0]
    if explicit:
        raise ConfigError(
            f"{key}: enable.idempotence=true needs acks=all, retries > 0 and "
            f"max.in.flight.requests.per.connection <= {MAX_IN_FLIGHT_FOR_IDEMPOTENCE}; "
            f"got {setting}"
        )
    settings = ", ".join(setting for _, setting in conflicts)
    logger.info("idempotence is switched off because %s (enable.idempotence was not set)", settings)
    return False, settings


@dataclass(frozen=True, slots=True)
class ProducerSettings:
    """The producer's numeric settings, typed and checked (see the module docstring).

    Built once by ``from_config``; read from any thread.
    """

    acks: int
    batch_size: int
    linger_ms: int
    buffer_memory: int
    max_block_ms: int
    max_request_size: int
    compression: CompressionType
    retries: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    delivery_timeout_ms: int
    request_timeout_ms: int
    max_in_flight: int
    sync: bool
    client_id: str
    transactional: bool = False
    #: Batches carry a producer id, epoch and sequences (``enable.idempotence``).
    idempotent: bool = False

    @classmethod
    def from_config(cls, config: ClientConfig) -> ProducerSettings:
        """Raises: ConfigError: a cross-key rule is broken (see the module docstring)."""
        acks = _parse_acks(config["acks"])
        idempotent, conflict = _idempotence(config, acks)
        if config["transactional.id"] and not idempotent:
            raise ConfigError(
                "transactional.id needs acks=all, retries > 0, "
                f"max.in.flight.requests.per.connection <= {MAX_IN_FLIGHT_FOR_IDEMPOTENCE} and "
                f"enable.idempotence=true; got {conflict or 'enable.idempotence=false'}"
            )
        settings = cls(
            acks=acks,
            batch_size=config.get_int("batch.size"),
            linger_ms=config.get_int("linger.ms"),
            buffer_memory=config.get_int("buffer.memory"),
            max_block_ms=config.get_int("max.block.ms"),
            max_request_size=config.get_int("max.request.size"),
            compression=CompressionType[config.get_str("compression.type").upper()],
            retries=config.get_int("retries"),
            retry_backoff_ms=config.get_int("retry.backoff.ms"),
            retry_backoff_max_ms=config.get_int("retry.backoff.max.ms"),
            delivery_timeout_ms=config.get_int("delivery.timeout.ms"),
            request_timeout_ms=config.get_int("request.timeout.ms"),
            # A transactional producer keeps one request per partition in flight: its
            # sequences then reach the broker in order, retries included.
            max_in_flight=1
            if config["transactional.id"]
            else config.get_int("max.in.flight.requests.per.connection"),
            sync=config.get_str("producer.type") == "sync",
            client_id=config.get_str("client.id"),
            transactional=bool(config["transactional.id"]),
            idempotent=idempotent,
        )
        settings._check()
        return settings

    def _check(self) -> None:
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            raise ConfigError(
                f"delivery.timeout.ms ({self.delivery_timeout_ms}) must be at least linger.ms "
                f"+ request.timeout.ms ({self.linger_ms} + {self.request_timeout_ms})"
            )
        if self.max_request_size > self.buffer_memory:
            raise ConfigError(
                f"max.request.size ({self.max_request_size}) is larger than buffer.memory "
                f"({self.buffer_memory}): such a record could never be buffered"
            )
        if self.batch_size > self.buffer_memory:
            raise ConfigError(
                f"batch.size ({self.batch_size}) is larger than buffer.memory "
                f"({self.buffer_memory})"
            )
