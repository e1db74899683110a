"""``NetworkClient``: the client's non-blocking, pipelined connections to every broker node.

This module owns the client's sockets and the thread that drives them. The threading rule it
keeps: **one thread owns a NetworkClient** (a producer's sender thread, or the caller of a
synchronous admin or simple-consumer call). Only that thread calls ``send``, ``ready``,
``poll``, ``close`` and the other methods; any thread may call ``wakeup`` (to cut a ``poll``
short) and may wait on a ``RequestFuture`` with ``result(timeout)``. Futures complete, and
their callbacks run, on the owner thread inside ``poll``, after that poll's socket I/O.

What a request goes through::

    future = client.send(node_id, ApiKey.METADATA, {"topics": None}, versions=VersionRange(1, 4))
    while not future.done():
        client.poll(100)          # connects, negotiates versions, writes, reads, times out
    body = future.result()        # the decoded response, a plain mapping

- Nodes are broker ids with addresses (``update_nodes``, fed by cluster metadata); the
  ``bootstrap.servers`` addresses are nodes -1, -2, ... until metadata names the brokers.
- ``send`` to a node that is not connected queues the request and connects (after the node's
  reconnect backoff); the request is written once the connection is READY (ApiVersions done)
  and a pipelining slot is free (``max.in.flight.requests.per.connection``). The version is the
  highest both the broker and ``versions`` allow, chosen when written; ``fields`` may be a
  function of that version.
- Each request must be answered within ``timeout_ms`` (default ``request.timeout.ms``) of being
  submitted. Responses arrive in order, so a request that times out on the wire closes its
  connection: it fails with REQUEST_TIMED_OUT, the others on it with NETWORK_EXCEPTION.
- A lost or refused connection fails every request on it with NETWORK_EXCEPTION (retriable)
  and tells the disconnect listeners (cluster metadata refreshes). The next attempt waits
  ``reconnect.backoff.ms`` doubled per consecutive failure up to ``reconnect.backoff.max.ms``,
  with ±20% jitter (KIP-144); a connection that does not come up within
  ``socket.connection.setup.timeout.ms`` (doubled likewise up to its ``.max.ms``) fails too.
- ``expect_response=False`` (Produce acks=0) resolves the future with ``{}`` once written.
- Idle connections close after ``connections.max.idle.ms``.

Encoding and decoding go through ``client.codecs`` (the seam for hand-written Produce and
Fetch codecs).
"""

from __future__ import annotations

import logging
import selectors
import socket
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._version import __version__
from odradek.client.backoff import backoff_ms
from odradek.client.closeable import Closeable
from odradek.client.config import ClientConfig
from odradek.client.connection import (
    BrokerConnection,
    Completion,
    ConnectionState,
    ConnectionStatistics,
    Fields,
    RequestFuture,
)
from odradek.client.security import ClientSecurity
from odradek.errors import ConfigError, ErrorCode, KafkaError, OdradekError
from odradek.protocol.api_keys import VersionRange, schema_versions

__all__ = ["NetworkClient", "RequestFuture", "bootstrap_addresses", "parse_bootstrap_servers"]

log = logging.getLogger(__name__)

#: A poll hook: called with the monotonic time at the start of every ``poll``; returns the ms
#: until it next needs to run (``None``: no need), which bounds how long ``poll`` blocks.
PollHook = Callable[[int], int | None]
DisconnectListener = Callable[[int], None]

_MAX_POLL_MS: Final = 3_600_000


def parse_bootstrap_servers(text: str) -> list[tuple[str, int]]:
    """``host:port[,host:port...]`` (IPv6 hosts in brackets) to a list of addresses.

    Raises:
        ValueError: an entry without a host or a port, or a port outside 1..65535; the
            message names the entry.
    """
    addresses = []
    for entry in (part.strip() for part in text.split(",")):
        host, sep, port_text = entry.rpartition(":")
        host = host.strip()
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"expected HOST:PORT, got {entry!r}")
        addresses.append((host, int(port_text)))
    return addresses


def bootstrap_addresses(config: ClientConfig) -> list[tuple[str, int]]:
    """The ``bootstrap.servers`` addresses.

    Raises:
        ConfigError: none given, or an entry that is not ``host:port`` (named).
    """
    entries = config.get_list("bootstrap.servers")
    if not entries:
        raise ConfigError("bootstrap.servers: at least one host:port is required")
    try:
        return parse_bootstrap_servers(",".join(entries))
    except ValueError as error:
        raise ConfigError(f"bootstrap.servers: {error}") from None


