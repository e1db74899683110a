"""The ordered list of a log's segments, copy-on-write.

Every change (add, remove, replace) builds a new tuple and publishes it with one attribute
assignment, so a reader that took ``snapshot()`` keeps a consistent view while the writer rolls
or retention deletes segments. Lookups bisect on base offsets.

Thread safety: one writer (the log, under its lock); readers on any thread, without locks.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from odradek.storage.segment import LogSegment


@dataclass(frozen=True, slots=True)
class SegmentsSnapshot:
    """An immutable view of the segment list: segments in base-offset order."""

    segments: tuple[LogSegment, ...]
    base_offsets: tuple[int, ...]

    def floor(self, offset: int) -> int:
        """Index of the last segment whose base offset is ≤ ``offset`` (-1 when none)."""
        return bisect.bisect_right(self.base_offsets, offset) - 1

    def floor_segment(self, offset: int) -> LogSegment | None:
        index = self.floor(offset)
        return self.segments[index] if index >= 0 else None

    def from_offset(self, offset: int) -> Iterator[LogSegment]:
        """Segments that may hold ``offset`` or later offsets, in order."""
        start = max(self.floor(offset), 0)
        yield from self.segments[start:]

    @property
    def active(self) -> LogSegment:
        return self.segments[-1]

    def __len__(self) -> int:
        return len(self.segments)

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self.segments)


_EMPTY = SegmentsSnapshot((), ())


class LogSegments:
    """The segment list of one log."""

    def __init__(self) -> None:
        self._snapshot = _EMPTY
        #: The active (newest) segment, None while there is none: ``active`` as a plain
        #: attribute, for the append path.
        self.newest: LogSegment | None = None

    def snapshot(self) -> SegmentsSnapshot:
        return self._snapshot

    def _publish(self, segments: list[LogSegment]) -> None:
        segments.sort(key=lambda segment: segment.base_offset)
        self._snapshot = SegmentsSnapshot(
            tuple(segments), tuple(segment.base_offset for segment in segments)
        )
        self.newest = segments[-1] if segments else None

    def add(self, segment: LogSegment) -> None:
        """Adds (or replaces the segment with the same base offset)."""
        kept = [s for s in self._snapshot.segments if s.base_offset != segment.base_offset]
        kept.append(segment)
        self._publish(kept)

    def replace(self, new_segment: LogSegment, old_segments: Sequence[LogSegment]) -> None:
        """Publishes, in one step, the list without ``old_segments`` and with ``new_segment``
        (compaction: readers see the old segments or the new one, never neither)."""
        kept = [s for s in self._snapshot.segments if all(s is not old for old in old_segments)]
        kept = [s for s in kept if s.base_offset != new_segment.base_offset]
        kept.append(new_segment)
        self._publish(kept)

    def remove(self, segment: LogSegment) -> None:
        self._publish([s for s in self._snapshot.segments if s is not segment])

    def clear(self) -> None:
        self._snapshot = _EMPTY
        self.newest = None

    @property
    def active(self) -> LogSegment:
        return self._snapshot.active

    def __len__(self) -> int:
        return len(self._snapshot)

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self._snapshot)
