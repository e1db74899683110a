"""One log segment: a ``.log`` file of batches plus its ``.index`` and ``.timeindex``.

Files, all named by the segment's base offset as 20 digits (see ``naming``)::

    00000000000000001000.log        record batches back to back (FileRecords)
    00000000000000001000.index      sparse offset index: (batch base offset, position)
    00000000000000001000.timeindex  sparse time index: (max timestamp so far, batch offset)

An index entry is added every ``index.interval.bytes`` of appended batches; lookups go to the
nearest entry at or before the target and scan a few batch headers from there. The last
``TAIL_MAX_BATCHES`` batches appended (the *tail*, where consumers keeping up read; its layout
is ``segment_tail``'s) are also remembered in memory by position, last offset and size, so a
read there (a fetch) reads no header and ``translate_offset`` one (checked against what was
remembered) instead of scanning: each scanned header is a ``pread``, about nine per fetch at
the default interval with small batches. The tail is known only for batches this process
appended or recovered: after a clean load or a truncation lookups scan until the next
index-interval point starts a new one; an inactive segment keeps none.

Appends: what every append reads and changes (next offset, largest timestamp, first batch
timestamp, bytes since the last index entry, index room, tail) is the segment's
``append_state.AppendState``, compiled when ``odradek._append`` is built: a produce batch is
checked, written and accounted for in one call; the appends that write index entries or trim
the tail are ``segment_append``'s, in Python.

Invariants: batches are stored in offset order; ``next_offset`` is the offset after the last
batch; the index files are preallocated while the segment is active and trimmed when it rolls.
Every index lookup is checked against the batch header it points at: an entry that does not
match (a corrupt index that passed the sanity check) is reported and the segment falls back to
scanning from its start, so a damaged index costs speed, never correctness.

Descriptors: none of the three files needs to stay open. The ``.log`` is opened when used and
released by ``OpenFiles`` when idle or over the broker's bound; the indexes answer lookups from
memory and map their file only while entries are written (see ``file_records`` and
``index_file``). An idle segment, active or not, can therefore hold no descriptor at all.

Thread safety: one writer (the log, under its lock) appends, truncates and rolls; readers on
any thread may call ``read``, ``translate_offset`` and ``find_offset_by_timestamp``.
"""

from __future__ import annotations

import contextlib
import logging
import os
from bisect import bisect_left
from dataclasses import dataclass
from typing import NamedTuple

from odradek._types import ReadableBuffer
from odradek.errors import CorruptRecordError, KafkaStorageError
from odradek.records.batch import BatchHeader, TimestampType
from odradek.records.codec import decode_batch_records
from odradek.storage.append_state import MAX_RELATIVE_OFFSET, NO_TIMESTAMP, new_append_state
from odradek.storage.config import LogConfig
from odradek.storage.file_records import BatchFields, FileRecords, FileSlice
from odradek.storage.index_errors import CorruptIndexError
from odradek.storage.naming import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    segment_path,
)
from odradek.storage.offset_index import OffsetIndex
from odradek.storage.open_files import OpenFiles
from odradek.storage.segment_append import append_indexing, index_batch
from odradek.storage.segment_tail import TAIL_MAX_BATCHES, new_tail
from odradek.storage.time_index import TimeIndex

logger = logging.getLogger(__name__)

TIME_INDEX_ENTRY_BYTES = 12


class BatchPosition(NamedTuple):
    """Where a batch starts and what its header says (a NamedTuple: built per append)."""

    position: int
    header: BatchHeader


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    """The answer to an offset-for-timestamp lookup."""

    timestamp: int
    offset: int


