"""``FrameChannel``: the size-prefixed frames of one broker-to-broker connection, read and
written; ``open_plaintext_channel`` reads them straight into their own buffers.

A follower receives most of what its leader writes through this channel (Fetch answers of up
to ``replica.fetch.response.max.bytes``), so how the bytes reach the fetcher is part of
replication's per-byte cost. An ``asyncio.StreamReader`` copies every byte three times
(the transport's read into a fresh ``bytes``, that into the reader's buffer, ``readexactly``
out of it) and pauses and resumes the transport at each 128 KiB; ``FrameProtocol`` (an
``asyncio.BufferedProtocol``) lets the transport read into a small scratch buffer until a
frame's size is known, then gives it the frame's own ``bytearray`` to read the rest into: one
copy, the kernel's. Bytes past a frame's end stay in the scratch buffer for the next frame.

The frame handed over is that ``bytearray`` (without its size prefix), owned by the caller:
the channel never writes into a frame once read.

Bounds: a frame whose size is below 4 (no correlation id) or above the channel's
``max_frame_bytes`` raises ``ProtocolError`` from ``read_frame`` before any buffer is
allocated, and the channel is then closed. Frames nobody has read yet are bounded too: with
``MAX_QUEUED_FRAMES`` of them waiting the transport stops reading until ``read_frame`` takes
one (a peer that sends answers never asked for cannot make the broker hold more than that
and the scratch buffer). A peer that hangs up makes ``read_frame`` raise
``ConnectionResetError`` (the bytes of a partial frame are dropped).

``StreamFrameChannel`` offers the same calls over an ``asyncio`` stream pair: the TLS and
SASL connections ``security.inter_broker`` opens.

Thread safety: the event loop thread only; one reader at a time.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Protocol, cast

from odradek.errors import ProtocolError

__all__ = [
    "FrameChannel",
    "FrameProtocol",
    "StreamFrameChannel",
    "open_plaintext_channel",
]

_SIZE = struct.Struct(">i")
#: Where a frame's first bytes (and its size) are read before its own buffer exists. Small
#: answers fit whole; a larger one has at most this much copied out of it.
SCRATCH_BYTES = 64 * 1024
#: Frames read but not taken before the transport pauses (one request is in flight at a time).
MAX_QUEUED_FRAMES = 2


class FrameChannel(Protocol):
    """What ``BrokerConnection`` needs of a connection."""

    def write(self, data: bytes) -> None: ...

    async def read_frame(self) -> bytes | bytearray:
        """The next frame without its size prefix.

        Raises:
            ProtocolError: a size out of bounds.
            ConnectionError, asyncio.IncompleteReadError: the connection ended.
        """
        ...

    def close(self) -> None: ...

    async def wait_closed(self) -> None: ...

    def abort(self) -> None: ...


class FrameProtocol(asyncio.BufferedProtocol):
    """See the module docstring. ``max_frame_bytes``: the largest frame accepted."""

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self.transport: asyncio.Transport | None = None
        self._scratch = bytearray(SCRATCH_BYTES)
        self._filled = 0  # bytes of the scratch buffer not consumed yet
        self._frame: bytearray | None = None  # the frame being read into, past the scratch
        self._received = 0  # bytes of ``_frame`` read so far
        self._frames: list[bytearray] = []
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._paused = False
        #: Receives into a frame's own buffer (tests: the zero-copy path was taken).
        self.direct_reads = 0

    # ---------------------------------------------------------------- the transport's calls

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TCPTransport is not an asyncio.Transport subclass, but has its methods.
        self.transport = cast(asyncio.Transport, transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        frame = self._frame
        if frame is not None:
            return memoryview(frame)[self._received :]
        if self._error is not None:
            self._filled = 0  # failed: what still arrives is dropped
        return memoryview(self._scratch)[self._filled :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._frame is not None:
            self.direct_reads += 1
            self._received += nbytes
            if self._received == len(self._frame):
                self._frames.append(self._frame)
                self._frame = None
                self._wake()
                self._pause_if_full()
            return
        self._filled += nbytes
        self._split_scratch()

    def eof_received(self) -> bool:
        return False  # close the transport: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        if self._error is None:
            self._error = ConnectionResetError(
                f"connection lost: {exc}" if exc else "the peer closed the connection"
            )
        self._frame = None
        self._wake()
        if not self._closed.done():
            self._closed.set_result(None)

    # ---------------------------------------------------------------- frames

    def _split_scratch(self) -> None:
        """Takes every whole frame out of the scratch buffer; the start of a larger one
        becomes the beginning of its own buffer."""
        scratch = self._scratch
        position = 0
        filled = self._filled
        while filled - position >= _SIZE.size:
            (size,) = _SIZE.unpack_from(scratch, position)
            if not _SIZE.size <= size <= self.max_frame_bytes:
                self._fail(ProtocolError(f"answer of {size} bytes is out of bounds"))
                return
            start = position + _SIZE.size
            available = filled - start
            if available >= size:
                self._frames.append(scratch[start : start + size])
                position = start + size
                continue
            frame = bytearray(size)
            frame[:available] = memoryview(scratch)[start:filled]
            self._frame, self._received = frame, available
            position = filled
            break
        if position:
            remaining = filled - position
            scratch[:remaining] = memoryview(scratch)[position:filled]
            self._filled = remaining
        if self._frames:
            self._wake()
            self._pause_if_full()

    def _pause_if_full(self) -> None:
        if len(self._frames) >= MAX_QUEUED_FRAMES and not self._paused and self.transport:
            self._paused = True
            self.transport.pause_reading()

    def _fail(self, error: BaseException) -> None:
        self._error = error
        self._wake()
        if self.transport is not None:
            self.transport.abort()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def read_frame(self) -> bytearray:
        """The next frame (see ``FrameChannel.read_frame``)."""
        while not self._frames:
            if self._error is not None:
                raise self._error
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        frame = self._frames.pop(0)
        if self._paused and len(self._frames) < MAX_QUEUED_FRAMES and self._error is None:
            self._paused = False
            if self.transport is not None:
                self.transport.resume_reading()
        return frame

    # ---------------------------------------------------------------- the channel's calls

    def write(self, data: bytes) -> None:
        if self.transport is None or self._error is not None:
            raise ConnectionResetError("the connection is closed")
        self.transport.write(data)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()


async def open_plaintext_channel(host: str, port: int, max_frame_bytes: int) -> FrameProtocol:
    """A TCP connection to ``host:port`` read by a ``FrameProtocol``.

    Raises:
        OSError: the connection could not be made.
    """
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_connection(lambda: FrameProtocol(max_frame_bytes), host, port)
    return protocol


class StreamFrameChannel:
    """``FrameChannel`` over an ``asyncio`` stream pair (TLS, SASL)."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, max_frame_bytes: int
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.max_frame_bytes = max_frame_bytes

    def write(self, data: bytes) -> None:
        self._writer.write(data)

    async def read_frame(self) -> bytes:
        (size,) = _SIZE.unpack(await self._reader.readexactly(_SIZE.size))
        if not _SIZE.size <= size <= self.max_frame_bytes:
            raise ProtocolError(f"answer of {size} bytes is out of bounds")
        return await self._reader.readexactly(size)

    def close(self) -> None:
        self._writer.close()

    async def wait_closed(self) -> None:
        await self._writer.wait_closed()

    def abort(self) -> None:
        self._writer.transport.abort()
