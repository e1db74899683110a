"""The router: API key → handler, and the API versions the broker advertises.

Each handler module in ``broker/handlers`` exposes ``API_KEY`` and ``handle(ctx, request)``.
The advertised versions are the protocol layer's implemented ranges for exactly the keys that
have a handler, so ApiVersions never offers an API nobody serves.

A handler returns the response (a kio response object, a whole encoded frame, or a Fetch
response frame whose records slots hold ``net.sendfile.FileRegion``s, never a storage type),
``None`` when no response is owed (acks=0), or an awaitable of one of those when it must wait
(long-polling Fetch). Handlers never let an exception reach the wire: a ``KafkaError`` they
cannot express in their response, or any other exception, makes the server close the
connection (and log it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

from odradek.net.sendfile import FileRegion
from odradek.protocol import (
    IMPLEMENTED_VERSIONS,
    ApiKey,
    FetchResponseFrame,
    Request,
    ResponsePayload,
    VersionRange,
)

if TYPE_CHECKING:
    from odradek.broker.context import BrokerContext

Response: TypeAlias = ResponsePayload | bytes | FetchResponseFrame[FileRegion] | None
HandlerResult: TypeAlias = Response | Awaitable[Response]
Handler: TypeAlias = Callable[["BrokerContext", Request], HandlerResult]


class Router:
    """Maps API keys to handlers."""

    def __init__(self, handlers: Mapping[ApiKey, Handler]) -> None:
        self._handlers = dict(handlers)
        self.supported_versions: dict[ApiKey, VersionRange] = {
            key: IMPLEMENTED_VERSIONS[key]
            for key in sorted(self._handlers)
            if key in IMPLEMENTED_VERSIONS
        }

    @classmethod
    def from_modules(cls, modules: Iterable[ModuleType]) -> Router:
        """A router over handler modules, each with ``API_KEY`` and ``handle``."""
        return cls({module.API_KEY: module.handle for module in modules})

    def handler(self, api_key: int) -> Handler | None:
        return self._handlers.get(ApiKey(api_key)) if api_key in self.supported_versions else None

    def dispatch(self, ctx: BrokerContext, request: Request) -> HandlerResult:
        """Runs the handler for a decoded request (the connection only lets supported
        versions through)."""
        # By the header's int: an IntEnum key hashes and compares as its int, and building
        # the ApiKey (``request.api_key``) costs an enum lookup per request.
        handler = self._handlers[request.header.api_key]  # type: ignore[index]
        return handler(ctx, request)
