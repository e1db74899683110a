"""UpdateMetadata (controller → broker): the live brokers and partition states every broker
serves Metadata from; applied by ``ClusterMember.update_metadata`` (controller epoch fencing
there). Without a cluster: NOT_CONTROLLER."""

from __future__ import annotations

from typing import Any

from odradek.broker.auth.checks import CLUSTER_DENIED, Op, cluster_allowed
from odradek.broker.context import BrokerContext
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.UPDATE_METADATA


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body: Any = request.body
    if not cluster_allowed(ctx, Op.CLUSTER_ACTION):  # Kafka: brokers only
        fields: dict[str, Any] = {"error_code": CLUSTER_DENIED}
    elif ctx.cluster is None:
        fields = {"error_code": ErrorCode.NOT_CONTROLLER}
    else:
        fields = ctx.cluster.update_metadata(body)
    return build_response(API_KEY, request.api_version, fields)
