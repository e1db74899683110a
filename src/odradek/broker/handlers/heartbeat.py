"""Heartbeat: keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin.

Versions: v3 adds ``group.instance.id``.
"""

from __future__ import annotations

from odradek.broker.auth.checks import Op, require_group
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._groups import optional, runtime
from odradek.errors import KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.group_requests import heartbeat_body

API_KEY = ApiKey.HEARTBEAT


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = heartbeat_body(request)
    try:
        require_group(ctx, Op.READ, str(body.group_id))
        result = await runtime(ctx).run(
            str(body.group_id),
            lambda coordinator, now_ms: coordinator.heartbeat(
                now_ms,
                group_id=str(body.group_id),
                generation_id=int(body.generation_id),
                member_id=str(body.member_id),
                group_instance_id=optional(body, "group_instance_id"),
            ),
        )
        error_code = result.error_code
    except KafkaError as error:
        error_code = error.error_code
    return build_response(
        API_KEY, request.api_version, {"throttle_time": 0, "error_code": error_code}
    )
