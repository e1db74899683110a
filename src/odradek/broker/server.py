"""The broker's network server: the only socket code in the broker.

One asyncio ``Protocol`` per connection feeds bytes to a sans-I/O ``ServerConnection``,
dispatches decoded requests through the router, and writes responses in request order. Small
responses are held until the end of the loop's pass, then written, one write per connection
(``broker.held_writes``). A connection gets at
most ``MAX_REQUESTS_PER_TURN`` requests handled per turn of the event loop and is not read
while the rest of a read waits: one client's pipelined queue never holds up the others. Fetch
responses carry file slices: small ones are read and written like any bytes; large ones go out
with ``os.sendfile`` once the transport's buffer has drained (see ``odradek.net.sendfile``);
on a TLS listener they are read in chunks and written through the encrypting transport.

Listeners (``ServerListener``): one listening socket each, PLAINTEXT, SSL, SASL_PLAINTEXT or
SASL_SSL. Every connection has an ``Authenticator`` (``broker.security.authenticator``): on a
SASL listener it answers SaslHandshake / SaslAuthenticate itself and, until the client has
authenticated, lets nothing but those and ApiVersions through (anything else closes the
connection) and caps frames at ``sasl.server.max.receive.size``. Around each dispatch the
server sets ``CLIENT_PRINCIPAL`` (the certificate's or SASL's principal, else ANONYMOUS) and
``CLIENT_ENDPOINT`` (the advertised address of the connection's listener).

Bad input never crashes the broker: a rejected frame closes that connection only; a handler
that raises (other than by design) is logged and its connection closed.

Admission (``broker.limits``): a connection over ``max.connections`` or
``max.connections.per.ip`` is closed as soon as it is accepted; one with nothing read, written
or in flight for ``connections.max.idle.ms`` is closed by a periodic sweep; a connection with
``queued.max.requests`` requests awaiting their response, or any connection adding to more
than ``queued.max.request.bytes`` of such requests over the broker, is not read from until
they are answered (backpressure: TCP holds the client back).

Shutdown (``stop``): stop accepting, let requests in flight finish (bounded by a grace
period), then close the connections.
"""

from __future__ import annotations

import asyncio
import inspect
import ipaddress
import logging
import time
from collections import deque
from collections.abc import Awaitable, Sequence
from typing import cast

from odradek.broker.auth.throttle import mute_ms, record_request_time
from odradek.broker.connection_quotas import ConnectionQuotas, IdleConnections
from odradek.broker.context import CLIENT_ENDPOINT, CLIENT_HOST, CLIENT_LISTENER, BrokerContext
from odradek.broker.held_writes import EndOfPassWrites
from odradek.broker.limits import BrokerLimits, is_ip_address
from odradek.broker.metrics.requests import RequestMetrics
from odradek.broker.principal import ANONYMOUS, CLIENT_PRINCIPAL, KafkaPrincipal
from odradek.broker.router import Response, Router
from odradek.broker.security.authenticator import Authenticator
from odradek.broker.security.listeners import ListenerSecurity
from odradek.broker.security.tls import PrincipalMappingRules, subject_name
from odradek.broker.server_listener import ServerListener, stop_accepting
from odradek.errors import ConnectionStateError, KafkaError
from odradek.net.sendfile import (
    FileRegion,
    Part,
    as_bytes,
    copy_file_slice,
    send_file_slice,
    wants_sendfile,
)
from odradek.protocol import (
    ApiKey,
    Event,
    FetchResponseFrame,
    RecordsSlot,
    RequestReceived,
    RequestRejected,
    ServerConnection,
)
from odradek.protocol.builder import build_response
from odradek.protocol.sasl import ScramCredential, ScramMechanism

logger = logging.getLogger(__name__)

#: Requests one connection gets handled per turn of the event loop; the rest of what one read
#: brought wait for the next turn, behind the other connections (Kafka's network threads go
#: further: one request per connection until it is answered). Small enough that a turn over
#: hundreds of pipelining connections stays short, large enough that a client's pipelined
#: requests still share one read and one write.
MAX_REQUESTS_PER_TURN = 8
#: The request timing's clock (a module global: cheaper than ``time.perf_counter`` per call).
_perf_counter = time.perf_counter
#: At most one refused-connection log line per this many ms (a flood logs a count).
REFUSAL_LOG_INTERVAL_MS = 1000

