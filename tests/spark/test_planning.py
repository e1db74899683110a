"""Range planning and rate limits (pure), and the canonical offset JSON."""

from __future__ import annotations

import itertools
import json

from hypothesis import given
from hypothesis import strategies as st

from odradek.client import TopicPartition
from odradek.spark.offsets import from_json, to_json
from odradek.spark.planning import OffsetRange, rate_limit, split_ranges

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_one_range_per_partition_with_data() -> None:
    ranges = split_ranges({A0: 0, A1: 5, B0: 7}, {A0: 10, A1: 5, B0: 9})
    assert ranges == [OffsetRange("a", 0, 0, 10), OffsetRange("b", 0, 7, 9)]


def test_min_partitions_splits_big_ranges_in_proportion() -> None:
    ranges = split_ranges({A0: 0, B0: 0}, {A0: 90, B0: 10}, min_partitions=10)
    assert [r for r in ranges if r.topic == "b"] == [OffsetRange("b", 0, 0, 10)]
    a = [r for r in ranges if r.topic == "a"]
    assert len(a) == 9
    assert a[0].start == 0
    assert a[-1].end == 90
    assert all(x.end == y.start for x, y in itertools.pairwise(a))


def test_max_records_per_partition() -> None:
    ranges = split_ranges({A0: 0}, {A0: 25}, max_records_per_partition=10)
    assert [(r.start, r.end) for r in ranges] == [(0, 8), (8, 16), (16, 25)]
    assert all(r.size <= 10 for r in ranges)


@given(
    st.dictionaries(
        st.sampled_from([A0, A1, B0]),
        st.tuples(st.integers(0, 1000), st.integers(0, 1000)),
        min_size=1,
    ),
    st.none() | st.integers(1, 20),
    st.none() | st.integers(1, 300),
)
def test_split_ranges_cover_exactly_the_offsets(
    bounds: dict[TopicPartition, tuple[int, int]],
    min_partitions: int | None,
    max_records: int | None,
) -> None:
    starts = {tp: min(a, b) for tp, (a, b) in bounds.items()}
    ends = {tp: max(a, b) for tp, (a, b) in bounds.items()}
    ranges = split_ranges(
        starts, ends, min_partitions=min_partitions, max_records_per_partition=max_records
    )
    covered: dict[TopicPartition, list[int]] = {}
    for r in ranges:
        assert r.size > 0
        if max_records is not None and min_partitions is None:
            assert r.size <= max_records
        covered.setdefault(TopicPartition(r.topic, r.partition), []).extend(range(r.start, r.end))
    for tp in bounds:
        assert covered.get(tp, []) == list(range(starts[tp], ends[tp]))


def test_rate_limit_in_proportion_to_backlog() -> None:
    ends = rate_limit({A0: 0, A1: 0, B0: 50}, {A0: 300, A1: 100, B0: 50}, 100)
    assert ends == {A0: 75, A1: 25, B0: 50}
    assert rate_limit({A0: 0}, {A0: 10}, 100) == {A0: 10}
    # A partition with a tiny share still moves.
    small = rate_limit({A0: 0, A1: 0}, {A0: 10_000, A1: 1}, 10)
    assert small[A1] == 1


def test_offset_json_is_canonical() -> None:
    offsets = {TopicPartition("b", 10): 1, TopicPartition("b", 2): 5, TopicPartition("a", 0): 3}
    text = json.dumps(to_json(offsets))
    assert text == '{"a": {"0": 3}, "b": {"2": 5, "10": 1}}'
    assert from_json(json.loads(text)) == offsets
    assert json.dumps(to_json(from_json(json.loads(text)))) == text
