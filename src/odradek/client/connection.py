"""One non-blocking TCP connection from the client to one broker node, and its requests.

This module owns what happens on one connection: connecting, the ApiVersions exchange,
correlation ids, pipelining and matching responses to requests. ``network.NetworkClient``
owns the selector, the clock, timeouts, backoff decisions and completing futures; it calls
the methods here when the selector says a socket is ready. The rules kept here:

- **Order.** A broker answers a connection's requests in the order it received them, so
  responses are matched to the oldest request in flight; a response with any other
  correlation id is a protocol violation and ends the connection.
- **Pipelining.** Up to ``max_in_flight`` requests are on the wire awaiting responses; more
  wait in ``unsent`` (in submission order) until a response frees a slot. Requests that expect
  no response (Produce with acks=0) never occupy a slot: they complete once written.
- **Versions** (KIP-35, KIP-511). Once connected, the connection asks ApiVersions at the
  highest version it speaks; a broker that answers UNSUPPORTED_VERSION lists its own range,
  and the question is asked again at the highest common version. Each later request is
  encoded at the highest version both the broker and the caller's range allow, when it is
  written (not when submitted), so requests may be submitted before the connection is up.
  With ``api.version.request=false`` the broker is assumed to serve ``ASSUMED_VERSIONS``.
- A connection failure fails every request it holds (in flight and unsent); the caller
  decides about retries.

- **Security** (``client.security``). Under SSL / SASL_SSL the socket is wrapped once the TCP
  connect completes and the TLS handshake runs, non-blocking, before ApiVersions. Under SASL
  the connection then sends SaslHandshake v1 and the mechanism's SaslAuthenticate tokens
  before it is READY; a refused mechanism or failed login ends the connection with the
  broker's error (UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED).

States: ``DISCONNECTED`` → ``connect`` → ``CONNECTING`` → ``finish_connect`` →
``CHECKING_API_VERSIONS`` (TLS handshake, ApiVersions, SASL) → ``READY``; ``close`` from any
state returns to ``DISCONNECTED``. The object outlives its sockets: one per node, reused across
reconnects.
Not thread-safe: only the network client's thread calls it.
"""

from __future__ import annotations

import collections
import concurrent.futures
import enum
import errno
import logging
import os
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from odradek.client import codecs
from odradek.client.security import ClientSecurity, SaslClient
from odradek.errors import ErrorCode, KafkaError, OdradekError, ProtocolError, error_for_code
from odradek.protocol.api_keys import IMPLEMENTED_VERSIONS, ApiKey, VersionRange
from odradek.protocol.framing import FrameDecoder

__all__ = [
    "API_VERSIONS_VERSIONS",
    "ASSUMED_VERSIONS",
    "BrokerConnection",
    "ConnectionState",
    "ConnectionStatistics",
    "Fields",
    "RequestFuture",
]

log = logging.getLogger(__name__)

#: The ApiVersions versions the client asks with (v3 carries the client software fields).
API_VERSIONS_VERSIONS: Final = VersionRange(0, 3)
#: What a broker is assumed to serve when ``api.version.request`` is false: the versions
#: every Kafka client was measured to use (docs/WIRE-NOTES.md).
ASSUMED_VERSIONS: Final[Mapping[int, VersionRange]] = {
    int(key): value for key, value in IMPLEMENTED_VERSIONS.items()
}
CLIENT_SOFTWARE_NAME: Final = "odradek"
#: The codes of a refused login: a connection closed by one fails its requests with it.
LOGIN_ERRORS: Final = frozenset(
    {
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        ErrorCode.ILLEGAL_SASL_STATE,
    }
)
_READ_BYTES: Final = 1 << 18
#: Stop reading one socket after this much per poll, so one busy broker cannot starve others.
_READ_BUDGET_BYTES: Final = 1 << 24
_IOV_MAX: Final = 64

#: A request body: a plain mapping (``client_codec``'s field names), or a function of the
#: version the request is finally written at that returns one.
Fields: TypeAlias = Mapping[str, Any] | Callable[[int], Mapping[str, Any]]


class ConnectionState(enum.Enum):
    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    CHECKING_API_VERSIONS = "checking_api_versions"
    READY = "ready"


