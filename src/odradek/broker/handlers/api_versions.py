"""ApiVersions: the versions of each API this broker serves, computed from the router.

(A request newer than we serve never reaches here: the connection answers it with the v0
UNSUPPORTED_VERSION body, KIP-511.)
"""

from __future__ import annotations

from odradek.broker.context import BrokerContext
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.API_VERSIONS


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    api_keys = [
        {"api_key": key, "min_version": versions.min_version, "max_version": versions.max_version}
        for key, versions in sorted(ctx.supported_versions.items())
    ]
    return build_response(
        API_KEY,
        request.api_version,
        {"error_code": 0, "api_keys": api_keys, "throttle_time": 0},
    )
