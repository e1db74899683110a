"""OffsetMap: latest offset per key, bounded by the dedupe buffer."""

from __future__ import annotations

import pytest

from odradek.storage.cleaner.offset_map import ENTRY_BYTES, NOT_FOUND, OffsetMap


def test_capacity_follows_the_buffer_and_the_load_factor() -> None:
    offset_map = OffsetMap(24 * 100, load_factor=0.5)
    assert (offset_map.slots, offset_map.capacity) == (100, 50)
    assert OffsetMap(1_024).capacity == int(1_024 // ENTRY_BYTES * 0.9)
    with pytest.raises(ValueError, match="holds no entry"):
        OffsetMap(10)


def test_later_offsets_replace_earlier_ones_and_a_full_map_refuses_new_keys() -> None:
    offset_map = OffsetMap(24 * 4, load_factor=0.5)  # two keys
    assert offset_map.try_put(b"a", 1)
    assert offset_map.try_put(b"b", 2)
    assert offset_map.is_full
    assert not offset_map.try_put(b"c", 3)
    assert offset_map.try_put(b"a", 4)  # a known key is still updated
    assert (offset_map.get(b"a"), offset_map.get(b"b"), offset_map.get(b"c")) == (4, 2, NOT_FOUND)
    assert offset_map.size == 2
    assert offset_map.utilization == 0.5
    offset_map.latest_offset = 4
    offset_map.clear()
    assert (offset_map.size, offset_map.latest_offset, offset_map.get(b"a")) == (0, -1, -1)


def test_keys_are_told_apart_by_content() -> None:
    offset_map = OffsetMap(64 * 1_024)
    for n in range(1_000):
        offset_map.try_put(b"key-%d" % n, n)
    assert [offset_map.get(b"key-%d" % n) for n in range(1_000)] == list(range(1_000))
    assert offset_map.get(b"") == NOT_FOUND
