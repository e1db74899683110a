"""Runs of segments merged into one cleaned segment: by size, and by offset range."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.storage.cleaner.segment_groups import group_segments_by_size


@dataclass(frozen=True)
class Seg:
    base_offset: int
    next_offset: int
    size_bytes: int


def bases(groups: list[list[Seg]]) -> list[list[int]]:
    return [[segment.base_offset for segment in group] for group in groups]


def test_runs_fill_up_to_the_size_limit_in_order() -> None:
    segs = [Seg(0, 10, 400), Seg(10, 20, 300), Seg(20, 30, 400), Seg(30, 40, 100), Seg(40, 50, 900)]
    assert bases(group_segments_by_size(segs, 1_000)) == [[0, 10], [20, 30], [40]]
    assert bases(group_segments_by_size(segs, 100_000)) == [[0, 10, 20, 30, 40]]


def test_a_segment_over_the_limit_is_a_run_by_itself() -> None:
    segs = [Seg(0, 10, 50), Seg(10, 20, 5_000), Seg(20, 30, 50)]
    assert bases(group_segments_by_size(segs, 1_000)) == [[0], [10], [20]]


def test_every_offset_of_a_run_fits_relative_to_its_base() -> None:
    segs = [Seg(0, 10, 1), Seg(10, 90, 1), Seg(90, 101, 1), Seg(101, 102, 1)]
    assert bases(group_segments_by_size(segs, 1_000, max_relative_offset=100)) == [
        [0, 10, 90],
        [101],
    ]
    # Empty segments (next == base) count by their base offset.
    assert bases(group_segments_by_size([Seg(0, 0, 0), Seg(0, 5, 1)], 10)) == [[0, 0]]


def test_no_segments_no_runs() -> None:
    assert group_segments_by_size([], 1_000) == []
