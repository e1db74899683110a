"""The client side of broker → broker connections: how this broker connects and logs in to
another broker, from its own listener settings, as Kafka does.

Every broker → broker connection (the replica fetchers, the controller's channel, transaction
markers, requests forwarded to the controller) goes to the other broker's endpoint of
``inter.broker.listener.name`` (by default the listener named after
``security.inter.broker.protocol``) and speaks that listener's security protocol:

- SSL / SASL_SSL: TLS with a client context made from the listener's own ``ssl.*`` settings
  (``listener.name.<l>.ssl.*`` first): its truststore checks the other broker's certificate,
  its keystore is presented when the other asks for one (mTLS), and
  ``ssl.endpoint.identification.algorithm`` (``https``) checks the host name;
- SASL_PLAINTEXT / SASL_SSL: SaslHandshake v1 then SaslAuthenticate v1 with
  ``sasl.mechanism.inter.broker.protocol`` (PLAIN by default) and the ``username`` /
  ``password`` of the listener's JAAS entry for that mechanism
  (``listener.name.<l>.<mechanism>.sasl.jaas.config``, then ``listener.name.<l>.sasl.jaas.config``,
  then ``sasl.jaas.config``).

``InterBrokerSecurity.from_config`` turns a ``SecurityConfig`` into that context once, at
start-up; ``open`` (asyncio) and ``connect`` (blocking sockets, the controller's thread) return
a connection that is ready for requests. The login itself is ``SaslLogin``, sans-I/O: the
requests to send and what the answers mean, shared by both drivers. A PLAINTEXT inter-broker
listener costs nothing: ``plaintext`` is true and callers connect as before.

A refused login (wrong password, unknown mechanism, untrusted certificate) raises
``InterBrokerAuthenticationError``, an ``OSError`` (so callers that treat an unreachable
broker as absent keep doing so) with a message naming the listener, the mechanism and the
user; it is not retried sooner than any other connection failure.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from odradek.broker.security.listeners import SecurityConfig
from odradek.broker.security.tls import client_ssl_context
from odradek.errors import ConfigError, KafkaError, ProtocolError
from odradek.protocol import ApiKey
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.protocol.sasl import PLAIN, PlainClient, ScramClient, ScramMechanism

__all__ = [
    "PLAINTEXT_INTER_BROKER",
    "InterBrokerAuthenticationError",
    "InterBrokerSecurity",
    "SaslLogin",
]

SASL_HANDSHAKE_VERSION = 1
SASL_AUTHENTICATE_VERSION = 1
_SIZE = struct.Struct(">i")
#: The largest answer read during the login (a SASL token is small).
_MAX_LOGIN_ANSWER = 1 << 20

Request = tuple[int, int, dict[str, Any]]


class InterBrokerAuthenticationError(ConnectionError):
    """The other broker refused this broker's login (SASL or TLS)."""


class SaslLogin:
    """One SASL login as a client, sans-I/O: ``first`` is the SaslHandshake request, each
    ``answered`` returns the next request, or ``None`` once authenticated.

    Raises (``answered``):
        InterBrokerAuthenticationError: the mechanism is not enabled, the credentials are
            refused, or the server's SCRAM messages are wrong.
    """

    def __init__(self, client: PlainClient | ScramClient, username: str, where: str) -> None:
        self._client = client
        self._username = username
        self._where = where

    @property
    def mechanism(self) -> str:
        return self._client.mechanism

    def first(self) -> Request:
        return ApiKey.SASL_HANDSHAKE, SASL_HANDSHAKE_VERSION, {"mechanism": self.mechanism}

    def answered(self, api_key: int, body: Mapping[str, Any]) -> Request | None:
        code = int(body.get("error_code") or 0)
        if code:
            if api_key == ApiKey.SASL_HANDSHAKE:
                detail = f"mechanism not enabled (offered: {body.get('mechanisms')})"
            else:
                detail = str(body.get("error_message") or f"error {code}")
            raise self._failure(detail)
        try:
            if api_key == ApiKey.SASL_HANDSHAKE:
                token: bytes | None = self._client.first_token()
            else:
                token = self._client.receive(bytes(body.get("auth_bytes") or b""))
        except KafkaError as error:
            raise self._failure(str(error)) from None
        if token is not None:
            return ApiKey.SASL_AUTHENTICATE, SASL_AUTHENTICATE_VERSION, {"auth_bytes": token}
        if not self._client.complete:
            raise self._failure("the exchange ended early")
        return None

    def _failure(self, detail: str) -> InterBrokerAuthenticationError:
        return InterBrokerAuthenticationError(
            f"{self.mechanism} login as {self._username!r} to {self._where} failed: {detail}"
        )


