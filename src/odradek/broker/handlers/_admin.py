"""Helpers the admin API handlers share: an exception → (error code, message) mapping,
duplicate detection, and Kafka's config resource and config type codes.

Not a handler (no ``API_KEY``): the router never sees this module.

The rule it keeps: one item of an admin request (a topic, a resource) fails alone. Handlers
call ``error_of`` on whatever one item raised and put the code and message in that item's
result; an unexpected exception is logged and answered UNKNOWN_SERVER_ERROR, never passed on.
"""

from __future__ import annotations

import base64
import enum
import logging
import uuid
from collections import Counter
from collections.abc import Iterable

from odradek.errors import ConfigError, ErrorCode, KafkaError

logger = logging.getLogger(__name__)


class ConfigResourceType(enum.IntEnum):
    """Kafka's ``ConfigResource.Type`` codes (DescribeConfigs, IncrementalAlterConfigs)."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSource(enum.IntEnum):
    """Kafka's ``DescribeConfigsResponse.ConfigSource`` codes (DescribeConfigs v1+)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class ConfigType(enum.IntEnum):
    """Kafka's ``DescribeConfigsResponse.ConfigType`` codes (DescribeConfigs v3+)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


#: The type of each topic config, as Kafka's ``LogConfig`` declares it.
TOPIC_CONFIG_TYPES: dict[str, ConfigType] = {
    "segment.bytes": ConfigType.INT,
    "segment.ms": ConfigType.LONG,
    "segment.index.bytes": ConfigType.INT,
    "index.interval.bytes": ConfigType.INT,
    "flush.messages": ConfigType.LONG,
    "flush.ms": ConfigType.LONG,
    "retention.ms": ConfigType.LONG,
    "retention.bytes": ConfigType.LONG,
    "file.delete.delay.ms": ConfigType.LONG,
    "max.message.bytes": ConfigType.INT,
    "message.timestamp.type": ConfigType.STRING,
    "cleanup.policy": ConfigType.LIST,
    "delete.retention.ms": ConfigType.LONG,
    "min.cleanable.dirty.ratio": ConfigType.DOUBLE,
    "min.compaction.lag.ms": ConfigType.LONG,
    "max.compaction.lag.ms": ConfigType.LONG,
    "min.insync.replicas": ConfigType.INT,
}


def error_of(error: Exception, *, what: str) -> tuple[int, str]:
    """The error code and message that answer ``error``, raised while handling ``what``
    (e.g. ``"topic 'a'"``, for the log line of an unexpected exception).

    ``KafkaError`` keeps its code; ``ConfigError`` is INVALID_CONFIG; anything else is logged
    with its traceback and answered UNKNOWN_SERVER_ERROR.
    """
    if isinstance(error, KafkaError):
        return int(error.error_code), str(error)
    if isinstance(error, ConfigError):
        return int(ErrorCode.INVALID_CONFIG), str(error)
    logger.exception("unexpected error handling %s", what, exc_info=error)
    return int(ErrorCode.UNKNOWN_SERVER_ERROR), f"unexpected error: {type(error).__name__}"


def duplicates(names: Iterable[str]) -> set[str]:
    """The names that appear more than once (Kafka answers them INVALID_REQUEST)."""
    return {name for name, count in Counter(names).items() if count > 1}


def topic_uuid(text: str | None) -> uuid.UUID:
    """A topic id as the metadata store keeps it (22 characters of URL-safe base64) as the
    UUID the wire carries; the zero UUID for a topic without one."""
    if text is None:
        return uuid.UUID(int=0)
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
