"""The tail of the active segment: the last batches appended, remembered in memory by
position, last offset and size, so reads where consumers keep up need no index lookup and no
header scan (see ``segment``, which owns it and keeps its rules).

``Tail`` is ``(first offset, positions, last offsets, sizes)``. Every batch at or after
``positions[0]`` is listed, in order, and every batch before it ends below the first offset;
empty arrays mean the segment holds no batch at all. Appended to the last offsets last (readers
index by them), and replaced (never cut in place) when trimmed, so a reader on another thread
always sees a consistent prefix.
"""

from __future__ import annotations

from array import array
from typing import TypeAlias

#: The most batches the tail remembers; when full it keeps the newer half. 128 covers a
#: consumer ~60 small batches behind at any moment; 2 KB per active segment at most.
TAIL_MAX_BATCHES = 128

Tail: TypeAlias = tuple[int, "array[int]", "array[int]", "array[int]"]


def new_tail(first_offset: int, position: int = -1, last_offset: int = -1, size: int = 0) -> Tail:
    """A tail starting at ``first_offset``: empty, or holding the batch at ``position``."""
    if position < 0:
        return (first_offset, array("q"), array("q"), array("q"))
    return (
        first_offset,
        array("q", (position,)),
        array("q", (last_offset,)),
        array("q", (size,)),
    )


def trimmed_tail(tail: Tail) -> Tail:
    """The newer half of a full tail (new arrays: readers may hold the old ones)."""
    keep = TAIL_MAX_BATCHES // 2
    last_offsets = tail[2]
    return (last_offsets[-keep - 1] + 1, tail[1][-keep:], last_offsets[-keep:], tail[3][-keep:])
