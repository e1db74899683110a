"""``ServerListener``: one listening socket of the broker's server — where it binds, how
connections on it authenticate, what it advertises (``broker.server`` serves it,
``broker.app`` builds it from the listener settings)."""

from __future__ import annotations

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
