"""ListGroups: every group this broker coordinates (COORDINATOR_LOAD_IN_PROGRESS, with the
groups known so far, while a partition loads).

Versions: v4 filters by state and reports it; v5 filters by group type (all "classic").
"""

from __future__ import annotations

from typing import Any

from odradek.broker.auth.checks import Op, cluster_allowed, group_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.group.results import ListGroupsResult
from odradek.broker.handlers._groups import optional, runtime
from odradek.errors import KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.LIST_GROUPS


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body: Any = request.body
    try:
        result = runtime(ctx).list_groups(
            [str(s) for s in optional(body, "states_filter", ())],
            [str(t) for t in optional(body, "types_filter", ())],
        )
    except KafkaError as error:
        result = ListGroupsResult(error.error_code, ())
    if not cluster_allowed(ctx, Op.DESCRIBE):  # else only the groups it may describe
        groups = tuple(g for g in result.groups if group_allowed(ctx, Op.DESCRIBE, g.group_id))
        result = ListGroupsResult(result.error_code, groups)
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": result.error_code,
            "groups": [
                {
                    "group_id": group.group_id,
                    "protocol_type": group.protocol_type,
                    "group_state": group.group_state,
                    "group_type": group.group_type,
                }
                for group in result.groups
            ],
        },
    )
