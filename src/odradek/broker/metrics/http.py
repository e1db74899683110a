"""The broker's HTTP endpoint: ``/metrics`` for Prometheus, and JSON for tools.

Routes (GET only):

- ``/metrics``: the Prometheus text format (OpenMetrics when asked; gzip when accepted), by
  ``prometheus_client``'s WSGI app over a registry of this broker's ``BrokerCollector`` and
  the process, GC and platform collectors.
- ``/groups/<group>/rebalances``: ``{"group": …, "rebalances": [...]}``, the group's last
  rebalances with their causes (``broker.group.history``), oldest first; 404 when this broker
  does not coordinate the group or does not know it.
- ``/groups/<group>/lag``: the group's lag per partition, as in ``/metrics`` (a group
  coordinated here: every partition it committed on, see ``lag``).

The server runs on a thread of its own (a threading WSGI server), so formatting a scrape never
holds the event loop; what it reads of the broker it asks the loop for
(``call_soon_threadsafe``), waiting at most ``timeout_s`` (a busy or stopping loop answers
503). Bad input — an unknown path, a method other than GET, an undecodable group name — gets
a 4xx answer; nothing a client sends reaches the broker beyond a group id.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import socketserver
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TypeVar
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from wsgiref.types import StartResponse, WSGIEnvironment

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    make_wsgi_app,
)

from odradek.broker.metrics.collector import BrokerCollector
from odradek.broker.metrics.loop import LoopBusy
from odradek.broker.metrics.snapshot import BrokerSnapshot

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: What ``/groups/<group>/rebalances`` reads: JSON-ready records, or None (unknown group).
RebalancesSource = Callable[[str], Sequence[dict[str, object]] | None]


class LoopUnavailableError(Exception):
    """The event loop did not answer in time (busy, stopping or stopped)."""


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        logger.debug("%s " + format, self.address_string(), *args)


class MetricsServer:
    """Serves the endpoint for one broker (see the module docstring).

    Args:
        loop: the broker's event loop (``start`` must be called on it).
        snapshot: takes a ``BrokerSnapshot`` (a coroutine: it may ask other brokers); run
            on the loop.
        rebalances: a group's rebalance history; called on the loop.
        host, port: where to listen (port 0: a free one; ``port`` tells it after ``start``).
        timeout_s: how long a request waits for the loop.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        snapshot: Callable[[], Awaitable[BrokerSnapshot]],
        rebalances: RebalancesSource,
        host: str,
        port: int,
        *,
        timeout_s: float = 5.0,
    ) -> None:
        self._loop = loop
        self._take_snapshot = snapshot
        self._rebalances = rebalances
        self.host = host
        self.port = port
        self._timeout_s = timeout_s
        self.loop_busy = LoopBusy()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(self.snapshot, self.loop_busy))
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self._metrics_app = make_wsgi_app(self.registry)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Binds and starts serving on a daemon thread.

        Raises:
            OSError: the address cannot be bound (the message names ``metrics.port``).
        """
        try:
            server = make_server(
                self.host, self.port, self._app, server_class=_Server, handler_class=_QuietHandler
            )
        except OSError as error:
            raise OSError(
                error.errno,
                f"metrics.port: cannot listen on {self.host}:{self.port}: {error.strerror}",
            ) from None
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=f"metrics-{self.port}",
            daemon=True,
        )
        self._thread.start()
        logger.info("metrics on http://%s:%d/metrics", self.host, self.port)

    def stop(self) -> None:
        """Stops serving and closes the socket (blocks up to a poll interval: call it off the
        loop, e.g. with ``asyncio.to_thread``)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # ----------------------------------------------------------------- reading the broker

    def on_loop(self, function: Callable[[], T]) -> T:
        """Runs ``function`` on the event loop and returns its result (from another thread).

        Raises:
            LoopUnavailableError: the loop did not run it within ``timeout_s``.
        """
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(function())
            except BaseException as error:
                future.set_exception(error)

        try:
            self._loop.call_soon_threadsafe(run)
            return future.result(timeout=self._timeout_s)
        except (RuntimeError, concurrent.futures.TimeoutError):
            future.cancel()
            raise LoopUnavailableError("the broker's event loop did not answer") from None

    def snapshot(self) -> BrokerSnapshot:
        """A snapshot taken on the loop (from the endpoint's threads).

        Raises:
            LoopUnavailableError: the loop did not take it within ``timeout_s``.
        """

        async def take() -> BrokerSnapshot:
            return await self._take_snapshot()

        coroutine = take()
        try:
            future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        except RuntimeError:  # the loop is closed
            coroutine.close()
            raise LoopUnavailableError("the broker's event loop did not answer") from None
        try:
            return future.result(timeout=self._timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise LoopUnavailableError("the broker's event loop did not answer") from None

    # ----------------------------------------------------------------- WSGI

    def _app(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            return _json(start_response, "405 Method Not Allowed", {"error": "GET only"})
        try:
            if path == "/metrics":
                result: Iterable[bytes] = self._metrics_app(environ, start_response)
                return result
            parts = path.strip("/").split("/")
            if len(parts) == 3 and parts[0] == "groups" and parts[2] in ("rebalances", "lag"):
                # WSGI hands the path percent-decoded, as latin-1 text: back to UTF-8.
                group_id = parts[1].encode("latin-1").decode("utf-8")
                if parts[2] == "rebalances":
                    return self._group_rebalances(start_response, group_id)
                return self._group_lag(start_response, group_id)
        except LoopUnavailableError as error:
            return _json(start_response, "503 Service Unavailable", {"error": str(error)})
        except (UnicodeDecodeError, UnicodeEncodeError):
            return _json(start_response, "400 Bad Request", {"error": "group id is not UTF-8"})
        return _json(start_response, "404 Not Found", {"error": f"no route {path}"})

    def _group_rebalances(self, start_response: StartResponse, group_id: str) -> Iterable[bytes]:
        records = self.on_loop(lambda: self._rebalances(group_id))
        if records is None:
            return _json(
                start_response,
                "404 Not Found",
                {"error": f"group {group_id!r} is not coordinated by this broker or unknown"},
            )
        return _json(start_response, "200 OK", {"group": group_id, "rebalances": list(records)})

    def _group_lag(self, start_response: StartResponse, group_id: str) -> Iterable[bytes]:
        lags = [
            {
                "topic": lag.topic,
                "partition": lag.partition,
                "committed_offset": lag.committed_offset,
                "high_watermark": lag.high_watermark,
                "lag": lag.lag_offsets,
                "lag_seconds": lag.lag_seconds,
            }
            for lag in self.snapshot().lags
            if lag.group_id == group_id
        ]
        return _json(start_response, "200 OK", {"group": group_id, "partitions": lags})


def _json(start_response: StartResponse, status: str, body: object) -> list[bytes]:
    data = json.dumps(body).encode()
    start_response(
        status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
    )
    return [data]
