"""ListPartitionReassignments (KIP-455, v0): the reassignments in progress — each partition's
replica set with the replicas being added and removed — of the partitions asked for (null
topics: all), from the controller (``ClusterController.list_partition_reassignments``);
another broker forwards the request to it. Partitions not being reassigned, and unknown ones,
are left out, as Kafka does. A single broker never has one in progress: an empty answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

from odradek._types import TopicPartition
from odradek.broker.auth.checks import CLUSTER_DENIED, Op, cluster_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._cluster_admin import relay_unless_controller
from odradek.broker.ports import ClusterPort
from odradek.controller.reassignment import ReplicaAssignment
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.LIST_PARTITION_REASSIGNMENTS


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    if not cluster_allowed(ctx, Op.DESCRIBE):  # Kafka: DESCRIBE on the cluster
        return _response(request, {}, CLUSTER_DENIED, "DESCRIBE on the cluster is not allowed")
    if ctx.cluster is None:
        return _response(request, {})
    return _in_cluster(ctx.cluster, request, _partitions(request.body))


async def _in_cluster(
    cluster: ClusterPort, request: Request, wanted: list[TopicPartition] | None
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
        ongoing = await cluster.run_on_controller(
            lambda: controller.list_partition_reassignments(wanted)
        )
    except KafkaError as error:
        return _response(request, {}, error.error_code, str(error))
    return _response(request, ongoing)


def _partitions(body: Any) -> list[TopicPartition] | None:
    if body.topics is None:
        return None
    return [
        TopicPartition(str(topic.name), int(index))
        for topic in body.topics
        for index in topic.partition_indexes
    ]


def _response(
    request: Request,
    ongoing: Mapping[TopicPartition, ReplicaAssignment],
    error_code: ErrorCode = ErrorCode.NONE,
    error_message: str | None = None,
) -> ResponsePayload:
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, assignment in ongoing.items():
        topics.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "replicas": list(assignment.replicas),
                "adding_replicas": list(assignment.adding),
                "removing_replicas": list(assignment.removing),
            }
        )
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": error_code,
            "error_message": error_message,
            "topics": [{"name": topic, "partitions": parts} for topic, parts in topics.items()],
        },
    )
