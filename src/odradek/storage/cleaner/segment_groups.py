"""Which segments are merged into one cleaned segment: consecutive runs, in offset order, whose
sizes add up to at most ``segment.bytes`` and whose offsets all fit relative to the run's first
base offset (the offset index stores int32 offsets relative to the segment's base).

Cleaning only shrinks batches, so a cleaned segment fits where its inputs fitted. A segment
larger than the limit on its own forms a run by itself. Pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

MAX_RELATIVE_OFFSET = 2**31 - 1


class SizedSegment(Protocol):
    @property
    def base_offset(self) -> int: ...

    @property
    def next_offset(self) -> int: ...

    @property
    def size_bytes(self) -> int: ...


S = TypeVar("S", bound=SizedSegment)


def group_segments_by_size(
    segments: Sequence[S], max_size_bytes: int, max_relative_offset: int = MAX_RELATIVE_OFFSET
) -> list[list[S]]:
    """Splits ``segments`` (oldest first) into runs to merge; every segment is in one run."""
    groups: list[list[S]] = []
    current: list[S] = []
    size = 0
    for segment in segments:
        if current:
            fits = size + segment.size_bytes <= max_size_bytes
            last_offset = max(segment.next_offset - 1, segment.base_offset)
            in_range = last_offset - current[0].base_offset <= max_relative_offset
            if fits and in_range:
                current.append(segment)
                size += segment.size_bytes
                continue
            groups.append(current)
        current = [segment]
        size = segment.size_bytes
    if current:
        groups.append(current)
    return groups
