"""Stopping the embedded broker while clients keep connecting leaves no socket open.

CPython's selector loop can leak an accepted socket when the server closes between accepting
it and attaching its transport; the broker's stop sequence works around that. The suite runs
with warnings as errors, so a leaked socket (a ResourceWarning when collected) fails here.
"""

from __future__ import annotations

import contextlib
import gc
import socket
import threading
import warnings

from odradek import Broker


def _connect_until(stop: threading.Event, port: int, opened: list[socket.socket]) -> None:
    while not stop.is_set():
        with contextlib.suppress(OSError):
            opened.append(socket.create_connection(("127.0.0.1", port), timeout=1))


def test_stop_while_clients_connect_leaks_no_socket() -> None:
    leaked: list[str] = []
    for _ in range(40):
        broker = Broker().start()
        port = int(broker.bootstrap_servers.rsplit(":", 1)[1])
        stop = threading.Event()
        opened: list[socket.socket] = []
        hammer = threading.Thread(target=_connect_until, args=(stop, port, opened))
        hammer.start()
        try:
            broker.stop()
        finally:
            stop.set()
            hammer.join()
            for sock in opened:
                sock.close()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            gc.collect()
        leaked += [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert leaked == []
