"""``LiveBrokers``: the registered brokers, kept up to date by a watch on ``/brokers/ids``.

What a Metadata response lists and what the controller reacts to (a broker gone: elect new
leaders for its partitions; a broker back: send it its partitions). Reading the store on each
request would put a ZooKeeper round trip on the request path; this keeps an immutable
snapshot instead, replaced after every change of ``/brokers/ids``'s children.

Thread safety: ``snapshot`` and ``ids`` may be called from any thread (they read one
reference). Refreshes run on the store's watch thread, one at a time; ``on_change`` callbacks
run there too, after the new snapshot is visible, with the ids added and removed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from odradek.controller.layout import BROKER_IDS_PATH, BrokerRegistration
from odradek.controller.topics import ClusterMetadata
from odradek.errors import SessionClosedError

logger = logging.getLogger(__name__)

#: ``on_change(added, removed)``: broker ids, sorted.
BrokerChangeCallback = Callable[[list[int], list[int]], None]


class LiveBrokers:
    """The live brokers of ``metadata``'s store; see the module docstring.

    Args:
        metadata: the cluster metadata (its store is watched).
        on_change: called after each change with the ids added and removed.
    """

    def __init__(
        self, metadata: ClusterMetadata, on_change: BrokerChangeCallback | None = None
    ) -> None:
        self.metadata = metadata
        self._on_change = on_change
        self._lock = threading.Lock()
        self._snapshot: tuple[BrokerRegistration, ...] = ()
        self._refreshes = 0

    def start(self) -> None:
        """Reads the registrations and watches for changes."""
        self.metadata.store.watch_children(BROKER_IDS_PATH, lambda path: self.refresh())
        self.refresh()

    def snapshot(self) -> tuple[BrokerRegistration, ...]:
        """The live brokers, by id."""
        return self._snapshot

    def ids(self) -> list[int]:
        return [registration.broker_id for registration in self._snapshot]

    def get(self, broker_id: int) -> BrokerRegistration | None:
        for registration in self._snapshot:
            if registration.broker_id == broker_id:
                return registration
        return None

    @property
    def refreshes(self) -> int:
        """How many times the snapshot was read from the store."""
        return self._refreshes

    def refresh(self) -> None:
        """Reads the registrations again (the watch calls this; callable by hand too)."""
        with self._lock:
            try:
                brokers = tuple(self.metadata.registered_brokers())
            except SessionClosedError:
                return
            before = {registration.broker_id for registration in self._snapshot}
            after = {registration.broker_id for registration in brokers}
            self._snapshot = brokers
            self._refreshes += 1
            added, removed = sorted(after - before), sorted(before - after)
            if not (added or removed):
                return
            logger.info("live brokers %s (added %s, removed %s)", sorted(after), added, removed)
            if self._on_change is not None:
                try:
                    self._on_change(added, removed)
                except Exception:
                    logger.exception("live-broker change callback failed")