_SASL_APIS = (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE)
#: Handler results that are answers, never awaitables: checked by type before the
#: (isinstance-heavy) ``inspect.isawaitable``.
_ANSWERS = frozenset((bytes, FetchResponseFrame, type(None)))


class BrokerServer:
    """Listens on one address and serves Kafka connections.

    Args:
        ctx: the broker context handed to handlers.
        router: the handlers.
        host, port: where to listen (port 0 picks a free port; ``port`` then tells it).
        max_frame_bytes: ``socket.request.max.bytes``.
        limits: the connection limits (default: Kafka's, none of which bounds anything but
            the idle time and the queued requests per connection).
        listeners: the listeners to open (default: one PLAINTEXT listener on host:port);
            ``port`` then tells the first one's bound port, ``ports`` every one's.
    """

    def __init__(
        self,
        ctx: BrokerContext,
        router: Router,
        host: str,
        port: int,
        max_frame_bytes: int,
        limits: BrokerLimits | None = None,
        listeners: Sequence[ServerListener] = (),
    ) -> None:
        self.ctx = ctx
        self.router = router
        self.host = host
        self.port = port
        self.max_frame_bytes = max_frame_bytes
        self.limits = limits or BrokerLimits()
        self.queued_max_requests = self.limits.queued_max_requests
        self.quotas = ConnectionQuotas(self.limits)
        self.listeners = tuple(listeners) or (
            ServerListener(ListenerSecurity("PLAINTEXT"), host, port),
        )
        #: The port each listener bound, by listener name (after ``start``).
        self.ports: dict[str, int] = {}
        self._principal_rules = {
            listener.name: PrincipalMappingRules.parse(
                listener.security.ssl.principal_mapping_rules
            )
            for listener in self.listeners
            if listener.security.ssl is not None
        }
        self._servers: list[asyncio.Server] = []
        self._connections: set[KafkaProtocol] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._queued_bytes = 0
        self._paused_for_bytes: set[KafkaProtocol] = set()
        self._refusals_unlogged = 0
        self._refusal_logged_ms: int | None = None
        self.stopping = False
        #: Per-API request timing (``broker.metrics``); None: requests are not timed.
        self.request_metrics: RequestMetrics | None = None
        #: Connections holding responses until the end of the loop's pass.
        self.end_of_pass = EndOfPassWrites()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.quotas = ConnectionQuotas(self.limits, await self._resolve_overrides())
        if self.limits.connections_max_idle_ms > 0:
            idle = IdleConnections(self.limits.connections_max_idle_ms)
            self._sweeper = loop.create_task(self._close_idle(idle))
        for listener in self.listeners:
            server = await loop.create_server(
                lambda listener=listener: KafkaProtocol(self, listener),
                listener.host or None,
                listener.port,
                reuse_address=True,
                ssl=listener.ssl_context,
            )
            self._servers.append(server)
            sockets = server.sockets
            self.ports[listener.name] = sockets[0].getsockname()[1] if sockets else listener.port
            logger.info(
                "listening on %s:%d (%s, %s)",
                listener.host,
                self.ports[listener.name],
                listener.name,
                listener.security.security_protocol,
            )
        self.port = self.ports[self.listeners[0].name]

    def advertised(self, listener: ServerListener) -> tuple[str, int]:
        """The address clients of ``listener`` are told to use."""
        ctx = self.ctx
        host = listener.advertised_host or (ctx.host if ctx is not None else listener.host)
        return host, listener.advertised_port or self.ports.get(listener.name, listener.port)

    def principal_of(self, listener: ServerListener, subject: str) -> KafkaPrincipal:
        """The principal of a certificate subject on ``listener``.

        Raises:
            ValueError: no ``ssl.principal.mapping.rules`` rule applies.
        """
        rules = self._principal_rules.get(listener.name)
        return KafkaPrincipal("User", subject if rules is None else rules.apply(subject))

    def scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        store = self.ctx.scram_credentials
        return None if store is None else store.credential(user, mechanism)

    async def stop(self, grace_seconds: float = 10.0) -> None:
        """Stops accepting, waits for requests in flight, closes every connection."""
        self.stopping = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        for server in self._servers:
            await stop_accepting(server)
            server.close()
        deadline = asyncio.get_running_loop().time() + grace_seconds
        while any(c.busy for c in self._connections):
            if asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.01)
        for connection in list(self._connections):
            connection.close()
        for server in self._servers:
            await server.wait_closed()

    def statistics(self) -> dict[str, int]:
        quotas = self.quotas.statistics()
        return {
            "connections": len(self._connections),
            "refused_total": quotas.refused_total,
            "refused_per_ip": quotas.refused_per_ip,
            "queued_request_bytes": self._queued_bytes,
        }

    # ----------------------------------------------------------------- admission

    async def _resolve_overrides(self) -> dict[str, int]:
        """``max.connections.per.ip.overrides`` by client address (host names resolved)."""
        resolved: dict[str, int] = {}
        loop = asyncio.get_running_loop()
        for host, limit in self.limits.max_connections_per_ip_overrides:
            if is_ip_address(host):
                resolved[str(ipaddress.ip_address(host))] = limit
                continue
            try:
                infos = await loop.getaddrinfo(host, None)
            except OSError as error:
                logger.warning(
                    "max.connections.per.ip.overrides: cannot resolve %s: %s", host, error
                )
                continue
            for info in infos:
                resolved[str(info[4][0])] = limit
        return resolved

    def admit(self, address: str) -> bool:
        """Counts a new connection from ``address``; False (logged, at most once a second
        with the count since) when a limit refuses it."""
        refusal = self.quotas.admit(address)
        if refusal is None:
            return True
        now_ms = self.ctx.clock.monotonic_ms()
        self._refusals_unlogged += 1
        last = self._refusal_logged_ms
        if last is None or now_ms - last >= REFUSAL_LOG_INTERVAL_MS:
            logger.info(
                "refused %d connection(s), the last from %s: %s",
                self._refusals_unlogged,
                address,
                refusal,
            )
            self._refusals_unlogged = 0
            self._refusal_logged_ms = now_ms
        return False

    async def _close_idle(self, idle: IdleConnections) -> None:
        """Closes connections idle for ``connections.max.idle.ms``, sweeping periodically."""
        interval = idle.sweep_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            connections = {id(c): c for c in self._connections}
            for key in idle.sweep(
                ((key, c.activity(), c.busy) for key, c in connections.items()),
                self.ctx.clock.monotonic_ms(),
            ):
                connection = connections[key]  # type: ignore[index]
                logger.info(
                    "closing connection from %s: idle for connections.max.idle.ms=%d",
                    connection.peer,
                    idle.idle_ms,
                )
                connection.close(after_writes=True)

    def hold_request_bytes(
        self, connection: KafkaProtocol, task: asyncio.Task[None], size: int
    ) -> None:
        """Counts a request awaiting its response against ``queued.max.request.bytes`` until
        ``task`` (its handling) is done."""
        if self.limits.queued_max_request_bytes < 0:
            return
        self._queued_bytes += size
        task.add_done_callback(lambda _: self._release_request_bytes(size))

    def _release_request_bytes(self, size: int) -> None:
        self._queued_bytes -= size
        if self._paused_for_bytes and not self.over_request_bytes:
            paused, self._paused_for_bytes = self._paused_for_bytes, set()
            for connection in paused:
                connection.maybe_resume_reading()

    @property
    def over_request_bytes(self) -> bool:
        bound = self.limits.queued_max_request_bytes
        return 0 < bound <= self._queued_bytes


