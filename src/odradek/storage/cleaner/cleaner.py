"""``Cleaner``: one compaction pass over one log — the I/O half of compaction.

A pass, given the log's cleanable range (``log_to_clean``):

1. **Map** the dirty section into the ``OffsetMap``: for every keyed record of an ordinary batch
   at or past the first dirty offset and wholly below the first uncleanable offset, key →
   offset. When the map fills, the pass stops at the end of the last batch it mapped whole;
   that end is the pass's *end offset* (otherwise the end is the first uncleanable offset).
   The end offset becomes the cleaner checkpoint. (Records past the end may sit in a segment
   that is cleaned: nothing in the map is later than them, so they all stay.)
2. **Clean** every segment below the end offset — the clean section too, so tombstones and
   superseded records there go — in runs of segments (``segment_groups``) each merged into one
   new segment with the base offset of its first segment, written as
   ``<base>.log.cleaned``, ``<base>.index.cleaned`` and ``<base>.timeindex.cleaned`` through
   ``batch_filter`` and fsynced. The last batch of a run is kept, empty if need be, so the
   cleaned segment ends exactly where its run ended: its offset range names the segments it
   replaces.
3. **Swap** it in, under the log's lock (``Log.replace_segments``): the files are renamed
   ``.cleaned`` → ``.swap`` (indexes first, the ``.log`` last — the rename of the ``.log`` is
   the commit point) and the directory fsynced; the new segment replaces the old ones in the
   copy-on-write segment list; the old segments are renamed ``.deleted`` and removed after
   ``file.delete.delay.ms`` (readers in progress keep their descriptors); the ``.swap`` files
   take their final names. A crash before the commit leaves the old segments (the loader
   deletes ``.cleaned`` files and unmatched ``.swap`` indexes); after it, the loader finishes
   the swap: it replaces every segment whose base offset lies in the ``.swap`` segment's range
   and rebuilds its indexes.

Runs are cleaned oldest first, each committed on its own: a record is only removed in favour
of a later one, so every crash point leaves, for each key, the same latest record (or, for a
deleted key, either its tombstone or nothing). A run whose single segment comes out unchanged
is not rewritten.

The pass is aborted (``LogCleaningAbortedError``, nothing half-done stays) when the log
changes under it — a truncation, retention or deletion of a segment it is cleaning, the log
closing — or when ``is_aborted`` says so. The pass never touches the active segment: the
first uncleanable offset is at most its base offset.

Thread safety: a ``Cleaner`` (and its map) serves one thread at a time; it reads inactive
segments, which only the log's lock holder may remove, and checks under that lock before
swapping.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from odradek._types import TopicPartition
from odradek.errors import CorruptRecordError
from odradek.records.batch import HEADER_SIZE, BatchHeader, parse_header, validate_batch
from odradek.records.codec import decode_records
from odradek.storage.checkpoints import fsync_directory
from odradek.storage.cleaner.batch_filter import Outcome, filter_batch
from odradek.storage.cleaner.log_to_clean import LogToClean
from odradek.storage.cleaner.offset_map import OffsetMap
from odradek.storage.cleaner.segment_groups import group_segments_by_size
from odradek.storage.config import LogConfig
from odradek.storage.file_records import FileRecords
from odradek.storage.log import Log
from odradek.storage.naming import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    segment_path,
)
from odradek.storage.offset_index import OffsetIndex
from odradek.storage.open_files import OpenFiles
from odradek.storage.segment import BatchPosition, LogSegment
from odradek.storage.time_index import TimeIndex

logger = logging.getLogger(__name__)


class LogCleaningAbortedError(Exception):
    """The pass stopped: the log changed under it, or it was asked to stop."""


@dataclass(slots=True)
class CleanerStats:
    """Counters of one pass."""

    bytes_read: int = 0
    bytes_written: int = 0
    records_mapped: int = 0
    records_removed: int = 0
    batches_rewritten: int = 0
    batches_removed: int = 0
    segments_replaced: int = 0
    segments_written: int = 0


@dataclass(frozen=True, slots=True)
class CleanResult:
    """What a pass did."""

    topic_partition: TopicPartition
    #: The new cleaner checkpoint: everything below it has been cleaned.
    end_offset: int
    #: The earliest delete horizon of the tombstones kept (-1 when none).
    earliest_tombstone_horizon_ms: int
    stats: CleanerStats = field(default_factory=CleanerStats)


class Cleaner:
    """Cleans logs one pass at a time (see the module docstring).

    Args:
        offset_map: the map this cleaner fills (cleared at each pass).
        io_buffer_size: bytes read per read and buffered per write.
        is_aborted: asked between batches; True stops the pass.
    """

    def __init__(
        self,
        offset_map: OffsetMap,
        *,
        io_buffer_size: int = 512 * 1024,
        is_aborted: Callable[[TopicPartition], bool] = lambda _tp: False,
    ) -> None:
        self.offset_map = offset_map
        self._io_buffer_size = io_buffer_size
        self._is_aborted = is_aborted

    # ----------------------------------------------------------------- the pass

    def clean(self, log: Log, to_clean: LogToClean, now_ms: int) -> CleanResult:
        """Runs one pass over ``log`` within ``to_clean``'s range at time ``now_ms``.

        Raises:
            LogCleaningAbortedError: the log changed under the pass or it was aborted.
            CorruptRecordError, UnsupportedCompressionTypeError: a batch that cannot be
                decoded (the caller marks the log uncleanable).
            ValueError: the dedupe buffer cannot hold the keys of a single batch.
            OSError: file trouble (a log deleted under the pass, a full disk).
        """
        tp = log.topic_partition
        truncations = log.truncation_count
        segments = log.segments()
        config = log.config
        stats = CleanerStats()
        first_dirty = to_clean.first_dirty_offset
        uncleanable = to_clean.first_uncleanable_offset
        dirty = [
            segment
            for segment in segments[:-1]
            if segment.next_offset > first_dirty and segment.base_offset < uncleanable
        ]
        end_offset = self._build_offset_map(tp, dirty, first_dirty, uncleanable, stats)
        inputs = [segment for segment in segments[:-1] if segment.base_offset < end_offset]
        groups = group_segments_by_size(
            [_Sized(segment) for segment in inputs], config.segment_bytes
        )
        horizons: list[int] = []
        for group in groups:
            horizon = self._clean_group(
                log, [item.segment for item in group], config, truncations, now_ms, stats
            )
            if horizon >= 0:
                horizons.append(horizon)
        earliest = min(horizons) if horizons else -1
        logger.info(
            "%s: cleaned up to offset %d: %d segments into %d, %d records removed, %d keys mapped",
            tp,
            end_offset,
            stats.segments_replaced,
            stats.segments_written,
            stats.records_removed,
            self.offset_map.size,
        )
        return CleanResult(tp, end_offset, earliest, stats)

    def _check_aborted(self, tp: TopicPartition) -> None:
        if self._is_aborted(tp):
            raise LogCleaningAbortedError(f"{tp}: cleaning aborted")

    # ----------------------------------------------------------------- offset map

    def _build_offset_map(
        self,
        tp: TopicPartition,
        dirty: list[LogSegment],
        first_dirty: int,
        uncleanable: int,
        stats: CleanerStats,
    ) -> int:
        """Maps the dirty segments; returns the pass's end offset."""
        offset_map = self.offset_map
        offset_map.clear()
        if not dirty:
            return first_dirty
        for segment in dirty:
            for data, header in self._read_batches(segment, stats):
                self._check_aborted(tp)
                if header.next_offset <= first_dirty:
                    continue
                if header.last_offset >= uncleanable:  # the high watermark
                    return uncleanable
                if not (header.is_control or header.is_transactional):
                    for record in decode_records(data, header):
                        if record.key is None or record.offset < first_dirty:
                            continue
                        if not offset_map.try_put(record.key, record.offset):
                            return self._map_full(tp, first_dirty)
                        stats.records_mapped += 1
                offset_map.latest_offset = header.last_offset
        return uncleanable

    def _map_full(self, tp: TopicPartition, first_dirty: int) -> int:
        latest = self.offset_map.latest_offset
        if latest < first_dirty:
            raise ValueError(
                f"{tp}: the dedupe buffer ({self.offset_map.capacity} keys) cannot hold the "
                "keys of one batch: raise log.cleaner.dedupe.buffer.size"
            )
        logger.info("%s: offset map full; this pass cleans up to offset %d", tp, latest + 1)
        return latest + 1

    # ----------------------------------------------------------------- one run of segments

    def _clean_group(
        self,
        log: Log,
        group: list[LogSegment],
        config: LogConfig,
        truncations: int,
        now_ms: int,
        stats: CleanerStats,
    ) -> int:
        """Cleans and swaps one run; returns the earliest delete horizon of the tombstones it
        kept (-1 when none)."""
        tp = log.topic_partition
        non_empty = [segment for segment in group if segment.size > 0]
        if not non_empty:
            return -1
        group_end = non_empty[-1].next_offset
        base_offset = group[0].base_offset
        input_bytes = sum(segment.size for segment in non_empty)
        cleaned = _create_cleaned_segment(
            log.directory, base_offset, config, now_ms, input_bytes, log.open_files
        )
        swapped = False
        try:
            changed = len(non_empty) > 1
            horizon = -1
            buffer = bytearray()
            positions: list[BatchPosition] = []
            for segment in non_empty:
                for data, header in self._read_batches(segment, stats):
                    self._check_aborted(tp)
                    result = filter_batch(
                        data,
                        header,
                        self.offset_map.get,
                        now_ms=now_ms,
                        delete_retention_ms=config.delete_retention_ms,
                        keep_empty=header.next_offset == group_end,
                    )
                    stats.records_removed += result.records_removed
                    if result.tombstone_horizon_ms >= 0:
                        horizon = (
                            result.tombstone_horizon_ms
                            if horizon < 0
                            else min(horizon, result.tombstone_horizon_ms)
                        )
                    if result.outcome is not Outcome.KEPT:
                        changed = True
                        if result.outcome is Outcome.REMOVED:
                            stats.batches_removed += 1
                        else:
                            stats.batches_rewritten += 1
                    if result.data is None or result.header is None:
                        continue
                    positions.append(BatchPosition(len(buffer), result.header))
                    buffer += result.data
                    if len(buffer) >= self._io_buffer_size:
                        self._write(cleaned, buffer, positions, stats)
                        buffer, positions = bytearray(), []
            if positions:
                self._write(cleaned, buffer, positions, stats)
            if not changed:
                return horizon
            cleaned.on_become_inactive()
            cleaned.flush()
            covered_end = max(cleaned.next_offset, base_offset + 1)
            replaced = [s for s in group if base_offset <= s.base_offset < covered_end]
            directory = log.directory
            swapped = log.replace_segments(
                cleaned,
                replaced,
                truncations=truncations,
                commit=lambda: _rename_files(cleaned, SWAP_SUFFIX, directory, durable=True),
                finish=lambda: _rename_files(cleaned, "", directory, durable=False),
            )
            if not swapped:
                raise LogCleaningAbortedError(f"{tp}: the log changed while it was being cleaned")
            stats.segments_replaced += len(replaced)
            stats.segments_written += 1
            return horizon
        finally:
            if not swapped:
                cleaned.delete_files()

    @staticmethod
    def _write(
        segment: LogSegment, buffer: bytearray, positions: list[BatchPosition], stats: CleanerStats
    ) -> None:
        segment.append(buffer, positions)
        stats.bytes_written += len(buffer)

    # ----------------------------------------------------------------- reading

    def _read_batches(
        self, segment: LogSegment, stats: CleanerStats
    ) -> Iterator[tuple[bytes, BatchHeader]]:
        """Every batch of an inactive segment, CRC-checked, read ``io_buffer_size`` at a time.

        Raises:
            CorruptRecordError: a truncated or corrupt batch.
        """
        records = segment.log
        end = records.size
        position = 0
        while position < end:
            chunk = records.read(
                position, min(max(self._io_buffer_size, HEADER_SIZE), end - position)
            )
            if len(chunk) >= HEADER_SIZE:
                first = parse_header(chunk)
                if first.size > len(chunk):  # one batch larger than the buffer
                    chunk = records.read(position, first.size)
            consumed = 0
            while len(chunk) - consumed >= HEADER_SIZE:
                size = parse_header(chunk, consumed).size
                if consumed + size > len(chunk):
                    break
                data = chunk[consumed : consumed + size]
                yield data, validate_batch(data)
                consumed += size
            if consumed == 0:
                raise CorruptRecordError(
                    f"{records.path}: truncated batch at position {position} (size {end})"
                )
            stats.bytes_read += consumed
            position += consumed


