"""The offset index of a log segment (``<base offset>.index``): offset → position in ``.log``.

``OffsetIndex`` owns the sparse map from offsets to byte positions in the segment's log file.
In odradek an entry names the *base offset of a record batch* and the position of that batch,
so a fetch looks up the greatest entry at or below the fetch offset and scans batches forward
from its position. The rule it keeps: offsets and positions both strictly increase.
"""

from __future__ import annotations

import operator
import struct
from array import array
from bisect import bisect_left, bisect_right
from typing import NamedTuple

from odradek.storage.index_errors import IndexFullError, InvalidIndexEntryError
from odradek.storage.index_file import INT32_MAX, IndexFile, first_out_of_order

__all__ = ["IndexEntry", "OffsetIndex"]

#: The entry codec (module-level too, for ``append_trusted``).
_OFFSET_ENTRY = struct.Struct(">ii")


class IndexEntry(NamedTuple):
    """An offset index entry: a batch's base offset and its byte position in the ``.log`` file.

    A NamedTuple rather than a dataclass: lookups build one per call, and a tuple is the
    cheapest immutable value to build.
    """

    offset: int
    position: int


class OffsetIndex(IndexFile):
    """Maps batch base offsets to their byte positions in the segment's ``.log`` file.

    On-disk layout, 8 bytes per entry, big-endian, no header::

        offset  size  field
             0     4  relative_offset  int32  offset - base_offset, >= 0
             4     4  position         int32  byte position of the batch in the .log file

    Both fields strictly increase from one entry to the next. The file lifecycle
    (preallocate, trim, resize) and the thread-safety contract are ``IndexFile``'s: one thread
    appends, any thread looks up and sees a prefix of the entries.
    """

    __slots__ = ()

    entry_size = 8
    _ENTRY = _OFFSET_ENTRY
    _KEY_TYPECODE = "i"
    _VALUE_TYPECODE = "i"

    def append(self, offset: int, position: int) -> None:
        """Appends the entry (``offset``, ``position``).

        Raises:
            IndexFullError: the index is full (checked first).
            InvalidIndexEntryError: ``offset`` is not greater than the last entry's or outside
                ``[base_offset, base_offset + 2**31 - 1]``; ``position`` is not greater than
                the last entry's or outside ``[0, 2**31 - 1]``.
            ValueError: the index is closed.
        """
        relative_offset = offset - self._base_offset
        with self._lock:
            self._check_open()
            if self.is_full:
                raise IndexFullError(
                    f"{self._path}: cannot append offset {offset}: index is full "
                    f"({self.max_entries} entries)"
                )
            if not 0 <= relative_offset <= INT32_MAX:
                raise InvalidIndexEntryError(
                    f"{self._path}: offset {offset} is outside [{self._base_offset}, "
                    f"{self._base_offset + INT32_MAX}]"
                )
            if not 0 <= position <= INT32_MAX:
                raise InvalidIndexEntryError(
                    f"{self._path}: position {position} is outside [0, {INT32_MAX}]"
                )
            keys, values = self._columns
            if keys and relative_offset <= keys[-1]:
                raise InvalidIndexEntryError(
                    f"{self._path}: offset {offset} is not after the last entry's "
                    f"{self._base_offset + keys[-1]}"
                )
            if values and position <= values[-1]:
                raise InvalidIndexEntryError(
                    f"{self._path}: position {position} is not after the last entry's {values[-1]}"
                )
            self._append_locked(relative_offset, position)

    def append_trusted(self, offset: int, position: int) -> None:
        """``append`` without validation, for the owning segment (see ``_append_trusted``):
        the caller guarantees increasing offsets and positions within int32 range."""
        # ``_append_trusted`` inlined: this runs once per index.interval.bytes appended.
        keys, values = self._columns
        slot = len(keys)
        if slot >= self._length // 8:
            raise IndexFullError(f"{self._path}: index is full")
        mapped = self._mmap
        if mapped is None:  # not mapped yet, or released as idle (see ``IndexFile``)
            mapped = self._map_for_append()
        relative_offset = offset - self._base_offset
        _OFFSET_ENTRY.pack_into(mapped, slot * 8, relative_offset, position)
        self._dirty = True
        values.append(position)  # values first, as in ``_append_trusted``
        keys.append(relative_offset)

    def lookup(self, target_offset: int) -> IndexEntry:
        """Returns the entry with the largest offset ``<= target_offset``.

        Returns ``(base_offset, 0)`` when there is none (empty index, or a target before the
        first entry): the start of the segment. Lock-free; see ``IndexFile``.
        """
        keys, values = self._columns
        slot = bisect_right(keys, target_offset - self._base_offset, 0, len(keys)) - 1
        if slot < 0:
            return IndexEntry(self._base_offset, 0)
        return IndexEntry(self._base_offset + keys[slot], values[slot])

    def entry(self, slot: int) -> IndexEntry:
        """Returns the entry in ``slot`` (0 is the first).

        Raises:
            IndexError: ``slot`` is not in ``[0, entries)``.
        """
        keys, values = self._columns
        if not 0 <= slot < len(keys):
            raise IndexError(f"{self._path}: no entry {slot} in {len(keys)} entries")
        return IndexEntry(self._base_offset + keys[slot], values[slot])

    def last_entry(self) -> IndexEntry:
        """Returns the last entry, or ``(base_offset, 0)`` when the index is empty."""
        keys, values = self._columns
        slot = len(keys) - 1
        if slot < 0:
            return IndexEntry(self._base_offset, 0)
        return IndexEntry(self._base_offset + keys[slot], values[slot])

    def truncate_to(self, offset: int) -> None:
        """Drops every entry whose offset is ``>= offset``.

        Raises:
            ValueError: the index is closed.
        """
        with self._lock:
            self._check_open()
            keys = self._columns[0]
            self._truncate_locked(bisect_left(keys, offset - self._base_offset))

    def _check_entries(self, keys: array[int], values: array[int]) -> None:
        if not keys:
            return
        if keys[0] < 0:
            raise self._corrupt(0, f"negative relative offset {keys[0]}")
        if values[0] < 0:
            raise self._corrupt(0, f"negative position {values[0]}")
        slot = first_out_of_order(keys, operator.lt)
        if slot is not None:
            raise self._corrupt(
                slot,
                f"offset {self._base_offset + keys[slot]} does not follow "
                f"{self._base_offset + keys[slot - 1]}",
            )
        slot = first_out_of_order(values, operator.lt)
        if slot is not None:
            raise self._corrupt(slot, f"position {values[slot]} does not follow {values[slot - 1]}")
