"""SyncGroup: the leader hands out the assignments; each member waits for its own.

Versions: v3 adds ``group.instance.id``; v5 the protocol type and name (checked against the
group's, and echoed).
"""

from __future__ import annotations

from odradek.broker.auth.checks import Op, require_group
from odradek.broker.context import BrokerContext
from odradek.broker.group.results import SyncGroupResult
from odradek.broker.handlers._groups import optional, runtime
from odradek.errors import KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.group_requests import sync_group_body

API_KEY = ApiKey.SYNC_GROUP


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = sync_group_body(request)
    assignments = {str(a.member_id): bytes(a.assignment) for a in body.assignments}
    try:
        require_group(ctx, Op.READ, str(body.group_id))
        result = await runtime(ctx).run(
            str(body.group_id),
            lambda coordinator, now_ms: coordinator.sync_group(
                now_ms,
                group_id=str(body.group_id),
                generation_id=int(body.generation_id),
                member_id=str(body.member_id),
                group_instance_id=optional(body, "group_instance_id"),
                protocol_type=optional(body, "protocol_type"),
                protocol_name=optional(body, "protocol_name"),
                assignments=assignments,
            ),
        )
    except KafkaError as error:
        result = SyncGroupResult(error.error_code)
    assert isinstance(result, SyncGroupResult)
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": result.error_code,
            "protocol_type": result.protocol_type,
            "protocol_name": result.protocol_name,
            "assignment": result.assignment,
        },
    )
