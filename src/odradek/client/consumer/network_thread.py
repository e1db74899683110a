"""``NetworkThread``: a thread that owns one ``NetworkClient`` and lets other threads use it.

``client.network`` allows one owner thread per network client. The consumer has two: the
fetcher's (Fetch, ListOffsets, Metadata) and the group coordinator's (FindCoordinator,
JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch), so that a Fetch held
in the broker's purgatory never delays a heartbeat. This class keeps the ownership rule:

- the thread loops ``network.poll``; what must happen on it each round is a poll hook
  (``NetworkClient.add_poll_hook``: the fetcher's fetch scheduling, the heartbeat);
- any thread may ``call(fn)`` (``fn`` runs on the owner thread before its next poll; the
  returned ``concurrent.futures.Future`` gets its result) or ``request(...)``, which sends a
  request from the owner thread and returns a future of the decoded response;
- ``close`` stops the loop, closes the network client on the thread, and joins it. Requests
  still pending then fail with the network client's NETWORK_EXCEPTION.

An exception escaping a poll round (a bug) is logged and the loop goes on.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Final, TypeVar

from odradek.client.network import NetworkClient
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol.api_keys import VersionRange

__all__ = ["NetworkThread"]

log = logging.getLogger(__name__)

T = TypeVar("T")
_IDLE_POLL_MS: Final = 1_000


class NetworkThread:
    """Drives ``network`` on a daemon thread named ``name`` (see the module docstring)."""

    def __init__(self, network: NetworkClient, name: str) -> None:
        self.network = network
        self._calls: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._closing = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def on_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def call(self, fn: Callable[[], T]) -> Future[T]:
        """Runs ``fn()`` on the owner thread; its result or exception completes the future."""
        future: Future[T] = Future()
        if self._closing:
            future.set_exception(
                KafkaError("the consumer is closed", code=ErrorCode.NETWORK_EXCEPTION)
            )
            return future
        self._calls.append((fn, future))
        self.network.wakeup()
        return future

    def request(
        self,
        node: int | Callable[[], int | None],
        api_key: int,
        fields: Any,
        versions: VersionRange,
        timeout_ms: int | None = None,
    ) -> Future[dict[str, Any]]:
        """Sends a request from the owner thread; ``node`` may be a function choosing the node
        there (``None``: no node available, the future fails with NETWORK_EXCEPTION)."""
        outer: Future[dict[str, Any]] = Future()

        def send() -> None:
            node_id = node() if callable(node) else node
            if node_id is None:
                outer.set_exception(
                    KafkaError("no broker node is available", code=ErrorCode.NETWORK_EXCEPTION)
                )
                return
            inner = self.network.send(
                node_id, api_key, fields, versions=versions, timeout_ms=timeout_ms
            )

            def done(completed: Future[dict[str, Any]]) -> None:
                error = completed.exception()
                if error is not None:
                    outer.set_exception(error)
                else:
                    outer.set_result(completed.result())

            inner.add_done_callback(done)

        def relay(called: Future[None]) -> None:
            error = called.exception()
            if error is not None and not outer.done():
                outer.set_exception(error)

        self.call(send).add_done_callback(relay)
        return outer

    def _run(self) -> None:
        network = self.network
        while not self._closing:
            try:
                while self._calls:
                    fn, future = self._calls.popleft()
                    if not future.set_running_or_notify_cancel():
                        continue
                    try:
                        future.set_result(fn())
                    except BaseException as error:  # the caller gets it
                        future.set_exception(error)
                network.poll(0 if self._calls else _IDLE_POLL_MS)
            except Exception:
                log.exception("consumer network thread %s: poll round failed", self._thread.name)
        while self._calls:
            _fn, future = self._calls.popleft()
            if future.set_running_or_notify_cancel():
                future.set_exception(
                    KafkaError("the consumer is closed", code=ErrorCode.NETWORK_EXCEPTION)
                )
        network.close()

    def close(self, timeout_s: float | None = None) -> None:
        """Stops the thread and closes the network client; idempotent."""
        self._closing = True
        self.network.wakeup()
        if self._thread.is_alive() and not self.on_thread:
            self._thread.join(timeout_s)
        elif not self._thread.is_alive() and not self.network.closed:
            self.network.close()
