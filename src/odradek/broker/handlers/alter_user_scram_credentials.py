"""AlterUserScramCredentials (KIP-554): upserts and deletes users' SCRAM credentials.

The client sends the salted password (never the password); the broker derives and stores the
stored and server keys. Answered per user, with Kafka's checks: an unknown mechanism is
UNSUPPORTED_SASL_MECHANISM; iterations outside 4096..16384, an empty user name or an empty
salt UNACCEPTABLE_CREDENTIAL; the same (user, mechanism) twice DUPLICATE_RESOURCE; deleting a
credential that does not exist RESOURCE_NOT_FOUND. A user with any error is left unchanged;
each user's changes are one conditional write to ``/config/users/<user>``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from odradek.broker.context import BrokerContext
from odradek.errors import ErrorCode, MetadataStoreError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response
from odradek.protocol.sasl import ScramCredential, ScramMechanism

API_KEY = ApiKey.ALTER_USER_SCRAM_CREDENTIALS


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    store = ctx.scram_credentials
    body: Any = request.body
    errors: dict[str, tuple[ErrorCode, str]] = {}
    seen = Counter(
        (str(item.name), int(item.mechanism)) for item in (*body.deletions, *body.upsertions)
    )
    upserts: dict[str, dict[ScramMechanism, ScramCredential]] = defaultdict(dict)
    deletes: dict[str, set[ScramMechanism]] = defaultdict(set)
    order: list[str] = []

    def fail(user: str, code: ErrorCode, message: str) -> None:
        errors.setdefault(user, (code, message))

    for item in (*body.deletions, *body.upsertions):
        user = str(item.name)
        order.append(user)
        mechanism = ScramMechanism.by_type_id(int(item.mechanism))
        if not user:
            fail(user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif mechanism is None:
            fail(user, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif seen[(user, int(item.mechanism))] > 1:
            fail(
                user,
                ErrorCode.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
        elif hasattr(item, "salted_password"):
            iterations = int(item.iterations)
            if iterations < mechanism.min_iterations:
                fail(user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            elif iterations > mechanism.max_iterations:
                fail(user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            elif not item.salt or not item.salted_password:
                fail(user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and password must be given")
            else:
                upserts[user][mechanism] = ScramCredential.from_salted_password(
                    mechanism, bytes(item.salted_password), bytes(item.salt), iterations
                )
        else:
            deletes[user].add(mechanism)
    results = []
    for user in dict.fromkeys(order):
        if user not in errors and store is None:
            fail(user, ErrorCode.UNKNOWN_SERVER_ERROR, "this broker keeps no SCRAM credentials")
        if user not in errors and store is not None:
            existing = store.describe(user)
            missing = [m for m in deletes[user] if m not in existing]
            if missing:
                fail(
                    user,
                    ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist",
                )
            else:
                try:
                    store.alter(user, upserts[user], frozenset(deletes[user]))
                except MetadataStoreError as error:
                    fail(user, ErrorCode.UNKNOWN_SERVER_ERROR, str(error))
        code, message = errors.get(user, (ErrorCode.NONE, None))
        results.append({"user": user, "error_code": code, "error_message": message})
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, "results": results})
