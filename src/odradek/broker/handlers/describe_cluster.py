"""DescribeCluster (KIP-700): the cluster id, the controller and the live brokers.

On a single node this broker is the whole cluster and its controller. Without an authorizer
every operation is allowed, so ``include_cluster_authorized_operations`` gets every operation
Kafka defines on the cluster resource (as Kafka answers without an authorizer); otherwise the
bitfield is Kafka's "not requested" value. Only broker endpoints exist: a request for
controller endpoints (``endpoint_type`` 2, v1+) answers INVALID_REQUEST (Kafka's brokers answer
UNSUPPORTED_ENDPOINT_TYPE, a code this broker does not know yet).
"""

from __future__ import annotations

from typing import Any

from odradek.broker.auth.acls import AclOperation
from odradek.broker.auth.checks import CLUSTER_DENIED, Op, cluster_allowed
from odradek.broker.context import CLIENT_LISTENER, BrokerContext, advertised_endpoint
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.admin_requests import describe_cluster_body
from odradek.protocol.builder import build_response

API_KEY = ApiKey.DESCRIBE_CLUSTER

BROKERS_ENDPOINT_TYPE = 1

#: Kafka's ``AclOperation`` codes of the operations on the cluster resource: CREATE (5),
#: ALTER (7), DESCRIBE (8), CLUSTER_ACTION (9), DESCRIBE_CONFIGS (10), ALTER_CONFIGS (11),
#: IDEMPOTENT_WRITE (12).
CLUSTER_OPERATIONS = (5, 7, 8, 9, 10, 11, 12)
#: Kafka's bitfield for "authorized operations were not requested".
OPERATIONS_NOT_REQUESTED = -(2**31)


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = describe_cluster_body(request)
    endpoint_type = int(getattr(request.body, "endpoint_type", BROKERS_ENDPOINT_TYPE))  # v1+
    operations = OPERATIONS_NOT_REQUESTED
    if body.include_cluster_authorized_operations:
        operations = sum(
            1 << operation
            for operation in CLUSTER_OPERATIONS
            if cluster_allowed(ctx, AclOperation(operation))  # all of them without an authorizer
        )
    fields: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "endpoint_type": endpoint_type,
        "cluster_id": ctx.cluster_id,
        "controller_id": ctx.broker_id,
        "brokers": [
            {
                "broker_id": ctx.broker_id,
                "host": advertised_endpoint(ctx)[0],
                "port": advertised_endpoint(ctx)[1],
                "rack": None,
                "is_fenced": False,
            }
        ]
        if ctx.cluster is None
        else [
            {"broker_id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack}
            for b in ctx.cluster.cache.brokers(CLIENT_LISTENER.get())
        ],
        "cluster_authorized_operations": operations,
    }
    if ctx.cluster is not None:  # the real controller, as the controller told this broker
        controller_id = ctx.cluster.cache.controller_id
        fields["controller_id"] = -1 if controller_id is None else controller_id
    if not cluster_allowed(ctx, Op.DESCRIBE):
        fields.update(
            error_code=CLUSTER_DENIED, error_message="DESCRIBE on the cluster", brokers=[]
        )
    elif endpoint_type != BROKERS_ENDPOINT_TYPE:
        fields.update(
            error_code=ErrorCode.INVALID_REQUEST,
            error_message=f"endpoint type {endpoint_type} is not supported: brokers only (1)",
            brokers=[],
        )
    return build_response(API_KEY, request.api_version, fields)
