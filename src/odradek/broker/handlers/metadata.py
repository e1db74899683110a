"""Metadata: the brokers, the controller, and each requested topic's partitions.

A request for all topics (null list, or an empty list in v0) gets every topic. A missing
topic is created when ``auto.create.topics.enable`` is on and the request allows it (always
before v4, by ``allow_auto_topic_creation`` from v4); an illegal name answers
INVALID_TOPIC_EXCEPTION, a missing topic otherwise UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import Any

from odradek.broker.cluster_member import ClusterMember
from odradek.broker.context import BrokerContext
from odradek.broker.topic_manager import INTERNAL_TOPICS
from odradek.controller.topics import validate_topic_name
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.METADATA


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body: Any = request.body  # a kio request of any supported version
    if ctx.cluster is not None:
        return _cluster_metadata(ctx.cluster, request, body)
    requested = body.topics
    if requested is None or (request.api_version == 0 and not requested):
        names = ctx.topics.topic_names()
    else:
        names = [str(topic.name) for topic in requested]
    allow_create = bool(getattr(body, "allow_auto_topic_creation", True))
    topics = [_describe(ctx, name, allow_create) for name in names]
    brokers = [{"node_id": ctx.broker_id, "host": ctx.host, "port": ctx.port, "rack": None}]
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "brokers": brokers,
            "cluster_id": ctx.cluster_id,
            "controller_id": ctx.broker_id,
            "topics": topics,
        },
    )


def _describe(ctx: BrokerContext, name: str, allow_create: bool) -> dict[str, Any]:
    if not ctx.topics.exists(name):
        try:
            created = allow_create and ctx.topics.maybe_auto_create(name)
        except KafkaError as error:
            return {"error_code": error.error_code, "name": name, "partitions": []}
        if not created:
            return {
                "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "name": name,
                "partitions": [],
            }
    partitions = [
        {
            "error_code": ErrorCode.NONE,
            "partition_index": info.partition,
            "leader_id": info.leader,
            "leader_epoch": info.leader_epoch,
            "replica_nodes": info.replicas,
            "isr_nodes": info.isr,
            "offline_replicas": [],
        }
        for info in ctx.topics.describe(name)
    ]
    return {
        "error_code": ErrorCode.NONE,
        "name": name,
        "is_internal": ctx.topics.is_internal(name),
        "partitions": partitions,
    }


def _cluster_metadata(cluster: ClusterMember, request: Request, body: Any) -> ResponsePayload:
    """Metadata in a cluster, from the controller's view (the metadata cache): every live
    broker, the controller, each partition's leader, replicas and ISR. A topic being
    auto-created answers LEADER_NOT_AVAILABLE (retriable) until the controller created it."""
    cache = cluster.cache
    requested = body.topics
    if requested is None or (request.api_version == 0 and not requested):
        names = cache.topic_names()
    else:
        names = [str(topic.name) for topic in requested]
    allow_create = bool(getattr(body, "allow_auto_topic_creation", True))
    topics = []
    for name in names:
        partitions = cache.partitions(name)
        if not partitions:
            topics.append(_missing(cluster, name, allow_create))
            continue
        topics.append(
            {
                "error_code": ErrorCode.NONE,
                "name": name,
                "is_internal": name in INTERNAL_TOPICS,
                "partitions": [
                    {
                        "error_code": ErrorCode.NONE
                        if state.leader >= 0
                        else ErrorCode.LEADER_NOT_AVAILABLE,
                        "partition_index": state.partition,
                        "leader_id": state.leader,
                        "leader_epoch": state.leader_epoch,
                        "replica_nodes": state.replicas,
                        "isr_nodes": state.isr,
                        "offline_replicas": state.offline_replicas,
                    }
                    for state in partitions
                ],
            }
        )
    brokers = [
        {"node_id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack}
        for b in cache.brokers()
    ]
    controller_id = cache.controller_id if cache.controller_id is not None else -1
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "brokers": brokers,
            "cluster_id": cluster.cluster_id,
            "controller_id": controller_id,
            "topics": topics,
        },
    )


def _missing(cluster: ClusterMember, name: str, allow_create: bool) -> dict[str, Any]:
    config = cluster.topics.config
    if not allow_create or not config.auto_create_topics_enable or name in INTERNAL_TOPICS:
        return {"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": name, "partitions": []}
    try:
        validate_topic_name(name)
    except KafkaError as error:
        return {"error_code": error.error_code, "name": name, "partitions": []}
    cluster.request_topic(name, -1, -1, {})
    return {"error_code": ErrorCode.LEADER_NOT_AVAILABLE, "name": name, "partitions": []}
