"""``OffsetMap``: for each key of the dirty section, the offset of its latest record.

A key is stored as its 16-byte BLAKE2b digest, never as itself, so an entry has a fixed
nominal size — 16 bytes of hash plus 8 of offset, as in Kafka's map — and
``log.cleaner.dedupe.buffer.size`` bounds how many keys one pass can map::

    slots    = memory_bytes // 24
    capacity = int(slots * load_factor)

(A Python dict spends several times the nominal 24 bytes per entry: the bound is on entries.)
Two keys with the same 128-bit digest would be taken for one key; the chance is negligible
(about n² / 2**129 for n keys) and the same trade Kafka makes.

Thread safety: none; one cleaner thread owns a map and ``clear()``s it between passes.
"""

from __future__ import annotations

import hashlib

#: Nominal bytes of one entry: a 16-byte hash and an 8-byte offset.
ENTRY_BYTES = 24
HASH_BYTES = 16
NOT_FOUND = -1


def key_hash(key: bytes) -> bytes:
    """The 16-byte digest the map stores for ``key``."""
    return hashlib.blake2b(key, digest_size=HASH_BYTES).digest()


class OffsetMap:
    """A bounded map of key → latest offset (see the module docstring).

    Args:
        memory_bytes: the dedupe buffer of this map.
        load_factor: the fraction of the slots that may be used.

    Raises:
        ValueError: the buffer cannot hold a single entry.
    """

    def __init__(self, memory_bytes: int, load_factor: float = 0.9) -> None:
        self.slots = memory_bytes // ENTRY_BYTES
        self.capacity = int(self.slots * load_factor)
        if self.capacity < 1:
            raise ValueError(f"a dedupe buffer of {memory_bytes} bytes holds no entry")
        self._offsets: dict[bytes, int] = {}
        #: The last offset of the last batch mapped (-1 before any).
        self.latest_offset = NOT_FOUND

    @property
    def size(self) -> int:
        """Keys mapped."""
        return len(self._offsets)

    @property
    def is_full(self) -> bool:
        return len(self._offsets) >= self.capacity

    @property
    def utilization(self) -> float:
        return len(self._offsets) / self.slots

    def try_put(self, key: bytes, offset: int) -> bool:
        """Maps ``key`` to ``offset`` (a later offset than any mapped for it); returns False,
        changing nothing, when the key is new and the map is full."""
        digest = key_hash(key)
        offsets = self._offsets
        if digest not in offsets and len(offsets) >= self.capacity:
            return False
        offsets[digest] = offset
        return True

    def get(self, key: bytes) -> int:
        """The latest offset mapped for ``key``, or ``NOT_FOUND`` (-1)."""
        return self._offsets.get(key_hash(key), NOT_FOUND)

    def clear(self) -> None:
        self._offsets = {}
        self.latest_offset = NOT_FOUND
