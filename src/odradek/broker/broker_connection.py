"""``BrokerConnection``: one asyncio connection from this broker to another broker, kept
between requests — the follower's connection to its leader (Fetch, OffsetForLeaderEpoch),
transaction markers, requests forwarded to the controller.

It connects through the inter-broker listener's security (``security.inter_broker``: TLS
and the SASL login when that listener has them; a bare TCP connection for PLAINTEXT).

One request at a time: ``request`` writes a frame and reads its answer before the next call
(a replica fetcher is sequential, as Kafka's is). Requests are described and answers returned
as plain mappings (``protocol.client_codec``), so nothing here knows an API. Answers are read
through a ``broker_frames.FrameChannel``: on a PLAINTEXT connection straight into each
answer's own buffer (``FrameProtocol``: the follower's Fetch answers are copied once, by the
kernel), over TLS or SASL from the streams ``security.inter_broker`` opens.

Any failure — no route, a refused or reset connection, an answer later than the timeout, a
malformed or oversized frame, a mismatched correlation id — closes the connection and raises
``BrokerUnavailableError``; the next request connects again. The caller backs off. A
refused login (TLS or SASL) raises ``BrokerAuthenticationError``, its subclass, so a caller
can say so once instead of at every retry.

Thread safety: the event loop thread only.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable, Mapping
from typing import Any

from odradek.broker.broker_frames import (
    FrameChannel,
    StreamFrameChannel,
    open_plaintext_channel,
)
from odradek.broker.security.inter_broker import (
    PLAINTEXT_INTER_BROKER,
    InterBrokerAuthenticationError,
    InterBrokerSecurity,
)
from odradek.errors import OdradekError, ProtocolError
from odradek.protocol.client_codec import decode_response, encode_request

__all__ = ["BrokerAuthenticationError", "BrokerConnection", "BrokerUnavailableError"]

_SIZE = struct.Struct(">i")


class BrokerUnavailableError(OdradekError):
    """The other broker could not be reached or did not answer properly."""


class BrokerAuthenticationError(BrokerUnavailableError):
    """The other broker refused this broker's TLS handshake or SASL login."""


class BrokerConnection:
    """See the module docstring.

    Args:
        client_id: the requests' client id (``replica-fetcher-<broker>-<source>-<id>``).
        timeout_s: connect timeout, and answer timeout beyond a request's own wait.
        max_response_bytes: the largest answer accepted (a bound, not a buffer size).
        security: how to reach the other broker (default: PLAINTEXT).
    """

    def __init__(
        self,
        client_id: str,
        *,
        timeout_s: float = 30.0,
        max_response_bytes: int = 100 << 20,
        security: InterBrokerSecurity = PLAINTEXT_INTER_BROKER,
    ) -> None:
        self.client_id = client_id
        self._security = security
        self._timeout_s = timeout_s
        self._max_response_bytes = max_response_bytes
        self._endpoint: tuple[str, int] | None = None
        self._channel: FrameChannel | None = None
        self._correlation = 0
        self.requests_sent = 0
        self.connects = 0

    @property
    def connected(self) -> bool:
        return self._channel is not None

    async def request(
        self,
        host: str,
        port: int,
        api_key: int,
        api_version: int,
        fields: Mapping[str, Any],
        *,
        wait_ms: int = 0,
    ) -> dict[str, Any]:
        """Sends one request to ``host:port`` (connecting, or reconnecting when the endpoint
        changed) and returns its answer's fields.

        Args:
            wait_ms: how long the broker may hold the request (Fetch's ``max_wait``), added
                to the answer timeout.

        Raises:
            BrokerUnavailableError: see the module docstring.
        """
        answer = await self.exchange(
            host,
            port,
            lambda correlation_id: encode_request(
                api_key, api_version, correlation_id, self.client_id, fields
            ),
            wait_ms=wait_ms,
        )
        try:
            _, body = decode_response(api_key, api_version, bytes(answer))
        except ProtocolError as error:
            self.close()
            raise BrokerUnavailableError(
                f"broker at {host}:{port} did not answer: {error}"
            ) from None
        return body

    async def exchange(
        self, host: str, port: int, frame_for: Callable[[int], bytes], *, wait_ms: int = 0
    ) -> bytes | bytearray:
        """Sends the request frame ``frame_for(correlation_id)`` builds (size prefix
        included) and returns the answer frame without its size prefix, its correlation id
        checked: for callers that encode and decode an API themselves (the replica fetcher's
        Fetch, ``protocol.replica_fetch``). The frame is the caller's (a fresh buffer).

        Raises:
            BrokerUnavailableError: see the module docstring.
        """
        if self._endpoint != (host, port):
            self.close()
        self._correlation += 1
        correlation_id = self._correlation
        frame = frame_for(correlation_id)
        timeout_s = self._timeout_s + wait_ms / 1000
        try:
            channel = await self._connect(host, port)
            channel.write(frame)
            # One deadline for the whole answer: asyncio.timeout adds no task per read, as
            # asyncio.wait_for did (two per fetch), and cannot swallow a cancellation.
            async with asyncio.timeout(timeout_s):
                answer = await channel.read_frame()
            (got,) = _SIZE.unpack_from(answer, 0)
            if got != correlation_id:
                raise ProtocolError(f"correlation id {got}, expected {correlation_id}")
        except InterBrokerAuthenticationError as error:
            self.close()
            raise BrokerAuthenticationError(str(error)) from None
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ProtocolError) as error:
            self.close()
            raise BrokerUnavailableError(
                f"broker at {host}:{port} did not answer: {error or type(error).__name__}"
            ) from None
        self.requests_sent += 1
        return answer

    async def _connect(self, host: str, port: int) -> FrameChannel:
        if self._channel is not None:
            return self._channel
        limit = self._max_response_bytes
        channel: FrameChannel
        if self._security.plaintext:
            channel = await asyncio.wait_for(
                open_plaintext_channel(host, port, limit), self._timeout_s
            )
        else:
            reader, writer = await self._security.open(host, port, self._timeout_s, self.client_id)
            channel = StreamFrameChannel(reader, writer, limit)
        self._endpoint = (host, port)
        self._channel = channel
        self.connects += 1
        return channel

    def close(self) -> None:
        """Closes the connection (the next request opens a new one). Over TLS the socket
        itself closes once the peer answers the goodbye, on a later turn of the loop: a
        caller about to stop its loop awaits ``aclose`` instead."""
        channel, self._channel = self._channel, None
        self._endpoint = None
        if channel is not None:
            channel.close()

    async def aclose(self, timeout_s: float = 5.0) -> None:
        """``close``, then waits (at most ``timeout_s``) until the socket is closed; past
        the timeout the connection is aborted, so no socket outlives the call."""
        channel = self._channel
        self.close()
        if channel is None:
            return
        try:
            async with asyncio.timeout(timeout_s):
                await channel.wait_closed()
        except (OSError, TimeoutError):
            channel.abort()
