"""Small value types shared by every layer."""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from typing import TypeAlias

#: Anything odradek reads bytes from without copying.
ReadableBuffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap

#: A writable buffer (for in-place header updates).
WritableBuffer: TypeAlias = bytearray | memoryview | mmap.mmap


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    """A topic name and a partition number."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
