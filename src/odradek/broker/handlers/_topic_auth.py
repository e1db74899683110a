"""Authorization of the topic admin requests (CreateTopics, DeleteTopics, CreatePartitions),
per topic, in front of their handlers.

As Kafka's brokers do in ZooKeeper mode, the broker that receives the request authorizes it
and hands on only the topics the principal may change (to its own handler, which may run them
or forward them to the controller); each refused topic is answered
TOPIC_AUTHORIZATION_FAILED in the response, in the request's order. With no authorizer, or
nothing refused, the handler gets the request untouched.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from odradek.broker.auth.checks import TOPIC_DENIED
from odradek.broker.context import BrokerContext
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.client_codec import entity_fields

_Result = ResponsePayload | Awaitable[ResponsePayload]
_Handler = Callable[[BrokerContext, Request], _Result]

#: The response's list of per-topic results, by API.
_RESULTS = {
    ApiKey.CREATE_TOPICS: "topics",
    ApiKey.DELETE_TOPICS: "responses",
    ApiKey.CREATE_PARTITIONS: "results",
}


def authorize_topics(
    ctx: BrokerContext,
    request: Request,
    may: Callable[[BrokerContext, str], bool],
    handler: _Handler,
) -> _Result:
    """Runs ``handler`` on the topics ``may(ctx, name)`` allows; answers the rest refused."""
    if ctx.authorizer is None:
        return handler(ctx, request)
    body: Any = request.body
    field = "topic_names" if hasattr(body, "topic_names") else "topics"
    entries = tuple(getattr(body, field))
    denied = [name for name in dict.fromkeys(map(_name, entries)) if not may(ctx, name)]
    if not denied:
        return handler(ctx, request)
    kept = tuple(entry for entry in entries if _name(entry) not in denied)
    narrowed = request._replace(body=dataclasses.replace(body, **{field: kept}))
    result = handler(ctx, narrowed)
    if inspect.isawaitable(result):
        return _merged_later(request, result, denied)
    return _merged(request, result, denied)


async def _merged_later(
    request: Request, pending: Awaitable[ResponsePayload], denied: list[str]
) -> ResponsePayload:
    return _merged(request, await pending, denied)


def _merged(request: Request, response: ResponsePayload, denied: list[str]) -> ResponsePayload:
    fields = entity_fields(response)
    key = _RESULTS[request.api_key]
    refused = {
        name: {
            "name": name,
            "error_code": int(TOPIC_DENIED),
            "error_message": f"not authorized to change topic {name!r}",
        }
        for name in denied
    }
    if request.api_key is ApiKey.CREATE_TOPICS:
        for result in refused.values():
            result.update(num_partitions=-1, replication_factor=-1, configs=None)
    answered = {result["name"]: result for result in fields[key]}
    body: Any = request.body
    entries = getattr(body, "topic_names", None) or body.topics
    order = list(dict.fromkeys(map(_name, entries)))
    fields[key] = [
        answered.get(name) or refused[name] for name in order if name in answered or name in refused
    ]
    return build_response(request.api_key, request.api_version, fields)


def _name(entry: Any) -> str:
    return str(entry if isinstance(entry, str) else entry.name)
