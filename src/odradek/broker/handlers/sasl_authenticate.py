"""SaslAuthenticate (KIP-152) reaching the router: no SASL exchange is under way on this
connection (not a SASL listener, or authenticated already), so Kafka's answer is
ILLEGAL_SASL_STATE. The server's authenticator answers it during an exchange."""

from __future__ import annotations

from odradek.broker.context import BrokerContext
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.SASL_AUTHENTICATE


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    return build_response(
        API_KEY,
        request.api_version,
        {
            "error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate received on a connection with no SASL exchange",
            "auth_bytes": b"",
            "session_lifetime": 0,
        },
    )
