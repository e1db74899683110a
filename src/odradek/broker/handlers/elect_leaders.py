"""ElectLeaders (KIP-460, v0-v1): preferred-replica (type 0) or unclean (type 1) leader
election on request, decided by the controller (``ClusterController.elect_leaders``); another
broker forwards the request to it. A null partition list means every partition.

On a single broker (no ``zookeeper.connect``) every partition's only replica leads it already:
ELECTION_NOT_NEEDED for an existing partition, UNKNOWN_TOPIC_OR_PARTITION otherwise.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

from odradek._types import TopicPartition
from odradek.broker.auth.checks import CLUSTER_DENIED, Op, cluster_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._cluster_admin import relay_unless_controller
from odradek.broker.ports import ClusterPort
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.ELECT_LEADERS
PREFERRED = 0


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    body: Any = request.body
    election_type = int(getattr(body, "election_type", PREFERRED))
    wanted = _partitions(body)
    if not cluster_allowed(ctx, Op.ALTER):  # Kafka: ALTER on the cluster
        return _response(request, {}, CLUSTER_DENIED)
    if ctx.cluster is None:
        results = {
            tp: (
                (ErrorCode.ELECTION_NOT_NEEDED, "a single broker leads every partition")
                if ctx.topics.exists(tp.topic)
                else (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {tp}")
            )
            for tp in wanted or []
        }
        return _response(request, results)
    return _in_cluster(ctx.cluster, request, election_type, wanted)


async def _in_cluster(
    cluster: ClusterPort,
    request: Request,
    election_type: int,
    wanted: list[TopicPartition] | None,
) -> ResponsePayload:
    relayed = await relay_unless_controller(
        cluster,
        request,
        lambda reason: _response(
            request,
            dict.fromkeys(wanted or [], (ErrorCode.NOT_CONTROLLER, reason)),
            ErrorCode.NOT_CONTROLLER,
        ),
    )
    if relayed is not None:
        return relayed
    controller = cluster.controller
    try:
        results = await cluster.run_on_controller(
            lambda: controller.elect_leaders(election_type, wanted)
        )
    except KafkaError as error:
        failed = {tp: (error.error_code, str(error)) for tp in wanted or []}
        return _response(request, failed, error.error_code)
    return _response(request, results)


def _partitions(body: Any) -> list[TopicPartition] | None:
    if body.topic_partitions is None:
        return None
    return [
        TopicPartition(str(topic.topic), int(partition))
        for topic in body.topic_partitions
        for partition in topic.partitions
    ]


def _response(
    request: Request,
    results: Mapping[TopicPartition, tuple[ErrorCode, str | None]],
    error_code: ErrorCode = ErrorCode.NONE,
) -> ResponsePayload:
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, (code, message) in results.items():
        topics.setdefault(tp.topic, []).append(
            {"partition_id": tp.partition, "error_code": code, "error_message": message}
        )
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": error_code,
            "replica_election_results": [
                {"topic": topic, "partition_result": partitions}
                for topic, partitions in topics.items()
            ],
        },
    )
