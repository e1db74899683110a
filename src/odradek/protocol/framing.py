"""Kafka frame boundaries: a 4-byte big-endian signed size, then that many bytes.

This module owns splitting a byte stream into frames and the ``socket.request.max.bytes``
limit. The rules it keeps:

- a frame's size is checked as soon as its 4-byte prefix is complete, before any of its body
  is buffered: a negative size raises ``InvalidFrameError``, a size above the limit raises
  ``FrameTooLargeError``;
- every received byte is copied a bounded number of times, whatever the read sizes: a 1 MB
  frame that arrives in 64 KB reads is joined once, not re-copied on every read.

Layout of one frame on the wire::

    size: int32 (big-endian, signed)    # bytes that follow, excluding these four
    payload: size bytes                 # request (or response) header and body
"""

from __future__ import annotations

import struct
from typing import Final

from odradek.errors import FrameTooLargeError, InvalidFrameError

#: Kafka's default ``socket.request.max.bytes`` (100 MiB).
DEFAULT_MAX_FRAME_BYTES: Final = 104_857_600

#: Bytes in the size prefix of every frame.
SIZE_PREFIX_BYTES: Final = 4

_SIZE = struct.Struct(">i")


def encode_size_prefix(size: int) -> bytes:
    """Returns the 4-byte big-endian prefix announcing a payload of ``size`` bytes."""
    return _SIZE.pack(size)


class FrameDecoder:
    """Turns chunks of a byte stream into complete frame payloads (without their prefix).

    Call order: ``feed`` any number of times; once it has raised, the stream cannot be
    re-synchronised and every later ``feed`` raises the same error. Not thread-safe (one
    decoder per connection, used by the connection's owner only).

    Args:
        max_frame_bytes: ``socket.request.max.bytes``; frames announcing more are rejected.
    """

    __slots__ = ("_body", "_body_bytes", "_error", "_frame_size", "_max_frame_bytes", "_prefix")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if max_frame_bytes < 0:
            raise ValueError(f"max_frame_bytes must be >= 0, got {max_frame_bytes}")
        self._max_frame_bytes = max_frame_bytes
        self._prefix = b""  # an incomplete size prefix (fewer than 4 bytes)
        self._frame_size = -1  # payload size of the frame being collected; -1: none
        self._body: list[bytes] = []  # chunks of that frame's payload
        self._body_bytes = 0
        self._error: InvalidFrameError | None = None

    @property
    def max_frame_bytes(self) -> int:
        return self._max_frame_bytes

    @max_frame_bytes.setter
    def max_frame_bytes(self, value: int) -> None:
        # A SASL listener caps frames before authentication (sasl.server.max.receive.size).
        if value < 0:
            raise ValueError(f"max_frame_bytes must be >= 0, got {value}")
        self._max_frame_bytes = value

    @property
    def buffered_bytes(self) -> int:
        """Bytes received but not yet returned as part of a frame (size prefixes included)."""
        pending_prefix = SIZE_PREFIX_BYTES if self._frame_size >= 0 else 0
        return len(self._prefix) + pending_prefix + self._body_bytes

    @property
    def pending_frame_bytes(self) -> int:
        """The announced payload size of the frame being collected, or -1 between frames."""
        return self._frame_size

    def feed(self, data: bytes) -> list[bytes]:
        """Adds ``data`` to the stream and returns the payloads of the frames it completed.

        Raises:
            InvalidFrameError: a frame announced a negative size.
            FrameTooLargeError: a frame announced more than ``max_frame_bytes``.
        """
        if self._error is not None:
            raise self._error
        frames: list[bytes] = []
        end = len(data)
        pos = 0
        while pos < end:
            if self._frame_size >= 0:
                # Collecting a frame's payload that began in an earlier chunk.
                missing = self._frame_size - self._body_bytes
                if end - pos < missing:
                    self._body.append(data[pos:] if pos else data)
                    self._body_bytes += end - pos
                    return frames
                self._body.append(data[pos : pos + missing])
                frames.append(b"".join(self._body))
                self._body.clear()
                self._body_bytes = 0
                self._frame_size = -1
                pos += missing
                continue
            if self._prefix:
                needed = SIZE_PREFIX_BYTES - len(self._prefix)
                self._prefix += data[pos : pos + needed]
                pos += min(needed, end - pos)
                if len(self._prefix) < SIZE_PREFIX_BYTES:
                    return frames
                (size,) = _SIZE.unpack(self._prefix)
                self._prefix = b""
            elif end - pos < SIZE_PREFIX_BYTES:
                self._prefix = data[pos:]
                return frames
            else:
                (size,) = _SIZE.unpack_from(data, pos)
                pos += SIZE_PREFIX_BYTES
            self._check_size(size)
            if end - pos >= size:
                # The whole payload is in this chunk: the common case for small requests.
                frames.append(data[pos : pos + size])
                pos += size
            else:
                self._frame_size = size
        return frames

    def _check_size(self, size: int) -> None:
        if size < 0:
            self._error = InvalidFrameError(f"negative frame size {size}", size=size)
            raise self._error
        if size > self._max_frame_bytes:
            self._error = FrameTooLargeError(size=size, max_frame_bytes=self._max_frame_bytes)
            raise self._error
