"""``odradek.Broker``: a broker started in-process, for tests and notebooks.

    with Broker() as broker:                 # ephemeral port, temporary data directory
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

The broker runs its event loop on a background thread; ``stop`` (or leaving the ``with``
block) shuts it down cleanly and removes the temporary data directory it created (a
``data_dir`` you pass is kept).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Self

from odradek.broker.app import BrokerApp
from odradek.broker.config import BrokerConfig


class Broker:
    """An embedded single-node broker.

    Args:
        data_dir: the log directory (default: a new temporary directory).
        host: the address to listen on.
        port: the port (0: a free one; see ``port`` after start).
        config: more broker settings by their Kafka names (``{"num.partitions": "3"}``).
    """

    def __init__(
        self,
        data_dir: str | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        config: Mapping[str, str | int | bool] | None = None,
    ) -> None:
        self._owns_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="odradek-")
        settings: dict[str, str | int | bool] = {
            "listeners": f"PLAINTEXT://{host}:{port}",
            "log.dirs": self.data_dir,
        }
        settings.update(config or {})
        self.config = BrokerConfig.from_mapping(settings)
        self.host = host
        self._app: BrokerApp | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._app is not None, "the broker is not started"
        return self._app.port

    def listener_port(self, name: str) -> int:
        """The port the listener ``name`` (``SASL_SSL``, ...) bound."""
        server = self.app.server
        assert server is not None, "the broker is not started"
        return server.ports[name.upper()]

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for a client's ``bootstrap.servers``."""
        return f"{self.host}:{self.port}"

    @property
    def app(self) -> BrokerApp:
        assert self._app is not None, "the broker is not started"
        return self._app

    def start(self, timeout: float = 30.0) -> Self:
        """Starts the broker and returns once it accepts connections."""
        if self._thread is not None:
            raise RuntimeError("the broker is already started")
        started = threading.Event()
        failure: list[BaseException] = []
        app = BrokerApp(self.config)

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(app.start())
            except BaseException as error:
                failure.append(error)
                started.set()
                loop.close()
                return
            started.set()
            loop.run_forever()
            _finish_loop(loop)

        self._app = app
        self._thread = threading.Thread(target=run, name="odradek-broker", daemon=True)
        self._thread.start()
        if not started.wait(timeout):
            raise TimeoutError("the broker did not start in time")
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stops the broker cleanly (flush, clean-shutdown marker) and waits for it."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        future = asyncio.run_coroutine_threadsafe(self.app.stop(), loop)
        try:
            future.result(timeout)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
            self._thread = None
            self._loop = None
            if self._owns_dir:
                shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def _finish_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Winds the loop down so nothing is left half-open when the broker is gone: lets the
    callbacks already scheduled run, cancels the tasks left, turns the loop again so the close
    callbacks those steps scheduled run too, and closes it."""
    _turn(loop)
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    _turn(loop)
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


def _turn(loop: asyncio.AbstractEventLoop, times: int = 3) -> None:
    """Runs the callbacks scheduled so far, and those they schedule, a few levels deep."""
    for _ in range(times):
        loop.run_until_complete(asyncio.sleep(0))
