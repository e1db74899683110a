"""The loader finishes an interrupted swap: a ``.swap`` segment replaces the segments in its
offset range; ``.cleaned`` files and index ``.swap`` files go; indexes are rebuilt."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from odradek.storage.naming import SWAP_SUFFIX, segment_file_name

if TYPE_CHECKING:
    from tests.storage.cleaner.conftest import KeyValueTools
    from tests.storage.conftest import LogHarness


@pytest.mark.parametrize("clean", [True, False])
def test_a_swap_file_replaces_the_segments_in_its_range(
    logs: LogHarness, kv: KeyValueTools, clean: bool
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = logs.open(segment_bytes=200, index_interval_bytes=0)
    workload = Workload()
    for n in range(12):
        kv.put(log, workload, b"k%d" % n, b"v%d" % n)
    segments = log.segments()
    assert len(segments) >= 5
    first, second, third = segments[:3]
    assert first.base_offset < second.base_offset < third.base_offset
    # A "cleaned" segment for the first two segments, without their first record.
    merged = first.log.read(0, first.size) + second.log.read(0, second.size)
    swap = merged[first.log.header_at(0).size :]
    log.close()
    directory = Path(log.directory)
    base = first.base_offset
    (directory / (segment_file_name(base, ".log") + SWAP_SUFFIX)).write_bytes(swap)
    (directory / (segment_file_name(base, ".index") + SWAP_SUFFIX)).write_bytes(b"\x01" * 8)
    (directory / segment_file_name(third.base_offset, ".log.cleaned")).write_bytes(b"junk")
    # The segments whose base offset is in [base, end of the swap) go.
    reopened = logs.open(log.config, clean=clean)
    names = sorted(os.listdir(directory))
    assert not [name for name in names if name.endswith((".swap", ".cleaned"))]
    bases = [segment.base_offset for segment in reopened.segments()]
    assert bases[:2] == [base, third.base_offset]
    assert reopened.segments()[0].next_offset == third.base_offset
    assert kv.read(reopened) == kv.stored(reopened)
    assert [r.offset for r in kv.stored(reopened)] == list(range(1, 12))
    # The swapped segment's indexes were rebuilt, not taken from the .swap leftovers.
    assert reopened.segments()[0].offset_index.entries > 0


def test_a_swap_file_without_a_valid_batch_is_dropped(logs: LogHarness, kv: KeyValueTools) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = logs.open(segment_bytes=200)
    workload = Workload()
    for n in range(6):
        kv.put(log, workload, b"k%d" % n, b"v")
    before = kv.stored(log)
    log.close()
    Path(log.directory, segment_file_name(0, ".log") + SWAP_SUFFIX).write_bytes(b"\x00" * 100)
    reopened = logs.open(log.config, clean=False)
    assert kv.stored(reopened) == before
    assert not [n for n in os.listdir(log.directory) if n.endswith(SWAP_SUFFIX)]
