"""DeleteTopics: deletes each named topic on its own, with its partitions' logs.

A missing topic answers UNKNOWN_TOPIC_OR_PARTITION, ``delete.topic.enable=false``
TOPIC_DELETION_DISABLED, a name given twice INVALID_REQUEST (and that name is not deleted).
v6 may name a topic by its id instead (KIP-516): an id no topic has answers UNKNOWN_TOPIC_ID.

A deleted topic leaves Metadata at once; its logs are renamed ``...-delete`` and its metadata
removed off the event loop (``TopicManager.start_delete``), and the response comes when that is
done or ``timeout`` passes (REQUEST_TIMED_OUT; the deletion goes on). A topic whose creation or
growth is under way is deleted once that is done. Deleted partitions count against the
client's ``controller.mutation.rate`` (KIP-599; refused with THROTTLING_QUOTA_EXCEEDED from
v5, told the throttle time before).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from typing import Any

from odradek.broker.auth.checks import Op, topic_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.handlers import _cluster_admin
from odradek.broker.handlers._admin import (
    await_changes,
    duplicates,
    error_of,
    quota_throttle_ms,
    record_mutations,
    throttled_error,
    topic_uuid,
)
from odradek.broker.handlers._topic_auth import authorize_topics
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response, has_field, request_value

API_KEY = ApiKey.DELETE_TOPICS
#: The first version that may answer THROTTLING_QUOTA_EXCEEDED (KIP-599).
QUOTA_ERROR_VERSION = 5

_ZERO_UUID = uuid.UUID(int=0)


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    # Kafka's check: DELETE on the topic (handlers/_topic_auth.py).
    return authorize_topics(
        ctx, request, lambda ctx, name: topic_allowed(ctx, Op.DELETE, name), _handle
    )


def _handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    if ctx.cluster is not None:  # the controller decides (handlers/_cluster_admin.py)
        return _cluster_admin.run(ctx.cluster, request)
    body: Any = request.body  # a kio request of any supported version
    if has_field(body, "topic_names"):  # v0-v5
        requested: list[tuple[str | None, uuid.UUID]] = [
            (str(name), _ZERO_UUID) for name in body.topic_names
        ]
    else:  # v6+: name or id
        requested = [
            (
                _name_of(ctx, topic.topic_id) if topic.name is None else str(topic.name),
                topic.topic_id or _ZERO_UUID,
            )
            for topic in body.topics
        ]
    repeated = duplicates(name for name, _ in requested if name is not None)
    throttle_ms = quota_throttle_ms(ctx, request)
    refuse = throttle_ms > 0 and request.api_version >= QUOTA_ERROR_VERSION
    answered: set[str] = set()
    entries: list[tuple[str | None, uuid.UUID]] = []
    outcomes: dict[str, tuple[int, str | None]] = {}
    changes: dict[str, Awaitable[None]] = {}
    for name, topic_id in requested:
        if name is None:
            entries.append((None, topic_id))
            continue
        if name in answered:
            continue
        answered.add(name)
        entries.append((name, topic_id))
        if name in repeated:
            message = f"topic {name!r} appears more than once in the request"
            outcomes[name] = (int(ErrorCode.INVALID_REQUEST), message)
        elif refuse:
            outcomes[name] = throttled_error(throttle_ms)
        elif ctx.topics.is_busy(name):
            changes[name] = ctx.topics.keep(_after_current(ctx, request, name))
        else:
            try:
                record_mutations(ctx, request, ctx.topics.partition_count(name))
                changes[name] = ctx.topics.start_delete(name)
            except Exception as error:
                outcomes[name] = error_of(error, what=f"DeleteTopics of topic {name!r}")
    timeout_ms = int(request_value(body.timeout))
    if not changes or timeout_ms <= 0:  # Kafka answers a timeout ≤ 0 at once
        outcomes.update(dict.fromkeys(changes, (int(ErrorCode.NONE), None)))
        return _response(request, entries, outcomes, throttle_ms)
    return _finish(request, entries, outcomes, changes, timeout_ms, throttle_ms)


async def _after_current(ctx: BrokerContext, request: Request, name: str) -> None:
    await ctx.topics.wait_idle(name)
    record_mutations(ctx, request, ctx.topics.partition_count(name))
    await ctx.topics.start_delete(name)


async def _finish(
    request: Request,
    entries: list[tuple[str | None, uuid.UUID]],
    outcomes: dict[str, tuple[int, str | None]],
    changes: dict[str, Awaitable[None]],
    timeout_ms: int,
    throttle_ms: int,
) -> ResponsePayload:
    outcomes.update(await await_changes(changes, timeout_ms))
    return _response(request, entries, outcomes, throttle_ms)


def _response(
    request: Request,
    entries: list[tuple[str | None, uuid.UUID]],
    outcomes: dict[str, tuple[int, str | None]],
    throttle_ms: int,
) -> ResponsePayload:
    responses = []
    for name, topic_id in entries:
        message: str | None
        if name is None:
            code, message = int(ErrorCode.UNKNOWN_TOPIC_ID), f"no topic has the id {topic_id}"
        else:
            code, message = outcomes[name]
        responses.append(_result(name, topic_id, code, message))
    return build_response(
        API_KEY, request.api_version, {"throttle_time": throttle_ms, "responses": responses}
    )


def _result(
    name: str | None, topic_id: uuid.UUID, code: int, message: str | None
) -> dict[str, Any]:
    return {"name": name, "topic_id": topic_id, "error_code": code, "error_message": message}


def _name_of(ctx: BrokerContext, topic_id: uuid.UUID | None) -> str | None:
    """The name of the topic with this id, or ``None``."""
    if topic_id is None or topic_id == _ZERO_UUID:
        return None
    for name in ctx.topics.topic_names():
        if topic_uuid(ctx.topics.metadata.topic_id(name)) == topic_id:
            return name
    return None
