"""DeleteGroups: removes Empty groups with their committed offsets (tombstones appended to
``__consumer_offsets``); a group with members is NON_EMPTY_GROUP, an unknown one
GROUP_ID_NOT_FOUND, one this broker does not coordinate NOT_COORDINATOR."""

from __future__ import annotations

from odradek.broker.auth.checks import GROUP_DENIED, Op, group_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.group.results import DeleteGroupsResult
from odradek.broker.handlers._groups import runtime
from odradek.errors import KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.group_requests import delete_groups_body

API_KEY = ApiKey.DELETE_GROUPS


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = delete_groups_body(request)
    group_ids = list(dict.fromkeys(str(group_id) for group_id in body.groups_names))
    codes = {g: GROUP_DENIED for g in group_ids if not group_allowed(ctx, Op.DELETE, g)}
    try:
        answers, errors = await runtime(ctx).run_each(
            [g for g in group_ids if g not in codes],
            lambda coordinator, now_ms, ids: coordinator.delete_groups(now_ms, ids),
        )
    except KafkaError as error:
        answers, errors = [], dict.fromkeys(group_ids, error.error_code)
    for _, result in answers:
        assert isinstance(result, DeleteGroupsResult)
        codes.update(result.groups)
    codes.update((g, code) for g, code in errors.items() if g not in codes)
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "results": [
                {"group_id": group_id, "error_code": codes[group_id]} for group_id in group_ids
            ],
        },
    )
