"""Metadata (v0-v13): the brokers, the controller, and each requested topic's partitions.

A request for all topics (null list, or an empty list in v0) gets every topic. A missing
topic is created when ``auto.create.topics.enable`` is on and the request allows it (always
before v4, by ``allow_auto_topic_creation`` from v4); an illegal name answers
INVALID_TOPIC_EXCEPTION, a missing topic otherwise UNKNOWN_TOPIC_OR_PARTITION. The response is
encoded by the hand-written encoder (``protocol.metadata_response``: every client asks on each
new connection).

What each topic says (``handlers._topic_metadata``): leader epochs (v7+, KIP-320), offline
replicas (v5+: assigned replicas on brokers that are not live), topic ids (v10+, KIP-516; the
store's ``topic_id``, the zero UUID for a topic written without one) and, when asked (v8+),
the authorized operations: all of them, as there is no authorizer. From v10 a topic may be
asked by id (a null name): a known id answers with its name, an unknown one
UNKNOWN_TOPIC_ID (with a null name from v12; v10-v11 cannot carry a null name and answer an
empty one). Ids are looked up only for v10+.

In a cluster (``ctx.cluster``) everything comes from the metadata cache, the controller's view:
every live broker, the controller, each partition's leader, replicas, ISR and offline
replicas (a partition without a leader answers LEADER_NOT_AVAILABLE). A missing topic to
auto-create is requested from the controller and answers LEADER_NOT_AVAILABLE (retriable)
until the controller has created it on every broker.
"""

from __future__ import annotations

import functools
import uuid

from odradek.broker.auth.checks import TOPIC_DENIED, Op, create_allowed, topic_allowed
from odradek.broker.context import CLIENT_LISTENER, BrokerContext, advertised_endpoint
from odradek.broker.handlers._topic_metadata import (
    describe_topic,
    find_topic,
    topic_names,
    topic_operations,
)
from odradek.controller.assignment import validate_topic_name
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request
from odradek.protocol.metadata_response import (
    MetadataBroker,
    MetadataTopic,
    encode_metadata_response,
)
from odradek.protocol.requests import (
    metadata_allows_auto_create,
    metadata_body,
    metadata_topic_id,
    metadata_wants_topic_operations,
)

API_KEY = ApiKey.METADATA
#: The first version with topic ids; the first whose response may carry a null topic name.
TOPIC_ID_VERSION = 10
NULLABLE_NAME_VERSION = 12
#: From this version a partition whose leader lacks the client's listener answers
#: LISTENER_NOT_FOUND (LEADER_NOT_AVAILABLE before), as Kafka's brokers do.
LISTENER_NOT_FOUND_VERSION = 6


def handle(ctx: BrokerContext, request: Request) -> bytes:
    version = request.api_version
    requested = metadata_body(request).topics
    all_topics = requested is None or (version == 0 and not requested)
    allow_create = metadata_allows_auto_create(request)
    with_ids = version >= TOPIC_ID_VERSION
    operations = topic_operations(metadata_wants_topic_operations(request))
    describe = functools.partial(
        describe_topic,
        ctx,
        with_id=with_ids,
        operations=operations,
        listener_not_found=(
            ErrorCode.LISTENER_NOT_FOUND
            if version >= LISTENER_NOT_FOUND_VERSION
            else ErrorCode.LEADER_NOT_AVAILABLE
        ),
    )
    topics: list[MetadataTopic] = []
    if all_topics:
        for name in topic_names(ctx):
            if not topic_allowed(ctx, Op.DESCRIBE, name):
                continue  # hidden: the principal may not know it exists
            described = describe(name)
            if described is not None:
                topics.append(described)
    else:
        assert requested is not None
        for entry in requested:
            if entry.name is None:
                topics.append(_by_id(ctx, version, metadata_topic_id(entry), operations))
                continue
            name = str(entry.name)
            if not topic_allowed(ctx, Op.DESCRIBE, name):
                topics.append(MetadataTopic(TOPIC_DENIED, name))  # exists or not: not told
                continue
            described = describe(name)
            if described is None:
                described = _missing(ctx, name, allow_create, with_ids, operations)
            topics.append(described)
    cluster = ctx.cluster
    if cluster is None:
        brokers = [MetadataBroker(ctx.broker_id, *advertised_endpoint(ctx), None)]
        controller_id = ctx.broker_id
    else:
        brokers = [
            MetadataBroker(b.broker_id, b.host, b.port, b.rack)
            for b in cluster.cache.brokers(CLIENT_LISTENER.get())
        ]
        if not brokers:
            # Before the controller's first UpdateMetadata this broker knows only itself; an
            # empty broker list makes librdkafka's admin client give up on the response.
            brokers = [
                MetadataBroker(ctx.broker_id, *advertised_endpoint(ctx), ctx.config.broker_rack)
            ]
        known = cluster.cache.controller_id
        controller_id = -1 if known is None else known
    return encode_metadata_response(
        version, request.correlation_id, brokers, ctx.cluster_id, controller_id, topics
    )


def _by_id(
    ctx: BrokerContext, version: int, topic_id: uuid.UUID | None, operations: int
) -> MetadataTopic:
    name = None if topic_id is None else find_topic(ctx, topic_id)
    if name is not None and not topic_allowed(ctx, Op.DESCRIBE, name):
        name = None  # answered as an unknown id
    described = None
    if name is not None:
        described = describe_topic(ctx, name, with_id=True, operations=operations)
    if described is not None:
        return described
    return MetadataTopic(
        ErrorCode.UNKNOWN_TOPIC_ID,
        None if version >= NULLABLE_NAME_VERSION else "",
        topic_id=topic_id,
    )


def _missing(
    ctx: BrokerContext, name: str, allow_create: bool, with_ids: bool, operations: int
) -> MetadataTopic:
    """A topic this broker does not know: created when allowed (single broker), requested
    from the controller (cluster), else UNKNOWN_TOPIC_OR_PARTITION; TOPIC_AUTHORIZATION_FAILED
    when it would be created but the principal may not CREATE it."""
    if allow_create and ctx.config.auto_create_topics_enable and not create_allowed(ctx, name):
        return MetadataTopic(TOPIC_DENIED, name)
    cluster = ctx.cluster
    if cluster is None:
        try:
            created = allow_create and ctx.topics.maybe_auto_create(name)
        except KafkaError as error:
            return MetadataTopic(error.error_code, name)
        if created:
            described = describe_topic(ctx, name, with_id=with_ids, operations=operations)
            if described is not None:
                return described
        return MetadataTopic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    if not allow_create or not ctx.config.auto_create_topics_enable or ctx.topics.is_internal(name):
        return MetadataTopic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    try:
        validate_topic_name(name)
    except KafkaError as error:
        return MetadataTopic(error.error_code, name)
    cluster.request_topic(name, -1, -1, {})
    return MetadataTopic(ErrorCode.LEADER_NOT_AVAILABLE, name)
