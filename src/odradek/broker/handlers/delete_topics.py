"""DeleteTopics: deletes each named topic on its own, with its partitions' logs.

A missing topic answers UNKNOWN_TOPIC_OR_PARTITION, ``delete.topic.enable=false``
TOPIC_DELETION_DISABLED, a name given twice INVALID_REQUEST (and that name is not deleted).
v6 may name a topic by its id instead (KIP-516): an id no topic has answers UNKNOWN_TOPIC_ID.
Deletion is synchronous here: a partition's directory is renamed ``...-delete`` at once and
removed in the background, so ``timeout`` is not waited on.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from typing import Any

from odradek.broker.context import BrokerContext
from odradek.broker.handlers import _cluster_admin
from odradek.broker.handlers._admin import duplicates, error_of, topic_uuid
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response, has_field

API_KEY = ApiKey.DELETE_TOPICS

_ZERO_UUID = uuid.UUID(int=0)


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
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
    answered: set[str] = set()
    responses = []
    for name, topic_id in requested:
        if name is None:
            responses.append(
                _result(
                    None,
                    topic_id,
                    ErrorCode.UNKNOWN_TOPIC_ID,
                    f"no topic has the id {topic_id}",
                )
            )
            continue
        if name in answered:
            continue
        answered.add(name)
        if name in repeated:
            message = f"topic {name!r} appears more than once in the request"
            responses.append(_result(name, topic_id, ErrorCode.INVALID_REQUEST, message))
            continue
        try:
            ctx.topics.delete_topic(name)
        except Exception as error:
            code, message = error_of(error, what=f"DeleteTopics of topic {name!r}")
            responses.append(_result(name, topic_id, code, message))
            continue
        responses.append(_result(name, topic_id, ErrorCode.NONE, None))
    return build_response(
        API_KEY, request.api_version, {"throttle_time": 0, "responses": responses}
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
