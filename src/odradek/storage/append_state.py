"""The active segment's append state, and its fast path: one batch appended and accounted for
in one call (compiled when ``odradek._append`` is built, else ``PyAppendState``).

``LogSegment`` owns one ``AppendState`` and keeps in it what every append reads and changes:
the offset after the last batch, the largest timestamp and where it is, the first batch's
timestamp, the bytes appended since the last index entry, whether an index is full, and the
tail (``segment_tail``). ``append`` serves the common produce request whole — check, patch and
write the batch (``file_records.py_append_batch``'s contract), then update the state and
remember the batch in the tail — so that no Python runs between the log's lock and the write
but the call itself. It declines (None, nothing written, nothing changed) whatever the segment
does in Python: an index entry due (``index.interval.bytes`` passed), the tail full (it is
trimmed) or unknown, an empty segment or one whose first batch has no timestamp, a full index,
an offset below the base; and every batch ``py_append_batch`` declines. The segment writes
index entries, rolls and recovers, reading and setting the fields as attributes.

Crash safety is the file's: the state is memory only, changed after the bytes are written
(``FileRecords`` cuts off a partial write and raises before anything here changes), and a
segment's state is rebuilt from its files on load.

Thread safety: the log's writer (under its lock) calls ``append`` and sets fields; readers on
other threads read the fields and the tail (see ``segment_tail`` for its rules).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from odradek._compiled import compiled_attr
from odradek._types import ReadableBuffer
from odradek.storage.file_records import COMPILED_MODULE, BatchFields, py_append_batch
from odradek.storage.segment_tail import Tail

#: The largest offset a segment can hold past its base (relative offsets are int32).
MAX_RELATIVE_OFFSET = 2**31 - 1
NO_TIMESTAMP = -1


class AppendState(Protocol):
    """What ``PyAppendState`` and the compiled ``odradek._append.AppendState`` share."""

    @property
    def base_offset(self) -> int: ...
    @property
    def max_offset(self) -> int: ...
    @property
    def tail_max_batches(self) -> int: ...

    index_interval_bytes: int
    next_offset: int
    max_timestamp_so_far: int
    offset_of_max_timestamp: int
    first_batch_timestamp: int
    bytes_since_last_index_entry: int
    indexes_full: bool
    tail: Tail | None

    def append(
        self,
        fd: int,
        data: ReadableBuffer,
        base_offset: int,
        leader_epoch: int | None,
        position: int,
        max_batch_bytes: int,
        max_file_bytes: int,
        segment_ms: int,
        /,
    ) -> BatchFields | None: ...


class PyAppendState:
    """The append state of the segment at ``base_offset`` (empty: no batch, no tail); the
    reference of the compiled ``odradek._append.AppendState``, which behaves identically."""

    __slots__ = (
        "base_offset",
        "bytes_since_last_index_entry",
        "first_batch_timestamp",
        "index_interval_bytes",
        "indexes_full",
        "max_offset",
        "max_timestamp_so_far",
        "next_offset",
        "offset_of_max_timestamp",
        "tail",
        "tail_max_batches",
    )

    def __init__(self, base_offset: int, index_interval_bytes: int, tail_max_batches: int) -> None:
        if not 0 <= base_offset <= 2**63 - 1 - MAX_RELATIVE_OFFSET:
            raise ValueError(f"AppendState(): base_offset {base_offset} is out of range")
        self.base_offset = base_offset
        self.max_offset = base_offset + MAX_RELATIVE_OFFSET
        self.index_interval_bytes = index_interval_bytes
        self.tail_max_batches = tail_max_batches
        self.next_offset = base_offset
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        self.first_batch_timestamp = NO_TIMESTAMP
        self.bytes_since_last_index_entry = 0
        self.indexes_full = False
        self.tail: Tail | None = None

    def append(
        self,
        fd: int,
        data: ReadableBuffer,
        base_offset: int,
        leader_epoch: int | None,
        position: int,
        max_batch_bytes: int,
        max_file_bytes: int,
        segment_ms: int,
        /,
    ) -> BatchFields | None:
        """Appends one batch to ``fd`` (at file position ``position`` ≥ 0, its size) with
        ``base_offset`` (≥ 0) and ``leader_epoch`` when it is at most ``max_batch_bytes``,
        leaves the file at most ``max_file_bytes`` long and its max timestamp is within
        ``segment_ms`` of the first batch's (no roll due); updates the state and the tail.

        Returns ``(last_offset_delta, max_timestamp, records_count)``, or None having written
        and changed nothing (see the module docstring for when). Raises OSError when the
        write failed (part of the batch may be in the file; the state is unchanged).
        """
        first_timestamp = self.first_batch_timestamp
        if (
            first_timestamp < 0
            or base_offset < self.base_offset
            or self.indexes_full
            or self.bytes_since_last_index_entry > self.index_interval_bytes
        ):
            return None
        tail = self.tail
        if tail is None or len(tail[1]) >= self.tail_max_batches:
            return None
        room = max_file_bytes - position
        fields = py_append_batch(
            fd,
            data,
            base_offset,
            leader_epoch,
            room if room < max_batch_bytes else max_batch_bytes,
            first_timestamp + segment_ms,
            self.max_offset - base_offset,
        )
        if fields is None:
            return None
        last_offset = base_offset + fields[0]
        if fields[1] > self.max_timestamp_so_far:
            self.max_timestamp_so_far = fields[1]
            self.offset_of_max_timestamp = base_offset
        size = len(data)
        self.bytes_since_last_index_entry += size
        self.next_offset = last_offset + 1
        try:
            # segment_tail's rule: positions and sizes first, last offsets last.
            tail[1].append(position)
            tail[3].append(size)
            tail[2].append(last_offset)
        except MemoryError:
            self.tail = None  # no longer lists every batch: forgotten, the append stands
        return fields


def new_append_state(
    base_offset: int, index_interval_bytes: int, tail_max_batches: int
) -> AppendState:
    """An empty segment's append state: the compiled one when it is built."""
    return _IMPLEMENTATION(base_offset, index_interval_bytes, tail_max_batches)


#: The class ``new_append_state`` builds: compiled when ``odradek._append`` is built.
_IMPLEMENTATION: Callable[[int, int, int], AppendState] = (
    compiled_attr(COMPILED_MODULE, "AppendState") or PyAppendState
)
