"""StopReplica (controller → broker): partitions this broker stops serving (their logs
deleted with ``delete_partitions``, for a topic deletion); applied by
``ClusterMember.stop_replica`` (controller epoch fencing there). Without a cluster:
NOT_CONTROLLER."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from odradek.broker.auth.checks import CLUSTER_DENIED, Op, cluster_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.ports import ClusterPort
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.STOP_REPLICA


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    body: Any = request.body
    if not cluster_allowed(ctx, Op.CLUSTER_ACTION):  # Kafka: brokers only
        fields: dict[str, Any] = {"error_code": CLUSTER_DENIED, "partition_errors": []}
    elif ctx.cluster is None:
        fields = {"error_code": ErrorCode.NOT_CONTROLLER, "partition_errors": []}
    else:
        return _apply(ctx.cluster, request, body)
    return build_response(API_KEY, request.api_version, fields)


async def _apply(cluster: ClusterPort, request: Request, body: Any) -> ResponsePayload:
    # Awaited: the logs of new partitions are made off the event loop first.
    fields = await cluster.stop_replica(body)
    return build_response(API_KEY, request.api_version, fields)