class RequestFuture(concurrent.futures.Future[dict[str, Any]]):
    """The outcome of one request: the decoded response body (a plain mapping).

    A request that expects no response (acks=0) resolves to ``{}`` once written. Failures are
    ``KafkaError``: NETWORK_EXCEPTION (connection lost or refused), REQUEST_TIMED_OUT,
    UNSUPPORTED_VERSION (no common version); or ``ProtocolError`` for an undecodable response.
    Error codes inside a response body are not raised: they are the caller's to read.

    Callbacks added with ``add_done_callback`` run on the network client's thread, inside
    ``poll``; ``result(timeout)`` may be waited on from any other thread.

    Attributes:
        node_id: the broker node the request was submitted to.
        api_key: the API.
        api_version: the version it was written at (-1 until written).
        correlation_id: its correlation id (-1 until written).
    """

    def __init__(self, node_id: int, api_key: int) -> None:
        super().__init__()
        self.node_id = node_id
        self.api_key = api_key
        self.api_version = -1
        self.correlation_id = -1


class _Request:
    """A submitted request and its bookkeeping on the connection."""

    __slots__ = (
        "api_key",
        "api_version",
        "correlation_id",
        "deadline_ms",
        "expect_response",
        "fields",
        "future",
        "versions",
        "write_mark",
    )

    def __init__(
        self,
        api_key: int,
        versions: VersionRange,
        fields: Fields,
        future: RequestFuture | None,
        expect_response: bool,
        deadline_ms: int,
    ) -> None:
        self.api_key = api_key
        self.versions = versions
        self.fields = fields
        self.future = future  # None: the connection's own ApiVersions request
        self.expect_response = expect_response
        self.deadline_ms = deadline_ms
        self.api_version = -1
        self.correlation_id = -1
        self.write_mark = 0  # bytes queued on the socket once this request is written


#: A request's end: its future and either the decoded body or the error to fail it with.
Completion: TypeAlias = tuple[RequestFuture, dict[str, Any] | BaseException]


@dataclass(frozen=True, slots=True)
class ConnectionStatistics:
    """A snapshot of one node's connection counters (cumulative over reconnects)."""

    node_id: int
    address: str
    state: str
    in_flight: int
    unsent: int
    requests_sent: int
    responses_received: int
    bytes_sent: int
    bytes_received: int
    connects: int
    failures: int


