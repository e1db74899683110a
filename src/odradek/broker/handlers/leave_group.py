"""LeaveGroup: members leave and the rest rebalance.

Versions: v0-v2 name one member by id and report its error at the top; v3+ name a batch of
members (by member id or ``group.instance.id``, KIP-345) and report one error each.
"""

from __future__ import annotations

from typing import Any

from odradek.broker.auth.checks import Op, require_group
from odradek.broker.context import BrokerContext
from odradek.broker.group.results import LeaveGroupResult, LeavingMember
from odradek.broker.handlers._groups import runtime
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response, has_field
from odradek.protocol.group_requests import leave_group_body

API_KEY = ApiKey.LEAVE_GROUP


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = leave_group_body(request)
    by_version: Any = request.body  # members (v3+) or one member_id (v0-v2)
    batched = has_field(by_version, "members")
    if batched:
        members = [
            LeavingMember(
                str(m.member_id), None if m.group_instance_id is None else str(m.group_instance_id)
            )
            for m in by_version.members
        ]
    else:
        members = [LeavingMember(str(by_version.member_id))]
    try:
        require_group(ctx, Op.READ, str(body.group_id))
        result = await runtime(ctx).run(
            str(body.group_id),
            lambda coordinator, now_ms: coordinator.leave_group(
                now_ms, group_id=str(body.group_id), members=members
            ),
        )
    except KafkaError as error:
        result = LeaveGroupResult(error.error_code)
    assert isinstance(result, LeaveGroupResult)
    error_code = result.error_code
    if not batched and error_code is ErrorCode.NONE and result.members:
        error_code = result.members[0].error_code
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": error_code,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "error_code": m.error_code,
                }
                for m in result.members
            ],
        },
    )
