"""Our clients, made from a data source's ``kafka.*`` options.

The options are one flat set for every client the data source uses (the admin client on the
driver, the simple consumer in read tasks, the producer in write tasks); each client gets the
keys it knows. A key no odradek client knows fails at once with our ``ConfigError`` naming it.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Mapping

from odradek.client import AdminClient, SimpleConsumer
from odradek.client.config import (
    ADMIN,
    CONSUMER,
    PRODUCER,
    SIMPLE_CONSUMER,
    ClientConfig,
    keys_for,
)
from odradek.client.consumer import Consumer  # noqa: F401  (registers the consumer's keys)
from odradek.client.producer import Producer  # noqa: F401  (registers the producer's keys)

__all__ = ["admin_client", "client_settings", "shared_simple_consumer", "simple_consumer"]

#: Bigger than the client's 1 MiB default: a read task's fetches feed Arrow batches.
READ_FETCH_BYTES = 8 * 1024 * 1024


def client_settings(config: Mapping[str, str], client_type: str) -> dict[str, str]:
    """The settings of ``config`` that a ``client_type`` client takes.

    Raises:
        ConfigError: a key that no odradek client knows (named in the message).
    """
    known: set[str] = set()
    for kind in (ADMIN, SIMPLE_CONSUMER, CONSUMER, PRODUCER):
        known.update(keys_for(kind))
    unknown = {k: v for k, v in config.items() if k not in known}
    if unknown:
        ClientConfig(dict(unknown), client_type=CONSUMER)  # raises, naming the key
    wanted = keys_for(client_type)
    return {k: v for k, v in config.items() if k in wanted}


def admin_client(config: Mapping[str, str]) -> AdminClient:
    """An admin client for the driver's metadata and offset lookups."""
    settings: dict[str, object] = {"client.id": "odradek-spark-driver"}
    settings.update(client_settings(config, ADMIN))
    return AdminClient(settings)


def simple_consumer(config: Mapping[str, str]) -> SimpleConsumer:
    """A simple consumer for a read task (8 MiB per partition fetch unless set)."""
    settings: dict[str, object] = {
        "client.id": "odradek-spark-reader",
        "max.partition.fetch.bytes": READ_FETCH_BYTES,
    }
    settings.update(client_settings(config, SIMPLE_CONSUMER))
    return SimpleConsumer(settings)


_shared: dict[tuple[tuple[str, str], ...], SimpleConsumer] = {}
_shared_lock = threading.Lock()


def shared_simple_consumer(config: Mapping[str, str]) -> SimpleConsumer:
    """One simple consumer per distinct configuration per process, kept for later tasks.

    Spark reuses its Python workers between tasks; keeping the consumer saves every read task
    the bootstrap, the metadata request and new connections. The consumer is thread-safe and
    stateless between calls (its metadata refreshes itself on errors), so sharing it is safe;
    the shared consumers are closed when the process exits.
    """
    key = tuple(sorted(config.items()))
    with _shared_lock:
        consumer = _shared.get(key)
        if consumer is None:
            consumer = simple_consumer(config)
            _shared[key] = consumer
        return consumer


@atexit.register
def _close_shared() -> None:
    with _shared_lock:
        for consumer in _shared.values():
            consumer.close()
        _shared.clear()
