"""CreateAcls: stores ACL bindings (needs ALTER on the cluster); each creation answers on its
own — INVALID_REQUEST with the reason for one that cannot be stored, UNKNOWN_SERVER_ERROR when
the metadata store failed."""

from __future__ import annotations

from typing import Any

from odradek.broker.auth.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._acls import code_of, off_loop, refusal
from odradek.errors import ErrorCode, MetadataStoreError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.CREATE_ACLS


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body: Any = request.body  # the decode boundary
    creations = list(body.creations)
    refused = refusal(ctx, AclOperation.ALTER)
    if refused is not None or ctx.acl_store is None:
        code, message = refused or (ErrorCode.SECURITY_DISABLED, "")
        results = [{"error_code": code, "error_message": message}] * len(creations)
        return _response(request, results)
    bindings = [_binding(item) for item in creations]
    try:
        problems = await off_loop(ctx.acl_store, lambda store: store.create(bindings))
        results = [
            {"error_code": ErrorCode.NONE, "error_message": None}
            if problem is None
            else {"error_code": ErrorCode.INVALID_REQUEST, "error_message": problem}
            for problem in problems
        ]
    except MetadataStoreError as error:
        results = [
            {"error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "error_message": str(error)}
        ] * len(creations)
    return _response(request, results)


def _binding(item: Any) -> AclBinding:
    return AclBinding(
        ResourcePattern(
            code_of(ResourceType, int(item.resource_type)),
            str(item.resource_name),
            code_of(PatternType, int(getattr(item, "resource_pattern_type", 3))),
        ),
        AccessControlEntry(
            str(item.principal),
            str(item.host),
            code_of(AclOperation, int(item.operation)),
            code_of(AclPermissionType, int(item.permission_type)),
        ),
    )


def _response(request: Request, results: list[dict[str, Any]]) -> ResponsePayload:
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, "results": results})