@dataclass(frozen=True, slots=True)
class InterBrokerSecurity:
    """How this broker reaches other brokers; see the module docstring."""

    listener_name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = field(default="", repr=False)

    @property
    def plaintext(self) -> bool:
        """No TLS and no SASL: connect as a bare TCP client."""
        return self.ssl_context is None and self.mechanism is None

    @classmethod
    def from_config(cls, security: SecurityConfig) -> InterBrokerSecurity:
        """The context of ``security``'s inter-broker listener.

        Raises:
            ConfigError: a SASL inter-broker listener without a ``username`` and
                ``password`` for ``sasl.mechanism.inter.broker.protocol`` in its JAAS
                configuration, or TLS files that cannot be loaded.
        """
        name = security.inter_broker_listener_name
        listener = security.for_listener(name)
        context = None
        if listener.uses_tls:
            assert listener.ssl is not None
            context = client_ssl_context(listener.ssl)
        if not listener.uses_sasl:
            return cls(name, listener.security_protocol, context)
        mechanism = security.sasl_mechanism_inter_broker_protocol
        credentials = listener.client_credentials.get(mechanism)
        if credentials is None:
            raise ConfigError(
                f"listener.name.{name.lower()}.{mechanism.lower()}.sasl.jaas.config: the "
                f"inter-broker listener {name} needs a username and password for "
                f"sasl.mechanism.inter.broker.protocol={mechanism}"
            )
        return cls(name, listener.security_protocol, context, mechanism, *credentials)

    def login(self, where: str) -> SaslLogin | None:
        """A fresh SASL login for one connection (``None``: the listener has no SASL)."""
        if self.mechanism is None:
            return None
        if self.mechanism == PLAIN:
            client: PlainClient | ScramClient = PlainClient(self.username, self.password)
        else:
            scram = ScramMechanism.by_name(self.mechanism)
            assert scram is not None  # checked by SecurityConfig
            client = ScramClient(scram, self.username, self.password)
        return SaslLogin(client, self.username, where)

    # --- asyncio -----------------------------------------------------------------------------

    async def open(
        self, host: str, port: int, timeout_s: float, client_id: str
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to ``host:port`` through TLS (when the listener has it), logged in
        (when it has SASL).

        Raises:
            InterBrokerAuthenticationError: TLS or SASL refused.
            OSError, TimeoutError, asyncio.IncompleteReadError, ProtocolError: the broker
                could not be reached or answered badly.
        """
        where = f"broker at {host}:{port} (listener {self.listener_name})"
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    host,
                    port,
                    ssl=self.ssl_context,
                    server_hostname=host if self.ssl_context is not None else None,
                ),
                timeout_s,
            )
        except ssl.SSLError as error:
            raise InterBrokerAuthenticationError(f"TLS with {where} failed: {error}") from None
        login = self.login(where)
        if login is None:
            return reader, writer
        try:
            async with asyncio.timeout(timeout_s):
                request: Request | None = login.first()
                correlation_id = 0
                while request is not None:
                    correlation_id += 1
                    api_key, version, fields = request
                    writer.write(
                        encode_request(api_key, version, correlation_id, client_id, fields)
                    )
                    (size,) = _SIZE.unpack(await reader.readexactly(_SIZE.size))
                    _check_size(size)
                    answer = await reader.readexactly(size)
                    request = login.answered(api_key, _decode(request, correlation_id, answer))
        except BaseException:
            writer.transport.abort()  # no TLS goodbye to a broker that refused us
            raise
        return reader, writer

    # --- blocking sockets ----------------------------------------------------------------------

    def connect(self, host: str, port: int, timeout_s: float, client_id: str) -> socket.socket:
        """The blocking counterpart of ``open`` (the socket has ``timeout_s`` as its timeout).

        Raises:
            InterBrokerAuthenticationError: TLS or SASL refused.
            OSError, ProtocolError: the broker could not be reached or answered badly.
        """
        where = f"broker at {host}:{port} (listener {self.listener_name})"
        sock = socket.create_connection((host, port), timeout=timeout_s)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.ssl_context is not None:
                try:
                    sock = self.ssl_context.wrap_socket(sock, server_hostname=host)
                except ssl.SSLError as error:
                    raise InterBrokerAuthenticationError(
                        f"TLS with {where} failed: {error}"
                    ) from None
            login = self.login(where)
            if login is not None:
                _login_blocking(sock, login, client_id)
        except BaseException:
            sock.close()
            raise
        return sock

    def connector(self, client_id: str) -> Callable[[str, int, float], socket.socket]:
        """``connect`` with the client id bound: what the controller's channel calls."""
        return lambda host, port, timeout_s: self.connect(host, port, timeout_s, client_id)


#: The context of a PLAINTEXT inter-broker listener.
PLAINTEXT_INTER_BROKER = InterBrokerSecurity()


def _login_blocking(sock: socket.socket, login: SaslLogin, client_id: str) -> None:
    request: Request | None = login.first()
    correlation_id = 0
    while request is not None:
        correlation_id += 1
        api_key, version, fields = request
        sock.sendall(encode_request(api_key, version, correlation_id, client_id, fields))
        (size,) = _SIZE.unpack(_read_exactly(sock, _SIZE.size))
        _check_size(size)
        answer = _read_exactly(sock, size)
        request = login.answered(api_key, _decode(request, correlation_id, answer))


def _decode(request: Request, correlation_id: int, answer: bytes) -> dict[str, Any]:
    api_key, version, _ = request
    got, body = decode_response(api_key, version, answer)
    if got != correlation_id:
        raise ProtocolError(f"correlation id {got}, expected {correlation_id}")
    return body


def _check_size(size: int) -> None:
    if not 0 <= size <= _MAX_LOGIN_ANSWER:
        raise ProtocolError(f"login answer of {size} bytes is out of bounds")


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = []
    remaining = size
    while remaining:
        chunk = sock.recv(remaining)
        if not chunk:
            raise ProtocolError("the broker closed the connection during the login")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
