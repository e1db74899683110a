"""Zero-copy file → socket sends for Fetch responses.

uvloop has no ``loop.sendfile``, so we call ``os.sendfile`` ourselves on a duplicate of the
transport's socket descriptor (``add_writer`` refuses a descriptor a transport owns, and a
duplicate is a different number for the same socket). The caller first waits until the
transport's own buffer is empty, so bytes leave in order. On EAGAIN we wait for the socket to
become writable. Works on both the default loop and uvloop.
"""

from __future__ import annotations

import asyncio
import os
from typing import Protocol


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
