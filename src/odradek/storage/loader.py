"""Opening a log directory: finishing interrupted deletes, loading segments, and recovering
after a crash.

After a clean shutdown each segment's indexes are sanity-checked and trusted, and only the
batches after the last index entry are validated. After an unclean shutdown every batch from
the segment holding the recovery point onwards — and at least the whole newest segment, where
torn writes happen — is checked (the batch fits in the file, CRC32C matches, offsets increase)
and the log is truncated at the first bad one; indexes of checked segments are rebuilt, and
segments after a truncation are removed. Indexes that do not check out are rebuilt anywhere.

Leftovers of an interrupted compaction (see ``cleaner.cleaner``): ``.cleaned`` files are
deleted (the segments they were to replace are intact). A ``<base>.log.swap`` file is a cleaned
segment that was fully written and committed: it replaces every segment whose base offset lies
in its offset range [base, its last batch's next offset), whatever state the swap reached;
index ``.swap`` files are deleted and the swapped segment's indexes rebuilt. A ``.swap`` file
without a single valid batch cannot be a committed cleaned segment (one always ends with a
batch) and is deleted.
"""

from __future__ import annotations

import bisect
import logging
import os
from dataclasses import dataclass

from odradek.errors import CorruptRecordError
from odradek.storage.checkpoints import fsync_directory
from odradek.storage.config import LogConfig
from odradek.storage.file_records import FileRecords
from odradek.storage.index_errors import CorruptIndexError
from odradek.storage.leader_epoch_cache import CHECKPOINT_FILE_NAME, EpochEntry, LeaderEpochCache
from odradek.storage.naming import (
    DELETED_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    parse_segment_file_name,
    segment_path,
)
from odradek.storage.open_files import OpenFiles
from odradek.storage.producer_snapshots import delete_snapshots_after
from odradek.storage.segment import LogSegment

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LoadedLog:
    """What the loader hands the log."""

    segments: list[LogSegment]
    log_start_offset: int
    log_end_offset: int
    recovery_point: int
    #: Bytes cut from the log during recovery, and segments removed after a truncation.
    truncated_bytes: int
    removed_segments: int