class LogSegment:
    """A segment of a partition log. Create with ``create`` or ``open``.

    Args:
        directory: the partition directory.
        base_offset: the offset of the first batch this segment may hold.
        config: segment and index sizes, index interval.
        created_ms: when the segment was created or loaded (for time-based rolls).
    """

    def __init__(
        self,
        directory: str,
        base_offset: int,
        config: LogConfig,
        created_ms: int,
        log: FileRecords,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.created_ms = created_ms
        self.log = log
        self.offset_index = offset_index
        self.time_index = time_index
        #: What every append reads and changes (``append_state``): the next offset, the
        #: largest timestamp and its offset, the first batch's timestamp, the bytes since the
        #: last index entry, whether an index is full, and the tail — None until this
        #: process knows every batch from an interval point on: a new segment (``create``),
        #: a recovered one, or the next interval point.
        self._state = new_append_state(base_offset, config.index_interval_bytes, TAIL_MAX_BATCHES)
        self._index_trusted = True
        #: ``should_roll``'s index check, cached for the fast path and refreshed
        #: (``_note_index_room``) wherever entries or sizes change.
        self._state.indexes_full = offset_index.is_full or time_index.is_full
        self.deleted = False

    @property
    def next_offset(self) -> int:
        """The offset after the last batch (the base offset when empty)."""
        return self._state.next_offset

    @property
    def max_timestamp_so_far(self) -> int:
        """The largest batch timestamp in the segment, or -1."""
        return self._state.max_timestamp_so_far

    @property
    def offset_of_max_timestamp(self) -> int:
        """The base offset of the batch holding ``max_timestamp_so_far``."""
        return self._state.offset_of_max_timestamp

    @property
    def first_batch_timestamp(self) -> int:
        """The first batch's max timestamp, or -1 (empty, or no timestamp)."""
        return self._state.first_batch_timestamp

    # ----------------------------------------------------------------- construction

    @classmethod
    def create(
        cls,
        directory: str,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        open_files: OpenFiles | None = None,
    ) -> LogSegment:
        """Creates the files of a new, empty segment (replacing leftovers of the same name).
        ``open_files`` is the bound its descriptors count against (None: unbounded)."""
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            path = segment_path(directory, base_offset, suffix)
            if os.path.exists(path):
                os.remove(path)
        segment = cls._open_files(directory, base_offset, config, now_ms, open_files)
        segment._state.tail = new_tail(base_offset)
        return segment

    @classmethod
    def _open_files(
        cls,
        directory: str,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        open_files: OpenFiles | None,
    ) -> LogSegment:
        log = FileRecords(segment_path(directory, base_offset, LOG_SUFFIX), open_files=open_files)
        offset_index = OffsetIndex(
            segment_path(directory, base_offset, INDEX_SUFFIX),
            base_offset,
            config.segment_index_bytes,
            open_files=open_files,
        )
        time_index = TimeIndex(
            segment_path(directory, base_offset, TIME_INDEX_SUFFIX),
            base_offset,
            config.segment_index_bytes,
            open_files=open_files,
        )
        return cls(directory, base_offset, config, now_ms, log, offset_index, time_index)

    @classmethod
    def open_existing(
        cls,
        directory: str,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        open_files: OpenFiles | None = None,
    ) -> LogSegment:
        """Opens an existing segment without checking it; the loader then calls
        ``load_trusting_indexes`` or ``recover``. A missing index file is created empty and
        makes ``load_trusting_indexes`` refuse the segment (it must be rebuilt)."""
        indexes_present = all(
            os.path.exists(segment_path(directory, base_offset, suffix))
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX)
        )
        segment = cls._open_files(directory, base_offset, config, now_ms, open_files)
        segment._index_trusted = indexes_present
        return segment

    # ----------------------------------------------------------------- state

    @property
    def size(self) -> int:
        """Bytes of batches in the ``.log`` file."""
        return self.log.size

    @property
    def is_empty(self) -> bool:
        return self.log.size == 0

    @property
    def largest_timestamp(self) -> int:
        """The largest batch timestamp in the segment, or -1 when it holds none."""
        return self._state.max_timestamp_so_far

    def statistics(self) -> dict[str, int]:
        return {
            "base_offset": self.base_offset,
            "next_offset": self._state.next_offset,
            "size_bytes": self.size,
            "index_entries": self.offset_index.entries,
            "time_index_entries": self.time_index.entries,
            "largest_timestamp": self._state.max_timestamp_so_far,
        }

    # ----------------------------------------------------------------- append

    def fits_relative_offset(self, last_offset: int) -> bool:
        """Whether an offset can be stored relative to this segment's base (int32)."""
        return 0 <= last_offset - self.base_offset <= MAX_RELATIVE_OFFSET

    def should_roll(
        self,
        batch_bytes: int,
        max_timestamp: int,
        last_offset: int,
        segment_ms: int,
        segment_bytes: int,
        now_ms: int,
    ) -> bool:
        """Whether appending this data must go to a new segment (Kafka's ``shouldRoll``).

        A segment rolls when the data would push it past ``segment.bytes``, when it has
        waited ``segment.ms`` (measured between the first batch's timestamp and the new
        batch's, or from creation when batches carry no timestamp), when an index is full, or
        when the offsets no longer fit relative to the base offset. An empty segment only
        rolls for the last two reasons.
        """
        if self.offset_index.is_full or self.time_index.is_full:
            return True
        if not self.fits_relative_offset(last_offset):
            return True
        if self.is_empty:
            return False
        if self.size + batch_bytes > segment_bytes:
            return True
        if self._state.first_batch_timestamp >= 0 and max_timestamp >= 0:
            waited = max_timestamp - self._state.first_batch_timestamp
        else:
            waited = now_ms - self.created_ms
        return waited > segment_ms

    def append(
        self,
        data: bytes | bytearray | memoryview | tuple[bytearray, memoryview],
        batches: list[BatchPosition],
    ) -> int:
        """Appends already validated batches (``batches`` positions are relative to ``data``;
        a tuple of buffers is written as one piece, with ``writev``).

        Adds index entries every ``index.interval.bytes``. Returns the file position where
        ``data`` starts. The caller checked ``should_roll`` and offset order.
        """
        # Index pages first (see IndexFile.reserve_entries): a full disk then refuses the
        # append before anything is written.
        self.offset_index.reserve_entries(len(batches))
        self.time_index.reserve_entries(len(batches))
        start = self.log.append_parts(data) if isinstance(data, tuple) else self.log.append(data)
        for batch in batches:
            header = batch.header
            if start + batch.position == 0:
                self._state.first_batch_timestamp = header.max_timestamp
            self._index_batch(header, start + batch.position)
        return start

    def append_batch(
        self, data: ReadableBuffer, base_offset: int, leader_epoch: int | None, config: LogConfig
    ) -> BatchFields | None:
        """The leader's fast path: validates one whole batch, gives it ``base_offset`` (and
        ``leader_epoch``), appends it and indexes it, when no roll is due and nothing is
        unusual; the same outcome as ``should_roll`` answering False followed by ``append``.

        Returns ``(last_offset_delta, max_timestamp, records_count)``, or None, having
        changed nothing, when the batch needs the general path: not exactly one valid v2
        batch, over ``max.message.bytes``, no timestamp, or a roll due (``should_roll``'s
        reasons; an empty segment or one whose first batch has no timestamp always declines).
        The caller holds the log's lock and passes the log end offset.

        The append state serves it in one call (``append_state``) but when an index entry
        is due or the tail must be trimmed or started: then ``_append_batch_indexing``.
        """
        state = self._state
        fields = self.log.append_with_state(
            state,
            data,
            base_offset,
            leader_epoch,
            config.max_message_bytes,
            config.segment_bytes,
            config.segment_ms,
        )
        if fields is None:
            tail = state.tail
            if (
                state.bytes_since_last_index_entry > state.index_interval_bytes
                or tail is None
                or len(tail[1]) >= TAIL_MAX_BATCHES
            ):
                return self._append_batch_indexing(data, base_offset, leader_epoch, config)
        return fields

    def _append_batch_indexing(
        self, data: ReadableBuffer, base_offset: int, leader_epoch: int | None, config: LogConfig
    ) -> BatchFields | None:
        """``append_batch`` when the append state declined for the segment's own work."""
        return append_indexing(
            self._state,
            self.log,
            self.offset_index,
            self.time_index,
            data,
            base_offset,
            leader_epoch,
            config,
        )

    def _index_batch(self, header: BatchHeader, position: int) -> None:
        index_batch(self._state, self.offset_index, self.time_index, header, position)

    def _note_index_room(self) -> None:
        """Refreshes ``_indexes_full`` (after entries were added or an index resized)."""
        self._state.indexes_full = self.offset_index.is_full or self.time_index.is_full

    # ----------------------------------------------------------------- lookups

    def translate_offset(self, target: int, start_position: int = 0) -> BatchPosition | None:
        """The first batch at or after ``start_position`` whose last offset is ≥ ``target``,
        or None when no batch in this segment reaches ``target``."""
        tail = self._state.tail
        if tail is not None and start_position == 0 and target >= tail[0]:
            # From memory and one header read (see the module docstring); a header that does
            # not match what was remembered falls through to the scan.
            last_offsets = tail[2]
            index = bisect_left(last_offsets, target)
            if index == len(last_offsets):
                return None
            position = tail[1][index]
            try:
                remembered = self.log.header_at(position)
            except CorruptRecordError:
                pass
            else:
                if remembered.last_offset == last_offsets[index]:
                    return BatchPosition(position, remembered)
        position = start_position
        if self._index_trusted:
            entry = self.offset_index.lookup(target)
            if entry.position > position:
                header = self._checked_index_target(entry.offset, entry.position)
                if header is not None:
                    if header.last_offset >= target:
                        return BatchPosition(entry.position, header)
                    position = entry.position + header.size
        for batch_position, header in self.log.batches_from(position):
            if header.last_offset >= target:
                return BatchPosition(batch_position, header)
        return None

    def _checked_index_target(self, offset: int, position: int) -> BatchHeader | None:
        """The header an index entry points at, or None (and distrust of the index) when the
        entry does not point at a batch with that base offset."""
        try:
            header = self.log.header_at(position)
        except CorruptRecordError:
            header = None
        if header is None or header.base_offset != offset:
            self._distrust_indexes(f"entry ({offset}, {position}) does not match the log")
            return None
        return header

    def _distrust_indexes(self, reason: str) -> None:
        if self._index_trusted:
            logger.error(
                "%s: index does not match the log (%s); scanning instead until it is rebuilt",
                self.offset_index.path,
                reason,
            )
        self._index_trusted = False

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_position: int | None = None,
        min_one_message: bool = True,
    ) -> FileSlice | None:
        """A slice starting at the batch that holds ``start_offset``.

        Args:
            start_offset: an offset in this segment (or after its last batch).
            max_bytes: the most bytes to return; the slice may end inside a batch.
            max_position: never return bytes at or past this position (the high watermark's
                position in this segment), or None for the end of the segment.
            min_one_message: return the whole first batch even when it is larger than
                ``max_bytes`` (KIP-74), so a consumer always makes progress.

        Returns:
            The slice, or None when the segment holds nothing at or after ``start_offset``.
        """
        tail = self._state.tail
        if tail is not None and start_offset >= tail[0]:
            # From memory, no header read (the tail is this process's own bookkeeping of
            # what it wrote; ``translate_offset`` still checks the header it reads).
            last_offsets = tail[2]
            index = bisect_left(last_offsets, start_offset)
            if index == len(last_offsets):
                return None
            position = tail[1][index]
            first_size = tail[3][index]
        else:
            found = self.translate_offset(start_offset)
            if found is None:
                return None
            position = found.position
            first_size = found.header.size
        size = self.log.size
        limit = size if max_position is None or max_position > size else max_position
        if position >= limit:
            return None
        length = min(max_bytes, limit - position)
        if min_one_message and length < first_size:
            length = min(first_size, limit - position)
        return self.log.slice(position, length)

    def find_offset_by_timestamp(
        self, timestamp_ms: int, start_offset: int = 0
    ) -> TimestampAndOffset | None:
        """The first record at or after ``start_offset`` (the log start offset) whose
        timestamp is ≥ ``timestamp_ms``, or None.

        Starts from the time index (the last entry whose timestamp is below the target), then
        scans batches and decodes the records of the first batch whose max timestamp reaches
        the target.
        """
        position = 0
        if self._index_trusted:
            entry = self.time_index.lookup(timestamp_ms)
            if entry.timestamp >= 0:
                found = self.translate_offset(entry.offset)
                if (
                    found is None
                    or found.header.base_offset != entry.offset
                    or (found.header.max_timestamp != entry.timestamp)
                ):
                    self._distrust_indexes(f"time entry {entry} does not match the log")
                else:
                    position = found.position
        for batch_position, header in self.log.batches_from(position):
            if (
                header.max_timestamp < timestamp_ms
                or header.is_control
                or header.last_offset < start_offset
            ):
                continue
            if header.timestamp_type is TimestampType.LOG_APPEND_TIME:
                return TimestampAndOffset(
                    header.max_timestamp, max(header.base_offset, start_offset)
                )
            data = self.log.read(batch_position, header.size)
            for record in decode_batch_records(data):
                if record.timestamp >= timestamp_ms and record.offset >= start_offset:
                    return TimestampAndOffset(record.timestamp, record.offset)
        return None

    # ----------------------------------------------------------------- loading and recovery

    def load_trusting_indexes(self) -> int:
        """Loads a segment of a cleanly shut-down log: checks the indexes' structure and
        that their last entries point at real batches, then validates the batches after the
        last offset-index entry (CRC included) and truncates anything invalid at the end.

        The time index's last entry must be the segment's largest timestamp (written by
        ``on_become_inactive``, which every segment loaded this way went through): the batch
        headers after that entry's batch are read (headers only, up to the last offset-index
        entry; usually a few batches, at worst the whole segment) and a larger timestamp
        among them means entries were lost — an index file cut back to whole entries passes
        every structural check. A damaged index costs a rebuild, never a wrong
        ``largest_timestamp`` (retention, offset-for-timestamp).

        Returns the number of bytes truncated. Raises CorruptIndexError when an index does
        not check out (the loader then calls ``recover``).
        """
        if not self._index_trusted:
            raise CorruptIndexError(f"{self.offset_index.path}: an index file is missing")
        self.offset_index.sanity_check()
        self.time_index.sanity_check()
        last = self.offset_index.last_entry()
        start = 0
        next_offset = self.base_offset
        if self.offset_index.entries:
            if self._checked_index_target(last.offset, last.position) is None:
                raise CorruptIndexError(f"{self.offset_index.path}: last entry does not match")
            start = last.position
            next_offset = last.offset
        time_last = self.time_index.last_entry()
        # Where the batches not yet accounted for by the time index's last entry start: every
        # batch before that entry's offset has a smaller timestamp (the running maximum).
        unaccounted_from = 0
        if self.time_index.entries:
            try:
                found = self.translate_offset(time_last.offset)
            except CorruptRecordError:
                found = None
            if found is None or (found.header.base_offset, found.header.max_timestamp) != (
                time_last.offset,
                time_last.timestamp,
            ):
                raise CorruptIndexError(f"{self.time_index.path}: last entry does not match")
            self._state.max_timestamp_so_far = time_last.timestamp
            self._state.offset_of_max_timestamp = time_last.offset
            unaccounted_from = found.position + found.header.size
        self._scan_max_timestamp(unaccounted_from, start)
        valid_end = start
        for position, header in self.log.validated_batches(start):
            if header.base_offset < next_offset:
                break
            if header.max_timestamp > self._state.max_timestamp_so_far:
                self._state.max_timestamp_so_far = header.max_timestamp
                self._state.offset_of_max_timestamp = header.base_offset
            valid_end = position + header.size
            next_offset = header.next_offset
        self._state.bytes_since_last_index_entry = valid_end - start
        if time_last.offset >= next_offset and self.time_index.entries:
            raise CorruptIndexError(f"{self.time_index.path}: entry past the end of the log")
        if self._state.max_timestamp_so_far > time_last.timestamp:
            # A segment is only loaded this way after ``on_become_inactive`` recorded its
            # largest timestamp as the last entry: a larger one in the log means entries were
            # lost (a file cut back to whole entries passes the structural checks).
            raise CorruptIndexError(
                f"{self.time_index.path}: last entry {tuple(time_last)} is below the largest "
                f"timestamp in the log, {self._state.max_timestamp_so_far} at offset "
                f"{self._state.offset_of_max_timestamp}"
            )
        self._state.next_offset = next_offset
        # After the truncation: a segment whose bytes from 0 were invalid is empty now, and
        # its first header must not be read (it may be zeros or garbage).
        cut = self._truncate_invalid_tail(valid_end)
        self._load_first_batch_timestamp()
        self._note_index_room()
        return cut

    def _scan_max_timestamp(self, position: int, end: int) -> None:
        """Folds the max timestamps of the batches in ``[position, end)`` (headers only) into
        ``max_timestamp_so_far``; a bad header raises CorruptIndexError (rebuild)."""
        if position >= end:
            return
        try:
            for batch_position, header in self.log.batches_from(position):
                if batch_position >= end:
                    break
                if header.max_timestamp > self._state.max_timestamp_so_far:
                    self._state.max_timestamp_so_far = header.max_timestamp
                    self._state.offset_of_max_timestamp = header.base_offset
        except CorruptRecordError as error:
            raise CorruptIndexError(
                f"{self.log.path}: a batch header before the last index entry is bad: {error}"
            ) from error

    def recover(self) -> int:
        """Rebuilds both indexes by validating every batch (size and CRC32C) from the start,
        and truncates the file at the first invalid one. Returns the bytes truncated."""
        self.offset_index.reset()
        self.time_index.reset()
        self._index_trusted = True
        self._state.bytes_since_last_index_entry = 0
        self._state.tail = new_tail(self.base_offset)
        self._state.max_timestamp_so_far = NO_TIMESTAMP
        self._state.offset_of_max_timestamp = self.base_offset
        self._state.next_offset = self.base_offset
        self._state.first_batch_timestamp = NO_TIMESTAMP
        valid_end = 0
        for position, header in self.log.validated_batches(0):
            if header.base_offset < self._state.next_offset or not self.fits_relative_offset(
                header.last_offset
            ):
                break
            if position == 0:
                self._state.first_batch_timestamp = header.max_timestamp
            self._index_batch(header, position)
            valid_end = position + header.size
        self._note_index_room()
        return self._truncate_invalid_tail(valid_end)

    def _truncate_invalid_tail(self, valid_end: int) -> int:
        file_size = self.log.file_size()
        if valid_end < file_size:
            logger.warning(
                "%s: truncating %d invalid bytes at position %d",
                self.log.path,
                file_size - valid_end,
                valid_end,
            )
        self.log.truncate_to(valid_end)
        return file_size - valid_end

    def _load_first_batch_timestamp(self) -> None:
        """Reads the first batch's timestamp (the clean-load path: that batch was not
        CRC-checked, it lies before the last index entry). A header that does not parse
        raises CorruptIndexError: the loader then recovers the segment."""
        if self.log.size > 0:
            try:
                header = self.log.header_at(0)
            except CorruptRecordError as error:
                raise CorruptIndexError(f"{self.log.path}: first batch header: {error}") from error
            self._state.first_batch_timestamp = header.max_timestamp

    # ----------------------------------------------------------------- truncation and roll

    def truncate_to(self, offset: int) -> int:
        """Removes every batch whose base offset is ≥ ``offset``; returns the bytes removed.

        ``offset`` must be a batch boundary or past the last batch (replication truncates to
        batch boundaries). Index entries at or past it are dropped.
        """
        found = self.translate_offset(offset)
        if found is None:
            return 0
        self._state.tail = None
        position = found.position
        if found.header.base_offset < offset:
            position += found.header.size
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        removed = self.log.truncate_to(position)
        self._rescan_after_truncation()
        self._note_index_room()
        return removed

    def _rescan_after_truncation(self) -> None:
        last = self.offset_index.last_entry()
        start = last.position if self.offset_index.entries else 0
        self._state.next_offset = self.base_offset if start == 0 else last.offset
        time_last = self.time_index.last_entry()
        self._state.max_timestamp_so_far = time_last.timestamp
        self._state.offset_of_max_timestamp = time_last.offset
        self._state.bytes_since_last_index_entry = 0
        for _position, header in self.log.batches_from(start):
            if header.max_timestamp > self._state.max_timestamp_so_far:
                self._state.max_timestamp_so_far = header.max_timestamp
                self._state.offset_of_max_timestamp = header.base_offset
            self._state.bytes_since_last_index_entry += header.size
            self._state.next_offset = header.next_offset
        if self.log.size == 0:
            self._state.first_batch_timestamp = NO_TIMESTAMP

    def on_become_inactive(self) -> None:
        """Called when the log rolls past this segment: records the final time-index entry
        (the segment's largest timestamp) and trims both index files. Only the active
        segment keeps a tail (memory with thousands of partitions)."""
        self._state.tail = None
        index = self.time_index
        last = index.last_entry()
        if self._state.max_timestamp_so_far > last.timestamp:
            if index.entries >= index.max_entries:
                # A trimmed index (loaded from a clean shutdown) has no free slot: make one.
                index.resize((index.entries + 1) * TIME_INDEX_ENTRY_BYTES)
            try:
                index.reserve_entries()
            except KafkaStorageError as error:
                # A full disk: the final entry only makes time lookups in the segment's tail
                # faster (they scan from the last entry); better without it than a SIGBUS.
                logger.warning("%s: final time-index entry skipped: %s", self.directory, error)
            else:
                index.maybe_append(
                    self._state.max_timestamp_so_far,
                    self._state.offset_of_max_timestamp,
                    skip_full_check=True,
                )
        self.offset_index.trim()
        index.trim()
        self._note_index_room()

    def prepare_for_appends(self, config: LogConfig) -> None:
        """Re-preallocates the indexes of a loaded segment that becomes the active one."""
        for index in (self.offset_index, self.time_index):
            index.resize(max(config.segment_index_bytes, index.size_bytes))
        self._note_index_room()

    # ----------------------------------------------------------------- durability and files

    def flush(self) -> None:
        """fsyncs the log and both indexes."""
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()

    def close(self) -> None:
        """Closes the files, recording the final time-index entry and trimming the indexes."""
        if self.deleted:
            return
        self.on_become_inactive()
        self.log.close()
        self.offset_index.close()
        self.time_index.close()

    def discard(self) -> None:
        """Lets the files go without touching them (the directory is being removed)."""
        self.deleted = True
        self.log.close()
        self.offset_index.discard()
        self.time_index.discard()

    def moved_to(self, directory: str) -> None:
        """Records that the partition directory was renamed to ``directory``."""
        self.directory = directory
        for file in (self.log, self.offset_index, self.time_index):
            file.moved_to(os.path.join(directory, os.path.basename(file.path)))

    def mark_deleted(self) -> None:
        """Renames every file with ``.deleted`` appended; the files stay open (readers in
        progress keep working) until ``delete_files``."""
        self.deleted = True
        self.log.rename_to(self.log.path + DELETED_SUFFIX)
        self.offset_index.rename_to(self.offset_index.path + DELETED_SUFFIX)
        self.time_index.rename_to(self.time_index.path + DELETED_SUFFIX)

    def delete_files(self) -> None:
        """Closes and removes the files (after ``mark_deleted``, or directly)."""
        self.deleted = True
        self.log.close()
        # Already gone when a later segment with the same base offset was renamed over this
        # one's ``.deleted`` file and an earlier deletion removed it: close the indexes anyway.
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.log.path)
        self.offset_index.delete()
        self.time_index.delete()

    def __repr__(self) -> str:
        return (
            f"LogSegment(base_offset={self.base_offset}, next_offset={self._state.next_offset}, "
            f"size={self.size})"
        )
