"""DeleteAcls: deletes the bindings each filter selects and answers them per filter (needs
ALTER on the cluster); an invalid filter is INVALID_REQUEST, a failed store
UNKNOWN_SERVER_ERROR."""

from __future__ import annotations

from typing import Any

from odradek.broker.auth.acls import AclOperation
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._acls import off_loop, read_filter, refusal
from odradek.errors import ErrorCode, MetadataStoreError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.DELETE_ACLS


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body: Any = request.body  # the decode boundary
    filters = [read_filter(item) for item in body.filters]
    refused = refusal(ctx, AclOperation.ALTER)
    if refused is not None or ctx.acl_store is None:
        code, message = refused or (ErrorCode.SECURITY_DISABLED, "")
        return _response(request, [_failed(code, message)] * len(filters))
    try:
        outcomes = await off_loop(ctx.acl_store, lambda store: store.delete(filters))
    except MetadataStoreError as error:
        return _response(
            request, [_failed(ErrorCode.UNKNOWN_SERVER_ERROR, str(error))] * len(filters)
        )
    results = []
    for outcome in outcomes:
        if isinstance(outcome, str):
            results.append(_failed(ErrorCode.INVALID_REQUEST, outcome))
            continue
        matching = [
            {
                "error_code": ErrorCode.NONE,
                "error_message": None,
                "resource_type": int(binding.pattern.resource_type),
                "resource_name": binding.pattern.name,
                "pattern_type": int(binding.pattern.pattern_type),
                "principal": binding.entry.principal,
                "host": binding.entry.host,
                "operation": int(binding.entry.operation),
                "permission_type": int(binding.entry.permission_type),
            }
            for binding in outcome
        ]
        results.append(
            {"error_code": ErrorCode.NONE, "error_message": None, "matching_acls": matching}
        )
    return _response(request, results)


def _failed(code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"error_code": code, "error_message": message, "matching_acls": []}


def _response(request: Request, results: list[dict[str, Any]]) -> ResponsePayload:
    return build_response(
        API_KEY, request.api_version, {"throttle_time": 0, "filter_results": results}
    )
