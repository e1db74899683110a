"""ControlledShutdown (broker → controller): a broker about to stop asks the controller to
move its leaderships to other ISR members first; the answer lists the partitions it still
leads. Served by the controller only (NOT_CONTROLLER elsewhere, and outside a cluster)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from odradek.broker.auth.checks import CLUSTER_DENIED, Op, cluster_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.ports import ClusterPort
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.CONTROLLED_SHUTDOWN


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    body: Any = request.body
    cluster = ctx.cluster
    if not cluster_allowed(ctx, Op.CLUSTER_ACTION):  # Kafka: brokers only
        return build_response(
            API_KEY, request.api_version, {"error_code": CLUSTER_DENIED, "remaining_partitions": []}
        )
    if cluster is None or not cluster.is_controller:
        return build_response(
            API_KEY,
            request.api_version,
            {"error_code": ErrorCode.NOT_CONTROLLER, "remaining_partitions": []},
        )
    return _run(cluster, request, int(body.broker_id))


async def _run(cluster: ClusterPort, request: Request, broker_id: int) -> ResponsePayload:
    try:
        remaining = await cluster.run_on_controller(
            lambda: cluster.controller.controlled_shutdown(broker_id)
        )
    except KafkaError as error:
        fields: dict[str, Any] = {"error_code": error.error_code, "remaining_partitions": []}
    else:
        fields = {
            "error_code": ErrorCode.NONE,
            "remaining_partitions": [
                {"topic_name": tp.topic, "partition_index": tp.partition} for tp in remaining
            ],
        }
    return build_response(API_KEY, request.api_version, fields)
