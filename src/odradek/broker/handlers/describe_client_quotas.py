"""DescribeClientQuotas: the quotas of the entities the filter matches (needs DESCRIBE_CONFIGS
on the cluster). Each component matches one entity type: EXACT (0) a name, DEFAULT (1) the
default, SPECIFIED (2) any named one; ``strict`` keeps only entities with no other type. An
unknown entity type or match type is INVALID_REQUEST."""

from __future__ import annotations

from typing import Any

from odradek.broker.auth.checks import CLUSTER_DENIED, Op, cluster_allowed
from odradek.broker.auth.quotas import DEFAULT, QuotaEntity
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._quotas import CLIENT_ID, USER, wire_entity
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.DESCRIBE_CLIENT_QUOTAS
EXACT, DEFAULT_MATCH, SPECIFIED = 0, 1, 2


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body: Any = request.body  # the decode boundary
    if not cluster_allowed(ctx, Op.DESCRIBE_CONFIGS):
        return _answer(request, CLUSTER_DENIED, "DESCRIBE_CONFIGS on the cluster", None)
    wanted: dict[str, tuple[int, str | None]] = {}
    for component in body.components:
        kind, match_type = str(component.entity_type), int(component.match_type)
        if kind not in (USER, CLIENT_ID) or match_type not in (EXACT, DEFAULT_MATCH, SPECIFIED):
            message = f"unsupported filter component {kind!r} / match type {match_type}"
            return _answer(request, ErrorCode.INVALID_REQUEST, message, None)
        wanted[kind] = (match_type, None if component.match is None else str(component.match))
    configs = {} if ctx.quotas is None else ctx.quotas.configs()
    entries = [
        {
            "entity": wire_entity(entity),
            "values": [{"key": k, "value": v} for k, v in sorted(values.items())],
        }
        for entity, values in sorted(configs.items(), key=lambda item: str(item[0]))
        if values and _matches(entity, wanted, strict=bool(body.strict))
    ]
    return _answer(request, ErrorCode.NONE, None, entries)


def _matches(
    entity: QuotaEntity, wanted: dict[str, tuple[int, str | None]], *, strict: bool
) -> bool:
    names = {USER: entity.user, CLIENT_ID: entity.client_id}
    if strict and {k for k, v in names.items() if v is not None} != set(wanted):
        return False
    for kind, (match_type, match) in wanted.items():
        name = names[kind]
        if name is None:
            return False
        if match_type == EXACT and name != match:
            return False
        if match_type == DEFAULT_MATCH and name != DEFAULT:
            return False
        if match_type == SPECIFIED and name == DEFAULT:
            return False
    return True


def _answer(
    request: Request, code: ErrorCode, message: str | None, entries: list[dict[str, Any]] | None
) -> ResponsePayload:
    return build_response(
        API_KEY,
        request.api_version,
        {"throttle_time": 0, "error_code": code, "error_message": message, "entries": entries},
    )
