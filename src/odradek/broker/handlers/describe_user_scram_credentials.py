"""DescribeUserScramCredentials (KIP-554): each user's SCRAM mechanisms and iteration counts
(never the keys). No users (null or empty): every user with a credential. A user without any
is RESOURCE_NOT_FOUND, a user named twice DUPLICATE_RESOURCE, as Kafka answers."""

from __future__ import annotations

from collections import Counter
from typing import Any

from odradek.broker.context import BrokerContext
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    store = ctx.scram_credentials
    body: Any = request.body
    fields: dict[str, Any] = {"throttle_time": 0, "error_code": ErrorCode.NONE}
    fields["error_message"] = None
    if store is None:
        fields.update(error_code=ErrorCode.UNSUPPORTED_VERSION, results=[])
        fields["error_message"] = "this broker keeps no SCRAM credentials"
        return build_response(API_KEY, request.api_version, fields)
    requested = [str(user.name) for user in body.users or ()]
    names = requested or store.users()
    counts = Counter(requested)
    results = []
    for user in dict.fromkeys(names):
        result: dict[str, Any] = {"user": user, "error_message": None, "credential_infos": []}
        if counts[user] > 1:
            result.update(
                error_code=ErrorCode.DUPLICATE_RESOURCE,
                error_message=f"Cannot describe SCRAM credentials for the same user twice "
                f"in a single request: {user}",
            )
        else:
            described = store.describe(user)
            if not described:
                result.update(
                    error_code=ErrorCode.RESOURCE_NOT_FOUND,
                    error_message=f"Attempt to describe a user credential that does not "
                    f"exist: {user}",
                )
            else:
                result["error_code"] = ErrorCode.NONE
                result["credential_infos"] = [
                    {"mechanism": mechanism.type_id, "iterations": iterations}
                    for mechanism, iterations in sorted(
                        described.items(), key=lambda item: item[0].type_id
                    )
                ]
        results.append(result)
    fields["results"] = results
    return build_response(API_KEY, request.api_version, fields)
