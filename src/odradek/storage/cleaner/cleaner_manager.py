"""``LogCleanerManager``: the cleaner's memory — checkpoints and the state of each log — and the
choice of the next log to clean.

Each log dir holds one checkpoint file (Kafka's name and ``OffsetCheckpointFile`` format)::

    cleaner-offset-checkpoint     topic, partition, offset below which the log is clean

written atomically after every pass. A log with no entry is dirty from its log start offset.

State per log: *in progress* (a cleaner thread holds it; no other pass may start),
*aborted* (its pass must stop at the next batch: the log is being deleted or the cleaner is
shutting down), *uncleanable* (a pass met a batch it could not decode; skipped until restart,
as Kafka does), and the earliest delete horizon of the tombstones the last pass kept (a quiet
log is cleaned again once it passes, to drop them; kept in memory only — after a restart they
go at the next pass the dirty ratio triggers).

Thread safety: every method takes the manager's lock; checkpoint files are written under it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from odradek._types import TopicPartition
from odradek.storage.checkpoints import OffsetCheckpointFile
from odradek.storage.cleaner.log_to_clean import (
    LogToClean,
    SegmentSummary,
    choose_filthiest,
    is_cleanable,
    log_to_clean,
)
from odradek.storage.log import Log
from odradek.storage.segment import LogSegment

logger = logging.getLogger(__name__)

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"


@dataclass(frozen=True, slots=True)
class Picked:
    """A log handed to a cleaner thread, and what to clean."""

    log: Log
    to_clean: LogToClean


class LogCleanerManager:
    """See the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._checkpoints: dict[str, dict[TopicPartition, int]] = {}
        self._in_progress: set[TopicPartition] = set()
        self._aborted: set[TopicPartition] = set()
        self._uncleanable: set[TopicPartition] = set()
        self._horizons: dict[TopicPartition, int] = {}

    # ----------------------------------------------------------------- choosing

    def grab_filthiest_log(self, logs: Mapping[TopicPartition, Log], now_ms: int) -> Picked | None:
        """Picks the log to clean (``log_to_clean.choose_filthiest``; failing any, the quiet log
        whose kept tombstones reached their delete horizon first) and marks it in progress."""
        with self._lock:
            cleanable: list[LogToClean] = []
            due: list[tuple[int, LogToClean]] = []
            by_tp: dict[TopicPartition, Log] = {}
            for tp, log in logs.items():
                config = log.config
                if not config.compacts or tp in self._in_progress or tp in self._uncleanable:
                    continue
                measured = self._measure(log, now_ms)
                by_tp[tp] = log
                if is_cleanable(measured, config):
                    cleanable.append(measured)
                elif (horizon := self._horizons.get(tp, -1)) >= 0 and horizon <= now_ms:
                    due.append((horizon, measured))
            chosen = choose_filthiest(cleanable)
            if chosen is None and due:
                chosen = min(due, key=lambda item: item[0])[1]
            if chosen is None:
                return None
            self._in_progress.add(chosen.topic_partition)
            return Picked(by_tp[chosen.topic_partition], chosen)

    def _measure(self, log: Log, now_ms: int) -> LogToClean:
        segments = [summarize(segment) for segment in log.segments()]
        return log_to_clean(
            log.topic_partition,
            segments,
            checkpoint=self._checkpoints_of(_log_dir(log)).get(log.topic_partition),
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            config=log.config,
            now_ms=now_ms,
            high_watermark=log.high_watermark,
        )

    def measure(self, log: Log, now_ms: int) -> LogToClean:
        """The log's cleanable range and dirt now (statistics, tests)."""
        with self._lock:
            return self._measure(log, now_ms)

    # ----------------------------------------------------------------- after a pass

    def done_cleaning(self, log: Log, end_offset: int, earliest_tombstone_horizon_ms: int) -> None:
        """Records a finished pass: the checkpoint moves to ``end_offset`` (unless the pass
        was aborted meanwhile) and the log is released."""
        tp = log.topic_partition
        with self._lock:
            self._in_progress.discard(tp)
            if tp in self._aborted:
                self._aborted.discard(tp)
                return
            directory = _log_dir(log)
            checkpoints = self._checkpoints_of(directory)
            checkpoints[tp] = end_offset
            if earliest_tombstone_horizon_ms >= 0:
                self._horizons[tp] = earliest_tombstone_horizon_ms
            else:
                self._horizons.pop(tp, None)
            OffsetCheckpointFile(os.path.join(directory, CLEANER_CHECKPOINT)).write(checkpoints)

    def release(self, log: Log, *, uncleanable: bool = False) -> None:
        """Releases a log whose pass failed or was aborted; ``uncleanable`` skips it from now
        on (until restart)."""
        tp = log.topic_partition
        with self._lock:
            self._in_progress.discard(tp)
            self._aborted.discard(tp)
            if uncleanable:
                self._uncleanable.add(tp)

    # ----------------------------------------------------------------- aborting

    def abort(self, tp: TopicPartition) -> None:
        """Asks a pass in progress on ``tp`` to stop (a no-op when none runs)."""
        with self._lock:
            if tp in self._in_progress:
                self._aborted.add(tp)

    def is_aborted(self, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._aborted

    def forget(self, tp: TopicPartition, log_dir: str) -> None:
        """The log is gone (deleted): aborts its pass and drops its checkpoint and state."""
        with self._lock:
            if tp in self._in_progress:
                self._aborted.add(tp)
            self._uncleanable.discard(tp)
            self._horizons.pop(tp, None)
            checkpoints = self._checkpoints_of(log_dir)
            if checkpoints.pop(tp, None) is not None:
                OffsetCheckpointFile(os.path.join(log_dir, CLEANER_CHECKPOINT)).write(checkpoints)

    # ----------------------------------------------------------------- state

    def checkpoint(self, log: Log) -> int | None:
        with self._lock:
            return self._checkpoints_of(_log_dir(log)).get(log.topic_partition)

    def uncleanable(self) -> set[TopicPartition]:
        with self._lock:
            return set(self._uncleanable)

    def _checkpoints_of(self, directory: str) -> dict[TopicPartition, int]:
        checkpoints = self._checkpoints.get(directory)
        if checkpoints is None:
            path = os.path.join(directory, CLEANER_CHECKPOINT)
            checkpoints = OffsetCheckpointFile(path).read()
            self._checkpoints[directory] = checkpoints
        return checkpoints


def summarize(segment: LogSegment) -> SegmentSummary:
    """A segment's sizes and timestamps; without timestamps, its file's modification time
    stands for the largest one (as for retention)."""
    largest = segment.largest_timestamp
    if largest < 0:
        try:
            largest = int(os.stat(segment.log.path).st_mtime * 1000)
        except OSError:  # removed meanwhile: it will not be cleaned anyway
            largest = -1
    return SegmentSummary(
        segment.base_offset,
        segment.next_offset,
        segment.size,
        segment.first_batch_timestamp,
        largest,
    )


def _log_dir(log: Log) -> str:
    """The log dir (``log.dirs`` entry) holding the partition directory."""
    return os.path.dirname(os.path.abspath(log.directory))
