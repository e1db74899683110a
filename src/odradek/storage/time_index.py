"""The time index of a log segment (``<base offset>.timeindex``): timestamp → offset.

``TimeIndex`` owns the sparse map from timestamps to offsets that ListOffsets by timestamp and
time-based retention use. An entry records *the largest timestamp seen so far in the segment*
and the base offset of the batch where it was first seen; so every batch before that offset
has only smaller timestamps. The rule it keeps: timestamps strictly increase, offsets never
decrease.
"""

from __future__ import annotations

import operator
import struct
from array import array
from bisect import bisect_left
from typing import NamedTuple

from odradek.storage.index_errors import IndexFullError, InvalidIndexEntryError
from odradek.storage.index_file import INT32_MAX, INT64_MAX, IndexFile, first_out_of_order

__all__ = ["NO_TIMESTAMP", "TimeIndex", "TimeIndexEntry"]

#: The timestamp of "no entry" (Kafka's RecordBatch.NO_TIMESTAMP).
NO_TIMESTAMP = -1

#: The entry codec (module-level too, for ``append_trusted``).
_TIME_ENTRY = struct.Struct(">qi")


class TimeIndexEntry(NamedTuple):
    """A time index entry: the largest timestamp so far and the offset where it was first seen.

    A NamedTuple rather than a dataclass: lookups build one per call, and a tuple is the
    cheapest immutable value to build.
    """

    timestamp: int
    offset: int


