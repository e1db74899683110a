"""Metadata: the brokers, the controller, and each requested topic's partitions.

A request for all topics (null list, or an empty list in v0) gets every topic. A missing
topic is created when ``auto.create.topics.enable`` is on and the request allows it (always
before v4, by ``allow_auto_topic_creation`` from v4); an illegal name answers
INVALID_TOPIC_EXCEPTION, a missing topic otherwise UNKNOWN_TOPIC_OR_PARTITION. The response is
encoded by the hand-written encoder (``protocol.metadata_response``: every client asks on each
new connection) at the versions it writes, by kio at any other.

In a cluster (``ctx.cluster``) everything comes from the metadata cache, the controller's view:
every live broker, the controller, each partition's leader, replicas, ISR and offline
replicas (a partition without a leader answers LEADER_NOT_AVAILABLE). A missing topic to
auto-create is requested from the controller and answers LEADER_NOT_AVAILABLE (retriable)
until the controller has created it on every broker.
"""

from __future__ import annotations

from odradek.broker.context import BrokerContext
from odradek.broker.ports import ClusterPort
from odradek.controller.assignment import validate_topic_name
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.metadata_response import (
    METADATA_RESPONSE_VERSIONS,
    MetadataBroker,
    MetadataPartition,
    MetadataTopic,
    encode_metadata_response,
)
from odradek.protocol.requests import metadata_allows_auto_create, metadata_body

API_KEY = ApiKey.METADATA


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | bytes:
    requested = metadata_body(request).topics
    all_topics = requested is None or (request.api_version == 0 and not requested)
    requested_names = [] if requested is None else [str(topic.name) for topic in requested]
    allow_create = metadata_allows_auto_create(request)
    cluster = ctx.cluster
    if cluster is None:
        names = ctx.topics.topic_names() if all_topics else requested_names
        topics = [_describe(ctx, name, allow_create) for name in names]
        brokers = [MetadataBroker(ctx.broker_id, ctx.host, ctx.port, None)]
        controller_id = ctx.broker_id
    else:
        names = cluster.cache.topic_names() if all_topics else requested_names
        topics = [_describe_in_cluster(ctx, cluster, name, allow_create) for name in names]
        brokers = [
            MetadataBroker(b.broker_id, b.host, b.port, b.rack) for b in cluster.cache.brokers()
        ]
        known = cluster.cache.controller_id
        controller_id = -1 if known is None else known
    if request.api_version in METADATA_RESPONSE_VERSIONS:
        return encode_metadata_response(
            request.api_version,
            request.correlation_id,
            brokers,
            ctx.cluster_id,
            controller_id,
            topics,
        )
    return build_response(  # a version the hand-written encoder does not write
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "brokers": [broker._asdict() for broker in brokers],
            "cluster_id": ctx.cluster_id,
            "controller_id": controller_id,
            "topics": [
                {**topic._asdict(), "partitions": [p._asdict() for p in topic.partitions]}
                for topic in topics
            ],
        },
    )


def _describe(ctx: BrokerContext, name: str, allow_create: bool) -> MetadataTopic:
    if not ctx.topics.exists(name):
        try:
            created = allow_create and ctx.topics.maybe_auto_create(name)
        except KafkaError as error:
            return MetadataTopic(error.error_code, name)
        if not created:
            return MetadataTopic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    partitions = [
        MetadataPartition(
            ErrorCode.NONE,
            info.partition,
            info.leader,
            info.leader_epoch,
            info.replicas,
            info.isr,
        )
        for info in ctx.topics.describe(name)
    ]
    return MetadataTopic(ErrorCode.NONE, name, ctx.topics.is_internal(name), partitions)


def _describe_in_cluster(
    ctx: BrokerContext, cluster: ClusterPort, name: str, allow_create: bool
) -> MetadataTopic:
    states = cluster.cache.partitions(name)
    if not states:
        return _missing(ctx, cluster, name, allow_create)
    partitions = [
        MetadataPartition(
            ErrorCode.NONE if state.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
            state.partition,
            state.leader,
            state.leader_epoch,
            state.replicas,
            state.isr,
            state.offline_replicas,
        )
        for state in states
    ]
    return MetadataTopic(ErrorCode.NONE, name, ctx.topics.is_internal(name), partitions)


def _missing(
    ctx: BrokerContext, cluster: ClusterPort, name: str, allow_create: bool
) -> MetadataTopic:
    if not allow_create or not ctx.config.auto_create_topics_enable or ctx.topics.is_internal(name):
        return MetadataTopic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    try:
        validate_topic_name(name)
    except KafkaError as error:
        return MetadataTopic(error.error_code, name)
    cluster.request_topic(name, -1, -1, {})
    return MetadataTopic(ErrorCode.LEADER_NOT_AVAILABLE, name)
