"""OffsetIndex: append rules, lookup, truncation, the on-disk layout and corruption checks,
with hypothesis properties against a linear scan."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.storage.index_errors import CorruptIndexError, IndexFullError, InvalidIndexEntryError
from odradek.storage.offset_index import IndexEntry, OffsetIndex

BASE = 5000
INT32_MAX = 2**31 - 1


@pytest.fixture
def index(tmp_path: Path) -> OffsetIndex:
    return OffsetIndex(tmp_path / f"{BASE:020d}.index", BASE, 8 * 100)


def _write_raw(path: Path, entries: list[tuple[int, int]]) -> None:
    path.write_bytes(b"".join(struct.pack(">ii", rel, pos) for rel, pos in entries))


# -- empty index --------------------------------------------------------------------------


def test_empty_index(index: OffsetIndex) -> None:
    assert index.entries == 0
    assert index.lookup(BASE) == IndexEntry(BASE, 0)
    assert index.lookup(BASE + 1000) == IndexEntry(BASE, 0)
    assert index.lookup(0) == IndexEntry(BASE, 0)
    assert index.last_entry() == IndexEntry(BASE, 0)
    with pytest.raises(IndexError):
        index.entry(0)
    index.truncate_to(BASE)
    index.sanity_check()


# -- append ----------------------------------------------------------------------------------


def test_append_and_entry(index: OffsetIndex) -> None:
    index.append(BASE, 0)
    index.append(BASE + 7, 4096)
    assert index.entries == 2
    assert index.size_bytes == 16
    assert index.entry(0) == IndexEntry(BASE, 0)
    assert index.entry(1) == IndexEntry(BASE + 7, 4096)
    assert index.last_entry() == IndexEntry(BASE + 7, 4096)
    with pytest.raises(IndexError):
        index.entry(2)
    with pytest.raises(IndexError):
        index.entry(-1)


def test_on_disk_layout(index: OffsetIndex) -> None:
    index.append(BASE + 1, 0x10)
    index.append(BASE + 0x01020304, 0x7FFFFFFF)
    index.close()
    assert Path(index.path).read_bytes() == bytes.fromhex(
        "00000001 00000010  01020304 7fffffff"  # (relative offset, position) x 2
    )


@pytest.mark.parametrize(
    ("offset", "position"),
    [
        (BASE + 10, 200),  # same offset
        (BASE + 9, 300),  # offset goes back
        (BASE + 11, 100),  # same position
        (BASE + 11, 99),  # position goes back
    ],
)
def test_append_must_increase(index: OffsetIndex, offset: int, position: int) -> None:
    index.append(BASE + 10, 100)
    with pytest.raises(InvalidIndexEntryError):
        index.append(offset, position)
    assert index.entries == 1


@pytest.mark.parametrize(
    ("offset", "position"),
    [
        (BASE - 1, 0),  # before the segment
        (BASE + INT32_MAX + 1, 0),  # relative offset overflows int32
        (BASE, -1),
        (BASE, INT32_MAX + 1),
    ],
)
def test_append_must_fit_the_format(index: OffsetIndex, offset: int, position: int) -> None:
    with pytest.raises(InvalidIndexEntryError):
        index.append(offset, position)
    assert index.entries == 0


def test_append_extremes(index: OffsetIndex) -> None:
    index.append(BASE, 0)
    index.append(BASE + INT32_MAX, INT32_MAX)
    assert index.lookup(BASE + INT32_MAX + 10) == IndexEntry(BASE + INT32_MAX, INT32_MAX)


def test_invalid_entry_error_is_a_value_error() -> None:
    assert issubclass(InvalidIndexEntryError, ValueError)


def test_full_index(tmp_path: Path) -> None:
    with OffsetIndex(tmp_path / "x.index", BASE, 8 * 3 + 7) as index:
        assert index.max_entries == 3
        for i in range(3):
            assert not index.is_full
            index.append(BASE + i, i)
        assert index.is_full
        with pytest.raises(IndexFullError):
            index.append(BASE + 3, 3)
        # Full is checked first, even for an entry that would be invalid anyway.
        with pytest.raises(IndexFullError):
            index.append(BASE, 0)
        assert index.entries == 3


# -- lookup -------------------------------------------------------------------------------


def test_lookup(index: OffsetIndex) -> None:
    index.append(BASE + 10, 100)
    index.append(BASE + 20, 200)
    index.append(BASE + 30, 300)
    assert index.lookup(BASE + 9) == IndexEntry(BASE, 0)
    assert index.lookup(BASE + 10) == IndexEntry(BASE + 10, 100)
    assert index.lookup(BASE + 19) == IndexEntry(BASE + 10, 100)
    assert index.lookup(BASE + 20) == IndexEntry(BASE + 20, 200)
    assert index.lookup(BASE + 31) == IndexEntry(BASE + 30, 300)
    assert index.lookup(2**62) == IndexEntry(BASE + 30, 300)
    assert index.lookup(-(2**62)) == IndexEntry(BASE, 0)


def test_lookup_of_the_base_offset_entry(index: OffsetIndex) -> None:
    index.append(BASE, 0)
    assert index.lookup(BASE) == IndexEntry(BASE, 0)
    assert index.lookup(BASE - 1) == IndexEntry(BASE, 0)


# -- truncate_to --------------------------------------------------------------------------


def test_truncate_to(index: OffsetIndex) -> None:
    for i in range(1, 6):
        index.append(BASE + 10 * i, 100 * i)
    index.truncate_to(BASE + 41)  # keeps 10..40
    assert index.last_entry() == IndexEntry(BASE + 40, 400)
    index.truncate_to(BASE + 40)  # an exact match is dropped
    assert index.last_entry() == IndexEntry(BASE + 30, 300)
    index.truncate_to(BASE + 1000)  # past the end: no-op
    assert index.entries == 3
    index.truncate_to(BASE + 10)
    assert index.entries == 0
    assert index.lookup(BASE + 100) == IndexEntry(BASE, 0)


def test_truncate_to_below_the_base_offset(index: OffsetIndex) -> None:
    index.append(BASE, 0)
    index.truncate_to(BASE - 100)
    assert index.entries == 0


def test_truncate_to_then_append(index: OffsetIndex) -> None:
    for i in range(1, 6):
        index.append(BASE + 10 * i, 100 * i)
    index.truncate_to(BASE + 30)
    index.append(BASE + 30, 250)  # the dropped offset, at a new position
    index.append(BASE + 35, 260)
    assert index.entries == 4
    assert index.lookup(BASE + 33) == IndexEntry(BASE + 30, 250)
    assert index.lookup(BASE + 50) == IndexEntry(BASE + 35, 260)
    index.close()
    with OffsetIndex(index.path, BASE, 800) as reopened:
        reopened.sanity_check()
        assert reopened.last_entry() == IndexEntry(BASE + 35, 260)


# -- sanity_check -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "match"),
    [
        ([(1, 10), (1, 20)], "offset"),
        ([(2, 10), (1, 20)], "offset"),
        ([(1, 10), (2, 10)], "position"),
        ([(1, 10), (2, 5)], "position"),
        ([(-1, 10)], "negative relative offset"),
        ([(0, -10)], "negative position"),
        ([(5, 10), (6, 20), (0, 0), (0, 0)], "2 zero entries after entry 2"),  # crash: a zero tail
    ],
)
def test_sanity_check_detects_corrupt_contents(
    tmp_path: Path, entries: list[tuple[int, int]], match: str
) -> None:
    path = tmp_path / "x.index"
    _write_raw(path, entries)
    with OffsetIndex(path, BASE, 800) as index:
        zero_tail = 2 if "zero entries" in match else 0  # not decoded, but rejected
        assert index.entries == len(entries) - zero_tail
        with pytest.raises(CorruptIndexError, match=match):
            index.sanity_check()


def test_sanity_check_accepts_valid_contents(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    _write_raw(path, [(0, 0), (3, 100), (9, 250)])
    with OffsetIndex(path, BASE, 800) as index:
        index.sanity_check()
        assert index.lookup(BASE + 5) == IndexEntry(BASE + 3, 100)


# -- properties -----------------------------------------------------------------------------

_PROPERTY_SETTINGS = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)

# (offset delta, position delta) pairs, both >= 1: strictly increasing entries.
_deltas = st.lists(
    st.tuples(st.integers(1, 1000), st.integers(1, 100_000)), min_size=0, max_size=60
)
_targets = st.lists(st.integers(BASE - 100, BASE + 70_000) | st.integers(-(2**63), 2**63))


def _build(deltas: list[tuple[int, int]], first: tuple[int, int]) -> list[IndexEntry]:
    offset, position = BASE + first[0], first[1]
    entries = []
    for d_offset, d_position in deltas:
        entries.append(IndexEntry(offset, position))
        offset += d_offset
        position += d_position
    return entries


def _scan(entries: list[IndexEntry], target: int) -> IndexEntry:
    best = IndexEntry(BASE, 0)
    for entry in entries:
        if entry.offset <= target:
            best = entry
    return best


_counter = itertools.count()


@_PROPERTY_SETTINGS
@given(
    deltas=_deltas,
    first=st.tuples(st.integers(0, 50), st.integers(0, 50)),
    targets=_targets,
    reopen=st.booleans(),
)
def test_lookup_agrees_with_a_linear_scan(
    tmp_path: Path,
    deltas: list[tuple[int, int]],
    first: tuple[int, int],
    targets: list[int],
    reopen: bool,
) -> None:
    entries = _build(deltas, first)
    path = tmp_path / f"{next(_counter)}.index"
    index = OffsetIndex(path, BASE, 8 * 64)
    for entry in entries:
        index.append(entry.offset, entry.position)
    if reopen:
        index.close()
        index = OffsetIndex(path, BASE, 0)
        index.sanity_check()
    try:
        assert index.entries == len(entries)
        for target in [*targets, *(e.offset for e in entries), *(e.offset - 1 for e in entries)]:
            assert index.lookup(target) == _scan(entries, target)
        assert index.last_entry() == (entries[-1] if entries else IndexEntry(BASE, 0))
    finally:
        index.delete()


@_PROPERTY_SETTINGS
@given(deltas=_deltas, cut=st.integers(BASE - 10, BASE + 70_000), more=_deltas)
def test_truncate_to_agrees_with_a_model(
    tmp_path: Path, deltas: list[tuple[int, int]], cut: int, more: list[tuple[int, int]]
) -> None:
    entries = _build(deltas, (0, 0))
    index = OffsetIndex(tmp_path / f"{next(_counter)}.index", BASE, 8 * 128)
    try:
        for entry in entries:
            index.append(entry.offset, entry.position)
        index.truncate_to(cut)
        model = [e for e in entries if e.offset < cut]
        assert [index.entry(i) for i in range(index.entries)] == model
        # Appending carries on from the truncation point.
        last = model[-1] if model else None
        start = (last.offset + 1, last.position + 1) if last else (0 + BASE, 0)
        for entry in _build(more, (start[0] - BASE, start[1])):
            index.append(entry.offset, entry.position)
            model.append(entry)
        index.sanity_check()
        for target in (cut - 1, cut, cut + 1, *(e.offset for e in model)):
            assert index.lookup(target) == _scan(model, target)
    finally:
        index.delete()


def test_append_trusted_writes_the_same_entries_as_append(tmp_path: Path) -> None:
    checked = OffsetIndex(tmp_path / "a.index", BASE, 8 * 3)
    trusted = OffsetIndex(tmp_path / "b.index", BASE, 8 * 3)
    for offset, position in [(BASE, 0), (BASE + 7, 400), (BASE + 9, 900)]:
        checked.append(offset, position)
        trusted.append_trusted(offset, position)
    assert trusted.lookup(BASE + 8) == IndexEntry(BASE + 7, 400)
    with pytest.raises(IndexFullError):
        trusted.append_trusted(BASE + 10, 1000)
    checked.close()
    trusted.close()
    assert (tmp_path / "a.index").read_bytes() == (tmp_path / "b.index").read_bytes()
