"""The log of one partition: an ordered list of segments with one active segment at the end.

``Log`` appends validated record batches with offsets assigned from the log end offset, rolls
to a new segment when the active one is full or old, reads by offset into file slices, finds
offsets by timestamp, truncates (replication), flushes by policy and deletes old segments by
retention policy. This module holds opening (recovery is ``loader``'s), appends and reads; the
state and every other change of the segment set (roll, flush, retention, compaction swaps,
leader epochs, truncation, closing) are ``log_maintenance.LogMaintenance``'s, its base.

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

from dataclasses import dataclass
from typing import NamedTuple

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.errors import OffsetOutOfRangeError
from odradek.storage.config import LogConfig
from odradek.storage.file_records import FileSlice
from odradek.storage.loader import LogLoader, load_leader_epochs
from odradek.storage.log_maintenance import LogMaintenance, logger
from odradek.storage.log_validator import (
    AppendData,
    batch_totals,
    check_keys,
    parse_batches,
    prepare_payload,
)
from odradek.storage.open_files import OpenFiles
from odradek.storage.retention import DEFAULT_POLICIES, DeletePolicy
from odradek.storage.scheduler import Scheduler
from odradek.storage.segment import BatchPosition, TimestampAndOffset


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


class Log(LogMaintenance):
    """A partition log; open it with ``Log.open``. See the module docstring."""

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
            # acquire/release rather than ``with``: the statement's __enter__/__exit__ lookups
            # cost as much again as the lock itself (~1k instructions per append, callgrind).
            lock = self._lock
            lock.acquire()
            try:
                fields = None
                segment = self._segments.newest
                if self._fast_appends and segment is not None:
                    base_offset = self._log_end_offset
                    fields = segment.append_batch(data, base_offset, leader_epoch, self._config)
                    if fields is not None:
                        last_offset_delta, max_timestamp, records = fields
                        self._log_end_offset = base_offset + last_offset_delta + 1
                        if (
                            leader_epoch is not None
                            and leader_epoch != self._leader_epochs.settled_epoch
                        ):
                            self._assign_epoch_after_write(leader_epoch, base_offset)
                        self._unflushed_messages += records
                        flush_now = self._unflushed_messages >= self._config.flush_messages
            finally:
                lock.release()
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
                self._assign_epoch_after_write(epoch, header.base_offset)

    def _assign_epoch_after_write(self, epoch: int, start_offset: int) -> None:
        """Records a new leader epoch once its first batch is written. The batch stays
        appended whatever happens to the checkpoint file: when writing it fails (a full
        disk), the entry is kept in memory and the write is tried again at the epoch's next
        append (the cache's settled epoch stays behind), and a crash before then rebuilds
        the entry from the batches, which carry their epoch. Raising here instead would
        answer an error for a batch that is in the log — a producer's retry would then be
        appended twice (found by the fault suite's full-disk fault)."""
        try:
            self._leader_epochs.assign(epoch, start_offset)
        except OSError as error:
            logger.warning(
                "%s: leader epoch %d at offset %d not checkpointed yet: %s",
                self.topic_partition,
                epoch,
                start_offset,
                error,
            )

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

    def offset_of_max_timestamp(self) -> TimestampAndOffset | None:
        """The first record (at or after the log start offset) with the largest timestamp in
        the log (ListOffsets' MAX_TIMESTAMP, KIP-734); None for an empty log."""
        log_start_offset = self._log_start_offset
        live = [s for s in self._segments.snapshot() if s.next_offset > log_start_offset]
        if not live:
            return None
        # The earliest segment holding the maximum: its first record at that timestamp.
        largest = max(segment.largest_timestamp for segment in live)
        for segment in live:
            if segment.largest_timestamp == largest:
                found = segment.find_offset_by_timestamp(largest, log_start_offset)
                if found is not None:
                    return found
        return None

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