class NetworkClient(Closeable):
    """Connections to broker nodes, driven by ``poll`` on one owner thread.

    Args:
        config: a client configuration (any client type: only common keys are read).
        clock: the time source (monotonic readings are used).

    Raises:
        ConfigError: ``bootstrap.servers`` is missing or malformed.
    """

    def __init__(self, config: ClientConfig, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self._config = config
        self._clock = clock
        self._client_id = config.get_str("client.id") or None
        self._request_timeout_ms = config.get_int("request.timeout.ms")
        self._reconnect_backoff_ms = config.get_int("reconnect.backoff.ms")
        self._reconnect_backoff_max_ms = config.get_int("reconnect.backoff.max.ms")
        self._setup_timeout_ms = config.get_int("socket.connection.setup.timeout.ms")
        self._setup_timeout_max_ms = config.get_int("socket.connection.setup.timeout.max.ms")
        self._idle_ms = config.get_int("connections.max.idle.ms")
        self._max_in_flight = config.get_int("max.in.flight.requests.per.connection")
        self._negotiate = config.get_bool("api.version.request")
        self._security = ClientSecurity.from_config(config)
        self._api_versions_timeout_ms = config.get_int("api.version.request.timeout.ms")
        self._max_frame_bytes = config.get_int("socket.max.frame.bytes")
        self._send_buffer_bytes = config.get_int("send.buffer.bytes")
        self._receive_buffer_bytes = config.get_int("receive.buffer.bytes")
        bootstrap = bootstrap_addresses(config)
        self._bootstrap: dict[int, tuple[str, int]] = {
            -(index + 1): address for index, address in enumerate(bootstrap)
        }
        self._brokers: dict[int, tuple[str, int]] = {}
        self._connections: dict[int, BrokerConnection] = {}
        self._selector = selectors.DefaultSelector()
        self._interest: dict[int, int] = {}  # node id -> registered selector events
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._wakeup_pending = False
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._completions: list[Completion] = []
        self._hooks: list[PollHook] = []
        self._disconnect_listeners: list[DisconnectListener] = []
        self._closed = False

    # ------------------------------------------------------------------ nodes

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def config(self) -> ClientConfig:
        return self._config

    @property
    def bootstrap_nodes(self) -> list[int]:
        """The node ids of the ``bootstrap.servers`` addresses (-1, -2, ...)."""
        return list(self._bootstrap)

    @property
    def broker_nodes(self) -> list[int]:
        """The broker ids known from metadata (``update_nodes``)."""
        return list(self._brokers)

    def address_of(self, node_id: int) -> tuple[str, int] | None:
        return self._brokers.get(node_id) or self._bootstrap.get(node_id)

    def update_nodes(self, brokers: Mapping[int, tuple[str, int]]) -> None:
        """Sets the brokers' addresses (from Metadata). A broker that is gone or moved has its
        connection closed (its requests fail with NETWORK_EXCEPTION)."""
        new = dict(brokers)
        for node_id in list(self._brokers):
            if new.get(node_id) != self._brokers[node_id]:
                self._drop(node_id, "the broker left the cluster metadata or moved")
        self._brokers = new

    def _drop(self, node_id: int, reason: str) -> None:
        connection = self._connections.pop(node_id, None)
        if connection is not None:
            self._close_connection(connection, OdradekError(reason), count_failure=False)

    def _connection(self, node_id: int) -> BrokerConnection:
        connection = self._connections.get(node_id)
        if connection is not None:
            return connection
        address = self.address_of(node_id)
        if address is None:
            raise KafkaError(f"unknown broker node {node_id}", code=ErrorCode.BROKER_NOT_AVAILABLE)
        connection = BrokerConnection(
            node_id,
            address[0],
            address[1],
            client_id=self._client_id,
            max_in_flight=self._max_in_flight,
            max_frame_bytes=self._max_frame_bytes,
            negotiate_versions=self._negotiate,
            send_buffer_bytes=self._send_buffer_bytes,
            receive_buffer_bytes=self._receive_buffer_bytes,
            software_version=__version__,
            security=self._security,
        )
        self._connections[node_id] = connection
        return connection

    # ------------------------------------------------------------------ state queries

    def ready(self, node_id: int) -> bool:
        """Whether a request to ``node_id`` would be written now; starts connecting if not
        connected and the node's backoff has passed.

        Raises:
            KafkaError: BROKER_NOT_AVAILABLE for a node without an address.
        """
        connection = self._connection(node_id)
        if connection.is_ready and not connection.unsent:
            return True
        if connection.state is ConnectionState.DISCONNECTED:
            self._maybe_connect(connection, self._clock.monotonic_ms())
        return False

    def is_connected(self, node_id: int) -> bool:
        """Whether the node's connection is up and its versions known."""
        connection = self._connections.get(node_id)
        return connection is not None and connection.state is ConnectionState.READY

    def connection_state(self, node_id: int) -> ConnectionState:
        connection = self._connections.get(node_id)
        return connection.state if connection is not None else ConnectionState.DISCONNECTED

    def connection_delay_ms(self, node_id: int) -> int:
        """Ms until a connection attempt to ``node_id`` may start (0: now, or connected)."""
        connection = self._connections.get(node_id)
        if connection is None or connection.state is not ConnectionState.DISCONNECTED:
            return 0
        return max(0, connection.next_attempt_ms - self._clock.monotonic_ms())

    def is_blacked_out(self, node_id: int) -> bool:
        """Whether the node is disconnected and still inside its reconnect backoff."""
        return self.connection_delay_ms(node_id) > 0

    def in_flight_count(self, node_id: int | None = None) -> int:
        """Requests awaiting a response (or waiting to be written), on one node or all."""
        if node_id is not None:
            connection = self._connections.get(node_id)
            if connection is None:
                return 0
            return len(connection.in_flight) + len(connection.unsent)
        return sum(len(c.in_flight) + len(c.unsent) for c in self._connections.values())

    def api_version(self, node_id: int, api_key: int, usable: VersionRange) -> int | None:
        """The version a request of ``api_key`` within ``usable`` would be written at now
        (``None``: not connected yet, or no common version)."""
        connection = self._connections.get(node_id)
        if connection is None or connection.state is not ConnectionState.READY:
            return None
        return connection.pick_version(api_key, usable)

    def least_loaded_node(self) -> int | None:
        """A node to send a request that any broker can answer (Metadata, admin calls).

        The broker nodes (or, before metadata names them, the bootstrap ones) are ranked: a
        ready connection with the fewest requests first, then one being set up, then one that
        may be connected now. ``None`` when every node is inside its reconnect backoff.
        """
        candidates = list(self._brokers) or list(self._bootstrap)
        best: int | None = None
        best_rank: tuple[int, int] | None = None
        now = self._clock.monotonic_ms()
        for node_id in candidates:
            connection = self._connections.get(node_id)
            if connection is None:
                rank = (2, 0)
            elif connection.state is ConnectionState.READY:
                rank = (0, len(connection.in_flight) + len(connection.unsent))
            elif connection.state is not ConnectionState.DISCONNECTED:
                rank = (1, len(connection.unsent))
            elif connection.next_attempt_ms <= now:
                rank = (2, connection.failures)
            else:
                continue
            if best_rank is None or rank < best_rank:
                best, best_rank = node_id, rank
        return best

    def statistics(self) -> dict[int, ConnectionStatistics]:
        """A snapshot of every node connection's counters, by node id."""
        return {node_id: c.statistics() for node_id, c in self._connections.items()}

    # ------------------------------------------------------------------ requests

    def send(
        self,
        node_id: int,
        api_key: int,
        fields: Fields,
        *,
        versions: VersionRange | None = None,
        expect_response: bool = True,
        timeout_ms: int | None = None,
    ) -> RequestFuture:
        """Submits a request to ``node_id`` and returns its future (see the module docstring).

        Args:
            node_id: a broker id or a bootstrap node id.
            api_key: the API.
            fields: the body as ``client_codec`` takes it, or a function of the version.
            versions: the versions this caller can build and read (default: every version
                the codec models).
            expect_response: False for Produce with acks=0.
            timeout_ms: the deadline from now (default ``request.timeout.ms``).

        The future fails (never raises here) for a closed client or an unknown node.
        """
        future = RequestFuture(node_id, api_key)
        if self._closed:
            future.set_exception(
                KafkaError("the network client is closed", code=ErrorCode.NETWORK_EXCEPTION)
            )
            return future
        if versions is None:
            versions = schema_versions(api_key)
            if versions is None:
                future.set_exception(
                    KafkaError(f"unknown api key {api_key}", code=ErrorCode.UNSUPPORTED_VERSION)
                )
                return future
        try:
            connection = self._connection(node_id)
        except KafkaError as error:
            future.set_exception(error)
            return future
        now = self._clock.monotonic_ms()
        connection.last_activity_ms = now  # a connection that only writes (acks=0) is in use
        deadline = now + (self._request_timeout_ms if timeout_ms is None else timeout_ms)
        connection.submit(
            api_key,
            versions,
            fields,
            future,
            expect_response=expect_response,
            deadline_ms=deadline,
        )
        if connection.state is ConnectionState.READY:
            self._transmit(connection)
        elif connection.state is ConnectionState.DISCONNECTED:
            self._maybe_connect(connection, now)
        return future

    def wakeup(self) -> None:
        """Makes a ``poll`` in progress (or the next one) return soon. Any thread may call it."""
        if self._wakeup_pending:
            return
        self._wakeup_pending = True
        try:
            self._wake_w.send(b"\x00")
        except (BlockingIOError, InterruptedError):
            pass  # the buffer is full of wakeups already
        except OSError:
            pass  # closed

    def add_poll_hook(self, hook: PollHook) -> None:
        """Runs ``hook(now_ms)`` at the start of every ``poll`` (see ``PollHook``)."""
        self._hooks.append(hook)

    def add_disconnect_listener(self, listener: DisconnectListener) -> None:
        """Calls ``listener(node_id)`` on the owner thread whenever a connection fails."""
        self._disconnect_listeners.append(listener)

    # ------------------------------------------------------------------ poll

    def poll(self, timeout_ms: int) -> int:
        """Does the I/O that is due, waiting up to ``timeout_ms`` for some, and completes the
        requests it answers (their callbacks run here).

        Returns early on a ``wakeup`` or as soon as anything completed. Returns the number of
        futures completed.
        """
        if self._closed:
            return 0
        now = self._clock.monotonic_ms()
        wait = max(0, min(timeout_ms, _MAX_POLL_MS))
        for hook in list(self._hooks):
            due = hook(now)
            if due is not None:
                wait = min(wait, max(0, due))
        wait = min(wait, self._prepare(now))
        if self._completions:
            wait = 0
        events = self._selector.select(wait / 1000.0)
        now = self._clock.monotonic_ms()
        for key, mask in events:
            node_id = key.data
            if node_id is None:
                self._drain_wakeup()
                continue
            connection = self._connections.get(node_id)
            if connection is not None:
                self._on_event(connection, mask, now)
        for connection in list(self._connections.values()):
            if connection.state is ConnectionState.READY and connection.unsent:
                self._transmit(connection)
            self._expire(connection, now)
        return self._fire()

    def _prepare(self, now: int) -> int:
        """Starts due connection attempts and returns the ms until the next deadline."""
        wait = _MAX_POLL_MS
        for connection in list(self._connections.values()):
            state = connection.state
            if state is ConnectionState.DISCONNECTED:
                if connection.unsent:
                    if connection.next_attempt_ms <= now:
                        self._maybe_connect(connection, now)
                    else:
                        wait = min(wait, connection.next_attempt_ms - now)
            elif (
                state is ConnectionState.READY
                and self._idle_ms >= 0
                and not connection.has_requests
                and now - connection.last_activity_ms >= self._idle_ms
            ):
                log.debug("closing idle connection to broker %d", connection.node_id)
                self._close_connection(connection, None, count_failure=False, now=now)
                connection.next_attempt_ms = now
                continue
            deadline = connection.earliest_deadline_ms()
            if deadline is not None:
                wait = min(wait, deadline - now)
            if state is ConnectionState.READY and self._idle_ms >= 0:
                wait = min(wait, connection.last_activity_ms + self._idle_ms - now)
        return max(0, wait)

    def _drain_wakeup(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        # Cleared after draining: a wakeup racing with this poll is seen by the caller's
        # re-check of its own state after poll returns, and the next one writes again.
        self._wakeup_pending = False

    def _on_event(self, connection: BrokerConnection, mask: int, now: int) -> None:
        try:
            if connection.state is ConnectionState.CONNECTING:
                if mask & (selectors.EVENT_WRITE | selectors.EVENT_READ):
                    connection.finish_connect(now, self._api_versions_timeout_ms)
                    connection.flush(self._completions)
                self._update_interest(connection)
                return
            if mask & selectors.EVENT_READ:
                was_ready = connection.state is ConnectionState.READY
                connection.read(now, self._completions)
                if not was_ready and connection.state is ConnectionState.READY:
                    connection.failures = 0
                    self._transmit(connection)
            if mask & selectors.EVENT_WRITE and connection.socket is not None:
                connection.flush(self._completions)
            if connection.socket is not None:
                self._update_interest(connection)
        except (OSError, OdradekError) as error:
            established = connection.state is ConnectionState.READY
            self._close_connection(connection, error, count_failure=not established, now=now)

    def _transmit(self, connection: BrokerConnection) -> None:
        try:
            connection.transmit(self._completions)
        except OSError as error:
            now = self._clock.monotonic_ms()
            self._close_connection(connection, error, count_failure=False, now=now)
            return
        self._update_interest(connection)

    def _expire(self, connection: BrokerConnection, now: int) -> None:
        state = connection.state
        if state is ConnectionState.DISCONNECTED:
            if connection.unsent:
                connection.fail_expired(now, self._completions)
            return
        if state is not ConnectionState.READY and connection.connect_deadline_ms <= now:
            what = (
                "connection setup"
                if state is ConnectionState.CONNECTING
                else "the ApiVersions exchange"
            )
            self._close_connection(
                connection,
                TimeoutError(f"{what} timed out"),
                count_failure=True,
                now=now,
            )
            return
        if connection.fail_expired(now, self._completions):
            log.info("a request to broker %d timed out; closing its connection", connection.node_id)
            self._close_connection(
                connection, TimeoutError("request timed out"), count_failure=False, now=now
            )

    def _maybe_connect(self, connection: BrokerConnection, now: int) -> None:
        if connection.next_attempt_ms > now:
            return
        setup_ms = backoff_ms(
            self._setup_timeout_ms, self._setup_timeout_max_ms, connection.failures
        )
        try:
            connection.connect(now, max(1, setup_ms))
        except OSError as error:
            self._close_connection(connection, error, count_failure=True, now=now)
            return
        self._update_interest(connection)

    def _update_interest(self, connection: BrokerConnection) -> None:
        sock = connection.socket
        node_id = connection.node_id
        registered = self._interest.get(node_id, 0)
        if sock is None:
            return
        if connection.state is ConnectionState.CONNECTING:
            wanted = selectors.EVENT_WRITE
        else:
            wanted = selectors.EVENT_READ | (selectors.EVENT_WRITE if connection.wants_write else 0)
        if wanted == registered:
            return
        if registered:
            self._selector.modify(sock, wanted, node_id)
        else:
            self._selector.register(sock, wanted, node_id)
        self._interest[node_id] = wanted

    def _close_connection(
        self,
        connection: BrokerConnection,
        error: BaseException | None,
        *,
        count_failure: bool,
        now: int = 0,
    ) -> None:
        sock = connection.socket
        if sock is not None and self._interest.pop(connection.node_id, 0):
            self._selector.unregister(sock)
        was = connection.state
        connection.close(error, self._completions, now)
        if error is None:
            return
        now = now or self._clock.monotonic_ms()
        connection.next_attempt_ms = now + backoff_ms(
            self._reconnect_backoff_ms, self._reconnect_backoff_max_ms, connection.failures
        )
        if count_failure or was is not ConnectionState.READY:
            connection.failures += 1
        connection.record_failure()
        log.info(
            "connection to broker %d (%s) %s: %s",
            connection.node_id,
            connection.address,
            "failed" if was is not ConnectionState.READY else "lost",
            error,
        )
        for listener in list(self._disconnect_listeners):
            try:
                listener(connection.node_id)
            except Exception:
                log.exception("disconnect listener failed")

    def _fire(self) -> int:
        fired = 0
        while self._completions:
            batch, self._completions = self._completions, []
            for future, outcome in batch:
                if future.done():
                    continue
                if isinstance(outcome, BaseException):
                    future.set_exception(outcome)
                else:
                    future.set_result(outcome)
                fired += 1
        return fired

    # ------------------------------------------------------------------ lifecycle

    def disconnect(self, node_id: int) -> None:
        """Closes the node's connection (its requests fail with NETWORK_EXCEPTION) without
        a reconnect backoff. Futures complete at the next ``poll``."""
        connection = self._connections.get(node_id)
        if connection is not None and connection.state is not ConnectionState.DISCONNECTED:
            self._close_connection(connection, None, count_failure=False)

    def close(self) -> None:
        """Closes every connection and fails what they held; idempotent. Owner thread only."""
        if self._closed:
            return
        self._closed = True
        for connection in self._connections.values():
            sock = connection.socket
            if sock is not None and self._interest.pop(connection.node_id, 0):
                self._selector.unregister(sock)
            connection.close(OdradekError("the network client is closed"), self._completions)
        self._connections.clear()
        self._fire()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def wait(self, futures: Iterable[RequestFuture], deadline_ms: int) -> bool:
        """Polls until every future is done or the monotonic clock passes ``deadline_ms``.

        For owner-thread callers that block on their own requests (admin calls). Returns
        whether all are done.
        """
        pending = [future for future in futures if not future.done()]
        while pending:
            remaining = deadline_ms - self._clock.monotonic_ms()
            if remaining <= 0:
                return False
            self.poll(remaining)
            pending = [future for future in pending if not future.done()]
        return True
