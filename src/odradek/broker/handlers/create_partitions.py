"""CreatePartitions: grows each named topic to ``count`` partitions, each topic on its own.

A count not above the current one answers INVALID_PARTITIONS; a manual assignment must list
one replica set per new partition, of the topic's replication factor, on live brokers
(INVALID_REPLICA_ASSIGNMENT); a missing topic answers UNKNOWN_TOPIC_OR_PARTITION; a name given
twice INVALID_REQUEST. ``validate_only`` runs every check and adds nothing. The new partitions
are led by this broker as soon as the response is sent, so a producer can write to them once
its metadata shows them.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from odradek.broker.context import BrokerContext
from odradek.broker.handlers import _cluster_admin
from odradek.broker.handlers._admin import duplicates, error_of
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.CREATE_PARTITIONS


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    if ctx.cluster is not None:  # the controller decides (handlers/_cluster_admin.py)
        return _cluster_admin.run(ctx.cluster, request)
    body: Any = request.body  # a kio request of any supported version
    validate_only = bool(body.validate_only)
    repeated = duplicates(str(topic.name) for topic in body.topics)
    answered: set[str] = set()
    results = []
    for topic in body.topics:
        name = str(topic.name)
        if name in answered:
            continue
        answered.add(name)
        if name in repeated:
            message = f"topic {name!r} appears more than once in the request"
            results.append(_result(name, ErrorCode.INVALID_REQUEST, message))
            continue
        assignment = (
            None
            if topic.assignments is None
            else [[int(broker) for broker in entry.broker_ids] for entry in topic.assignments]
        )
        try:
            ctx.topics.create_partitions(
                name, int(topic.count), assignment=assignment, validate_only=validate_only
            )
        except Exception as error:
            code, message = error_of(error, what=f"CreatePartitions of topic {name!r}")
            results.append(_result(name, code, message))
            continue
        results.append(_result(name, ErrorCode.NONE, None))
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, "results": results})


def _result(name: str, code: int, message: str | None) -> dict[str, Any]:
    return {"name": name, "error_code": code, "error_message": message}
