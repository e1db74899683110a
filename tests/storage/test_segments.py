"""LogSegments: ordered, copy-on-write segment list; lookups by offset."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.storage.config import LogConfig
from odradek.storage.segment import LogSegment
from odradek.storage.segments import LogSegments

CONFIG = LogConfig(segment_index_bytes=1024)


@pytest.fixture
def make(tmp_path: Path) -> Iterator[dict[int, LogSegment]]:
    """Empty segments at base offsets 0, 10, 20, 30 and 50."""
    made = {base: LogSegment.create(str(tmp_path), base, CONFIG, 0) for base in (0, 10, 20, 30, 50)}
    yield made
    for segment in made.values():
        segment.close()


def bases(segments: LogSegments) -> list[int]:
    return [segment.base_offset for segment in segments]


def test_add_keeps_base_offset_order(make: dict[int, LogSegment]) -> None:
    segments = LogSegments()
    assert len(segments) == 0
    for base in (50, 0, 20):
        segments.add(make[base])
    assert bases(segments) == [0, 20, 50]
    assert segments.active is make[50]
    assert segments.snapshot().base_offsets == (0, 20, 50)


def test_add_replaces_a_segment_with_the_same_base_offset(
    make: dict[int, LogSegment], tmp_path: Path
) -> None:
    segments = LogSegments()
    segments.add(make[0])
    segments.add(make[10])
    (tmp_path / "other").mkdir()
    replacement = LogSegment.create(str(tmp_path / "other"), 10, CONFIG, 0)
    try:
        segments.add(replacement)
        assert len(segments) == 2
        assert segments.active is replacement
    finally:
        replacement.close()


def test_remove_and_clear(make: dict[int, LogSegment]) -> None:
    segments = LogSegments()
    for base in (0, 10, 20):
        segments.add(make[base])
    segments.remove(make[10])
    assert bases(segments) == [0, 20]
    segments.remove(make[10])  # not there: no change
    assert bases(segments) == [0, 20]
    segments.clear()
    assert len(segments) == 0


def test_snapshots_are_not_changed_by_later_updates(make: dict[int, LogSegment]) -> None:
    segments = LogSegments()
    segments.add(make[0])
    segments.add(make[10])
    before = segments.snapshot()
    segments.add(make[20])
    segments.remove(make[0])
    assert [s.base_offset for s in before] == [0, 10]
    assert before.active is make[10]
    assert bases(segments) == [10, 20]


@pytest.mark.parametrize(
    ("offset", "floor", "from_offset"),
    [
        (-1, -1, [0, 10, 30]),
        (0, 0, [0, 10, 30]),
        (9, 0, [0, 10, 30]),
        (10, 1, [10, 30]),
        (29, 1, [10, 30]),
        (30, 2, [30]),
        (10**9, 2, [30]),
    ],
)
def test_floor_and_from_offset(
    make: dict[int, LogSegment], offset: int, floor: int, from_offset: list[int]
) -> None:
    segments = LogSegments()
    for base in (0, 10, 30):
        segments.add(make[base])
    snapshot = segments.snapshot()
    assert snapshot.floor(offset) == floor
    expected = None if floor < 0 else snapshot.segments[floor]
    assert snapshot.floor_segment(offset) is expected
    assert [s.base_offset for s in snapshot.from_offset(offset)] == from_offset
    assert len(snapshot) == 3


def test_newest_is_the_active_segment_after_every_change(make: dict[int, LogSegment]) -> None:
    # The append path reads ``newest`` (a plain attribute), not ``active``.
    segments = LogSegments()
    assert segments.newest is None
    segments.add(make[20])
    assert segments.newest is make[20]
    segments.add(make[0])  # an older segment leaves the newest one newest
    assert segments.newest is make[20]
    segments.add(make[50])
    assert segments.newest is make[50] is segments.active
    segments.replace(make[30], [make[50]])
    assert segments.newest is make[30] is segments.active
    segments.remove(make[30])
    assert segments.newest is make[20] is segments.active
    segments.clear()
    assert segments.newest is None