class TimeIndex(IndexFile):
    """Maps the segment's running maximum timestamp to the batch where it was reached.

    On-disk layout, 12 bytes per entry, big-endian, no header::

        offset  size  field
             0     8  timestamp        int64  milliseconds since the epoch
             8     4  relative_offset  int32  offset - base_offset, >= 0

    Timestamps strictly increase from one entry to the next; offsets never decrease.

    The last slot of the file is reserved for the entry written when the segment rolls or
    closes (``maybe_append(..., skip_full_check=True)``), so that the segment's final maximum
    timestamp is always indexed: for ordinary appends ``is_full`` is
    ``entries >= max_entries - 1``. The file lifecycle and the thread-safety contract are
    ``IndexFile``'s: one thread appends, any thread looks up and sees a prefix of the entries.
    """

    __slots__ = ()

    entry_size = 12
    _ENTRY = _TIME_ENTRY
    _KEY_TYPECODE = "q"
    _VALUE_TYPECODE = "i"

    @property
    def is_full(self) -> bool:
        """Whether an ordinary append would raise ``IndexFullError`` (the last slot is kept)."""
        return len(self._columns[0]) >= self._length // 12 - 1

    def maybe_append(
        self, timestamp_ms: int, offset: int, *, skip_full_check: bool = False
    ) -> bool:
        """Appends (``timestamp_ms``, ``offset``) if ``timestamp_ms`` is a new maximum.

        Args:
            timestamp_ms: the largest timestamp seen so far in the segment.
            offset: the base offset of the batch where it was first seen.
            skip_full_check: allow the reserved last slot; for the final entry written when
                the segment rolls or closes.

        Returns:
            Whether an entry was appended: False when ``timestamp_ms`` is not greater than the
            last entry's timestamp (``-1`` for an empty index).

        Raises:
            IndexFullError: ``is_full`` (unless ``skip_full_check``; checked first), or no slot
                is left at all.
            InvalidIndexEntryError: ``offset`` is before the last entry's offset or outside
                ``[base_offset, base_offset + 2**31 - 1]``, or ``timestamp_ms`` is beyond int64.
            ValueError: the index is closed.
        """
        relative_offset = offset - self._base_offset
        with self._lock:
            self._check_open()
            if not skip_full_check and self.is_full:
                raise IndexFullError(
                    f"{self._path}: cannot append timestamp {timestamp_ms}: time index is full "
                    f"({self.max_entries} entries, the last one reserved)"
                )
            if not 0 <= relative_offset <= INT32_MAX:
                raise InvalidIndexEntryError(
                    f"{self._path}: offset {offset} is outside [{self._base_offset}, "
                    f"{self._base_offset + INT32_MAX}]"
                )
            keys, values = self._columns
            if values and relative_offset < values[-1]:
                raise InvalidIndexEntryError(
                    f"{self._path}: offset {offset} is before the last entry's "
                    f"{self._base_offset + values[-1]}"
                )
            if timestamp_ms <= (keys[-1] if keys else NO_TIMESTAMP):
                return False
            if timestamp_ms > INT64_MAX:
                raise InvalidIndexEntryError(f"{self._path}: timestamp {timestamp_ms} > int64")
            self._append_locked(timestamp_ms, relative_offset)
            return True

    @property
    def last_timestamp(self) -> int:
        """The last entry's timestamp, or -1 when the index is empty."""
        keys = self._columns[0]
        return keys[-1] if keys else NO_TIMESTAMP

    def append_trusted(self, timestamp_ms: int, offset: int) -> None:
        """``maybe_append`` without validation, for the owning segment (see
        ``_append_trusted``): the caller guarantees a new maximum timestamp, a
        non-decreasing offset, and room (``not is_full``)."""
        # ``_append_trusted`` inlined: this runs once per index.interval.bytes appended.
        keys, values = self._columns
        slot = len(keys)
        if slot >= self._length // 12:
            raise IndexFullError(f"{self._path}: index is full")
        mapped = self._mmap
        if mapped is None:  # not mapped yet, or released as idle (see ``IndexFile``)
            mapped = self._map_for_append()
        relative_offset = offset - self._base_offset
        _TIME_ENTRY.pack_into(mapped, slot * 12, timestamp_ms, relative_offset)
        self._dirty = True
        values.append(relative_offset)  # values first, as in ``_append_trusted``
        keys.append(timestamp_ms)

    def lookup(self, target_timestamp_ms: int) -> TimeIndexEntry:
        """Returns the entry with the largest timestamp ``< target_timestamp_ms``.

        Returns ``(-1, base_offset)`` when there is none. Every batch before the returned
        offset has only timestamps below the target, so a search for the first record at or
        after the target may start at that offset. Lock-free; see ``IndexFile``.
        """
        keys, values = self._columns
        slot = bisect_left(keys, target_timestamp_ms, 0, len(keys)) - 1
        if slot < 0:
            return TimeIndexEntry(NO_TIMESTAMP, self._base_offset)
        return TimeIndexEntry(keys[slot], self._base_offset + values[slot])

    def entry(self, slot: int) -> TimeIndexEntry:
        """Returns the entry in ``slot`` (0 is the first).

        Raises:
            IndexError: ``slot`` is not in ``[0, entries)``.
        """
        keys, values = self._columns
        if not 0 <= slot < len(keys):
            raise IndexError(f"{self._path}: no entry {slot} in {len(keys)} entries")
        return TimeIndexEntry(keys[slot], self._base_offset + values[slot])

    def last_entry(self) -> TimeIndexEntry:
        """Returns the last entry, or ``(-1, base_offset)`` when the index is empty."""
        keys, values = self._columns
        slot = len(keys) - 1
        if slot < 0:
            return TimeIndexEntry(NO_TIMESTAMP, self._base_offset)
        return TimeIndexEntry(keys[slot], self._base_offset + values[slot])

    def truncate_to(self, offset: int) -> None:
        """Drops every entry whose offset is ``>= offset``.

        Raises:
            ValueError: the index is closed.
        """
        with self._lock:
            self._check_open()
            values = self._columns[1]  # offsets never decrease: bisect them
            self._truncate_locked(bisect_left(values, offset - self._base_offset))

    def _check_entries(self, keys: array[int], values: array[int]) -> None:
        if not keys:
            return
        if values[0] < 0:
            raise self._corrupt(0, f"negative relative offset {values[0]}")
        if keys[0] < 0:  # maybe_append never indexes a timestamp <= NO_TIMESTAMP
            raise self._corrupt(0, f"negative timestamp {keys[0]}")
        slot = first_out_of_order(keys, operator.lt)
        if slot is not None:
            raise self._corrupt(slot, f"timestamp {keys[slot]} does not follow {keys[slot - 1]}")
        slot = first_out_of_order(values, operator.le)
        if slot is not None:
            raise self._corrupt(
                slot,
                f"offset {self._base_offset + values[slot]} is before "
                f"{self._base_offset + values[slot - 1]}",
            )