class BrokerConnection:
    """The connection to one broker node (see the module docstring for its rules).

    Args:
        node_id: the node (negative for bootstrap addresses, as Kafka numbers them).
        host, port: where the node listens.
        client_id: sent in every request header.
        max_in_flight: ``max.in.flight.requests.per.connection``.
        max_frame_bytes: the largest response frame accepted.
        negotiate_versions: ``api.version.request``.
        send_buffer_bytes, receive_buffer_bytes: SO_SNDBUF / SO_RCVBUF (-1: the OS default).
        software_version: reported in ApiVersions v3.
        security: TLS and SASL (default: PLAINTEXT).
    """

    def __init__(
        self,
        node_id: int,
        host: str,
        port: int,
        *,
        client_id: str | None,
        max_in_flight: int,
        max_frame_bytes: int,
        negotiate_versions: bool = True,
        send_buffer_bytes: int = -1,
        receive_buffer_bytes: int = -1,
        software_version: str = "0",
        security: ClientSecurity | None = None,
    ) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.client_id = client_id
        self.max_in_flight = max_in_flight
        self.negotiate_versions = negotiate_versions
        self._max_frame_bytes = max_frame_bytes
        self._send_buffer_bytes = send_buffer_bytes
        self._receive_buffer_bytes = receive_buffer_bytes
        self._software_version = software_version
        self._security = security or ClientSecurity()
        self._handshaking = False  # TLS handshake under way
        self._handshake_wants_write = False
        self._sasl: SaslClient | None = None  # SASL exchange under way
        self.state = ConnectionState.DISCONNECTED
        self.socket: socket.socket | None = None
        self.api_versions: Mapping[int, VersionRange] | None = None
        self.in_flight: collections.deque[_Request] = collections.deque()
        self.unsent: collections.deque[_Request] = collections.deque()
        self._unwritten: collections.deque[_Request] = collections.deque()  # no response
        self._out: collections.deque[memoryview] = collections.deque()
        self._frames = FrameDecoder(max_frame_bytes)
        self._correlation_id = 0
        self._queued_bytes = 0  # total bytes ever queued for writing on this socket
        self._written_bytes = 0  # total bytes ever written on this socket
        self._address_index = 0
        self._api_versions_timeout_ms = 0
        # Backoff and idle bookkeeping, read and written by the network client.
        self.failures = 0  # consecutive failed connection attempts
        self.next_attempt_ms = 0  # no connection attempt before this
        self.connect_deadline_ms = 0  # CONNECTING / CHECKING_API_VERSIONS must end by then
        self.last_activity_ms = 0
        self._requests_sent = 0
        self._responses_received = 0
        self._bytes_sent = 0
        self._bytes_received = 0
        self._connects = 0
        self._failure_count = 0

    # ------------------------------------------------------------------ queries

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def is_ready(self) -> bool:
        """Connected, versions known, and a free in-flight slot."""
        return self.state is ConnectionState.READY and len(self.in_flight) < self.max_in_flight

    @property
    def _handshake_done(self) -> bool:
        return not self._handshaking

    @property
    def wants_write(self) -> bool:
        return (
            bool(self._out)
            or self.state is ConnectionState.CONNECTING
            or self._handshake_wants_write
        )

    @property
    def has_requests(self) -> bool:
        return bool(self.in_flight or self.unsent or self._unwritten)

    def statistics(self) -> ConnectionStatistics:
        return ConnectionStatistics(
            node_id=self.node_id,
            address=self.address,
            state=self.state.value,
            in_flight=len(self.in_flight),
            unsent=len(self.unsent),
            requests_sent=self._requests_sent,
            responses_received=self._responses_received,
            bytes_sent=self._bytes_sent,
            bytes_received=self._bytes_received,
            connects=self._connects,
            failures=self._failure_count,
        )

    def pick_version(self, api_key: int, usable: VersionRange) -> int | None:
        """The highest version in ``usable`` the broker serves (``None``: none, or unknown)."""
        versions = self.api_versions
        offered = versions.get(api_key) if versions is not None else None
        if offered is None:
            return None
        common = offered.intersect(usable)
        return common.max_version if common is not None else None

    def earliest_deadline_ms(self) -> int | None:
        """The soonest deadline among the requests and the connection attempt, if any."""
        deadlines = [request.deadline_ms for request in self.in_flight]
        deadlines.extend(request.deadline_ms for request in self.unsent)
        if self.state in (ConnectionState.CONNECTING, ConnectionState.CHECKING_API_VERSIONS):
            deadlines.append(self.connect_deadline_ms)
        return min(deadlines) if deadlines else None

    # ------------------------------------------------------------------ requests

    def submit(
        self,
        api_key: int,
        versions: VersionRange,
        fields: Fields,
        future: RequestFuture,
        *,
        expect_response: bool,
        deadline_ms: int,
    ) -> None:
        """Queues a request; ``transmit`` writes it when the connection is ready."""
        self.unsent.append(
            _Request(api_key, versions, fields, future, expect_response, deadline_ms)
        )

    def transmit(self, completions: list[Completion]) -> None:
        """Encodes and writes unsent requests while the connection is ready.

        A request whose API the broker serves at no version in its range, or whose fields do
        not encode, is failed (appended to ``completions``) without touching the connection.

        Raises:
            OSError: writing failed (the caller closes the connection).
        """
        if self.state is not ConnectionState.READY:
            return
        unsent = self.unsent
        while unsent and len(self.in_flight) < self.max_in_flight:
            request = unsent.popleft()
            future = request.future
            assert future is not None
            if not future.set_running_or_notify_cancel():
                continue  # cancelled by its owner before it was written
            version = self.pick_version(request.api_key, request.versions)
            if version is None:
                completions.append((future, self._unsupported(request)))
                continue
            try:
                self._write_request(request, version)
            except (LookupError, TypeError, ValueError) as error:
                completions.append(
                    (
                        future,
                        KafkaError(
                            f"cannot encode {_api_name(request.api_key)} v{version}: {error}",
                            code=ErrorCode.INVALID_REQUEST,
                        ),
                    )
                )
        self.flush(completions)

    def _write_request(self, request: _Request, version: int) -> None:
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        correlation_id = self._correlation_id
        fields = request.fields
        body = fields(version) if callable(fields) else fields
        frame = codecs.encode_request(
            request.api_key, version, correlation_id, self.client_id, body
        )
        request.correlation_id = correlation_id
        request.api_version = version
        future = request.future
        if future is not None:
            future.api_version = version
            future.correlation_id = correlation_id
        self._out.append(memoryview(frame))
        self._queued_bytes += len(frame)
        request.write_mark = self._queued_bytes
        self._requests_sent += 1
        if request.expect_response:
            self.in_flight.append(request)
        else:
            self._unwritten.append(request)

    def _unsupported(self, request: _Request) -> KafkaError:
        offered = self.api_versions.get(request.api_key) if self.api_versions else None
        served = f"it serves {offered}" if offered is not None else "it does not serve it"
        return KafkaError(
            f"broker {self.node_id} ({self.address}) has no version of "
            f"{_api_name(request.api_key)} in {request.versions} ({served})",
            code=ErrorCode.UNSUPPORTED_VERSION,
        )

    # ------------------------------------------------------------------ socket I/O

    def connect(self, now_ms: int, setup_timeout_ms: int) -> None:
        """Starts a non-blocking connect to the node's next resolved address (each attempt
        takes the next address the host name resolves to; resolving itself blocks, as in
        Kafka's clients).

        Raises:
            OSError: the name does not resolve or the connect fails at once.
        """
        assert self.state is ConnectionState.DISCONNECTED
        infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        if not infos:
            raise OSError(errno.EHOSTUNREACH, f"{self.host} does not resolve")
        family, kind, proto, _name, address = infos[self._address_index % len(infos)]
        self._address_index += 1
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._send_buffer_bytes > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._send_buffer_bytes)
            if self._receive_buffer_bytes > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._receive_buffer_bytes)
            code = sock.connect_ex(address)
            if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
                raise OSError(code, _strerror(code))
        except BaseException:
            sock.close()
            raise
        self.socket = sock
        self.state = ConnectionState.CONNECTING
        self.connect_deadline_ms = now_ms + setup_timeout_ms
        self.last_activity_ms = now_ms
        self._frames = FrameDecoder(self._max_frame_bytes)

    def finish_connect(self, now_ms: int, api_versions_timeout_ms: int) -> None:
        """Completes a connect the selector reported writable; starts the ApiVersions exchange.

        Raises:
            OSError: the connect failed.
        """
        assert self.socket is not None
        assert self.state is ConnectionState.CONNECTING
        code = self.socket.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            raise OSError(code, _strerror(code))
        self.socket.getpeername()  # raises ENOTCONN if the connect did not complete
        self._connects += 1
        self.last_activity_ms = now_ms
        self.state = ConnectionState.CHECKING_API_VERSIONS
        self.connect_deadline_ms = now_ms + api_versions_timeout_ms
        self._api_versions_timeout_ms = api_versions_timeout_ms
        context = self._security.ssl_context
        if context is not None:
            self.socket = context.wrap_socket(
                self.socket,
                server_hostname=self.host if context.check_hostname else None,
                do_handshake_on_connect=False,
            )
            self._handshaking = True
            self._continue_handshake()
            return
        self._after_transport_ready()

    def _after_transport_ready(self) -> None:
        """TCP (and TLS) is up: ask ApiVersions, or assume them."""
        if not self.negotiate_versions:
            self.api_versions = ASSUMED_VERSIONS
            self._after_api_versions()
            return
        self._ask_api_versions(API_VERSIONS_VERSIONS.max_version, self.connect_deadline_ms)

    def _continue_handshake(self) -> None:
        """One step of the non-blocking TLS handshake.

        Raises:
            ssl.SSLError: the handshake failed (an untrusted or expired certificate).
        """
        sock = self.socket
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self._handshake_wants_write = False
            return
        except ssl.SSLWantWriteError:
            self._handshake_wants_write = True
            return
        self._handshaking = False
        self._handshake_wants_write = False
        self._after_transport_ready()

    def _after_api_versions(self) -> None:
        """Versions known: authenticate (SASL) or be ready."""
        if not self._security.uses_sasl:
            self.state = ConnectionState.READY
            log.debug("connected to broker %d at %s", self.node_id, self.address)
            return
        self._sasl = self._security.new_sasl_client()
        self._write_internal(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": self._sasl.mechanism})

    def _write_internal(self, api_key: int, version: int, fields: Mapping[str, Any]) -> None:
        request = _Request(
            api_key, VersionRange(version, version), fields, None, True, self.connect_deadline_ms
        )
        self._write_request(request, version)

    def _on_sasl(self, api_key: int, body: Mapping[str, Any]) -> None:
        """The broker's answer to a SASL request of the connection's own login."""
        sasl = self._sasl
        assert sasl is not None
        code = int(body.get("error_code", 0))
        if code:
            message = body.get("error_message") or ""
            if api_key == ApiKey.SASL_HANDSHAKE:
                message = (
                    f"{sasl.mechanism} not enabled; the broker offers {body.get('mechanisms')}"
                )
            raise error_for_code(code, f"broker {self.node_id}: {message}")
        token = sasl.first_token() if api_key == ApiKey.SASL_HANDSHAKE else None
        if api_key == ApiKey.SASL_AUTHENTICATE:
            token = sasl.receive(bytes(body.get("auth_bytes") or b""))
        if token is not None:
            versions = (self.api_versions or {}).get(ApiKey.SASL_AUTHENTICATE)
            version = min(versions.max_version, 2) if versions is not None else 0
            self._write_internal(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token})
            return
        if not sasl.complete:
            raise KafkaError(
                f"broker {self.node_id} ended the {sasl.mechanism} exchange early",
                code=ErrorCode.SASL_AUTHENTICATION_FAILED,
            )
        self._sasl = None
        self.state = ConnectionState.READY
        log.debug("authenticated to broker %d at %s", self.node_id, self.address)

    def _ask_api_versions(self, version: int, deadline_ms: int) -> None:
        request = _Request(
            ApiKey.API_VERSIONS,
            API_VERSIONS_VERSIONS,
            {
                "client_software_name": CLIENT_SOFTWARE_NAME,
                "client_software_version": self._software_version,
            },
            None,
            True,
            deadline_ms,
        )
        self._write_request(request, version)

    def flush(self, completions: list[Completion]) -> None:
        """Writes as much queued data as the socket takes without blocking.

        Requests that expect no response and are now wholly written complete with ``{}``.

        Raises:
            OSError: the write failed.
        """
        out = self._out
        sock = self.socket
        if self._handshaking:
            self._continue_handshake()
        if not out or sock is None or self.state is ConnectionState.CONNECTING:
            return
        if self._handshaking:
            return
        tls = self._security.uses_tls
        while out:
            try:
                if len(out) == 1 or tls:  # an SSLSocket has no sendmsg
                    sent = sock.send(out[0])
                else:
                    sent = sock.sendmsg([out[i] for i in range(min(len(out), _IOV_MAX))])
            except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                break
            self._written_bytes += sent
            self._bytes_sent += sent
            while sent:
                head = out[0]
                if sent >= len(head):
                    sent -= len(head)
                    out.popleft()
                else:
                    out[0] = head[sent:]
                    sent = 0
        unwritten = self._unwritten
        while unwritten and unwritten[0].write_mark <= self._written_bytes:
            future = unwritten.popleft().future
            if future is not None:
                completions.append((future, {}))

    def read(self, now_ms: int, completions: list[Completion]) -> None:
        """Reads what the socket holds and completes the requests it answers.

        Raises:
            OSError: the read failed, or the broker closed the connection.
            ProtocolError: a bad frame, or a response out of order (the connection is over).
        """
        sock = self.socket
        assert sock is not None
        if self._handshaking:
            self._continue_handshake()
            if not self._handshake_done:
                return
            self.flush(completions)
        tls = self._security.uses_tls
        budget = _READ_BUDGET_BYTES
        while budget > 0:
            try:
                data = sock.recv(_READ_BYTES)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return
            if not data:
                raise ConnectionResetError(errno.ECONNRESET, "the broker closed the connection")
            self._bytes_received += len(data)
            budget -= len(data)
            self.last_activity_ms = now_ms
            for frame in self._frames.feed(data):
                self._on_frame(frame, completions)
            # TLS: one recv returns at most one record; decrypted bytes may be buffered where
            # the selector cannot see them, so read on until the socket would block.
            if len(data) < _READ_BYTES and not tls:
                return

    def _on_frame(self, frame: bytes, completions: list[Completion]) -> None:
        if not self.in_flight:
            raise ProtocolError(f"broker {self.node_id} sent a response nobody asked for")
        request = self.in_flight[0]
        if len(frame) < 4 or int.from_bytes(frame[:4], "big", signed=True) != (
            request.correlation_id
        ):
            raise ProtocolError(
                f"broker {self.node_id} answered out of order: expected correlation id "
                f"{request.correlation_id}"
            )
        self.in_flight.popleft()
        self._responses_received += 1
        future = request.future
        try:
            _cid, body = codecs.decode_response(request.api_key, request.api_version, frame)
        except (OdradekError, LookupError) as error:
            if future is None:
                raise ProtocolError(f"broker {self.node_id}: bad ApiVersions response") from error
            completions.append((future, error))
            return
        if future is None:
            if request.api_key == ApiKey.API_VERSIONS:
                self._on_api_versions(body)
            else:
                self._on_sasl(request.api_key, body)
        else:
            completions.append((future, body))

    def _on_api_versions(self, body: Mapping[str, Any]) -> None:
        ranges = _ranges(body)
        code = int(body.get("error_code", 0))
        if code == ErrorCode.UNSUPPORTED_VERSION:
            offered = ranges.get(ApiKey.API_VERSIONS)
            common = offered.intersect(API_VERSIONS_VERSIONS) if offered else None
            if common is None:
                raise KafkaError(
                    f"broker {self.node_id} serves no ApiVersions version this client speaks",
                    code=ErrorCode.UNSUPPORTED_VERSION,
                )
            self._ask_api_versions(common.max_version, self.connect_deadline_ms)
            return
        if code:
            raise error_for_code(code, f"ApiVersions failed at broker {self.node_id}")
        self.api_versions = ranges
        self._after_api_versions()

    def fail_expired(self, now_ms: int, completions: list[Completion]) -> bool:
        """Fails unsent requests past their deadline; tells whether an in-flight one expired.

        An expired in-flight request cannot be skipped (responses come in order): the caller
        then closes the connection, failing it with REQUEST_TIMED_OUT.
        """
        if self.unsent and any(r.deadline_ms <= now_ms for r in self.unsent):
            kept: collections.deque[_Request] = collections.deque()
            for request in self.unsent:
                if request.deadline_ms <= now_ms and request.future is not None:
                    completions.append((request.future, self._timed_out(request, sent=False)))
                else:
                    kept.append(request)
            self.unsent = kept
        return any(request.deadline_ms <= now_ms for request in self.in_flight)

    def close(
        self, error: BaseException | None, completions: list[Completion], now_ms: int = 0
    ) -> None:
        """Closes the socket and fails every request held (``error``; timed-out ones with
        REQUEST_TIMED_OUT). Safe to call in any state."""
        sock, self.socket = self.socket, None
        if sock is not None:
            sock.close()
        self.state = ConnectionState.DISCONNECTED
        self.api_versions = None
        self._handshaking = self._handshake_wants_write = False
        self._sasl = None
        self._out.clear()
        self._queued_bytes = self._written_bytes = 0
        reason = str(error) if error is not None else "connection closed"
        # A refused login keeps its code (Kafka's clients treat it as fatal, not retriable).
        code = ErrorCode.NETWORK_EXCEPTION
        if isinstance(error, KafkaError) and error.error_code in LOGIN_ERRORS:
            code = error.error_code
        pending = [*self.in_flight, *self._unwritten, *self.unsent]
        self.in_flight.clear()
        self._unwritten.clear()
        self.unsent.clear()
        for request in pending:
            if request.future is None:
                continue
            if now_ms and request.deadline_ms <= now_ms:
                failure: BaseException = self._timed_out(request, sent=True)
            else:
                failure = KafkaError(f"broker {self.node_id} ({self.address}): {reason}", code=code)
            completions.append((request.future, failure))

    def record_failure(self) -> None:
        self._failure_count += 1

    def _timed_out(self, request: _Request, *, sent: bool) -> KafkaError:
        where = "awaiting a response from" if sent else "waiting to send to"
        return KafkaError(
            f"{_api_name(request.api_key)} request timed out {where} broker {self.node_id} "
            f"({self.address})",
            code=ErrorCode.REQUEST_TIMED_OUT,
        )


def _ranges(body: Mapping[str, Any]) -> dict[int, VersionRange]:
    ranges = {}
    for entry in body.get("api_keys") or ():
        low, high = int(entry["min_version"]), int(entry["max_version"])
        if 0 <= low <= high:
            ranges[int(entry["api_key"])] = VersionRange(low, high)
    return ranges


def _api_name(api_key: int) -> str:
    try:
        return "".join(word.capitalize() for word in ApiKey(api_key).name.split("_"))
    except ValueError:
        return f"api key {api_key}"


def _strerror(code: int) -> str:
    return os.strerror(code)
