"""Metadata: the brokers, the controller, and each requested topic's partitions.

A request for all topics (null list, or an empty list in v0) gets every topic. A missing
topic is created when ``auto.create.topics.enable`` is on and the request allows it (always
before v4, by ``allow_auto_topic_creation`` from v4); an illegal name answers
INVALID_TOPIC_EXCEPTION, a missing topic otherwise UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import Any

from odradek.broker.context import BrokerContext
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.requests import metadata_allows_auto_create, metadata_body

API_KEY = ApiKey.METADATA


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    requested = metadata_body(request).topics
    if requested is None or (request.api_version == 0 and not requested):
        names = ctx.topics.topic_names()
    else:
        names = [str(topic.name) for topic in requested]
    allow_create = metadata_allows_auto_create(request)
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
