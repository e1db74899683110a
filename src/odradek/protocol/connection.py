"""The broker's side of one Kafka connection, as a state machine that does no I/O.

This module owns what a connection owes its client: frames in, decoded requests out, and
responses out in request order. The rules it keeps:

- responses leave in the order their requests arrived (Kafka guarantees it per connection),
  whatever order the handlers finish in: a finished response waits for every earlier one;
- a Produce request with ``acks=0`` gets no response at all, and holds up nothing;
- an ApiVersions request newer than we serve is answered here, in order, with a v0 body
  carrying UNSUPPORTED_VERSION and the advertised ranges (KIP-511), so the client retries
  lower; every other unsupported or undecodable request, and any bad frame, ends the
  connection (as Kafka does): the event says so and the owner closes the socket.

- a response is matched to its request by the ``RequestReceived`` event itself, never by
  correlation id alone: a client may reuse a correlation id while a request with it is still
  in flight (Kafka answers both, in order), so the id cannot tell two requests apart.

Use (the owner is the broker's network shell)::

    events = conn.receive_data(data)         # after each read
    ...dispatch RequestReceived to handlers; close on RequestRejected(close_connection=True)
    write(conn.data_to_send())               # answers the connection produced itself
    write(conn.send_response(event, response))   # when the handler of `event` finishes

``data_to_send`` and ``send_response`` return the parts that became ready: ``bytes`` to write
and ``RecordsSlot`` gaps to fill with the slot's records (``os.sendfile``), in that order;
adjacent bytes are joined, so each batch is one write per run of framing. Not thread-safe:
one owner calls every method.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeAlias, TypeVar

from odradek.errors import (
    ConnectionStateError,
    InvalidFrameError,
    ProtocolError,
    RequestDecodeError,
    UnsupportedVersionError,
)
from odradek.protocol.api_keys import IMPLEMENTED_VERSIONS, ApiKey
from odradek.protocol.codec import (
    Request,
    ResponsePayload,
    SupportedVersions,
    decode_request,
    encode_api_versions_fallback,
    encode_response,
    is_response_for,
)
from odradek.protocol.fetch_response import FetchResponseFrame, RecordsSlot
from odradek.protocol.framing import DEFAULT_MAX_FRAME_BYTES, FrameDecoder
from odradek.protocol.header import RequestHeader, response_header_version

R = TypeVar("R")

_FRAME_HEAD = struct.Struct(">ii")  # size, correlation_id


class RequestReceived(NamedTuple):
    """A request decoded from the stream; ``expects_response`` is False for acks=0 Produce.

    ``sequence`` numbers the requests owing a response on this connection (0, 1, 2, ...; -1
    for none): it is what ``send_response`` matches a response to.
    """

    request: Request
    expects_response: bool
    sequence: int = -1

    @property
    def header(self) -> RequestHeader:
        return self.request.header

    @property
    def frame_size(self) -> int:
        """The request frame's length without its 4-byte size prefix."""
        return self.request.frame_size


@dataclass(frozen=True, slots=True)
class RequestRejected:
    """The peer sent something we cannot serve.

    With ``close_connection`` the connection is over: the owner closes the socket and
    nothing more is sent (Kafka closes on bad frames and on unsupported or malformed
    requests). Without it the connection has queued the answer itself (the ApiVersions
    fallback): call ``data_to_send``.
    """

    error: ProtocolError
    close_connection: bool


Event: TypeAlias = RequestReceived | RequestRejected


@dataclass(frozen=True, slots=True)
class ConnectionStatistics:
    """A snapshot of one connection's counters."""

    requests_received: int
    responses_sent: int
    requests_without_response: int
    in_flight: int
    buffered_bytes: int
    closed: bool


class _Pending(Generic[R]):
    """A request that owes a response; ``parts`` is set once the response is encoded."""

    __slots__ = ("api_key", "api_version", "correlation_id", "parts")

    def __init__(self, correlation_id: int, api_key: int, api_version: int) -> None:
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.api_version = api_version
        self.parts: tuple[bytes | RecordsSlot[R], ...] | None = None


