"""SaslHandshake (v1) reaching the router: the connection is not on a SASL listener, or has
authenticated already, so Kafka's answer is ILLEGAL_SASL_STATE. On SASL listeners the server's
authenticator (``broker.security.authenticator``) answers the handshake itself; this module
exists so ApiVersions advertises the API."""

from __future__ import annotations

from odradek.broker.context import BrokerContext
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.SASL_HANDSHAKE


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    return build_response(
        API_KEY,
        request.api_version,
        {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []},
    )
