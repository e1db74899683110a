"""``ServerListener``: one listening socket of the broker's server — where it binds, how
connections on it authenticate, what it advertises (``broker.server`` serves it,
``broker.app`` builds it from the listener settings) — and ``stop_accepting``, which takes
one out of service before its server closes."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass

from odradek.broker.security.listeners import ListenerSecurity


@dataclass(frozen=True, slots=True)
class ServerListener:
    """One listening socket: where it binds, how it authenticates, what it advertises.

    ``ssl_context`` is the server TLS context of SSL / SASL_SSL listeners (None otherwise);
    ``advertised_host`` ``""`` stands for the broker context's host and ``advertised_port`` 0
    for the port bound.
    """

    security: ListenerSecurity
    host: str
    port: int
    ssl_context: ssl.SSLContext | None = None
    advertised_host: str = ""
    advertised_port: int = 0

    @property
    def name(self) -> str:
        return self.security.name


async def stop_accepting(server: asyncio.Server) -> None:
    """Stops ``server`` taking new connections, before it is closed.

    CPython's selector loop (3.11, 3.12) accepts a connection in one loop step and attaches its
    transport to the server in a later one; if ``Server.close`` runs in between, the attach
    fails an assertion and the accepted socket is leaked open. So the listening sockets'
    readers go first, then the loop turns twice so accepts already under way attach (and are
    aborted by ``connection_made``, since the server is stopping). uvloop accepts differently
    and has no readers to remove.
    """
    loop = asyncio.get_running_loop()
    for sock in server.sockets:
        with contextlib.suppress(Exception):
            loop.remove_reader(sock.fileno())
    for _ in range(2):
        await asyncio.sleep(0)
