"""Pure decisions of compaction: what part of a log may be cleaned, how dirty it is, whether a
lag forces cleaning now, and which log to clean first.

A compacted log, as the cleaner sees it::

    log start ... first dirty offset ........ first uncleanable offset ...... log end
    |  clean section |   dirty (cleanable) section  |  uncleanable: active segment,
    |  (cleaned by   |   (not cleaned since the     |  and segments younger than
    |  earlier passes)   last pass)                  |  min.compaction.lag.ms

- The **first dirty offset** is the log's cleaner checkpoint (where the last pass stopped),
  reset to the log start offset when missing or outside [log start, log end].
- The **first uncleanable offset** is the smallest of the active segment's base offset, the
  high watermark (when the partition reports one: uncommitted records must not supersede
  committed ones) and the base offset of the first dirty, non-active segment holding a record
  younger than ``min.compaction.lag.ms`` (judged by the segment's largest timestamp): that
  segment and all after it wait.
- The **dirty ratio** is dirty bytes / (clean + dirty bytes), segment sizes counted whole: a
  segment is clean when all its offsets are below the first dirty offset, dirty when it holds
  offsets at or past it and starts below the first uncleanable offset.
- ``max.compaction.lag.ms``: when the earliest first-batch timestamp among the dirty
  non-active segments is older than ``now - max.compaction.lag.ms`` the log must be cleaned
  whatever its ratio; the amount by which it is late is its *compaction delay*.

A log is cleaned when its ratio exceeds ``min.cleanable.dirty.ratio``, or when a compaction
delay is due and it has dirty bytes, or (to drop tombstones in a quiet log) when tombstones it
kept reach their delete horizon. Among the candidates, the most overdue log goes first, then
the dirtiest. Everything here takes values and ``now_ms`` and returns values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from odradek._types import TopicPartition
from odradek.storage.config import LogConfig

NO_TIMESTAMP = -1


@dataclass(frozen=True, slots=True)
class SegmentSummary:
    """What the decisions need of a segment."""

    base_offset: int
    next_offset: int
    size_bytes: int
    #: The max timestamp of the segment's first batch (-1 when unknown).
    first_batch_timestamp: int
    #: The largest timestamp in the segment, or the file's modification time without one.
    largest_timestamp: int


@dataclass(frozen=True, slots=True)
class LogToClean:
    """A log's cleanable range and how urgently it needs cleaning."""

    topic_partition: TopicPartition
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    #: How late the log is for ``max.compaction.lag.ms`` (0 when it is not).
    max_compaction_delay_ms: int
    #: The checkpoint was missing or out of range and was reset to the log start offset.
    checkpoint_reset: bool = False

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        total = self.total_bytes
        return self.cleanable_bytes / total if total else 0.0

    @property
    def needs_compaction_now(self) -> bool:
        return self.max_compaction_delay_ms > 0


def first_dirty_offset(
    checkpoint: int | None, log_start_offset: int, log_end_offset: int
) -> tuple[int, bool]:
    """The first dirty offset, and whether the checkpoint had to be reset (missing, below the
    log start offset, or past the log end offset after a truncation)."""
    if checkpoint is None:
        return log_start_offset, False
    if checkpoint < log_start_offset or checkpoint > log_end_offset:
        return log_start_offset, True
    return checkpoint, False


def first_uncleanable_offset(
    segments: Sequence[SegmentSummary],
    first_dirty: int,
    config: LogConfig,
    now_ms: int,
    high_watermark: int | None = None,
) -> int:
    """See the module docstring. ``segments``: every segment, oldest first, the active one
    last."""
    bound = segments[-1].base_offset
    if high_watermark is not None:
        bound = min(bound, high_watermark)
    lag_ms = max(config.min_compaction_lag_ms, 0)
    if lag_ms > 0:
        for segment in segments[:-1]:
            if segment.next_offset <= first_dirty:
                continue
            if segment.largest_timestamp > now_ms - lag_ms:
                return min(bound, segment.base_offset)
    return bound


def max_compaction_delay_ms(
    segments: Sequence[SegmentSummary], first_dirty: int, config: LogConfig, now_ms: int
) -> int:
    """How far past ``max.compaction.lag.ms`` the oldest dirty non-active segment is (0 when
    not past it, or when no dirty segment carries a timestamp)."""
    timestamps = [
        segment.first_batch_timestamp
        for segment in segments[:-1]
        if segment.next_offset > first_dirty and segment.first_batch_timestamp > 0
    ]
    if not timestamps:
        return 0
    deadline = now_ms - max(config.max_compaction_lag_ms, 0)
    return max(0, deadline - min(timestamps))


def log_to_clean(
    topic_partition: TopicPartition,
    segments: Sequence[SegmentSummary],
    *,
    checkpoint: int | None,
    log_start_offset: int,
    log_end_offset: int,
    config: LogConfig,
    now_ms: int,
    high_watermark: int | None = None,
) -> LogToClean:
    """Measures one log (``segments``: oldest first, the active one last)."""
    first_dirty, reset = first_dirty_offset(checkpoint, log_start_offset, log_end_offset)
    uncleanable = first_uncleanable_offset(segments, first_dirty, config, now_ms, high_watermark)
    clean_bytes = 0
    cleanable_bytes = 0
    for segment in segments[:-1]:
        if segment.next_offset <= first_dirty:
            clean_bytes += segment.size_bytes
        elif segment.base_offset < uncleanable:
            cleanable_bytes += segment.size_bytes
    return LogToClean(
        topic_partition,
        first_dirty,
        max(first_dirty, uncleanable),
        clean_bytes,
        cleanable_bytes,
        max_compaction_delay_ms(segments, first_dirty, config, now_ms),
        reset,
    )


def is_cleanable(log: LogToClean, config: LogConfig) -> bool:
    """Whether the log should be cleaned for its dirt or its lag (tombstones aside)."""
    if log.cleanable_bytes <= 0:
        return False
    return log.needs_compaction_now or log.cleanable_ratio > config.min_cleanable_dirty_ratio


def choose_filthiest(candidates: Sequence[LogToClean]) -> LogToClean | None:
    """The log to clean first among cleanable ones: the most overdue for
    ``max.compaction.lag.ms``, then the highest dirty ratio."""
    if not candidates:
        return None
    return max(candidates, key=lambda log: (log.max_compaction_delay_ms, log.cleanable_ratio))
