"""One connection's authentication: who the client is, and what it may send before it is known.

Sans-I/O: the server hands it the SaslHandshake / SaslAuthenticate requests of a SASL listener
and asks it, for every other request, whether the connection may send it now. It returns the
response fields and whether the connection must close after that response; it never touches
the socket or reads the clock (``now_ms`` comes in).

Rules (Kafka's, SaslServerAuthenticator):

- On a SASL listener, before authentication, only ApiVersions, SaslHandshake (v1: the tokens
  then travel in SaslAuthenticate) and SaslAuthenticate are served; anything else closes the
  connection without an answer. The server also caps the frame size at
  ``sasl.server.max.receive.size`` until then.
- A mechanism not enabled on the listener is answered UNSUPPORTED_SASL_MECHANISM with the
  enabled ones, then the connection closes; so does a failed exchange, answered
  SASL_AUTHENTICATION_FAILED with the reason; a SaslAuthenticate before a handshake is
  ILLEGAL_SASL_STATE.
- Once authenticated the principal is ``User:<name>`` (SASL) or the certificate's mapped
  subject (SSL with a client certificate), else ANONYMOUS. With ``connections.max.reauth.ms``
  (KIP-368) the session lasts that long (told to the client in SessionLifetimeMs, v1+): a new
  SaslHandshake re-authenticates (same principal required); any other request after the
  session expired closes the connection.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from odradek.broker.principal import ANONYMOUS, KafkaPrincipal
from odradek.broker.security.listeners import ListenerSecurity
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey
from odradek.protocol.sasl import PLAIN, PlainServer, ScramCredential, ScramMechanism, ScramServer

__all__ = ["PRE_AUTHENTICATION_APIS", "AuthenticationStep", "Authenticator", "ScramLookup"]

logger = logging.getLogger(__name__)

PRE_AUTHENTICATION_APIS = frozenset(
    {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
)

#: (user, mechanism) → the stored credential (None: unknown user).
ScramLookup = Callable[[str, ScramMechanism], ScramCredential | None]


@dataclass(frozen=True, slots=True)
class AuthenticationStep:
    """The response fields of one SASL request, and whether to close after sending them."""

    fields: dict[str, Any]
    close: bool = False


class Authenticator:
    """The authentication state of one connection on ``listener``.

    Args:
        listener: the listener's security settings.
        scram_lookup: where SCRAM credentials come from.
        tls_principal: the principal of the client's certificate (SSL listeners), if any.
    """

    def __init__(
        self,
        listener: ListenerSecurity,
        scram_lookup: ScramLookup,
        tls_principal: KafkaPrincipal | None = None,
    ) -> None:
        self.listener = listener
        self._scram_lookup = scram_lookup
        self.principal = tls_principal or ANONYMOUS
        self._server: PlainServer | ScramServer | None = None
        self.mechanism: str | None = None
        self._reauthenticating = False
        #: Monotonic ms at which the session expires (None: never).
        self.session_expiry_ms: int | None = None
        self.authenticated = not listener.uses_sasl
        #: Completed re-authentications (KIP-368) of this connection.
        self.reauthentications = 0

    # ------------------------------------------------------------------ gating

    def allows(self, api_key: int, now_ms: int) -> bool:
        """Whether a request of ``api_key`` may be served now (False: close the connection)."""
        if api_key in PRE_AUTHENTICATION_APIS:
            return True
        if not self.authenticated or self._reauthenticating:
            return False
        expiry = self.session_expiry_ms
        return expiry is None or now_ms < expiry

    @property
    def reauthenticating(self) -> bool:
        """A re-authentication (KIP-368) is under way: only SASL requests are served."""
        return self._reauthenticating

    @property
    def handles_sasl(self) -> bool:
        """Whether SaslHandshake / SaslAuthenticate go to this authenticator (SASL listeners)
        rather than to the router (which answers ILLEGAL_SASL_STATE)."""
        return self.listener.uses_sasl

    # ------------------------------------------------------------------ SASL

    def handshake(self, mechanism: str, version: int = 1) -> AuthenticationStep:
        """Answers SaslHandshake; v0 (raw SASL tokens after it, not SaslAuthenticate) is
        answered UNSUPPORTED_VERSION and the connection closed."""
        enabled = list(self.listener.sasl_mechanisms)
        if version < 1:
            return AuthenticationStep(
                {"error_code": ErrorCode.UNSUPPORTED_VERSION, "mechanisms": enabled}, close=True
            )
        if self._server is not None and not (self.authenticated and not self._reauthenticating):
            return AuthenticationStep(
                {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": enabled}, close=True
            )
        if mechanism not in enabled:
            logger.info("SASL mechanism %s is not enabled (%s)", mechanism, ",".join(enabled))
            return AuthenticationStep(
                {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled},
                close=True,
            )
        if self.authenticated:
            if mechanism != self.mechanism:
                return AuthenticationStep(
                    {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": enabled},
                    close=True,
                )
            self._reauthenticating = True
        self.mechanism = mechanism
        self._server = self._new_server(mechanism)
        return AuthenticationStep({"error_code": ErrorCode.NONE, "mechanisms": enabled})

    def _new_server(self, mechanism: str) -> PlainServer | ScramServer:
        if mechanism == PLAIN:
            return PlainServer(dict(self.listener.plain_users))
        scram = ScramMechanism.by_name(mechanism)
        assert scram is not None  # enabled mechanisms are validated by the config
        lookup = self._scram_lookup
        return ScramServer(scram, lambda user: lookup(user, scram))

    def authenticate(self, auth_bytes: bytes, now_ms: int) -> AuthenticationStep:
        """Answers SaslAuthenticate: the next token of the exchange."""
        server = self._server
        if server is None or (self.authenticated and not self._reauthenticating):
            return _failure(
                ErrorCode.ILLEGAL_SASL_STATE,
                "SaslAuthenticate request received before SaslHandshake"
                if server is None
                else "SaslAuthenticate request received after successful authentication",
            )
        try:
            answer = server.receive(bytes(auth_bytes))
        except KafkaError as error:
            logger.info("SASL %s authentication failed: %s", self.mechanism, error)
            return _failure(error.error_code, str(error))
        if not server.complete:
            return AuthenticationStep(_ok(answer, 0))
        user = server.authorization_id
        assert user is not None
        principal = KafkaPrincipal("User", user)
        if self._reauthenticating and principal != self.principal:
            return _failure(
                ErrorCode.SASL_AUTHENTICATION_FAILED,
                f"Cannot change principals during re-authentication from {self.principal}: "
                f"{principal}",
            )
        self.principal = principal
        self.authenticated = True
        if self._reauthenticating:
            self.reauthentications += 1
        self._reauthenticating = False
        self._server = None
        lifetime = self.listener.connections_max_reauth_ms
        self.session_expiry_ms = now_ms + lifetime if lifetime > 0 else None
        return AuthenticationStep(_ok(answer, lifetime))


def _ok(answer: bytes, lifetime_ms: int) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "auth_bytes": answer,
        "session_lifetime": lifetime_ms,
    }


def _failure(code: ErrorCode, message: str) -> AuthenticationStep:
    return AuthenticationStep(
        {
            "error_code": code,
            "error_message": message,
            "auth_bytes": b"",
            "session_lifetime": 0,
        },
        close=True,
    )
