"""The producer ids this broker hands out (InitProducerId), from blocks it reserves.

Ids come from the current block (``controller.producer_id_block``: cluster-wide, through the
metadata store, so no two brokers and no restart reuse an id); when it runs out the next block
is reserved, which reads and writes the store — ZooKeeper in a cluster — so ``next_id`` may
block and is called off the event loop, while ``try_next_id`` never blocks.

Thread safety: all methods may be called from any thread.
"""

from __future__ import annotations

import threading

from odradek.controller.producer_id_block import ProducerIdBlock, allocate_producer_id_block
from odradek.controller.store import MetadataStore

__all__ = ["ProducerIdManager"]


class ProducerIdManager:
    """Producer ids for one broker (see the module docstring)."""

    def __init__(self, store: MetadataStore, broker_id: int) -> None:
        self._store = store
        self._broker_id = broker_id
        self._lock = threading.Lock()
        self._block: ProducerIdBlock | None = None
        self._next = 0

    def try_next_id(self) -> int | None:
        """The next id of the current block, or None when a block must be reserved."""
        with self._lock:
            block = self._block
            if block is None or self._next > block.last:
                return None
            producer_id = self._next
            self._next += 1
            return producer_id

    def next_id(self) -> int:
        """The next id, reserving a new block when the current one is used up (blocks on
        the store).

        Raises:
            MetadataStoreError: the store could not be read or written.
        """
        with self._lock:
            block = self._block
            if block is None or self._next > block.last:
                block = allocate_producer_id_block(self._store, self._broker_id)
                self._block = block
                self._next = block.first
            producer_id = self._next
            self._next += 1
            return producer_id