@dataclass(frozen=True, slots=True)
class _Sized:
    """A segment as ``group_segments_by_size`` sees it."""

    segment: LogSegment

    @property
    def base_offset(self) -> int:
        return self.segment.base_offset

    @property
    def next_offset(self) -> int:
        return self.segment.next_offset

    @property
    def size_bytes(self) -> int:
        return self.segment.size


_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, LOG_SUFFIX)
_TIME_INDEX_ENTRY_BYTES = 12


def _create_cleaned_segment(
    directory: str,
    base_offset: int,
    config: LogConfig,
    now_ms: int,
    input_bytes: int,
    open_files: OpenFiles | None,
) -> LogSegment:
    """A new, empty segment whose files carry the ``.cleaned`` suffix (leftovers of an
    earlier attempt are replaced). Its indexes are preallocated for the entries
    ``input_bytes`` of batches can need at most — an entry per ``index.interval.bytes``, and
    never more than one per batch — rather than ``segment.index.bytes``."""
    paths = {
        suffix: segment_path(directory, base_offset, suffix) + CLEANED_SUFFIX
        for suffix in _SUFFIXES
    }
    for path in paths.values():
        if os.path.exists(path):
            os.remove(path)
    log_file = FileRecords(paths[LOG_SUFFIX], open_files=open_files)
    entries = input_bytes // max(config.index_interval_bytes, HEADER_SIZE) + 2
    index_bytes = min(config.segment_index_bytes, _TIME_INDEX_ENTRY_BYTES * (entries + 1))
    offset_index = OffsetIndex(paths[INDEX_SUFFIX], base_offset, index_bytes, open_files=open_files)
    time_index = TimeIndex(
        paths[TIME_INDEX_SUFFIX], base_offset, index_bytes, open_files=open_files
    )
    return LogSegment(directory, base_offset, config, now_ms, log_file, offset_index, time_index)


def _rename_files(segment: LogSegment, state_suffix: str, directory: str, *, durable: bool) -> None:
    """Renames the segment's files to their plain names plus ``state_suffix`` — the indexes
    first, the ``.log`` last (the loader goes by the ``.log``) — and, when ``durable``, fsyncs
    the directory. (The final names need no fsync: a crash that loses them leaves the
    ``.swap`` names, which the loader completes.)"""
    base = segment.base_offset
    segment.offset_index.rename_to(segment_path(directory, base, INDEX_SUFFIX) + state_suffix)
    segment.time_index.rename_to(segment_path(directory, base, TIME_INDEX_SUFFIX) + state_suffix)
    segment.log.rename_to(segment_path(directory, base, LOG_SUFFIX) + state_suffix)
    if durable:
        fsync_directory(directory)
