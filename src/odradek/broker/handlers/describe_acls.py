"""DescribeAcls: the ACL bindings a filter selects, grouped by resource pattern (needs
DESCRIBE on the cluster); an invalid filter is INVALID_REQUEST."""

from __future__ import annotations

from typing import Any

from odradek.broker.auth.acls import AclOperation, ResourcePattern
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._acls import read_filter, refusal
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.DESCRIBE_ACLS


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    refused = refusal(ctx, AclOperation.DESCRIBE)
    if refused is not None or ctx.authorizer is None:
        code, message = refused or (ErrorCode.SECURITY_DISABLED, "")
        return _response(request, code, message, [])
    acl_filter = read_filter(request.body)
    problem = acl_filter.check()
    if problem is not None:
        return _response(request, ErrorCode.INVALID_REQUEST, problem, [])
    grouped: dict[ResourcePattern, list[dict[str, Any]]] = {}
    for binding in ctx.authorizer.acls(acl_filter):
        entry = binding.entry
        grouped.setdefault(binding.pattern, []).append(
            {
                "principal": entry.principal,
                "host": entry.host,
                "operation": int(entry.operation),
                "permission_type": int(entry.permission_type),
            }
        )
    resources = [
        {
            "resource_type": int(pattern.resource_type),
            "resource_name": pattern.name,
            "pattern_type": int(pattern.pattern_type),
            "acls": acls,
        }
        for pattern, acls in grouped.items()
    ]
    return _response(request, ErrorCode.NONE, None, resources)


def _response(
    request: Request, code: ErrorCode, message: str | None, resources: list[dict[str, Any]]
) -> ResponsePayload:
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": code,
            "error_message": message,
            "resources": resources,
        },
    )