class ServerConnection(Generic[R]):
    """The broker side of one client connection (see the module docstring for the rules).

    ``R`` is the type of the records handles in the Fetch frames the owner sends (a file
    region, or ``bytes``); slots come back out of ``send_response`` unchanged.

    Args:
        supported: the advertised ranges (the router's intersection of
            ``IMPLEMENTED_VERSIONS`` with its handlers); requests outside them are rejected
            and listed in the ApiVersions fallback.
        max_frame_bytes: ``socket.request.max.bytes``.
    """

    def __init__(
        self,
        *,
        supported: SupportedVersions = IMPLEMENTED_VERSIONS,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self._supported = supported
        self._frames = FrameDecoder(max_frame_bytes)
        self._queue: deque[_Pending[R]] = deque()  # in request order
        self._awaiting: dict[int, _Pending[R]] = {}  # by sequence, no response yet
        self._next_sequence = 0
        self._ready: list[bytes | RecordsSlot[R]] = []
        self._closed = False
        self._requests_received = 0
        self._responses_sent = 0
        self._requests_without_response = 0

    @property
    def closed(self) -> bool:
        """True once a ``RequestRejected(close_connection=True)`` was returned."""
        return self._closed

    @property
    def max_frame_bytes(self) -> int:
        """The largest frame accepted now; the broker lowers it until a SASL client has
        authenticated (``sasl.server.max.receive.size``)."""
        return self._frames.max_frame_bytes

    @max_frame_bytes.setter
    def max_frame_bytes(self, value: int) -> None:
        self._frames.max_frame_bytes = value

    @property
    def in_flight(self) -> int:
        """Responses not yet released: awaiting their handler, or an earlier response.

        The owner may stop reading from the socket while this is high (Kafka reads nothing
        more from a connection until its one request in flight is answered).
        """
        return len(self._queue)

    def statistics(self) -> ConnectionStatistics:
        return ConnectionStatistics(
            requests_received=self._requests_received,
            responses_sent=self._responses_sent,
            requests_without_response=self._requests_without_response,
            in_flight=len(self._queue),
            buffered_bytes=self._frames.buffered_bytes,
            closed=self._closed,
        )

    def receive_data(self, data: bytes) -> list[Event]:
        """Feeds bytes read from the socket; returns the events they complete, in order.

        After a ``RequestRejected(close_connection=True)`` the connection is closed: later
        data is ignored and ``[]`` returned.
        """
        if self._closed:
            return []
        events: list[Event] = []
        try:
            frames = self._frames.feed(data)
        except InvalidFrameError as exc:
            self._close()
            return [RequestRejected(exc, close_connection=True)]
        for frame in frames:
            try:
                request = decode_request(frame, self._supported)
            except UnsupportedVersionError as exc:
                if exc.api_key == ApiKey.API_VERSIONS:
                    self._queue_api_versions_fallback(exc.correlation_id)
                    events.append(RequestRejected(exc, close_connection=False))
                    continue
                self._close()
                events.append(RequestRejected(exc, close_connection=True))
                break
            except RequestDecodeError as exc:
                self._close()
                events.append(RequestRejected(exc, close_connection=True))
                break
            self._requests_received += 1
            header = request.header
            # acks=0: the client expects no response, so none may hold up later ones.
            if header.api_key == ApiKey.PRODUCE and getattr(request.body, "acks", -1) == 0:
                self._requests_without_response += 1
                events.append(RequestReceived(request, expects_response=False))
                continue
            pending: _Pending[R] = _Pending(
                header.correlation_id, header.api_key, header.api_version
            )
            sequence = self._next_sequence
            self._next_sequence = sequence + 1
            self._queue.append(pending)
            self._awaiting[sequence] = pending
            events.append(RequestReceived(request, True, sequence))
        return events

    def send_response(
        self, received: RequestReceived, response: ResponsePayload | bytes | FetchResponseFrame[R]
    ) -> list[bytes | RecordsSlot[R]]:
        """Hands over the response to the request that ``received`` announced.

        ``response`` is a kio response object of the request's key and version (encoded here
        with the right header), a whole frame from a hot encoder, or a ``FetchResponseFrame``.

        Returns:
            The parts now ready to write, in order (empty while an earlier response is
            missing, and always once the connection is closed).

        Raises:
            ConnectionStateError: that request awaits no response (it was answered already,
                owes none, or came from another connection), or the response does not fit it
                (API key, version, correlation id).
        """
        if self._closed:
            return []
        sequence = received.sequence
        pending = self._awaiting.get(sequence)
        if pending is None or pending.correlation_id != received.request.correlation_id:
            raise ConnectionStateError(
                f"request {sequence} (correlation id {received.request.correlation_id}) "
                "awaits no response"
            )
        parts = self._encode(pending, response)  # may raise: leave the state untouched
        del self._awaiting[sequence]
        pending.parts = parts
        self._release()
        return self._take_ready()

    def data_to_send(self) -> list[bytes | RecordsSlot[R]]:
        """Returns the parts ready to write that no ``send_response`` call has returned yet."""
        if self._closed:
            return []
        self._release()
        return self._take_ready()

    def _encode(
        self, pending: _Pending[R], response: ResponsePayload | bytes | FetchResponseFrame[R]
    ) -> tuple[bytes | RecordsSlot[R], ...]:
        cid = pending.correlation_id
        if isinstance(response, bytes):
            if len(response) < _FRAME_HEAD.size:
                raise ConnectionStateError(f"response frame of {len(response)} bytes")
            size, frame_cid = _FRAME_HEAD.unpack_from(response, 0)
            if size != len(response) - 4 or frame_cid != cid:
                raise ConnectionStateError(
                    f"response frame (size {size}, correlation id {frame_cid}) does not fit "
                    f"{len(response)} bytes for correlation id {cid}"
                )
            return (response,)
        if isinstance(response, FetchResponseFrame):
            if pending.api_key != ApiKey.FETCH or response.correlation_id != cid:
                raise ConnectionStateError(
                    f"Fetch frame for correlation id {response.correlation_id} does not answer "
                    f"api key {pending.api_key} correlation id {cid}"
                )
            return response.parts
        if not is_response_for(response, pending.api_key, pending.api_version):
            raise ConnectionStateError(
                f"{type(response).__name__} v{response.__version__} does not answer api key "
                f"{pending.api_key} v{pending.api_version}"
            )
        header_version = response_header_version(pending.api_key, pending.api_version)
        return (encode_response(header_version, cid, response),)

    def _queue_api_versions_fallback(self, correlation_id: int) -> None:
        pending: _Pending[R] = _Pending(correlation_id, ApiKey.API_VERSIONS, 0)
        pending.parts = (encode_api_versions_fallback(correlation_id, self._supported),)
        self._queue.append(pending)

    def _release(self) -> None:
        queue = self._queue
        ready = self._ready
        while queue and queue[0].parts is not None:
            parts = queue.popleft().parts
            assert parts is not None
            ready.extend(parts)
            self._responses_sent += 1

    def _take_ready(self) -> list[bytes | RecordsSlot[R]]:
        ready = self._ready
        if not ready:
            return []
        self._ready = []
        if len(ready) == 1:
            return ready
        out: list[bytes | RecordsSlot[R]] = []
        run: list[bytes] = []
        for part in ready:
            if isinstance(part, bytes):
                run.append(part)
                continue
            if run:
                out.append(run[0] if len(run) == 1 else b"".join(run))
                run = []
            out.append(part)
        if run:
            out.append(run[0] if len(run) == 1 else b"".join(run))
        return out

    def _close(self) -> None:
        self._closed = True
        self._queue.clear()
        self._awaiting.clear()
        self._ready = []
