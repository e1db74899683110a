"""JoinGroup: a member joins (or rejoins) a classic group; answered when the join phase ends.

Versions: v0 has no rebalance timeout (the session timeout stands in); v5 adds
``group.instance.id`` (KIP-345); v7 a nullable protocol name (null below v7 becomes "").
A first join without member id gets one at once: the KIP-394 MEMBER_ID_REQUIRED round trip is
never asked for.
"""

from __future__ import annotations

from odradek.broker.auth.checks import Op, require_group
from odradek.broker.context import CLIENT_HOST, BrokerContext
from odradek.broker.group.results import JoinGroupResult
from odradek.broker.handlers._groups import optional, runtime
from odradek.errors import KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response, request_value
from odradek.protocol.group_requests import join_group_body

API_KEY = ApiKey.JOIN_GROUP


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = join_group_body(request)
    session_timeout_ms = int(request_value(body.session_timeout))
    member_id = str(body.member_id)
    try:
        require_group(ctx, Op.READ, str(body.group_id))
        result = await runtime(ctx).run(
            str(body.group_id),
            lambda coordinator, now_ms: coordinator.join_group(
                now_ms,
                group_id=str(body.group_id),
                member_id=member_id,
                group_instance_id=optional(body, "group_instance_id"),
                client_id=request.header.client_id or "",
                client_host=CLIENT_HOST.get(),
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=int(optional(body, "rebalance_timeout", session_timeout_ms)),
                protocol_type=str(body.protocol_type),
                protocols=[(str(p.name), bytes(p.metadata)) for p in body.protocols],
                reason=optional(body, "reason"),
                supports_skip_assignment=request.api_version >= 9,
            ),
        )
    except KafkaError as error:
        result = JoinGroupResult(error.error_code, member_id)
    assert isinstance(result, JoinGroupResult)
    nullable = request.api_version >= 7
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": result.error_code,
            "generation_id": result.generation_id,
            "protocol_type": result.protocol_type,
            "protocol_name": result.protocol_name if nullable else result.protocol_name or "",
            "leader": result.leader,
            "skip_assignment": result.skip_assignment,
            "member_id": result.member_id,
            "members": [
                {
                    "member_id": member.member_id,
                    "group_instance_id": member.group_instance_id,
                    "metadata": member.metadata,
                }
                for member in result.members
            ],
        },
    )
