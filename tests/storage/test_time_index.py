"""TimeIndex: maybe_append rules, the reserved last slot, lookup, truncation, the on-disk
layout and corruption checks, with hypothesis properties against a linear scan."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.storage.index_errors import CorruptIndexError, IndexFullError, InvalidIndexEntryError
from odradek.storage.time_index import TimeIndex, TimeIndexEntry

BASE = 7000
INT32_MAX = 2**31 - 1
NONE = TimeIndexEntry(-1, BASE)


@pytest.fixture
def index(tmp_path: Path) -> TimeIndex:
    return TimeIndex(tmp_path / f"{BASE:020d}.timeindex", BASE, 12 * 100)


def _write_raw(path: Path, entries: list[tuple[int, int]]) -> None:
    path.write_bytes(b"".join(struct.pack(">qi", ts, rel) for ts, rel in entries))


# -- empty index --------------------------------------------------------------------------


def test_empty_index(index: TimeIndex) -> None:
    assert index.entries == 0
    assert index.last_entry() == NONE
    assert index.lookup(0) == NONE
    assert index.lookup(2**62) == NONE
    with pytest.raises(IndexError):
        index.entry(0)
    index.truncate_to(BASE)
    index.sanity_check()


# -- maybe_append ---------------------------------------------------------------------------


def test_maybe_append_only_new_maximums(index: TimeIndex) -> None:
    assert not index.maybe_append(-1, BASE)  # no timestamp: never indexed
    assert index.maybe_append(0, BASE)
    assert index.maybe_append(100, BASE + 5)
    assert not index.maybe_append(100, BASE + 6)  # not greater
    assert not index.maybe_append(50, BASE + 7)  # smaller
    assert index.maybe_append(101, BASE + 5)  # same offset, greater timestamp
    assert index.entries == 3
    assert index.entry(1) == TimeIndexEntry(100, BASE + 5)
    assert index.last_entry() == TimeIndexEntry(101, BASE + 5)
    with pytest.raises(IndexError):
        index.entry(3)
    with pytest.raises(IndexError):
        index.entry(-1)


def test_on_disk_layout(index: TimeIndex) -> None:
    index.maybe_append(0x0102030405060708, BASE + 9)
    index.close()
    assert Path(index.path).read_bytes() == bytes.fromhex(
        "0102030405060708 00000009"  # (timestamp, relative offset)
    )


def test_offset_must_not_go_backwards(index: TimeIndex) -> None:
    index.maybe_append(100, BASE + 10)
    with pytest.raises(InvalidIndexEntryError):
        index.maybe_append(200, BASE + 9)
    # Checked even when the timestamp would not be appended.
    with pytest.raises(InvalidIndexEntryError):
        index.maybe_append(50, BASE + 9)
    assert index.entries == 1


@pytest.mark.parametrize(
    ("timestamp", "offset"),
    [(10, BASE - 1), (10, BASE + INT32_MAX + 1), (2**63, BASE)],
)
def test_entry_must_fit_the_format(index: TimeIndex, timestamp: int, offset: int) -> None:
    with pytest.raises(InvalidIndexEntryError):
        index.maybe_append(timestamp, offset)
    assert index.entries == 0


def test_extremes(index: TimeIndex) -> None:
    assert index.maybe_append(2**63 - 1, BASE + INT32_MAX)
    assert index.lookup(2**64) == TimeIndexEntry(2**63 - 1, BASE + INT32_MAX)


# -- full index and the reserved slot -------------------------------------------------------


def test_last_slot_is_reserved_for_the_final_entry(tmp_path: Path) -> None:
    with TimeIndex(tmp_path / "x.timeindex", BASE, 12 * 3) as index:
        assert index.max_entries == 3
        assert index.maybe_append(1, BASE)
        assert not index.is_full
        assert index.maybe_append(2, BASE + 1)
        assert index.is_full  # entries >= max_entries - 1
        with pytest.raises(IndexFullError):
            index.maybe_append(3, BASE + 2)
        with pytest.raises(IndexFullError):  # full is checked first
            index.maybe_append(1, BASE + 2)
        assert index.maybe_append(3, BASE + 2, skip_full_check=True)
        assert index.entries == 3
        # No slot left at all.
        assert not index.maybe_append(3, BASE + 3, skip_full_check=True)
        with pytest.raises(IndexFullError):
            index.maybe_append(4, BASE + 3, skip_full_check=True)
        assert index.last_entry() == TimeIndexEntry(3, BASE + 2)


def test_single_slot_index_only_takes_the_final_entry(tmp_path: Path) -> None:
    with TimeIndex(tmp_path / "x.timeindex", BASE, 12) as index:
        assert index.is_full
        with pytest.raises(IndexFullError):
            index.maybe_append(5, BASE)
        assert index.maybe_append(5, BASE, skip_full_check=True)


def test_no_slot_at_all(tmp_path: Path) -> None:
    with TimeIndex(tmp_path / "x.timeindex", BASE, 11) as index:
        assert index.max_entries == 0
        with pytest.raises(IndexFullError):
            index.maybe_append(5, BASE, skip_full_check=True)


# -- lookup -------------------------------------------------------------------------------


def test_lookup_finds_the_largest_timestamp_strictly_below(index: TimeIndex) -> None:
    index.maybe_append(100, BASE + 10)
    index.maybe_append(200, BASE + 20)
    index.maybe_append(300, BASE + 30)
    assert index.lookup(99) == NONE
    assert index.lookup(100) == NONE
    assert index.lookup(101) == TimeIndexEntry(100, BASE + 10)
    assert index.lookup(200) == TimeIndexEntry(100, BASE + 10)
    assert index.lookup(201) == TimeIndexEntry(200, BASE + 20)
    assert index.lookup(300) == TimeIndexEntry(200, BASE + 20)
    assert index.lookup(2**62) == TimeIndexEntry(300, BASE + 30)
    assert index.lookup(-(2**62)) == NONE


# -- truncate_to --------------------------------------------------------------------------


def test_truncate_to(index: TimeIndex) -> None:
    index.maybe_append(100, BASE + 10)
    index.maybe_append(150, BASE + 10)  # same offset twice
    index.maybe_append(200, BASE + 20)
    index.maybe_append(300, BASE + 30)
    index.truncate_to(BASE + 31)
    assert index.entries == 4
    index.truncate_to(BASE + 30)  # an exact match is dropped
    assert index.last_entry() == TimeIndexEntry(200, BASE + 20)
    index.truncate_to(BASE + 11)
    assert index.last_entry() == TimeIndexEntry(150, BASE + 10)
    index.truncate_to(BASE + 10)  # both entries at offset 10 go
    assert index.entries == 0
    assert index.last_entry() == NONE


def test_truncate_to_then_append(index: TimeIndex) -> None:
    index.maybe_append(100, BASE + 10)
    index.maybe_append(200, BASE + 20)
    index.truncate_to(BASE + 20)
    assert index.maybe_append(150, BASE + 20)  # 150 is a new maximum again
    assert index.lookup(160) == TimeIndexEntry(150, BASE + 20)
    index.close()
    with TimeIndex(index.path, BASE, 1200) as reopened:
        reopened.sanity_check()
        assert reopened.last_entry() == TimeIndexEntry(150, BASE + 20)


# -- sanity_check -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "match"),
    [
        ([(10, 1), (10, 2)], "timestamp"),
        ([(10, 1), (9, 2)], "timestamp"),
        ([(10, 2), (11, 1)], "offset"),
        ([(10, -1)], "negative relative offset"),
        ([(-5, 0)], "negative timestamp"),
        ([(10, 1), (20, 2), (0, 0), (0, 0)], "2 zero entries after entry 2"),  # crash: a zero tail
    ],
)
def test_sanity_check_detects_corrupt_contents(
    tmp_path: Path, entries: list[tuple[int, int]], match: str
) -> None:
    path = tmp_path / "x.timeindex"
    _write_raw(path, entries)
    with TimeIndex(path, BASE, 1200) as index:
        zero_tail = 2 if "zero entries" in match else 0  # not decoded, but rejected
        assert index.entries == len(entries) - zero_tail
        with pytest.raises(CorruptIndexError, match=match):
            index.sanity_check()


def test_sanity_check_accepts_valid_contents(tmp_path: Path) -> None:
    path = tmp_path / "x.timeindex"
    _write_raw(path, [(0, 0), (10, 0), (20, 4)])
    with TimeIndex(path, BASE, 1200) as index:
        index.sanity_check()
        assert index.lookup(15) == TimeIndexEntry(10, BASE)


# -- properties -----------------------------------------------------------------------------

_PROPERTY_SETTINGS = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)

# (timestamp, offset delta) observations as a segment sees them: timestamps in any order,
# offsets never decreasing. The index keeps the running maximum.
_observations = st.lists(
    st.tuples(st.integers(-1, 10_000), st.integers(0, 500)), min_size=0, max_size=80
)
_targets = st.lists(st.integers(-10, 10_010) | st.integers(-(2**63), 2**63))
_counter = itertools.count()


def _feed(index: TimeIndex, observations: list[tuple[int, int]]) -> list[TimeIndexEntry]:
    """Feeds the running maximum to maybe_append; returns the entries a model expects."""
    expected: list[TimeIndexEntry] = []
    offset = BASE
    for timestamp, delta in observations:
        offset += delta
        appended = index.maybe_append(timestamp, offset)
        new_max = timestamp > (expected[-1].timestamp if expected else -1)
        assert appended == new_max
        if new_max:
            expected.append(TimeIndexEntry(timestamp, offset))
    return expected


def _scan(entries: list[TimeIndexEntry], target: int) -> TimeIndexEntry:
    best = NONE
    for entry in entries:
        if entry.timestamp < target:
            best = entry
    return best


@_PROPERTY_SETTINGS
@given(observations=_observations, targets=_targets, reopen=st.booleans())
def test_lookup_agrees_with_a_linear_scan(
    tmp_path: Path, observations: list[tuple[int, int]], targets: list[int], reopen: bool
) -> None:
    path = tmp_path / f"{next(_counter)}.timeindex"
    index = TimeIndex(path, BASE, 12 * 100)
    expected = _feed(index, observations)
    if reopen:
        index.close()
        index = TimeIndex(path, BASE, 0)
        index.sanity_check()
    try:
        assert [index.entry(i) for i in range(index.entries)] == expected
        probes = [*targets, *(e.timestamp + d for e in expected for d in (-1, 0, 1))]
        for target in probes:
            assert index.lookup(target) == _scan(expected, target)
        assert index.last_entry() == (expected[-1] if expected else NONE)
    finally:
        index.delete()


@_PROPERTY_SETTINGS
@given(observations=_observations, cut=st.integers(BASE - 10, BASE + 40_000))
def test_truncate_to_agrees_with_a_model(
    tmp_path: Path, observations: list[tuple[int, int]], cut: int
) -> None:
    index = TimeIndex(tmp_path / f"{next(_counter)}.timeindex", BASE, 12 * 100)
    try:
        expected = _feed(index, observations)
        index.truncate_to(cut)
        model = [e for e in expected if e.offset < cut]
        assert [index.entry(i) for i in range(index.entries)] == model
        assert index.last_entry() == (model[-1] if model else NONE)
        index.sanity_check()
    finally:
        index.delete()


def test_append_trusted_and_last_timestamp(index: TimeIndex) -> None:
    assert index.last_timestamp == -1
    index.append_trusted(1_000, index.base_offset + 3)
    index.append_trusted(2_000, index.base_offset + 8)
    assert index.last_timestamp == 2_000
    assert index.lookup(1_500).offset == index.base_offset + 3