class LogLoader:
    """Loads one partition directory (see the module docstring for the rules).

    Args:
        directory: the partition directory (created when missing).
        config: the log's configuration.
        recovery_point: offsets below this were flushed before the last shutdown.
        log_start_offset: from the log-start-offset checkpoint (0 when unknown).
        had_clean_shutdown: the log directory's clean-shutdown marker was present.
        now_ms: the current time (segment creation times).
        name: the log's name for log lines (``topic-partition``).
        open_files: the bound the segments' descriptors count against (None: unbounded).
    """

    def __init__(
        self,
        directory: str,
        config: LogConfig,
        *,
        recovery_point: int,
        log_start_offset: int,
        had_clean_shutdown: bool,
        now_ms: int,
        name: str,
        open_files: OpenFiles | None = None,
    ) -> None:
        self.directory = directory
        self.config = config
        self.recovery_point = recovery_point
        self.log_start_offset = log_start_offset
        self.had_clean_shutdown = had_clean_shutdown
        self.now_ms = now_ms
        self.name = name
        self.open_files = open_files

    def load(self) -> LoadedLog:
        os.makedirs(self.directory, exist_ok=True)
        base_offsets = self._clean_directory()
        segments = [
            LogSegment.open_existing(
                self.directory, base, self.config, self.now_ms, self.open_files
            )
            for base in base_offsets
        ]
        truncated, removed = self._load_segments(segments)
        if removed:
            segments = segments[: len(segments) - removed]
        if not segments:
            segments = [
                LogSegment.create(
                    self.directory,
                    self.log_start_offset,
                    self.config,
                    self.now_ms,
                    self.open_files,
                )
            ]
        log_end_offset = segments[-1].next_offset
        log_start_offset = max(self.log_start_offset, segments[0].base_offset)
        if log_end_offset < log_start_offset:
            logger.warning(
                "%s: log end offset %d is below the log start offset %d; starting empty at %d",
                self.name,
                log_end_offset,
                log_start_offset,
                log_start_offset,
            )
            for segment in segments:
                segment.delete_files()
            segments = [
                LogSegment.create(
                    self.directory, log_start_offset, self.config, self.now_ms, self.open_files
                )
            ]
            log_end_offset = log_start_offset
        segments[-1].prepare_for_appends(self.config)
        recovery_point = self.recovery_point
        if truncated or not self.had_clean_shutdown:
            # Everything is checked now; make the repairs durable before trusting them.
            for segment in segments:
                if segment.next_offset > min(recovery_point, log_end_offset):
                    segment.flush()
            recovery_point = log_end_offset
        recovery_point = min(max(recovery_point, log_start_offset), log_end_offset)
        if truncated or removed:
            logger.warning(
                "%s: recovery truncated %d bytes and removed %d segments; log end offset %d",
                self.name,
                truncated,
                removed,
                log_end_offset,
            )
        # A producer-state snapshot past the recovered end describes records that are gone:
        # deleted now, not when the state is first loaded — by then appends may have taken
        # the log past it again and it would be read as the state of records it never saw.
        delete_snapshots_after(self.directory, log_end_offset)
        return LoadedLog(
            segments, log_start_offset, log_end_offset, recovery_point, truncated, removed
        )

    def _clean_directory(self) -> list[int]:
        """Removes leftovers of interrupted operations; returns the segments' base offsets."""
        logs: set[int] = set()
        indexes: dict[int, list[str]] = {}
        swaps: list[int] = []
        for name in os.listdir(self.directory):
            path = os.path.join(self.directory, name)
            if name.endswith(".tmp"):
                os.remove(path)
                continue
            parsed = parse_segment_file_name(name)
            if parsed is None:
                continue
            base_offset, suffix, state = parsed
            if state == SWAP_SUFFIX and suffix == LOG_SUFFIX:
                swaps.append(base_offset)
            elif state:
                # .deleted: a delete that did not finish; .cleaned: an interrupted compaction
                # (its originals are still in place); index .swap: rebuilt after the swap.
                if state == DELETED_SUFFIX:
                    logger.info("%s: finishing the deletion of %s", self.name, name)
                os.remove(path)
            elif suffix == LOG_SUFFIX:
                logs.add(base_offset)
            else:
                indexes.setdefault(base_offset, []).append(path)
        for base_offset in sorted(swaps):
            self._complete_swap(base_offset, logs, indexes)
        for base_offset, paths in indexes.items():
            if base_offset not in logs:
                for path in paths:
                    os.remove(path)
        return sorted(logs)

    def _complete_swap(
        self, base_offset: int, logs: set[int], indexes: dict[int, list[str]]
    ) -> None:
        """Replaces the segments a committed ``.swap`` segment covers (see the module
        docstring) and gives it its final name."""
        swap_path = segment_path(self.directory, base_offset, LOG_SUFFIX) + SWAP_SUFFIX
        swap = FileRecords(swap_path)
        try:
            next_offset = None
            for _position, header in swap.validated_batches():
                next_offset = header.next_offset
        finally:
            swap.close()
        if next_offset is None:
            logger.warning("%s: removing %s: it holds no valid batch", self.name, swap_path)
            os.remove(swap_path)
            return
        covered = sorted(b for b in logs if base_offset <= b < next_offset)
        logger.info(
            "%s: finishing an interrupted swap: %s replaces segments %s",
            self.name,
            os.path.basename(swap_path),
            covered,
        )
        for covered_base in covered:
            os.remove(segment_path(self.directory, covered_base, LOG_SUFFIX))
            logs.discard(covered_base)
        for covered_base in [b for b in indexes if base_offset <= b < next_offset]:
            for path in indexes.pop(covered_base):
                os.remove(path)
        os.replace(swap_path, segment_path(self.directory, base_offset, LOG_SUFFIX))
        fsync_directory(self.directory)
        logs.add(base_offset)

    def _load_segments(self, segments: list[LogSegment]) -> tuple[int, int]:
        """Loads or recovers each segment; returns (bytes truncated, segments removed)."""
        truncated = 0
        last = len(segments) - 1
        for index, segment in enumerate(segments):
            must_check = not self.had_clean_shutdown and (
                index == last
                or (index < last and segments[index + 1].base_offset > self.recovery_point)
            )
            if must_check:
                cut = self._recover(segment, index == last)
            else:
                try:
                    cut = segment.load_trusting_indexes()
                    if index != last:
                        segment.on_become_inactive()
                except CorruptIndexError as error:
                    logger.warning("%s: rebuilding indexes of %r: %s", self.name, segment, error)
                    cut = self._recover(segment, index == last)
            truncated += cut
            following = segments[index + 1].base_offset if index < last else None
            # The next segment must start where this one ends. An overlap is damage; so is a
            # gap, unless the log compacts (a cleaned segment may end early): the end of this
            # segment was lost (a file cut at a batch boundary, which no CRC shows), and the
            # next segment's offsets cannot follow it.
            broken = following is not None and (
                following < segment.next_offset
                or (following > segment.next_offset and not self.config.compacts)
            )
            if (cut or broken) and index < last:
                removed = segments[index + 1 :]
                for later in removed:
                    logger.warning("%s: removing %r after a damaged segment", self.name, later)
                    later.delete_files()
                return truncated, len(removed)
        return truncated, 0

    def _recover(self, segment: LogSegment, is_last: bool) -> int:
        segment.prepare_for_appends(self.config)
        cut = segment.recover()
        if not is_last:
            segment.on_become_inactive()
        return cut


