"""FindCoordinator: the broker that coordinates a group (key type 0) — this one, when it leads
the group's ``__consumer_offsets`` partition, creating that topic on first need.

Transaction coordinators (key type 1): the leader of the id's ``__transaction_state``
partition, the same way. Like Kafka, the answer does not wait for the partition to load: the
group and transaction requests say COORDINATOR_LOAD_IN_PROGRESS.

(Served even without a coordinator: librdkafka enables LZ4 only when FindCoordinator appears
in ApiVersions.)
"""

from __future__ import annotations

from typing import Any

from odradek.broker.auth.acls import ResourceType
from odradek.broker.auth.checks import GROUP_DENIED, Op, allowed, group_allowed
from odradek.broker.context import BrokerContext, advertised_endpoint
from odradek.broker.ports import ClusterPort
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.group_requests import find_coordinator_body

API_KEY = ApiKey.FIND_COORDINATOR
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = find_coordinator_body(request)
    key_type = int(getattr(body, "key_type", GROUP_KEY_TYPE))
    denied = _denied(ctx, str(body.key), key_type)
    if denied is not None:
        return _answer(ctx, request, denied, f"DESCRIBE on {body.key!r} is not allowed")
    if ctx.cluster is not None and key_type in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return _in_cluster(ctx.cluster, request, str(body.key), key_type)
    error_code, message = _find(ctx, str(body.key), key_type)
    return _answer(ctx, request, error_code, message)


def _denied(ctx: BrokerContext, key: str, key_type: int) -> ErrorCode | None:
    """DESCRIBE on the group (or transactional id) the key names, as Kafka checks."""
    if key_type == GROUP_KEY_TYPE:
        return None if group_allowed(ctx, Op.DESCRIBE, key) else GROUP_DENIED
    if key_type == TRANSACTION_KEY_TYPE and not allowed(
        ctx, Op.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
    ):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return None


def _answer(
    ctx: BrokerContext, request: Request, error_code: ErrorCode, message: str | None
) -> ResponsePayload:
    found = error_code is ErrorCode.NONE
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": error_code,
            "error_message": message,
            "node_id": ctx.broker_id if found else -1,
            "host": advertised_endpoint(ctx)[0] if found else "",
            "port": advertised_endpoint(ctx)[1] if found else -1,
        },
    )


def _find(ctx: BrokerContext, key: str, key_type: int) -> tuple[ErrorCode, str | None]:
    if key_type == TRANSACTION_KEY_TYPE:
        txns = ctx.transactions
        if txns is None or not txns.ensure_topic():
            return (
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                "the transaction coordinator is not available",
            )
        if not txns.is_coordinator_for(key):
            return ErrorCode.NOT_COORDINATOR, "another broker coordinates this transactional id"
        return ErrorCode.NONE, None
    if key_type != GROUP_KEY_TYPE:
        return ErrorCode.INVALID_REQUEST, f"unknown key type {key_type}"
    groups = ctx.groups
    if groups is None or not groups.ensure_offsets_topic():
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group coordinator is not available"
    if not groups.is_coordinator_for(key):
        return ErrorCode.NOT_COORDINATOR, "another broker coordinates this group"
    return ErrorCode.NONE, None


def _in_cluster(
    cluster: ClusterPort, request: Request, key: str, key_type: int = GROUP_KEY_TYPE
) -> ResponsePayload:
    """The leader of the group's ``__consumer_offsets`` partition, from the metadata cache;
    COORDINATOR_NOT_AVAILABLE while the topic is being created or the partition has no
    leader (the topic is requested from the controller on first need)."""
    leader = (
        cluster.coordinator_for(key)
        if key_type == GROUP_KEY_TYPE
        else cluster.transaction_coordinator_for(key)
    )
    fields: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
        "error_message": "the group coordinator is not available yet",
        "node_id": -1,
        "host": "",
        "port": -1,
    }
    if leader is not None:
        fields.update(
            error_code=ErrorCode.NONE,
            error_message=None,
            node_id=leader.broker_id,
            host=leader.host,
            port=leader.port,
        )
    return build_response(API_KEY, request.api_version, fields)
