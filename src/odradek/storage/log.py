"""The log of one partition: an ordered list of segments with one active segment at the end.

``Log`` appends validated record batches with offsets assigned from the log end offset, rolls
to a new segment when the active one is full or old, reads by offset into file slices, finds
offsets by timestamp, truncates (replication), flushes by policy and deletes old segments by
retention policy.

Offsets: ``log_start_offset`` ≤ every readable offset < ``log_end_offset``; the recovery point
is the offset below which everything is fsynced.

Appends take one of two paths with the same outcome. The fast path serves the common produce
request, one batch from a leader with no roll due: ``LogSegment.append_batch`` validates it,
patches its base offset and leader epoch and writes it in one call (compiled when
``odradek._append`` is built: see ``file_records``), then indexes it. Everything else (several
batches, a roll, LogAppendTime, a compacted topic, a follower, every error) goes the general
way, which validates again and raises the precise error: its checks and in-place rewrites are
``log_validator``'s, and ``Log`` only places the result. Tests hold the two paths to leaving
byte-identical files.

Thread safety: appends, rolls, truncation, retention, compaction swaps and flush bookkeeping
take the log's lock; reads take no lock and work on a copy-on-write snapshot of the segment
list, so a read in progress is never disturbed by a roll, a deletion or a swap. fsync runs
outside the lock.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.errors import InvalidRecordError, OffsetOutOfRangeError
from odradek.storage.config import LogConfig
from odradek.storage.file_records import FileSlice
from odradek.storage.leader_epoch_cache import (
    CHECKPOINT_FILE_NAME,
    EpochEndOffset,
    LeaderEpochCache,
)
from odradek.storage.loader import LogLoader, load_leader_epochs
from odradek.storage.log_validator import (
    AppendData,
    batch_totals,
    check_keys,
    parse_batches,
    prepare_payload,
)
from odradek.storage.open_files import OpenFiles
from odradek.storage.retention import DEFAULT_POLICIES, DeletePolicy, SegmentInfo, plan_deletions
from odradek.storage.scheduler import Scheduler
from odradek.storage.segment import BatchPosition, LogSegment, TimestampAndOffset
from odradek.storage.segments import LogSegments

logger = logging.getLogger(__name__)


class AppendInfo(NamedTuple):
    """What an append did (a NamedTuple: one is built per append)."""

    first_offset: int
    last_offset: int
    #: The largest timestamp appended (the log append time with LogAppendTime).
    max_timestamp: int
    #: The log append time, or -1 when the topic uses CreateTime.
    log_append_time_ms: int
    records_count: int
    size_bytes: int
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class LogReadInfo:
    """The result of a read: the bytes to send (None when there are none) and the offsets
    the fetch response reports."""

    records: FileSlice | None
    fetch_offset: int
    log_start_offset: int
    log_end_offset: int

    def read_bytes(self) -> bytes:
        return b"" if self.records is None else self.records.read()


class Log:
    """A partition log; open it with ``Log.open``. See the module docstring."""

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
        self._flush_scheduled = False
        self._rolled = False
        self._truncations = 0
        self._closed = False
        self._high_watermark: int | None = None
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

    @classmethod
    def open(
        cls,
        directory: str,
        topic_partition: TopicPartition,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
        clock: Clock = SYSTEM_CLOCK,
        scheduler: Scheduler | None = None,
        policies: tuple[DeletePolicy, ...] = DEFAULT_POLICIES,
        open_files: OpenFiles | None = None,
    ) -> Log:
        """Opens (or creates) the log in ``directory``, recovering it when needed.

        Args:
            scheduler: where flushes and delayed file deletion run; without one they run
                inline on the caller's thread (tests, tools).
            policies: the retention policies, applied in order.
            open_files: the bound the segments' descriptors count against (the broker's);
                None: unbounded.
        """
        loaded = LogLoader(
            directory,
            config,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
            now_ms=clock.now_ms(),
            name=str(topic_partition),
            open_files=open_files,
        ).load()
        return cls(
            directory,
            topic_partition,
            config,
            loaded.segments,
            log_start_offset=loaded.log_start_offset,
            log_end_offset=loaded.log_end_offset,
            recovery_point=loaded.recovery_point,
            clock=clock,
            scheduler=scheduler,
            policies=policies,
            open_files=open_files,
            leader_epochs=load_leader_epochs(
                directory, loaded.segments, loaded.log_start_offset, loaded.log_end_offset
            ),
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

    # ----------------------------------------------------------------- append

    def append(
        self,
        data: AppendData,
        *,
        assign_offsets: bool = True,
        leader_epoch: int | None = None,
    ) -> AppendInfo:
        """Validates and appends one or more whole record batches.

        Args:
            data: batches back to back. With ``assign_offsets`` their base offsets (and the
                leader epoch, and LogAppendTime timestamps) are rewritten in place: pass a
                ``bytearray`` to avoid a copy.
            assign_offsets: True for a leader (offsets from the log end offset); False for a
                follower, whose batches already carry offsets at or after the log end offset.
            leader_epoch: written into each batch's partition leader epoch when given.

        Returns:
            What the append did. Not built by the NamedTuple's constructor on the fast path
            (``tuple.__new__``), which is the same value.

        Raises:
            CorruptRecordError: a batch is truncated, malformed or fails its CRC32C.
            UnsupportedForMessageFormatError: message format v0/v1.
            MessageTooLargeError: a batch exceeds ``max.message.bytes`` (leader appends).
            RecordBatchTooLargeError: the data is larger than ``segment.bytes``.
            InvalidRecordError: no batches, (follower) offsets that go backwards, or (leader,
                ``cleanup.policy`` with ``compact``) a record without a key.
        """
        if assign_offsets:
            # The fast path (see the module docstring); it declines having changed nothing.
            with self._lock:
                fields = None
                if self._fast_appends:
                    base_offset = self._log_end_offset
                    fields = self._segments.active.append_batch(
                        data, base_offset, leader_epoch, self._config
                    )
                    if fields is not None:
                        last_offset_delta, max_timestamp, records = fields
                        self._log_end_offset = base_offset + last_offset_delta + 1
                        if (
                            leader_epoch is not None
                            and leader_epoch != self._leader_epochs.settled_epoch
                        ):
                            self._leader_epochs.assign(leader_epoch, base_offset)
                        self._unflushed_messages += records
                        flush_now = self._unflushed_messages >= self._config.flush_messages
            if fields is not None:
                if flush_now:
                    self._rolled = False
                    self._request_flush()
                elif self._rolled:
                    self._flush_if_rolled()
                # tuple.__new__ skips the NamedTuple's Python-level __new__ (~0.1 µs of the
                # ~2.5 µs this path costs).
                return tuple.__new__(
                    AppendInfo,
                    (
                        base_offset,
                        base_offset + last_offset_delta,
                        max_timestamp,
                        -1,
                        records,
                        len(data),
                        self._log_start_offset,
                    ),
                )
        return self._append_general(data, assign_offsets, leader_epoch)

    def _append_general(
        self, data: AppendData, assign_offsets: bool, leader_epoch: int | None
    ) -> AppendInfo:
        """Every append the fast path declines: several batches, a roll, LogAppendTime, a
        compacted topic, a follower's batches, and every error. The checks and rewrites are
        ``log_validator``'s; this places the batches in the right segment."""
        batches = parse_batches(data)
        size = len(data)
        if assign_offsets and self._config.compacts:
            check_keys(data, batches, self.topic_partition)
        with self._lock:
            self._check_open()
            config = self._config
            log_append_time_ms = -1
            if assign_offsets and config.log_append_time:
                log_append_time_ms = self._clock.now_ms()
            payload, batches = prepare_payload(
                data,
                batches,
                assign=assign_offsets,
                log_end_offset=self._log_end_offset,
                config=config,
                leader_epoch=leader_epoch,
                log_append_time_ms=log_append_time_ms,
                topic_partition=self.topic_partition,
            )
            first = batches[0].header
            last = batches[-1].header
            max_timestamp, records = batch_totals(batches)
            segment = self._segments.active
            if segment.should_roll(
                size,
                max_timestamp,
                last.last_offset,
                # A compacted log rolls by max.compaction.lag.ms too: the active segment is
                # never cleaned, so this bounds how long a record escapes compaction (KIP-354).
                min(config.segment_ms, config.max_compaction_lag_ms)
                if config.compacts
                else config.segment_ms,
                config.segment_bytes,
                self._clock.now_ms(),
            ):
                segment = self._roll_locked(first.base_offset)
            if not assign_offsets or leader_epoch is not None:
                # Before the records: a crash then leaves an entry past the log end, which
                # the next open trims, never records of an epoch the cache does not name.
                self._assign_epochs_locked(batches)
            segment.append(payload, batches)
            self._log_end_offset = last.next_offset
            self._unflushed_messages += records
            flush_now = self._unflushed_messages >= config.flush_messages
        if flush_now:
            self._rolled = False
            self._request_flush()
        else:
            self._flush_if_rolled()
        return AppendInfo(
            first.base_offset,
            last.last_offset,
            max_timestamp,
            log_append_time_ms,
            records,
            size,
            self._log_start_offset,
        )

    def _assign_epochs_locked(self, batches: list[BatchPosition]) -> None:
        # A leader's batches carry the epoch it wrote, a follower's the epochs their leaders
        # wrote: each new one starts at its first batch (KIP-101).
        cache = self._leader_epochs
        for _, header in batches:
            epoch = header.partition_leader_epoch
            if epoch >= 0 and epoch != cache.settled_epoch:
                cache.assign(epoch, header.base_offset)

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

    # ----------------------------------------------------------------- reads

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_message: bool = True,
    ) -> LogReadInfo:
        """Reads from the batch holding ``start_offset``.

        Args:
            max_bytes: the most bytes to return; the slice may end inside a batch.
            max_offset: return no batch at or past this offset (the high watermark).
            min_one_message: return a whole first batch even when larger than ``max_bytes``.

        Raises:
            OffsetOutOfRangeError: ``start_offset`` is outside
                [log start offset, log end offset].
        """
        snapshot = self._segments.snapshot()
        log_end_offset = self._log_end_offset
        log_start_offset = self._log_start_offset
        if start_offset < log_start_offset or start_offset > log_end_offset:
            raise OffsetOutOfRangeError(
                f"{self.topic_partition}: offset {start_offset} is outside "
                f"[{log_start_offset}, {log_end_offset}]"
            )
        upper = log_end_offset if max_offset is None else min(max_offset, log_end_offset)
        records = None
        if start_offset < upper:
            for segment in snapshot.from_offset(start_offset):
                if segment.base_offset >= upper:
                    break
                max_position = None
                if upper < segment.next_offset:
                    bound = segment.translate_offset(upper)
                    max_position = None if bound is None else bound.position
                records = segment.read(
                    start_offset,
                    max_bytes,
                    max_position=max_position,
                    min_one_message=min_one_message,
                )
                if records is not None:
                    break
        return LogReadInfo(records, start_offset, log_start_offset, log_end_offset)

    def offset_for_timestamp(self, timestamp_ms: int) -> TimestampAndOffset | None:
        """The first record (at or after the log start offset) whose timestamp is
        ≥ ``timestamp_ms``; None when there is none."""
        log_start_offset = self._log_start_offset
        for segment in self._segments.snapshot():
            if segment.largest_timestamp < timestamp_ms or segment.next_offset <= log_start_offset:
                continue
            found = segment.find_offset_by_timestamp(timestamp_ms, log_start_offset)
            if found is not None:
                return found
        return None

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
        at ``offset``."""
        with self._lock:
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
        """Deletes every segment and restarts the empty log at ``offset``."""
        with self._lock:
            self._check_open()
            self._truncate_fully_locked(offset)

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

    def moved_to(self, directory: str) -> None:
        """Records that the log's directory was renamed to ``directory`` (a deletion in
        progress): files opened again from now on are looked for there."""
        with self._lock:
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
