"""Zero-copy file → socket sends for Fetch responses.

uvloop has no ``loop.sendfile``, so we call ``os.sendfile`` ourselves on a duplicate of the
transport's socket descriptor (``add_writer`` refuses a descriptor a transport owns, and a
duplicate is a different number for the same socket). The caller first waits until the
transport's own buffer is empty, so bytes leave in order. On EAGAIN we wait for the socket to
become writable. Works on both the default loop and uvloop. Under TLS ``copy_file_slice``
reads the slice in chunks and writes it through the (encrypting) transport instead. Which
response parts go out this way (``Part``, ``wants_sendfile``: slices of ``SENDFILE_MIN_BYTES``
or more) and the copy of the others (``as_bytes``) are here too, for the broker's server.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeAlias

from odradek.protocol import RecordsSlot

#: Slices smaller than this are copied into the write buffer; larger ones use sendfile.
SENDFILE_MIN_BYTES = 64 * 1024


class FileRegion(Protocol):
    """A range of an open file: what a Fetch response's records are above the storage layer
    (``odradek.storage.file_records.FileSlice`` is one). ``read`` is the copy path for
    small regions; ``send_file_slice`` the zero-copy one."""

    @property
    def fd(self) -> int: ...
    @property
    def position(self) -> int: ...
    @property
    def length(self) -> int: ...

    def read(self) -> bytes:
        """The region's bytes."""
        ...


async def send_file_slice(transport: asyncio.Transport, region: FileRegion, size: int) -> None:
    """Sends ``size`` bytes of ``region`` on the transport's socket.

    Raises:
        ConnectionError / OSError: the peer went away or the file cannot be read; the caller
            closes the connection (the response is then incomplete by necessity).
    """
    sock = transport.get_extra_info("socket")
    if sock is None:
        raise OSError("transport has no socket")
    loop = asyncio.get_running_loop()
    out_fd = os.dup(sock.fileno())
    try:
        offset = region.position
        remaining = size
        while remaining > 0:
            try:
                sent = os.sendfile(out_fd, region.fd, offset, remaining)
            except BlockingIOError:
                await _writable(loop, out_fd)
                continue
            if sent == 0:
                raise OSError(f"file ended {remaining} bytes early while sending a fetch")
            offset += sent
            remaining -= sent
    finally:
        os.close(out_fd)


async def _writable(loop: asyncio.AbstractEventLoop, fd: int) -> None:
    future: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not future.done():
            future.set_result(None)

    loop.add_writer(fd, ready)
    try:
        await future
    finally:
        loop.remove_writer(fd)


__all__ = ["FileRegion", "send_file_slice"]


#: Bytes read per ``os.pread`` when a file slice is copied into a TLS transport.
COPY_CHUNK_BYTES = 256 * 1024


async def copy_file_slice(
    transport: asyncio.Transport,
    region: FileRegion,
    size: int,
    drained: Callable[[], Awaitable[None]],
) -> None:
    """Writes ``size`` bytes of ``region`` through ``transport`` by reading them (TLS: the bytes
    must be encrypted, so ``sendfile`` cannot bypass the transport).

    Reads ``COPY_CHUNK_BYTES`` at a time with ``os.pread`` (one fresh buffer each: the
    transport keeps a reference until it has encrypted it) and awaits ``drained`` whenever the
    transport's buffer is over its high-water mark, so a large fetch holds at most about a
    chunk and the buffer limit in memory.

    Raises:
        OSError: the file ended early.
    """
    offset = region.position
    remaining = size
    try:
        high = transport.get_write_buffer_limits()[1]
    except (AttributeError, NotImplementedError):
        high = COPY_CHUNK_BYTES
    while remaining > 0:
        chunk = os.pread(region.fd, min(COPY_CHUNK_BYTES, remaining), offset)
        if not chunk:
            raise OSError(f"file ended {remaining} bytes early while sending a fetch")
        transport.write(chunk)
        offset += len(chunk)
        remaining -= len(chunk)
        if remaining and transport.get_write_buffer_size() > high:
            await drained()


#: One piece of a response on its way out: encoded bytes, or a Fetch response's records.
Part: TypeAlias = bytes | RecordsSlot[FileRegion]


def wants_sendfile(part: Part) -> bool:
    """Whether ``part`` is a records slice large enough to go out with ``sendfile``."""
    return isinstance(part, RecordsSlot) and part.size >= SENDFILE_MIN_BYTES


def as_bytes(part: Part) -> bytes:
    """The bytes of ``part`` (a records slice is read; OSError when it changed size)."""
    if isinstance(part, bytes):
        return part
    records = part.records
    if records is None or part.size == 0:
        return b""
    data = records.read()
    if len(data) != part.size:
        raise OSError(f"records slice changed size: {len(data)} != {part.size}")
    return data
