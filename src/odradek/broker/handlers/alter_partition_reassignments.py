"""AlterPartitionReassignments (KIP-455, v0-v1): starts, re-targets or (null replicas) cancels
partition reassignments, decided by the controller
(``ClusterController.alter_partition_reassignments``); another broker forwards the request to
it. v1's ``allow_replication_factor_change`` false (KIP-860) refuses targets of another size.

On a single broker (no ``zookeeper.connect``) there is nowhere to move a replica: a target of
this broker alone is already the assignment (NONE), any other target is
INVALID_REPLICA_ASSIGNMENT, a cancel NO_REASSIGNMENT_IN_PROGRESS, an unknown partition
UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

from odradek._types import TopicPartition
from odradek.broker.auth.checks import CLUSTER_DENIED, Op, cluster_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._cluster_admin import relay_unless_controller
from odradek.broker.ports import ClusterPort
from odradek.errors import ErrorCode, NotControllerError, OdradekError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.ALTER_PARTITION_REASSIGNMENTS

Results = Mapping[TopicPartition, tuple[ErrorCode, str | None]]


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    body: Any = request.body
    targets = _targets(body)
    if not cluster_allowed(ctx, Op.ALTER):  # Kafka: ALTER on the cluster
        return _response(request, {}, CLUSTER_DENIED, "ALTER on the cluster is not allowed")
    if ctx.cluster is None:
        return _response(request, {tp: _single_broker(ctx, tp, t) for tp, t in targets.items()})
    allow = bool(getattr(body, "allow_replication_factor_change", True))
    return _in_cluster(ctx.cluster, request, targets, allow)


def _single_broker(
    ctx: BrokerContext, tp: TopicPartition, target: tuple[int, ...] | None
) -> tuple[ErrorCode, str | None]:
    if not ctx.topics.exists(tp.topic) or not any(
        p.partition == tp.partition for p in ctx.topics.describe(tp.topic)
    ):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {tp}"
    if target is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "no reassignment is in progress"
    if target == (ctx.broker_id,):
        return ErrorCode.NONE, None
    return (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        f"a single broker ({ctx.broker_id}) can hold no other replicas than its own",
    )


async def _in_cluster(
    cluster: ClusterPort,
    request: Request,
    targets: dict[TopicPartition, tuple[int, ...] | None],
    allow_replication_factor_change: bool,
) -> ResponsePayload:
    relayed = await relay_unless_controller(
        cluster,
        request,
        lambda reason: _response(request, {}, ErrorCode.NOT_CONTROLLER, reason),
    )
    if relayed is not None:
        return relayed
    controller = cluster.controller
    try:
        results = await cluster.run_on_controller(
            lambda: controller.alter_partition_reassignments(
                targets, allow_replication_factor_change=allow_replication_factor_change
            )
        )
    except NotControllerError as error:
        return _response(request, {}, ErrorCode.NOT_CONTROLLER, str(error))
    except OdradekError as error:
        code = getattr(error, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR)
        return _response(request, {tp: (code, str(error)) for tp in targets})
    return _response(request, results)


def _targets(body: Any) -> dict[TopicPartition, tuple[int, ...] | None]:
    return {
        TopicPartition(str(topic.name), int(partition.partition_index)): (
            None if partition.replicas is None else tuple(int(r) for r in partition.replicas)
        )
        for topic in body.topics
        for partition in topic.partitions
    }


def _response(
    request: Request,
    results: Results,
    error_code: ErrorCode = ErrorCode.NONE,
    error_message: str | None = None,
) -> ResponsePayload:
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, (code, message) in results.items():
        topics.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "error_code": code, "error_message": message}
        )
    body: Any = request.body
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "allow_replication_factor_change": bool(
                getattr(body, "allow_replication_factor_change", True)
            ),
            "error_code": error_code,
            "error_message": error_message,
            "responses": [
                {"name": topic, "partitions": partitions} for topic, partitions in topics.items()
            ],
        },
    )
