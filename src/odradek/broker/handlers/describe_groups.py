"""DescribeGroups: state, protocol and members of each group named, with a per-group error
when this broker is not (yet) its coordinator.

Versions: v4 adds each member's ``group.instance.id``; v3 authorized operations (reported as
Kafka's "not asked" value, -2^31).
"""

from __future__ import annotations

from typing import Any

from odradek.broker.auth.checks import GROUP_DENIED, Op, group_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.group.results import DescribedGroup, DescribeGroupsResult
from odradek.broker.handlers._groups import runtime
from odradek.errors import KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.group_requests import describe_groups_body

API_KEY = ApiKey.DESCRIBE_GROUPS
_NO_AUTHORIZED_OPERATIONS = -(1 << 31)


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = describe_groups_body(request)
    group_ids = [str(group_id) for group_id in body.groups]
    described: dict[str, DescribedGroup] = {}
    denied = {g for g in group_ids if not group_allowed(ctx, Op.DESCRIBE, g)}
    try:
        answers, errors = await runtime(ctx).run_each(
            [g for g in group_ids if g not in denied],
            lambda coordinator, _now_ms, ids: coordinator.describe_groups(ids),
        )
    except KafkaError as error:
        answers, errors = [], dict.fromkeys(group_ids, error.error_code)
    for _, result in answers:
        assert isinstance(result, DescribeGroupsResult)
        described.update((group.group_id, group) for group in result.groups)
    errors.update(dict.fromkeys(denied, GROUP_DENIED))
    for group_id, code in errors.items():
        described[group_id] = DescribedGroup(code, group_id, "", "", "", ())
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "groups": [_group(described[group_id]) for group_id in group_ids],
        },
    )


def _group(group: DescribedGroup) -> dict[str, Any]:
    return {
        "error_code": group.error_code,
        "group_id": group.group_id,
        "group_state": group.group_state,
        "protocol_type": group.protocol_type,
        "protocol_data": group.protocol_data,
        "authorized_operations": _NO_AUTHORIZED_OPERATIONS,
        "members": [
            {
                "member_id": member.member_id,
                "group_instance_id": member.group_instance_id,
                "client_id": member.client_id,
                "client_host": member.client_host,
                "member_metadata": member.member_metadata,
                "member_assignment": member.member_assignment,
            }
            for member in group.members
        ],
    }
