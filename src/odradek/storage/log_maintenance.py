"""The state of a partition log and every change to its segment set other than an append:
rolls, flushes and the recovery point, retention, compaction swaps, leader epochs,
truncation, closing. ``Log`` (``log``) adds opening, appends and reads on top.

Thread safety: changes take the log's lock; reads of the segment list take a copy-on-write
snapshot (``segments.LogSegments``) and no lock; fsync runs outside the lock (see ``flush``).
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence

from odradek._clock import Clock
from odradek._types import TopicPartition
from odradek.errors import InvalidRecordError, OffsetOutOfRangeError
from odradek.storage.config import LogConfig
from odradek.storage.leader_epoch_cache import (
    CHECKPOINT_FILE_NAME,
    EpochEndOffset,
    LeaderEpochCache,
)
from odradek.storage.open_files import OpenFiles
from odradek.storage.retention import DeletePolicy, SegmentInfo, plan_deletions
from odradek.storage.scheduler import Scheduler
from odradek.storage.segment import LogSegment
from odradek.storage.segments import LogSegments

#: The log's lines keep the name operators filter on, whichever module writes them.
logger = logging.getLogger("odradek.storage.log")


class LogMaintenance:
    """The segment set of one partition log and its upkeep (see the module docstring); the
    base of ``Log``, never used alone."""

    def __init__(
        self,
        directory: str,
        topic_partition: TopicPartition,
        config: LogConfig,
        segments: list[LogSegment],
        *,
        log_start_offset: int,
        log_end_offset: int,
        recovery_point: int,
        clock: Clock,
        scheduler: Scheduler | None,
        policies: tuple[DeletePolicy, ...],
        open_files: OpenFiles | None = None,
        leader_epochs: LeaderEpochCache | None = None,
    ) -> None:
        self.directory = directory
        self.topic_partition = topic_partition
        self._config = config
        self._segments = LogSegments()
        for segment in segments:
            self._segments.add(segment)
        self._log_start_offset = log_start_offset
        self._log_end_offset = log_end_offset
        self._recovery_point = recovery_point
        self._clock = clock
        self._scheduler = scheduler
        self._policies = policies
        self._open_files = open_files
        self._lock = threading.RLock()
        self._flush_lock = threading.Lock()
        self._unflushed_messages = 0
        self._last_flush_ms = clock.monotonic_ms()
        #: fsync passes done and the seconds they took (metrics: Kafka's LogFlushStats).
        self.flushes = 0
        self.flush_seconds = 0.0
        self._flush_scheduled = False
        self._rolled = False
        self._truncations = 0
        self._closed = False
        self._high_watermark: int | None = None
        #: Called after every truncation, outside the lock. The log manager writes the
        #: recovery-point checkpoint then (as Kafka's ``truncateTo``): offsets written again
        #: after a truncation must not be trusted at the next start by the recovery point
        #: of before it.
        self.truncation_listener: Callable[[], None] | None = None
        #: Whether leader appends may take the fast path: the log is open and its config
        #: needs no per-batch rewrite or record decoding (no LogAppendTime, no compaction key
        #: check). Kept under the lock.
        self._fast_appends = _allows_fast_appends(config)
        #: Which leader epoch began where (KIP-101); kept under the lock.
        self._leader_epochs = (
            leader_epochs
            if leader_epochs is not None
            else LeaderEpochCache(os.path.join(directory, CHECKPOINT_FILE_NAME))
        )

    # ----------------------------------------------------------------- state

    @property
    def config(self) -> LogConfig:
        return self._config

    def update_config(self, config: LogConfig) -> None:
        """Applies new settings (they take effect for later appends, rolls and retention)."""
        with self._lock:
            self._config = config
            self._fast_appends = not self._closed and _allows_fast_appends(config)

    @property
    def open_files(self) -> OpenFiles | None:
        """The bound the log's segment files count against (None: unbounded)."""
        return self._open_files

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def unflushed_messages(self) -> int:
        return self._unflushed_messages

    def segments(self) -> tuple[LogSegment, ...]:
        """A snapshot of the segments, oldest first."""
        return self._segments.snapshot().segments

    @property
    def active_base_offset(self) -> int:
        """The active segment's base offset (-1 while there is none): it changes when the
        log rolls. Cheaper than ``segments()[-1].base_offset`` (read on every idempotent
        append)."""
        newest = self._segments.newest
        return -1 if newest is None else newest.base_offset

    @property
    def size_bytes(self) -> int:
        return sum(segment.size for segment in self._segments.snapshot())

    def statistics(self) -> dict[str, int]:
        snapshot = self._segments.snapshot()
        return {
            "log_start_offset": self._log_start_offset,
            "log_end_offset": self._log_end_offset,
            "recovery_point": self._recovery_point,
            "segments": len(snapshot),
            "size_bytes": sum(segment.size for segment in snapshot),
            "unflushed_messages": self._unflushed_messages,
        }

    def __repr__(self) -> str:
        return (
            f"Log({self.topic_partition}, log_start_offset={self._log_start_offset}, "
            f"log_end_offset={self._log_end_offset})"
        )

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidRecordError(f"{self.topic_partition}: the log is closed")

    # ----------------------------------------------------------------- roll

    def roll(self) -> LogSegment:
        """Starts a new active segment at the log end offset (no-op when the active segment
        is empty); returns the active segment."""
        with self._lock:
            self._check_open()
            segment = self._roll_locked(self._log_end_offset)
        self._flush_if_rolled()
        return segment

    def _roll_locked(self, base_offset: int) -> LogSegment:
        active = self._segments.active
        if active.is_empty and active.base_offset == base_offset:
            return active
        base_offset = max(base_offset, self._log_end_offset)
        segment = LogSegment.create(
            self.directory, base_offset, self._config, self._clock.now_ms(), self._open_files
        )
        active.on_become_inactive()
        if active.is_empty:
            self._segments.remove(active)
            active.delete_files()
        self._segments.add(segment)
        logger.info("%s: rolled to a new segment at offset %d", self.topic_partition, base_offset)
        # The old segment is complete: make it durable off the hot path, once the lock is
        # released (an inline flush under the lock could deadlock with a concurrent flush).
        self._rolled = True
        return segment

    def _flush_if_rolled(self) -> None:
        if self._rolled:
            self._rolled = False
            self._request_flush()

    # ----------------------------------------------------------------- flush

    def flush_due(self, now_monotonic_ms: int | None = None) -> bool:
        """Whether ``flush.ms`` has passed since the last flush with messages unflushed."""
        if self._unflushed_messages == 0 and self._recovery_point >= self._log_end_offset:
            return False
        now = self._clock.monotonic_ms() if now_monotonic_ms is None else now_monotonic_ms
        return now - self._last_flush_ms >= self._config.flush_ms

    def _request_flush(self) -> None:
        if self._scheduler is None:
            self.flush()
            return
        with self._lock:
            if self._flush_scheduled:
                return
            self._flush_scheduled = True
        self._scheduler.schedule(f"flush {self.topic_partition}", self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        with self._lock:
            self._flush_scheduled = False
        self.flush()

    def flush(self) -> int:
        """fsyncs every segment holding offsets at or past the recovery point and moves the
        recovery point to the log end offset seen at the start. Returns the new recovery
        point. Runs the fsyncs outside the log lock, so appends go on meanwhile."""
        with self._flush_lock:
            started = time.perf_counter()
            with self._lock:
                if self._closed:
                    return self._recovery_point
                target = self._log_end_offset
                flushed_messages = self._unflushed_messages
                snapshot = self._segments.snapshot()
                recovery_point = self._recovery_point
                truncations = self._truncations
            for segment in snapshot:
                if segment.next_offset > recovery_point and segment.base_offset <= target:
                    try:
                        segment.flush()
                    except (OSError, ValueError):
                        if not segment.deleted:
                            raise
            with self._lock:
                # A truncation during the fsyncs may have replaced the offsets below the
                # target with new, unflushed ones: then this flush proves nothing.
                if self._truncations == truncations:
                    self._recovery_point = max(self._recovery_point, target)
                    self._unflushed_messages = max(0, self._unflushed_messages - flushed_messages)
                    self._last_flush_ms = self._clock.monotonic_ms()
                self.flushes += 1
                self.flush_seconds += time.perf_counter() - started
                return self._recovery_point

    # ----------------------------------------------------------------- retention

    def delete_old_segments(self) -> int:
        """Applies the retention policies; deletes claimed segments one at a time, oldest
        first, never the active one. Returns how many segments were deleted."""
        with self._lock:
            self._check_open()
            snapshot = self._segments.snapshot()
            inactive = snapshot.segments[:-1]
            infos = [_segment_info(segment) for segment in inactive]
            plan = plan_deletions(
                infos,
                snapshot.active.size,
                self._log_start_offset,
                self._config,
                self._clock.now_ms(),
                self._policies,
            )
            by_base = {segment.base_offset: segment for segment in inactive}
            for deletion in plan:
                segment = by_base[deletion.segment.base_offset]
                logger.info(
                    "%s: deleting segment %d-%d (%s)",
                    self.topic_partition,
                    segment.base_offset,
                    segment.next_offset - 1,
                    deletion.reason,
                )
                self._delete_segment(segment)
            if plan:
                first = self._segments.snapshot().segments[0]
                self._log_start_offset = max(self._log_start_offset, first.base_offset)
                self._leader_epochs.truncate_from_start(self._log_start_offset)
            return len(plan)

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """Moves the log start offset forward (DeleteRecords); segments wholly below it go at
        the next retention pass. Returns whether it moved.

        Raises:
            OffsetOutOfRangeError: ``offset`` is past the log end offset.
        """
        with self._lock:
            if offset > self._log_end_offset:
                raise OffsetOutOfRangeError(
                    f"{self.topic_partition}: cannot move the log start offset to {offset}, "
                    f"past the log end offset {self._log_end_offset}"
                )
            if offset <= self._log_start_offset:
                return False
            self._log_start_offset = offset
            self._leader_epochs.truncate_from_start(offset)
            return True

    def _delete_segment(self, segment: LogSegment) -> None:
        """Removes the segment from the list, renames its files ``.deleted`` and removes them
        after ``file.delete.delay.ms`` (readers in progress keep their descriptors)."""
        self._segments.remove(segment)
        segment.mark_deleted()
        if self._scheduler is None or self._config.file_delete_delay_ms == 0:
            segment.delete_files()
        else:
            self._scheduler.schedule(
                f"delete {segment.log.path}",
                segment.delete_files,
                self._config.file_delete_delay_ms,
            )

    # ----------------------------------------------------------------- compaction

    @property
    def high_watermark(self) -> int | None:
        """The high watermark last reported by the partition (None: never reported). The
        cleaner maps no record at or past it: an uncommitted record must not supersede a
        committed one it could be truncated away from."""
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> None:
        """Called by the partition whenever its high watermark moves."""
        self._high_watermark = offset

    @property
    def truncation_count(self) -> int:
        """How many truncations the log has had (a cleaner pass checks it did not change)."""
        return self._truncations

    def replace_segments(
        self,
        new_segment: LogSegment,
        old_segments: Sequence[LogSegment],
        *,
        truncations: int,
        commit: Callable[[], None],
        finish: Callable[[], None],
    ) -> bool:
        """Swaps a cleaned segment in for the inactive segments it replaces (compaction).

        Under the log's lock: checks that the log is open, was not truncated since
        ``truncations`` was read and still holds every old segment, inactive; then calls
        ``commit`` (the cleaner renames its files ``.swap``: from here a crash keeps the new
        segment), publishes the new segment list, renames the old segments ``.deleted`` (removed
        after ``file.delete.delay.ms``), and calls ``finish`` (the final names). An OSError
        after ``commit`` is logged, not raised: the swap stands.

        Returns:
            False, having changed nothing, when the check fails.
        Raises:
            Whatever ``commit`` raises; the segment list is then unchanged.
        """
        with self._lock:
            if self._closed or self._truncations != truncations:
                return False
            inactive = {id(segment) for segment in self._segments.snapshot().segments[:-1]}
            if not all(id(segment) in inactive for segment in old_segments):
                return False
            commit()
            self._segments.replace(new_segment, old_segments)
            # Past the commit the swap stands: a failure from here on is logged, never undone
            # (the loader finishes an interrupted swap).
            try:
                for segment in old_segments:
                    self._delete_segment(segment)
                finish()
            except OSError:
                logger.exception(
                    "%s: finishing the swap of segment %d failed; the next load completes it",
                    self.topic_partition,
                    new_segment.base_offset,
                )
            return True

    # ----------------------------------------------------------------- leader epochs

    @property
    def latest_epoch(self) -> int:
        """The newest leader epoch this log holds records of (-1: none)."""
        return self._leader_epochs.latest_epoch

    def leader_epoch_entries(self) -> list[tuple[int, int]]:
        """The leader-epoch cache's ``(epoch, start offset)`` pairs, oldest first."""
        with self._lock:
            return [(entry.epoch, entry.start_offset) for entry in self._leader_epochs.entries()]

    def assign_epoch_start(self, leader_epoch: int) -> bool:
        """Records that ``leader_epoch`` starts at the log end offset (a new leader's epoch,
        before its first append, as Kafka's ``makeLeader`` does: a follower asking where its
        older epoch ends then gets this offset). Kept in memory until the next write of the
        checkpoint: an epoch without records changes no answer if a crash forgets it.
        Returns whether the cache changed."""
        with self._lock:
            if leader_epoch == self._leader_epochs.latest_epoch:
                return False
            return self._leader_epochs.assign(leader_epoch, self._log_end_offset, flush=False)

    def end_offset_for_epoch(self, leader_epoch: int) -> EpochEndOffset:
        """Where ``leader_epoch`` ends in this log (OffsetForLeaderEpoch; see
        ``LeaderEpochCache.end_offset_for``)."""
        with self._lock:
            return self._leader_epochs.end_offset_for(leader_epoch, self._log_end_offset)

    # ----------------------------------------------------------------- truncation

    def truncate_to(self, offset: int) -> bool:
        """Removes every batch at or past ``offset`` (a batch boundary); returns whether
        anything was removed. Below the log start offset the log is emptied and restarts
        at ``offset``. Then calls ``truncation_listener``."""
        with self._lock:
            truncated = self._truncate_to_locked(offset)
        if truncated:
            self._truncated()
        return truncated

    def _truncate_to_locked(self, offset: int) -> bool:
        self._check_open()
        if offset >= self._log_end_offset:
            return False
        if offset < self._log_start_offset:
            self._truncate_fully_locked(offset)
            return True
        snapshot = self._segments.snapshot()
        for segment in reversed(snapshot.segments):
            if segment.base_offset > offset:
                self._delete_segment(segment)
        active = self._segments.active
        if active is not snapshot.active:
            active.prepare_for_appends(self._config)
        active.truncate_to(offset)
        self._log_end_offset = active.next_offset
        self._recovery_point = min(self._recovery_point, self._log_end_offset)
        self._unflushed_messages = 0
        self._truncations += 1
        self._leader_epochs.truncate_from_end(self._log_end_offset)
        logger.info("%s: truncated to offset %d", self.topic_partition, offset)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Deletes every segment and restarts the empty log at ``offset``; then calls
        ``truncation_listener``."""
        with self._lock:
            self._check_open()
            self._truncate_fully_locked(offset)
        self._truncated()

    def _truncated(self) -> None:
        listener = self.truncation_listener
        if listener is not None:
            listener()

    def _truncate_fully_locked(self, offset: int) -> None:
        new_segment = None
        for segment in self._segments.snapshot().segments:
            if segment.base_offset == offset:
                segment.truncate_to(offset)
                segment.prepare_for_appends(self._config)
                new_segment = segment
            else:
                self._delete_segment(segment)
        if new_segment is None:
            new_segment = LogSegment.create(
                self.directory, offset, self._config, self._clock.now_ms(), self._open_files
            )
            self._segments.add(new_segment)
        self._log_start_offset = offset
        self._log_end_offset = offset
        self._recovery_point = offset
        self._unflushed_messages = 0
        self._truncations += 1
        self._leader_epochs.clear()
        logger.info("%s: truncated fully, restarting at offset %d", self.topic_partition, offset)

    # ----------------------------------------------------------------- lifecycle

    def close(self) -> None:
        """Flushes, records the final index entries, trims the indexes and closes the files."""
        with self._lock:
            if self._closed:
                return
        self.flush()
        with self._lock:
            self._closed = True
            self._fast_appends = False
            for segment in self._segments.snapshot():
                segment.close()

    def delete(self) -> None:
        """Closes the log and removes its directory with everything in it."""
        with self._lock:
            self._closed = True
            self._fast_appends = False
            for segment in self._segments.snapshot():
                segment.discard()
            self._segments.clear()
        shutil.rmtree(self.directory, ignore_errors=True)

    def release_files(self, open_files: OpenFiles) -> None:
        """Lets every descriptor and map of the log's segments go now (they are opened again
        when used): a log just loaded or created need not hold any."""
        for segment in self._segments.snapshot():
            for file in (segment.log, segment.offset_index, segment.time_index):
                open_files.release(file)

    def move_directory(self, directory: str) -> None:
        """Renames the log's directory to ``directory`` (a deletion in progress); files opened
        again from now on are looked for there. No flush runs meanwhile: one that took its
        segments before the rename would fsync files by their old names, which are gone."""
        with self._flush_lock, self._lock:
            os.rename(self.directory, directory)
            self.directory = directory
            self._leader_epochs.path = os.path.join(directory, CHECKPOINT_FILE_NAME)
            for segment in self._segments.snapshot():
                segment.moved_to(directory)


def _allows_fast_appends(config: LogConfig) -> bool:
    return not (config.compacts or config.log_append_time)


def _segment_info(segment: LogSegment) -> SegmentInfo:
    largest = segment.largest_timestamp
    if largest < 0:
        largest = int(os.stat(segment.log.path).st_mtime * 1000)
    return SegmentInfo(segment.base_offset, segment.next_offset, segment.size, largest)
