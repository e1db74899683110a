"""ConsumerGroupHeartbeat (KIP-848): a consumer group member joins, heartbeats, reconciles
and leaves through this one API; the coordinator answers its epoch and, when it changed, its
assignment (topic ids and partitions).

Versions: v0-v1 (v1: the client makes its member id, KIP-1082, and may subscribe with a
regular expression). The coordinator sees the cluster's topics as a ``TopicImage`` per name
(the ids Metadata answers, the partition counts this broker knows); topics without an id yet
(a cluster broker still reading it) are left out until the next heartbeat.
"""

from __future__ import annotations

from typing import Any

from odradek.broker.context import CLIENT_HOST, BrokerContext
from odradek.broker.group.consumer_group import TopicImage
from odradek.broker.group.consumer_results import ConsumerGroupHeartbeatResult
from odradek.broker.handlers._groups import optional, runtime
from odradek.broker.handlers._topic_metadata import ZERO_UUID, topic_id_of, topic_names
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response, request_value
from odradek.protocol.consumer_group_requests import consumer_group_heartbeat_body

API_KEY = ApiKey.CONSUMER_GROUP_HEARTBEAT


def topics_image(ctx: BrokerContext) -> dict[str, TopicImage]:
    """Every topic with an id and its partition count, as the coordinator sees them."""
    image = {}
    cluster = ctx.cluster
    for name in topic_names(ctx):
        topic_id = topic_id_of(ctx, name)
        if topic_id == ZERO_UUID:
            continue
        if cluster is not None:
            count = len(cluster.cache.partitions(name))
        else:
            count = ctx.topics.partition_count(name)
        if count > 0:
            image[name] = TopicImage(topic_id, count)
    return image


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = consumer_group_heartbeat_body(request)
    group_id = str(body.group_id)
    owned = None
    if body.topic_partitions is not None:
        owned = {
            entry.topic_id: frozenset(int(p) for p in entry.partitions)
            for entry in body.topic_partitions
            if entry.topic_id is not None
        }
    names = body.subscribed_topic_names
    groups = runtime(ctx) if ctx.groups is not None else None
    result: ConsumerGroupHeartbeatResult
    if groups is None:
        result = ConsumerGroupHeartbeatResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    else:
        topics = topics_image(ctx)
        try:
            result = await groups.run(
                group_id,
                lambda coordinator, now_ms: coordinator.consumer_group_heartbeat(
                    now_ms,
                    group_id=group_id,
                    member_id=str(body.member_id),
                    member_epoch=int(body.member_epoch),
                    topics=topics,
                    instance_id=body.instance_id,
                    rack_id=body.rack_id,
                    rebalance_timeout_ms=int(request_value(body.rebalance_timeout)),
                    subscribed_topic_names=None if names is None else [str(n) for n in names],
                    subscribed_topic_regex=optional(body, "subscribed_topic_regex"),
                    server_assignor=body.server_assignor,
                    owned=owned,
                    client_id=request.header.client_id or "",
                    client_host=CLIENT_HOST.get(),
                    member_id_from_client=request.api_version >= 1,
                ),
            )
        except KafkaError as error:
            result = ConsumerGroupHeartbeatResult(error.error_code, str(error))
    return build_response(API_KEY, request.api_version, _response(result))


def _response(result: ConsumerGroupHeartbeatResult) -> dict[str, Any]:
    assignment = None
    if result.assignment is not None:
        assignment = {
            "topic_partitions": [
                {"topic_id": topic_id, "partitions": sorted(partitions)}
                for topic_id, partitions in sorted(result.assignment.items())
                if partitions
            ]
        }
    return {
        "throttle_time": 0,
        "error_code": result.error_code,
        "error_message": result.error_message if result.error_code else None,
        "member_id": result.member_id,
        "member_epoch": result.member_epoch,
        "heartbeat_interval": result.heartbeat_interval_ms,
        "assignment": assignment,
    }
