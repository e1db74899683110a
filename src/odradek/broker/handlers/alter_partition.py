"""AlterPartition v1 (leader → controller): a partition leader's ISR change, decided by the
controller (``ClusterController.alter_partition``: current leader epoch and partition epoch
only, written compare-and-set). Another broker forwards the request to the controller and
relays its answer; one that cannot reach it answers NOT_CONTROLLER (the leader retries). A
broker outside a cluster has no controller: NOT_CONTROLLER."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from odradek._types import TopicPartition
from odradek.broker.auth.checks import CLUSTER_DENIED, Op, cluster_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._cluster_admin import relay_unless_controller
from odradek.broker.ports import ClusterPort
from odradek.controller.cluster import IsrUpdate, IsrUpdateResult
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.ALTER_PARTITION


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    if not cluster_allowed(ctx, Op.CLUSTER_ACTION):  # Kafka: brokers only
        return _failed(request, CLUSTER_DENIED)
    if ctx.cluster is None:
        return _failed(request, ErrorCode.NOT_CONTROLLER)
    return _in_cluster(ctx.cluster, request)


async def _in_cluster(cluster: ClusterPort, request: Request) -> ResponsePayload:
    body: Any = request.body
    relayed = await relay_unless_controller(
        cluster, request, lambda _: _failed(request, ErrorCode.NOT_CONTROLLER)
    )
    if relayed is not None:
        return relayed
    updates = [
        IsrUpdate(
            TopicPartition(str(topic.topic_name), int(partition.partition_index)),
            int(partition.leader_epoch),
            tuple(int(replica) for replica in partition.new_isr),
            int(partition.partition_epoch),
        )
        for topic in body.topics
        for partition in topic.partitions
    ]
    controller = cluster.controller
    broker_id = int(body.broker_id)
    try:
        results = await cluster.run_on_controller(
            lambda: controller.alter_partition(broker_id, updates)
        )
    except KafkaError as error:
        return _failed(request, error.error_code)
    return _response(request, results)


def _failed(request: Request, code: ErrorCode) -> ResponsePayload:
    return build_response(
        API_KEY, request.api_version, {"throttle_time": 0, "error_code": code, "topics": []}
    )


def _response(request: Request, results: list[IsrUpdateResult]) -> ResponsePayload:
    topics: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        topics.setdefault(result.topic_partition.topic, []).append(
            {
                "partition_index": result.topic_partition.partition,
                "error_code": result.error_code,
                "leader_id": result.leader,
                "leader_epoch": result.leader_epoch,
                "isr": list(result.isr),
                "leader_recovery_state": 0,
                "partition_epoch": result.partition_epoch,
            }
        )
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": ErrorCode.NONE,
            "topics": [
                {"topic_name": name, "partitions": partitions}
                for name, partitions in topics.items()
            ],
        },
    )
