"""Helpers the admin API handlers share: an exception → (error code, message) mapping,
duplicate detection, Kafka's config resource and config type codes, and the wait for topic
changes that run off the event loop (``await_changes``) and the controller mutation quota.

Not a handler (no ``API_KEY``): the router never sees this module.

The rule it keeps: one item of an admin request (a topic, a resource) fails alone. Handlers
call ``error_of`` on whatever one item raised and put the code and message in that item's
result; an unexpected exception is logged and answered UNKNOWN_SERVER_ERROR, never passed on.
"""

from __future__ import annotations

import asyncio
import base64
import enum
import logging
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from odradek.controller.assignment import validate_topic_name
from odradek.errors import ConfigError, ErrorCode, KafkaError
from odradek.protocol import Request

if TYPE_CHECKING:
    from odradek.broker.context import BrokerContext

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
    "unclean.leader.election.enable": ConfigType.BOOLEAN,
    # Kafka's topic configs odradek accepts without effect:
    "compression.gzip.level": ConfigType.INT,
    "compression.lz4.level": ConfigType.INT,
    "compression.type": ConfigType.STRING,
    "compression.zstd.level": ConfigType.INT,
    "follower.replication.throttled.replicas": ConfigType.LIST,
    "leader.replication.throttled.replicas": ConfigType.LIST,
    "local.retention.bytes": ConfigType.LONG,
    "local.retention.ms": ConfigType.LONG,
    "message.downconversion.enable": ConfigType.BOOLEAN,
    "message.timestamp.after.max.ms": ConfigType.LONG,
    "message.timestamp.before.max.ms": ConfigType.LONG,
    "preallocate": ConfigType.BOOLEAN,
    "remote.log.copy.disable": ConfigType.BOOLEAN,
    "remote.log.delete.on.disable": ConfigType.BOOLEAN,
    "remote.storage.enable": ConfigType.BOOLEAN,
    "segment.jitter.ms": ConfigType.LONG,
}

#: DescribeConfigs' documentation of a Kafka topic config odradek accepts without effect.
TOPIC_NOT_IMPLEMENTED_DOC = (
    "A Kafka topic config that odradek accepts but does not implement: it has no effect."
)


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


def alter_each_resource(
    api_name: str,
    resources: Sequence[Any],
    alter_one: Callable[[int, str, Any], None],
) -> list[dict[str, Any]]:
    """The per-resource answers of AlterConfigs and IncrementalAlterConfigs: a resource given
    twice is INVALID_REQUEST (and not applied), every other one is ``alter_one(resource_type,
    name, resource)`` with its error mapped by ``error_of``."""
    keys = [(int(r.resource_type), str(r.resource_name)) for r in resources]
    repeated = duplicates(f"{kind}/{name}" for kind, name in keys)
    answers = []
    for resource, (resource_type, name) in zip(resources, keys, strict=True):
        code: int = ErrorCode.NONE
        message: str | None = None
        if f"{resource_type}/{name}" in repeated:
            code = ErrorCode.INVALID_REQUEST
            message = f"resource {name!r} of type {resource_type} appears more than once"
        else:
            try:
                alter_one(resource_type, name, resource)
            except Exception as error:
                code, message = error_of(error, what=f"{api_name} of {resource_type}/{name!r}")
        answers.append(
            {
                "error_code": code,
                "error_message": message,
                "resource_type": resource_type,
                "resource_name": name,
            }
        )
    return answers


def check_topic_resource(api_name: str, resource_type: int, name: str) -> None:
    """Refuses what AlterConfigs and IncrementalAlterConfigs do not change: broker resources
    (no dynamic broker configs yet), other resource types, illegal topic names.

    Raises:
        KafkaError: INVALID_REQUEST, INVALID_TOPIC_EXCEPTION.
    """
    if resource_type == ConfigResourceType.BROKER:
        raise KafkaError(
            "dynamic broker configs are not supported yet", code=ErrorCode.INVALID_REQUEST
        )
    if resource_type != ConfigResourceType.TOPIC:
        raise KafkaError(
            f"resource type {resource_type} is not supported by {api_name}",
            code=ErrorCode.INVALID_REQUEST,
        )
    validate_topic_name(name)


def topic_uuid(text: str | None) -> uuid.UUID:
    """A topic id as the metadata store keeps it (22 characters of URL-safe base64) as the
    UUID the wire carries; the zero UUID for a topic without one."""
    if text is None:
        return uuid.UUID(int=0)
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


async def await_changes(
    changes: Mapping[str, Awaitable[None]], timeout_ms: int
) -> dict[str, tuple[int, str | None]]:
    """Waits for the changes of a request (topic name → its work under way) up to the
    request's ``timeout_ms``, and returns each one's (error code, message): NONE, the error
    that undid it, or REQUEST_TIMED_OUT for one still under way (it goes on; a later Metadata
    shows it once done, as in Kafka)."""
    tasks = {name: asyncio.ensure_future(change) for name, change in changes.items()}
    if tasks:
        await asyncio.wait(tasks.values(), timeout=max(timeout_ms, 0) / 1000)
    outcomes: dict[str, tuple[int, str | None]] = {}
    for name, task in tasks.items():
        if not task.done():
            outcomes[name] = (
                int(ErrorCode.REQUEST_TIMED_OUT),
                f"not done within the request's timeout of {timeout_ms} ms; it goes on",
            )
        elif task.cancelled():
            outcomes[name] = (int(ErrorCode.REQUEST_TIMED_OUT), "cancelled: the broker stops")
        elif (error := task.exception()) is not None:
            outcomes[name] = error_of(error, what=f"topic {name!r}")  # type: ignore[arg-type]
        else:
            outcomes[name] = (int(ErrorCode.NONE), None)
    return outcomes


def quota_throttle_ms(ctx: BrokerContext, request: Request) -> int:
    """How long the request's client must wait before its next topic change
    (``controller.mutation.rate``, KIP-599); 0 when it may go on."""
    return ctx.topics.quota.throttle_time_ms(
        request.header.client_id or "", ctx.clock.monotonic_ms()
    )


def record_mutations(ctx: BrokerContext, request: Request, partitions: int) -> None:
    """Charges ``partitions`` created or deleted to the request's client."""
    ctx.topics.quota.record(request.header.client_id or "", partitions, ctx.clock.monotonic_ms())


def throttled_error(throttle_ms: int) -> tuple[int, str]:
    return (
        int(ErrorCode.THROTTLING_QUOTA_EXCEEDED),
        f"controller.mutation.rate exceeded; retry in {throttle_ms} ms",
    )
