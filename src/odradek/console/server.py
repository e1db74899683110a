"""``ConsoleServer``: the console's application served by uvicorn (its only importer) on a
socket bound before the server starts, so port 0 gives a free port whose number is known at
once (``url``).

Two ways to run: ``serve_forever`` in the foreground (``odradek console``; SIGINT and SIGTERM
stop it, uvicorn's handlers), or ``start`` on a thread of its own and ``stop`` (the demo). The
caller owns the ``ConsoleService`` and closes it after the server stopped.

Which ``Host`` headers are answered (``allowed_hosts_for``): on a loopback or named address,
the loopback names, that address and any names given; on a wildcard address (``0.0.0.0``,
``::``) any host unless names are given.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence
from typing import Final

import uvicorn

from odradek.console.app import create_app
from odradek.console.service import ConsoleService
from odradek.console.sessions import SessionStore

__all__ = ["ConsoleServer", "allowed_hosts_for"]

#: How long ``stop`` waits for the server thread.
STOP_TIMEOUT_S: Final = 10.0
LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "::1")
WILDCARD_ADDRESSES: Final = ("0.0.0.0", "::", "")  # noqa: S104 — names to recognise, not bind


def allowed_hosts_for(host: str, extra: Sequence[str] = ()) -> list[str]:
    """The ``Host`` names a console listening on ``host`` answers (see the module docstring)."""
    if host in WILDCARD_ADDRESSES and not extra:
        return ["*"]
    names = [*LOOPBACK_NAMES, *([] if host in WILDCARD_ADDRESSES else [host]), *extra]
    return list(dict.fromkeys(name.lower() for name in names))


class ConsoleServer:
    """The console on ``host:port`` (0: a free port).

    Raises:
        OSError: the address cannot be bound (in use, not local).
    """

    def __init__(
        self,
        service: ConsoleService,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        allowed_hosts: Sequence[str] = (),
        log_level: str = "warning",
        sessions: SessionStore | None = None,
    ) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._socket.bind((host, port))
            self._socket.listen(128)
        except OSError:
            self._socket.close()
            raise
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(
            create_app(service, allowed_hosts_for(host, allowed_hosts), sessions),
            log_level=log_level,
            access_log=False,
            lifespan="off",
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def serve_forever(self) -> None:
        """Serves on the calling (main) thread until SIGINT or SIGTERM."""
        try:
            self._server.run(sockets=[self._socket])
        finally:
            self._socket.close()

    def start(self) -> None:
        """Serves on a daemon thread (signals are left to the caller)."""
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name="odradek-console",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stops a server ``start`` started and closes the socket. Idempotent."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)
            self._thread = None
        self._socket.close()
