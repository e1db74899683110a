"""FindCoordinator: the broker that coordinates a group (key type 0) — this one, when it leads
the group's ``__consumer_offsets`` partition, creating that topic on first need.

Transaction coordinators (key type 1): the leader of the id's ``__transaction_state``
partition, the same way. Like Kafka, the answer does not wait for the partition to load: the
group and transaction requests say COORDINATOR_LOAD_IN_PROGRESS. Each key needs DESCRIBE on its
group or transactional id (GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

Versions: v0-v3 name one ``key`` and answer at the top of the response; v4+ (KIP-699) name a
batch of ``coordinator_keys`` and answer one ``coordinators`` entry per key, in request order,
each with its own error.

(Served even without a coordinator: librdkafka enables LZ4 only when FindCoordinator appears
in ApiVersions.)
"""

from __future__ import annotations

from typing import Any, NamedTuple

from odradek.broker.auth.acls import ResourceType
from odradek.broker.auth.checks import GROUP_DENIED, Op, allowed, group_allowed
from odradek.broker.context import CLIENT_LISTENER, BrokerContext, advertised_endpoint
from odradek.broker.ports import ClusterPort
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response, has_field
from odradek.protocol.group_requests import find_coordinator_body

API_KEY = ApiKey.FIND_COORDINATOR
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


class _Found(NamedTuple):
    error_code: ErrorCode
    error_message: str | None
    node_id: int = -1
    host: str = ""
    port: int = -1


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body: Any = find_coordinator_body(request)
    key_type = int(getattr(body, "key_type", GROUP_KEY_TYPE))
    if has_field(body, "coordinator_keys"):  # v4+: a batch
        coordinators = [
            {"key": str(key), **_find(ctx, str(key), key_type)._asdict()}
            for key in body.coordinator_keys
        ]
        return build_response(
            API_KEY, request.api_version, {"throttle_time": 0, "coordinators": coordinators}
        )
    found = _find(ctx, str(body.key), key_type)
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, **found._asdict()})


def _find(ctx: BrokerContext, key: str, key_type: int) -> _Found:
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return _Found(ErrorCode.INVALID_REQUEST, f"unknown key type {key_type}")
    denied = _denied(ctx, key, key_type)
    if denied is not None:
        return _Found(denied, f"DESCRIBE on {key!r} is not allowed")
    if ctx.cluster is not None:
        return _in_cluster(ctx.cluster, key, key_type)
    if key_type == TRANSACTION_KEY_TYPE:
        txns = ctx.transactions
        if txns is None or not txns.ensure_topic():
            return _Found(
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                "the transaction coordinator is not available",
            )
        if not txns.is_coordinator_for(key):
            return _Found(
                ErrorCode.NOT_COORDINATOR, "another broker coordinates this transactional id"
            )
        return _Found(ErrorCode.NONE, None, ctx.broker_id, *advertised_endpoint(ctx))
    groups = ctx.groups
    if groups is None or not groups.ensure_offsets_topic():
        return _Found(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group coordinator is not available")
    if not groups.is_coordinator_for(key):
        return _Found(ErrorCode.NOT_COORDINATOR, "another broker coordinates this group")
    return _Found(ErrorCode.NONE, None, ctx.broker_id, *advertised_endpoint(ctx))


def _denied(ctx: BrokerContext, key: str, key_type: int) -> ErrorCode | None:
    """DESCRIBE on the group (or transactional id) the key names, as Kafka checks."""
    if key_type == GROUP_KEY_TYPE:
        return None if group_allowed(ctx, Op.DESCRIBE, key) else GROUP_DENIED
    if not allowed(ctx, Op.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return None


def _in_cluster(cluster: ClusterPort, key: str, key_type: int) -> _Found:
    """The leader of the key's ``__consumer_offsets`` (or ``__transaction_state``)
    partition, from the metadata cache; COORDINATOR_NOT_AVAILABLE while the topic is being
    created or the partition has no leader (the topic is requested from the controller on
    first need)."""
    leader = (
        cluster.coordinator_for(key)
        if key_type == GROUP_KEY_TYPE
        else cluster.transaction_coordinator_for(key)
    )
    if leader is not None:  # at its endpoint on the client's listener (Kafka: none, none)
        leader = cluster.cache.broker(leader.broker_id, CLIENT_LISTENER.get())
    if leader is None:
        return _Found(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the coordinator is not available yet")
    return _Found(ErrorCode.NONE, None, leader.broker_id, leader.host, leader.port)
