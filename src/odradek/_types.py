"""Small value types shared by every layer."""

from __future__ import annotations

import mmap
from operator import itemgetter
from typing import TYPE_CHECKING, TypeAlias

#: Anything odradek reads bytes from without copying.
ReadableBuffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap

#: A writable buffer (for in-place header updates).
WritableBuffer: TypeAlias = bytearray | memoryview | mmap.mmap


class TopicPartition(tuple[str, int]):
    """A topic name and a partition number.

    Immutable, hashable and ordered by (topic, partition). A tuple subclass rather than a frozen
    dataclass because every request looks partitions up by one: building it, hashing it and
    comparing it are tuple's, in C (a dataclass's ``__init__``, ``__hash__`` and ``__eq__``
    are Python functions, ~0.5 µs per produce request). As a tuple it also equals the plain
    ``(topic, partition)`` pair and unpacks into one.
    """

    __slots__ = ()
    __match_args__ = ("topic", "partition")

    def __new__(cls, topic: str, partition: int) -> TopicPartition:
        return tuple.__new__(cls, (topic, partition))

    if TYPE_CHECKING:

        @property
        def topic(self) -> str: ...

        @property
        def partition(self) -> int: ...

    else:
        topic = property(itemgetter(0), doc="The topic name.")
        partition = property(itemgetter(1), doc="The partition number.")

    def __getnewargs__(self) -> tuple[str, int]:  # pickle and copy
        return (self[0], self[1])

    def __repr__(self) -> str:
        return f"TopicPartition(topic={self[0]!r}, partition={self[1]!r})"

    def __str__(self) -> str:
        return f"{self[0]}-{self[1]}"