class KafkaProtocol(asyncio.Protocol):
    """One client connection."""

    def __init__(self, server: BrokerServer, listener: ServerListener | None = None) -> None:
        self.server = server
        self.ctx = server.ctx
        self.listener = listener or server.listeners[0]
        self._tls = self.listener.ssl_context is not None
        self.authenticator = Authenticator(self.listener.security, server.scram_credential)
        #: Requests are served without asking the authenticator (PLAINTEXT, SSL).
        self._open = not self.listener.security.uses_sasl
        self._endpoint: tuple[str, int] | None = None
        #: The pending close after a failed authentication (KIP-306's delay).
        self._delayed_close: asyncio.TimerHandle | None = None
        self.conn: ServerConnection[FileRegion] = ServerConnection(
            supported=server.router.supported_versions,
            max_frame_bytes=server.max_frame_bytes,
        )
        self.transport: asyncio.Transport | None = None
        self._outbox: deque[Part] = deque()
        #: Responses held until the end of the loop's pass (``broker.held_writes``),
        #: written before anything else this connection writes or closes.
        self._held: list[bytes] = []
        self._writer: asyncio.Task[None] | None = None
        self._pending_tasks: set[asyncio.Task[None]] = set()
        self._drained = asyncio.Event()
        self._drained.set()
        self._closing = False
        self._reading_paused = False
        #: Until when (monotonic ms) a quota mutes the connection (KIP-219); 0: not muted.
        self._muted_until_ms = 0
        #: Requests read but not yet handled: they wait for a later turn of the loop.
        self._backlog: deque[Event] = deque()
        self._backlog_scheduled = False
        self._loop = asyncio.get_running_loop()  # (each call of which costs a getpid)
        self.peer = "?"
        self.client_host = ""
        self.address = ""
        self._admitted = False
        #: While requests are timed (``perf_counter``): when the last read arrived, and when
        #: the handling of the request before (or that read, or the turn) began — a request's
        #: handling starts when the one before it in the turn ended: one clock read each.
        self._read_at = 0.0
        self._stamp = 0.0

    # ----------------------------------------------------------------- asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCPTransport is not an asyncio.Transport subclass, but has its methods.
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.client_host = f"/{peer[0]}" if peer else ""
        if self.server.stopping:
            # Accepted while the server stops: nobody would ever close it.
            self.transport.abort()
            return
        self.address = str(peer[0]) if peer else ""
        if not self.server.admit(self.address):
            self.transport.abort()
            return
        self._admitted = True
        self.server._connections.add(self)
        self._endpoint = self.server.advertised(self.listener)
        if self._tls and not self._authenticate_certificate(transport):
            self.close()
            return
        if not self._open:
            sasl_limit = self.listener.security.max_receive_size
            self.conn.max_frame_bytes = min(self.server.max_frame_bytes, sasl_limit)

    def _authenticate_certificate(self, transport: asyncio.BaseTransport) -> bool:
        """The principal of the client's certificate (ANONYMOUS without one); False when no
        ``ssl.principal.mapping.rules`` rule maps its subject (Kafka refuses the client)."""
        ssl_object = transport.get_extra_info("ssl_object")
        certificate = ssl_object.getpeercert() if ssl_object is not None else None
        subject = subject_name(certificate) if certificate else None
        if subject is None:
            self.authenticator.principal = ANONYMOUS
            return True
        try:
            self.authenticator.principal = self.server.principal_of(self.listener, subject)
        except ValueError as error:
            logger.info("refusing the TLS client %s: %s", self.peer, error)
            return False
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        if self._delayed_close is not None:
            self._delayed_close.cancel()
            self._delayed_close = None
        if self._admitted:
            self._admitted = False
            self.server.quotas.release(self.address)
        self.server._connections.discard(self)
        self.server._paused_for_bytes.discard(self)
        for task in list(self._pending_tasks):
            task.cancel()
        if self._writer is not None:
            self._writer.cancel()
        self._drained.set()

    def pause_writing(self) -> None:
        self._drained.clear()

    def resume_writing(self) -> None:
        self._drained.set()

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        if self.server.request_metrics is not None:
            self._read_at = self._stamp = _perf_counter()
        events = self.conn.receive_data(data)
        if self._backlog:
            self._backlog.extend(events)
        elif len(events) <= MAX_REQUESTS_PER_TURN:
            self._serve(events)
        else:
            self._backlog.extend(events[MAX_REQUESTS_PER_TURN:])
            self._serve(events[:MAX_REQUESTS_PER_TURN])
        self._update_reading()

    def _serve(self, events: list[Event]) -> None:
        """Handles ``events`` in order and writes the responses they complete at once."""
        parts: list[Part] = []
        for event in events:
            if isinstance(event, RequestRejected):
                parts.extend(self.conn.data_to_send())
                self._write(parts)
                parts = []
                if event.close_connection:
                    logger.info("closing connection from %s: %s", self.peer, event.error)
                    self.close(after_writes=True)
                    return
                continue
            if not self._handle(event, parts):
                return
        parts.extend(self.conn.data_to_send())
        self._write(parts)
        if self._backlog and not self._backlog_scheduled:
            # The rest waits for the next turn of the loop, behind every other connection's
            # reads: a fresh connection is never stuck behind one client's pipelined queue.
            self._backlog_scheduled = True
            self._loop.call_soon(self._serve_backlog)

    def _serve_backlog(self) -> None:
        self._backlog_scheduled = False
        backlog = self._backlog
        if self._closing:
            backlog.clear()
            return
        if self.server.request_metrics is not None:
            self._stamp = _perf_counter()
        count = min(MAX_REQUESTS_PER_TURN, len(backlog))
        self._serve([backlog.popleft() for _ in range(count)])
        self._update_reading()

    def _update_reading(self) -> None:
        """Stops reading while requests wait their turn, too many await a response
        (``queued.max.requests``) or the broker holds too many request bytes
        (``queued.max.request.bytes``); reads again once the turn is over, the requests
        awaiting a response have fallen to half the bound and the bytes under theirs."""
        transport = self.transport
        if transport is None or self._closing or self._muted_until_ms:
            return
        server = self.server
        if self._reading_paused:
            if self._backlog:
                return
            if server.over_request_bytes:
                server._paused_for_bytes.add(self)  # resumed by the server when bytes fall
                return
            if self.conn.in_flight < max(1, server.queued_max_requests // 2):
                self._reading_paused = False
                transport.resume_reading()
        elif (
            self._backlog
            or self.conn.in_flight >= server.queued_max_requests
            or server.over_request_bytes
        ):
            self._reading_paused = True
            transport.pause_reading()
            if server.over_request_bytes:
                server._paused_for_bytes.add(self)

    def maybe_resume_reading(self) -> None:
        """Called by the server when its queued request bytes fell under the bound."""
        self._update_reading()

    # ----------------------------------------------------------------- requests

    def _handle(self, event: RequestReceived, parts: list[Part]) -> bool:
        request = event.request
        if not self._open:
            admitted = self._admit_request(event, parts)
            if admitted is not True:
                return admitted is None  # None: answered here; False: closing
        metrics = self.server.request_metrics
        started = self._stamp
        try:
            # Set only when they differ from what the context holds: each set builds a new
            # context mapping and a token, and the connections served in a turn mostly share
            # their values (or, on uvloop, each runs in a context of its own).
            if CLIENT_HOST.get(None) != self.client_host:
                CLIENT_HOST.set(self.client_host)
            principal = self.authenticator.principal
            if CLIENT_PRINCIPAL.get(None) is not principal:
                CLIENT_PRINCIPAL.set(principal)
            if CLIENT_ENDPOINT.get(None) != self._endpoint:
                CLIENT_ENDPOINT.set(self._endpoint)
            if CLIENT_LISTENER.get(None) != self.listener.name:
                CLIENT_LISTENER.set(self.listener.name)
            quotas = self.ctx.quotas
            if quotas is not None and quotas.request_time_active:  # request_percentage
                started_ns = time.perf_counter_ns()
                result = self.server.router.dispatch(self.ctx, request)
                record_request_time(self.ctx, request, time.perf_counter_ns() - started_ns)
            else:
                result = self.server.router.dispatch(self.ctx, request)
        except Exception as error:
            self._fail(request.api_key.name, error)
            return False
        if type(result) not in _ANSWERS and inspect.isawaitable(result):
            task = asyncio.ensure_future(self._finish(result, event, started, self._read_at))
            self._pending_tasks.add(task)
            task.add_done_callback(self._pending_tasks.discard)
            self.server.hold_request_bytes(self, task, event.frame_size)
            return True
        if event.expects_response:
            try:
                parts.extend(self.conn.send_response(event, result))  # type: ignore[arg-type]
            except ConnectionStateError as error:
                self._fail(request.api_key.name, error)
                return False
        if metrics is not None:
            read_at = self._read_at
            ended = self._stamp = _perf_counter()
            metrics.record(request.header.api_key, started - read_at, ended - read_at)
        if (quotas := self.ctx.quotas) is not None and quotas.active:
            self._mute(mute_ms(self.ctx, request))
        return True

    def _admit_request(self, event: RequestReceived, parts: list[Part]) -> bool | None:
        """On a SASL listener: answers the SASL requests of an exchange (None), and lets
        another request through (True) only if the connection may send it now. False: stop
        serving this connection (it is closing; what ``parts`` held is written first)."""
        request = event.request
        api_key = request.api_key
        auth = self.authenticator
        if api_key in _SASL_APIS and (
            api_key == ApiKey.SASL_HANDSHAKE or not auth.authenticated or auth.reauthenticating
        ):
            if api_key == ApiKey.SASL_HANDSHAKE:
                mechanism = str(request.body.mechanism)  # type: ignore[union-attr]
                step = auth.handshake(mechanism, request.api_version)
            else:
                token = request.body.auth_bytes  # type: ignore[union-attr]
                step = auth.authenticate(token, self.ctx.clock.monotonic_ms())
            response = build_response(api_key, request.api_version, step.fields)
            parts.extend(self.conn.send_response(event, response))
            if step.close:
                self._write(parts)
                parts.clear()
                self._close_after_failure()
                return False
            if auth.authenticated:
                self.conn.max_frame_bytes = self.server.max_frame_bytes
            return None
        if auth.allows(api_key, self.ctx.clock.monotonic_ms()):
            return True
        logger.info(
            "closing connection from %s: %s before %s",
            self.peer,
            api_key.name,
            "authentication" if not auth.authenticated else "re-authentication",
        )
        self._write(parts)
        parts.clear()
        self.close(after_writes=True)
        return False

    def _close_after_failure(self) -> None:
        """Closes after ``connection.failed.authentication.delay.ms`` (KIP-306), not reading
        meanwhile: slows password guessing, and lets the client read the answer before the
        connection goes (some clients race the close against the response)."""
        delay_ms = self.listener.security.failed_authentication_delay_ms
        transport = self.transport
        if delay_ms <= 0 or transport is None:
            self.close(after_writes=True)
            return
        self.write_held()
        self._closing = True  # nothing more is read or served
        self._reading_paused = True
        transport.pause_reading()
        self._delayed_close = self._loop.call_later(delay_ms / 1000, self._close_delayed)

    def _close_delayed(self) -> None:
        # Reading again: a TLS transport's close waits for the peer's close_notify.
        transport = self.transport
        if transport is not None:
            transport.resume_reading()
            transport.close()

    async def _finish(
        self,
        pending: Awaitable[Response],
        event: RequestReceived,
        started: float,
        read_at: float,
    ) -> None:
        try:
            result = await pending
        except asyncio.CancelledError:
            raise
        except Exception as error:
            self._fail(event.request.api_key.name, error)
            return
        if self._closing or not event.expects_response:
            return
        try:
            self._write(self.conn.send_response(event, result))  # type: ignore[arg-type]
        except ConnectionStateError as error:
            self._fail(event.request.api_key.name, error)
            return
        metrics = self.server.request_metrics
        if metrics is not None:
            metrics.record(
                event.request.header.api_key, started - read_at, _perf_counter() - read_at
            )
        if (quotas := self.ctx.quotas) is not None and quotas.active:
            self._mute(mute_ms(self.ctx, event.request))
        self._update_reading()

    def _mute(self, duration_ms: int) -> None:
        """Stops reading for ``duration_ms`` after a throttled response (KIP-219); a longer
        mute while muted extends it."""
        transport = self.transport
        if duration_ms <= 0 or transport is None or self._closing:
            return
        until = self.ctx.clock.monotonic_ms() + duration_ms
        if until <= self._muted_until_ms:
            return
        muted = bool(self._muted_until_ms)
        if not muted and not self._reading_paused:
            transport.pause_reading()
        self._muted_until_ms = until
        if not muted:
            self._loop.call_later(duration_ms / 1000, self._unmute)

    def _unmute(self) -> None:
        if not self._muted_until_ms or self._closing or self.transport is None:
            return
        remaining_ms = self._muted_until_ms - self.ctx.clock.monotonic_ms()
        if remaining_ms > 0:  # extended meanwhile (or the timer ran early)
            self._loop.call_later(remaining_ms / 1000, self._unmute)
            return
        self._muted_until_ms = 0
        if self._reading_paused:
            self._update_reading()
        else:
            self.transport.resume_reading()

    def _fail(self, api: str, error: Exception) -> None:
        if isinstance(error, KafkaError):
            logger.info("closing connection from %s after %s: %s", self.peer, api, error)
        else:
            logger.exception("handler for %s failed; closing connection from %s", api, self.peer)
        self.close()

    # ----------------------------------------------------------------- writing

    def _write(self, parts: list[Part]) -> None:
        """Writes parts in order. Bytes and small records slices (read now) are joined and
        held until the end of the loop's pass (``broker.held_writes``); a slice large
        enough for ``sendfile``, and whatever follows it until the outbox is empty, goes
        through the outbox, after what was held."""
        if not parts or self.transport is None or self._closing:
            return
        if self._writer is None:
            data: bytes | None = None
            if len(parts) == 1 and type(parts[0]) is bytes:
                data = parts[0]  # the common case: one small response
            elif not any(wants_sendfile(part) for part in parts):
                try:
                    data = b"".join(as_bytes(part) for part in parts)
                except (OSError, KafkaError) as error:
                    # The records' file went away under the response (its topic was deleted
                    # while a long poll waited): this response cannot be completed.
                    logger.warning("cannot read records for %s, closing it: %s", self.peer, error)
                    self.close()
                    return
            if data is not None:
                held = self._held
                if not held:
                    self.server.end_of_pass.hold(self, self._loop)
                held.append(data)
                return
        self.write_held()
        self._outbox.extend(parts)
        if self._writer is None:
            self._writer = asyncio.ensure_future(self._drain_outbox())

    def write_held(self) -> None:
        """Writes the responses held for the end of the loop's pass (dropped when the
        transport is already closing: an aborted connection)."""
        held = self._held
        if not held:
            return
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(held[0] if len(held) == 1 else b"".join(held))
        held.clear()

    async def _drain_outbox(self) -> None:
        transport = self.transport
        assert transport is not None
        try:
            while self._outbox and not self._closing:
                part = self._outbox.popleft()
                if wants_sendfile(part):
                    assert isinstance(part, RecordsSlot)
                    if self._tls:
                        await copy_file_slice(transport, part.records, part.size, self._writable)
                        continue
                    await self._wait_drained(transport)
                    await send_file_slice(transport, part.records, part.size)
                else:
                    transport.write(as_bytes(part))
        except (ConnectionError, OSError, KafkaError) as error:
            logger.info("write to %s failed: %s", self.peer, error)
            self.close()
        finally:
            self._writer = None

    async def _writable(self) -> None:
        # The transport paused us (pause_writing) over its high-water mark: wait for resume.
        if not self._closing:
            await self._drained.wait()

    async def _wait_drained(self, transport: asyncio.Transport) -> None:
        # The transport's buffer must be empty before bytes bypass it via sendfile.
        while transport.get_write_buffer_size() > 0 and not self._closing:
            self._drained.clear()
            transport.set_write_buffer_limits(high=0)
            await self._drained.wait()
        transport.set_write_buffer_limits()

    # ----------------------------------------------------------------- lifecycle

    @property
    def busy(self) -> bool:
        return (
            bool(self._pending_tasks)
            or self._writer is not None
            or bool(self._backlog)
            or bool(self._held)
        )

    def activity(self) -> tuple[int, int, int, int]:
        """What changes whenever the connection reads or writes (for the idle sweep)."""
        stats = self.conn.statistics()
        buffered = self.transport.get_write_buffer_size() if self.transport else 0
        return (
            stats.requests_received + stats.requests_without_response,
            stats.responses_sent,
            stats.buffered_bytes,
            buffered,
        )

    def close(self, *, after_writes: bool = False) -> None:
        # Held responses go first, as they would have before a write that came later: an
        # abort loses only what the transport could not send at once, as it did without them.
        self.write_held()
        delayed = self._delayed_close
        if delayed is not None and self.transport is not None:
            # The server stops: what waits out an authentication failure (or the TLS
            # close_notify after it) goes now.
            delayed.cancel()
            self.transport.abort()
            return
        if self._closing or self.transport is None:
            return
        self._closing = True
        if after_writes:
            self.transport.close()  # flushes the buffer, then closes
        else:
            self.transport.abort()
