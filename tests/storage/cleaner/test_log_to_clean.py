"""Pure compaction decisions with a fixed ``now``: the cleanable range (checkpoint, active
segment, min.compaction.lag.ms), the dirty ratio, max.compaction.lag.ms and the choice of log."""

from __future__ import annotations

import pytest

from odradek._types import TopicPartition
from odradek.storage.cleaner.log_to_clean import (
    LogToClean,
    SegmentSummary,
    choose_filthiest,
    first_dirty_offset,
    is_cleanable,
    log_to_clean,
)
from odradek.storage.config import LogConfig

TP = TopicPartition("t", 0)
NOW = 1_000_000


def segments(*spec: tuple[int, int, int, int]) -> list[SegmentSummary]:
    """(base, next, size, timestamp): first batch and largest timestamp both ``timestamp``."""
    return [SegmentSummary(base, end, size, ts, ts) for base, end, size, ts in spec]


LOG = segments(
    (0, 100, 1_000, 100),
    (100, 200, 1_000, 200),
    (200, 300, 1_000, 300),
    (300, 310, 50, NOW),  # active
)


def measure(
    config: LogConfig, checkpoint: int | None, spec: list[SegmentSummary] = LOG
) -> LogToClean:
    return log_to_clean(
        TP,
        spec,
        checkpoint=checkpoint,
        log_start_offset=0,
        log_end_offset=spec[-1].next_offset,
        config=config,
        now_ms=NOW,
    )


@pytest.mark.parametrize(
    ("checkpoint", "expected"),
    [
        (None, (0, False)),
        (150, (150, False)),
        (-5, (0, True)),
        (999, (0, True)),
        (310, (310, False)),
    ],
)
def test_first_dirty_offset_falls_back_to_the_log_start(
    checkpoint: int | None, expected: tuple[int, bool]
) -> None:
    assert first_dirty_offset(checkpoint, 0, 310) == expected


def test_without_a_checkpoint_everything_but_the_active_segment_is_dirty() -> None:
    measured = measure(LogConfig(), None)
    assert (measured.first_dirty_offset, measured.first_uncleanable_offset) == (0, 300)
    assert (measured.clean_bytes, measured.cleanable_bytes) == (0, 3_000)
    assert measured.cleanable_ratio == 1.0


def test_the_ratio_counts_whole_segments_on_either_side_of_the_checkpoint() -> None:
    measured = measure(LogConfig(), 200)
    assert (measured.clean_bytes, measured.cleanable_bytes) == (2_000, 1_000)
    assert measured.cleanable_ratio == pytest.approx(1 / 3)
    # A checkpoint inside a segment makes that segment dirty.
    measured = measure(LogConfig(), 150)
    assert (measured.clean_bytes, measured.cleanable_bytes) == (1_000, 2_000)


def test_min_cleanable_dirty_ratio_is_a_strict_threshold() -> None:
    measured = measure(LogConfig(), 200)  # ratio 1/3
    assert is_cleanable(measured, LogConfig(min_cleanable_dirty_ratio=0.3))
    assert not is_cleanable(measured, LogConfig(min_cleanable_dirty_ratio=0.5))
    clean = measure(LogConfig(), 300)  # nothing dirty
    assert clean.cleanable_bytes == 0
    assert not is_cleanable(clean, LogConfig(min_cleanable_dirty_ratio=0.0))


def test_min_compaction_lag_stops_at_the_first_young_dirty_segment() -> None:
    # now - lag = NOW - (NOW - 150) = 150: the segment with largest timestamp 200 is young.
    config = LogConfig(min_compaction_lag_ms=NOW - 150)
    measured = measure(config, None)
    assert measured.first_uncleanable_offset == 100
    assert measured.cleanable_bytes == 1_000
    # Only dirty segments are judged: from a checkpoint past it, the lag starts there.
    assert measure(config, 200).first_uncleanable_offset == 200
    assert measure(config, 200).cleanable_bytes == 0
    # Old enough everywhere: the active segment bounds the range.
    assert measure(LogConfig(min_compaction_lag_ms=1), None).first_uncleanable_offset == 300


def test_max_compaction_lag_makes_a_log_due_whatever_its_ratio() -> None:
    config = LogConfig(max_compaction_lag_ms=NOW - 250, min_cleanable_dirty_ratio=0.99)
    # The oldest dirty first batch (100) is 150 ms past now - lag (250).
    overdue = measure(config, None)
    assert overdue.max_compaction_delay_ms == 150
    assert overdue.needs_compaction_now
    # From checkpoint 200 the oldest dirty segment starts at 300 > 250: not due.
    assert measure(config, 200).max_compaction_delay_ms == 0
    late = measure(config, 100)  # oldest dirty: 200, 50 ms late; ratio 2/3 < 0.99
    assert late.max_compaction_delay_ms == 50
    assert is_cleanable(late, config)
    # Due but with nothing cleanable (the active segment only): no pass.
    assert not is_cleanable(measure(config, 300), config)
    assert measure(LogConfig(), None).max_compaction_delay_ms == 0  # default: never


def test_segments_without_timestamps_never_make_a_log_overdue() -> None:
    spec = [SegmentSummary(0, 10, 100, -1, 5), SegmentSummary(10, 10, 0, -1, NOW)]
    assert measure(LogConfig(max_compaction_lag_ms=0), None, spec).max_compaction_delay_ms == 0


def test_the_most_overdue_log_goes_first_then_the_dirtiest() -> None:
    def candidate(partition: int, delay: int, clean: int, dirty: int) -> LogToClean:
        return LogToClean(TopicPartition("t", partition), 0, 1, clean, dirty, delay)

    dirty = candidate(0, 0, 100, 900)
    dirtier = candidate(1, 0, 10, 990)
    overdue = candidate(2, 5, 900, 100)
    assert choose_filthiest([dirty, dirtier]) is dirtier
    assert choose_filthiest([dirty, overdue, dirtier]) is overdue
    assert choose_filthiest([]) is None


def test_the_high_watermark_bounds_the_cleanable_range() -> None:
    def with_hw(high_watermark: int | None) -> LogToClean:
        return log_to_clean(
            TP,
            LOG,
            checkpoint=None,
            log_start_offset=0,
            log_end_offset=310,
            config=LogConfig(),
            now_ms=NOW,
            high_watermark=high_watermark,
        )

    assert with_hw(None).first_uncleanable_offset == 300
    assert with_hw(150).first_uncleanable_offset == 150
    assert with_hw(150).cleanable_bytes == 2_000  # the segment holding it is dirty
    assert with_hw(305).first_uncleanable_offset == 300
