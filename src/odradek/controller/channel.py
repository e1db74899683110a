"""``ControllerChannel``: the controller's connections to the brokers, for LeaderAndIsr,
UpdateMetadata and StopReplica (Kafka's ``ControllerChannelManager``).

Blocking sockets on the controller thread, one connection per broker kept between calls.
``send`` writes one request to each target broker first and then reads the answers, so a
round to n brokers costs about one broker's handling time, not n. Requests go out in the order
the controller makes them, one round at a time: a broker never sees a later state before an
earlier one.

Connections are opened by ``connect`` (the broker passes one that speaks its inter-broker
listener's TLS and SASL, ``broker.security.inter_broker``; by default a bare TCP connection):
it returns a socket ready for requests, or raises ``OSError`` when the broker cannot be
reached or refuses the login (logged once per broker until a connection succeeds again, not
at every round).

A broker that cannot be reached or does not answer within ``timeout_s`` gets no answer
(``None``): it is dead or dying, and the controller learns that from ``/brokers/ids``. A kept
connection the broker closed since the last round is replaced before the request goes out.

Thread safety: the controller thread only.
"""

from __future__ import annotations

import logging
import select
import socket
import ssl
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from odradek.errors import ProtocolError
from odradek.protocol.client_codec import decode_response, encode_request

logger = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_MAX_RESPONSE = 64 * 1024 * 1024

#: ``connect(host, port, timeout_s)``: a socket ready for requests (raises ``OSError``).
Connector = Callable[[str, int, float], socket.socket]


def plaintext_connect(host: str, port: int, timeout_s: float) -> socket.socket:
    """A bare TCP connection (a PLAINTEXT inter-broker listener)."""
    sock = socket.create_connection((host, port), timeout=timeout_s)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


@dataclass(frozen=True, slots=True)
class BrokerRequest:
    """One request for one broker: where it is and what to send."""

    host: str
    port: int
    api_key: int
    api_version: int
    fields: Mapping[str, Any]


class ControllerChannel:
    """See the module docstring.

    Args:
        controller_id: written as the requests' client id (``controller-<id>``).
        timeout_s: connect and answer timeout per broker.
        connect: opens a connection (see the module docstring).
    """

    def __init__(
        self,
        controller_id: int,
        *,
        timeout_s: float = 10.0,
        connect: Connector = plaintext_connect,
    ) -> None:
        self._client_id = f"controller-{controller_id}"
        self._timeout_s = timeout_s
        self._connect = connect
        #: Brokers whose last connection attempt failed (their failure was logged).
        self._unreachable: set[int] = set()
        self._sockets: dict[int, tuple[str, int, socket.socket]] = {}
        self._correlation = 0
        self.requests_sent = 0

    def send(self, requests: Mapping[int, BrokerRequest]) -> dict[int, dict[str, Any] | None]:
        """Sends each broker its request and returns each answer (``None``: no answer).

        A request that fails on a kept connection is sent once more on a new one: the broker
        may have closed the old one while a network partition hid its FIN (it rejoined the
        cluster on the same address), so the write went out and only the read failed. The
        requests are epoch-fenced and idempotent, so a second copy is harmless."""
        sent: dict[int, tuple[int, socket.socket, bool]] = {}
        answers: dict[int, dict[str, Any] | None] = {}
        for broker_id, request in requests.items():
            written = self._write(broker_id, request)
            if written is None:
                answers[broker_id] = None
            else:
                sent[broker_id] = written
        for broker_id, (correlation_id, sock, kept) in sent.items():
            request = requests[broker_id]
            answer = self._read(broker_id, request, correlation_id, sock)
            if answer is None and kept:
                again = self._write(broker_id, request)
                if again is not None:
                    answer = self._read(broker_id, request, again[0], again[1])
                    self.requests_sent += 1
            answers[broker_id] = answer
        self.requests_sent += len(sent)
        return answers

    def _read(
        self, broker_id: int, request: BrokerRequest, correlation_id: int, sock: socket.socket
    ) -> dict[str, Any] | None:
        try:
            frame = _read_frame(sock)
            got, body = decode_response(request.api_key, request.api_version, frame)
            if got != correlation_id:
                raise ProtocolError(f"correlation id {got}, expected {correlation_id}")
        except (OSError, ProtocolError) as error:
            logger.warning("controller: broker %d did not answer: %s", broker_id, error)
            self._drop(broker_id)
            return None
        return body

    def _write(
        self, broker_id: int, request: BrokerRequest
    ) -> tuple[int, socket.socket, bool] | None:
        """Writes ``request`` to the broker: its correlation id, the socket, and whether the
        connection was a kept one; ``None`` when the broker cannot be reached."""
        self._correlation += 1
        frame = encode_request(
            request.api_key,
            request.api_version,
            self._correlation,
            self._client_id,
            request.fields,
        )
        for _attempt in range(2):  # a kept connection may have died since the last round
            before = self._sockets.get(broker_id)
            sock = self._connection(broker_id, request.host, request.port)
            if sock is None:
                return None
            try:
                sock.sendall(frame)
                return self._correlation, sock, before is not None and before[2] is sock
            except OSError:
                self._drop(broker_id)
        return None

    def _connection(self, broker_id: int, host: str, port: int) -> socket.socket | None:
        kept = self._sockets.get(broker_id)
        if kept is not None:
            if kept[0] == host and kept[1] == port and _open(kept[2]):
                return kept[2]
            self._drop(broker_id)
        try:
            sock = self._connect(host, port, self._timeout_s)
        except (OSError, ProtocolError) as error:
            log = logger.debug if broker_id in self._unreachable else logger.warning
            log("controller: cannot reach broker %d at %s:%d: %s", broker_id, host, port, error)
            self._unreachable.add(broker_id)
            return None
        self._unreachable.discard(broker_id)
        self._sockets[broker_id] = (host, port, sock)
        return sock

    def _drop(self, broker_id: int) -> None:
        kept = self._sockets.pop(broker_id, None)
        if kept is not None:
            kept[2].close()

    def close(self) -> None:
        for broker_id in list(self._sockets):
            self._drop(broker_id)


def _open(sock: socket.socket) -> bool:
    """Whether a kept connection is still open: the broker may have closed it since the last
    round (it stopped, or rejoined the cluster on the same address), and a request written to
    it would still go out, only to read end-of-file. Never blocks."""
    if isinstance(sock, ssl.SSLSocket):
        return _tls_open(sock)
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return True  # nothing to read: open and idle, as it should be between rounds
    try:
        return sock.recv(1, socket.MSG_PEEK) != b""  # readable: data, or end-of-file
    except OSError:
        return False


def _tls_open(sock: ssl.SSLSocket) -> bool:
    """``_open`` under TLS (no MSG_PEEK there): readable bytes may be TLS records the broker
    sent after the handshake (TLS 1.3 session tickets), consumed here without blocking; a
    close, or application data no request asked for, means the connection is unusable."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable and not sock.pending():
        return True
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        sock.recv(1)
    except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
        return True  # only TLS records: open
    except OSError:
        return False
    finally:
        sock.settimeout(timeout)
    return False  # end-of-file, or an unexpected byte


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = []
    remaining = size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise ProtocolError("the broker closed the connection")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _read_frame(sock: socket.socket) -> bytes:
    (size,) = _SIZE.unpack(_read_exactly(sock, _SIZE.size))
    if not 0 <= size <= _MAX_RESPONSE:
        raise ProtocolError(f"response size {size} out of bounds")
    return _read_exactly(sock, size)