def load_leader_epochs(
    directory: str, segments: list[LogSegment], log_start_offset: int, log_end_offset: int
) -> LeaderEpochCache:
    """The log's leader-epoch cache from its checkpoint file, or rebuilt from the batch
    headers when the file is missing, unreadable, or names an epoch the log's batches do not
    carry where it says the epoch starts (the file has no checksum: a damaged one may still
    parse); trimmed to the recovered offsets (a crash may have lost records the file still
    names)."""
    path = os.path.join(directory, CHECKPOINT_FILE_NAME)
    cache = LeaderEpochCache.load(directory)
    if cache is not None:
        cache.truncate_from_end(log_end_offset)
        cache.truncate_from_start(log_start_offset)
        wrong = _entry_not_in_log(cache.entries(), segments, log_start_offset)
        if wrong is not None:
            logger.warning(
                "%s: %s does not match the log (%s); rebuilding it from the log",
                directory,
                CHECKPOINT_FILE_NAME,
                wrong,
            )
            cache = None
    if cache is None:
        built = LeaderEpochCache(None)  # in memory: one write at the end, not one per epoch
        for segment in segments:
            try:
                for _, header in segment.log.batches_from(0):
                    epoch = header.partition_leader_epoch
                    if epoch >= 0 and epoch != built.latest_epoch:
                        built.assign(epoch, header.base_offset)
            except CorruptRecordError as error:
                # Damage at rest in a segment trusted without its CRC (below the recovery
                # point): the epochs of its later batches stay unknown, never a failed open.
                logger.error("%s: rebuilding the leader epochs: %s", directory, error)
        cache = LeaderEpochCache(path, built.entries())
        if any(segment.size for segment in segments):  # a new, empty log needs no file yet
            cache.flush()
        cache.truncate_from_end(log_end_offset)
        cache.truncate_from_start(log_start_offset)
    return cache


def _entry_not_in_log(
    entries: list[EpochEntry], segments: list[LogSegment], log_start_offset: int
) -> str | None:
    """The first entry whose start offset holds a batch of another epoch (or starts inside
    a batch), described; None when every entry checks out. One header read per entry."""
    bases = [segment.base_offset for segment in segments]
    for entry in entries:
        index = bisect.bisect_right(bases, entry.start_offset) - 1
        if index < 0:
            continue
        try:
            found = segments[index].translate_offset(entry.start_offset)
        except CorruptRecordError as error:
            return f"{entry}: {error}"
        header = None if found is None else found.header
        if header is None or header.base_offset > entry.start_offset:
            # At the log end offset (an epoch without records yet), or in a gap compaction
            # left (the epoch's first batches were cleaned away): nothing to compare.
            continue
        starts_inside = header.base_offset < entry.start_offset != log_start_offset
        if starts_inside or 0 <= header.partition_leader_epoch != entry.epoch:
            return (
                f"{entry}, but the batch {header.base_offset}-{header.last_offset} there "
                f"has epoch {header.partition_leader_epoch}"
            )
    return None
