"""The active segment's append state: the compiled ``odradek._append.AppendState`` and its Python
reference ``PyAppendState`` decline the same appends (writing nothing, changing nothing),
accept the same ones, write the same bytes and leave the same state and tail; a failed write
changes nothing. (``test_log_append_paths`` holds them to the general path through ``Log``.)"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek._compiled import compiled_attr
from odradek.records.batch import parse_header
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage import append_state
from odradek.storage.append_state import AppendState, PyAppendState
from odradek.storage.file_records import COMPILED_MODULE
from odradek.storage.segment_tail import new_tail

NOW = 1_700_000_000_000
BIG = 2**70
BASE = 1000
TAIL_MAX = 4
FIELDS = (
    "base_offset",
    "max_offset",
    "index_interval_bytes",
    "tail_max_batches",
    "next_offset",
    "max_timestamp_so_far",
    "offset_of_max_timestamp",
    "first_batch_timestamp",
    "bytes_since_last_index_entry",
    "indexes_full",
)

Compiled: Callable[[int, int, int], AppendState] | None = compiled_attr(
    COMPILED_MODULE, "AppendState"
)
IMPLEMENTATIONS: list[Any] = [pytest.param(PyAppendState, id="python")]
if Compiled is not None:
    IMPLEMENTATIONS.append(pytest.param(Compiled, id="compiled"))


def batch(count: int = 2, timestamp_ms: int = NOW) -> bytes:
    return build_batch([SimpleRecord(timestamp_ms + i, b"k", b"v" * 20) for i in range(count)])


def snapshot(state: AppendState) -> tuple[Any, ...]:
    tail = state.tail
    listed = None if tail is None else (tail[0], *(list(column) for column in tail[1:]))
    return (*(getattr(state, name) for name in FIELDS), listed)


@pytest.fixture
def fd(tmp_path: Path) -> Iterator[int]:
    descriptor = os.open(tmp_path / "segment.log", os.O_CREAT | os.O_RDWR | os.O_APPEND)
    yield descriptor
    os.close(descriptor)


def started(implementation: Callable[[int, int, int], AppendState]) -> AppendState:
    """A state as the segment leaves it after its first batch (60 bytes at position 0)."""
    state = implementation(BASE, 4096, TAIL_MAX)
    state.first_batch_timestamp = NOW
    state.max_timestamp_so_far = NOW
    state.next_offset = BASE + 1
    state.bytes_since_last_index_entry = 60
    state.tail = new_tail(BASE, 0, BASE, 60)
    return state


def test_the_log_uses_the_compiled_state_when_built() -> None:
    if Compiled is None:
        pytest.skip("no C compiler: PyAppendState is the fallback")
    assert type(append_state.new_append_state(0, 4096, 128)) is Compiled


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_new_state_is_an_empty_segment(implementation: Any) -> None:
    state = implementation(BASE, 4096, 128)
    assert snapshot(state) == (
        BASE,
        BASE + 2**31 - 1,
        4096,
        128,
        BASE,
        -1,
        BASE,
        -1,
        0,
        False,
        None,
    )
    with pytest.raises(ValueError, match="base_offset"):
        implementation(-1, 4096, 128)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_an_accepted_append_writes_and_accounts_for_the_batch(implementation: Any, fd: int) -> None:
    state = started(implementation)
    data = batch(3, NOW + 5)
    position = 60
    fields = state.append(fd, data, BASE + 1, 7, position, BIG, BIG, BIG)
    assert fields == (2, NOW + 7, 3)
    written = os.pread(fd, len(data), 0)
    header = parse_header(written)
    assert (header.base_offset, header.partition_leader_epoch) == (BASE + 1, 7)
    assert state.next_offset == BASE + 4
    assert (state.max_timestamp_so_far, state.offset_of_max_timestamp) == (NOW + 7, BASE + 1)
    assert state.bytes_since_last_index_entry == 60 + len(data)
    assert state.tail is not None
    assert (state.tail[1], state.tail[2], state.tail[3]) == (
        array("q", [0, 60]),
        array("q", [BASE, BASE + 3]),
        array("q", [60, len(data)]),
    )


def _decline_cases() -> dict[str, Callable[[AppendState], tuple[int, int, int, int]]]:
    """Each changes a started state (or the call) so that ``append`` must decline; returns
    (base_offset, max_batch_bytes, max_file_bytes, segment_ms)."""

    def call(state: AppendState) -> tuple[int, int, int, int]:
        return BASE + 1, BIG, BIG, BIG

    def empty(state: AppendState) -> tuple[int, int, int, int]:
        state.first_batch_timestamp = -1
        return call(state)

    def due(state: AppendState) -> tuple[int, int, int, int]:
        state.bytes_since_last_index_entry = state.index_interval_bytes + 1
        return call(state)

    def full_index(state: AppendState) -> tuple[int, int, int, int]:
        state.indexes_full = True
        return call(state)

    def no_tail(state: AppendState) -> tuple[int, int, int, int]:
        state.tail = None
        return call(state)

    def full_tail(state: AppendState) -> tuple[int, int, int, int]:
        for i in range(TAIL_MAX):
            assert state.tail is not None
            state.tail[1].append(i)
        return call(state)

    return {
        "empty segment": empty,
        "index entry due": due,
        "full index": full_index,
        "no tail": no_tail,
        "full tail": full_tail,
        "below the base": lambda state: (BASE - 1, BIG, BIG, BIG),
        "over max.message.bytes": lambda state: (BASE + 1, 60, BIG, BIG),
        "past segment.bytes": lambda state: (BASE + 1, BIG, 100, BIG),
        "a roll by time due": lambda state: (BASE + 1, BIG, BIG, 3),
        "offsets past int32": lambda state: (BASE + 2**31 - 2, BIG, BIG, BIG),
    }


@pytest.mark.parametrize("case", list(_decline_cases()))
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_declines_write_and_change_nothing(implementation: Any, case: str, fd: int) -> None:
    state = started(implementation)
    base_offset, max_batch, max_file, segment_ms = _decline_cases()[case](state)
    before = snapshot(state)
    data = batch(3, NOW + 5)
    assert state.append(fd, data, base_offset, None, 60, max_batch, max_file, segment_ms) is None
    assert os.fstat(fd).st_size == 0
    assert snapshot(state) == before


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_failed_write_raises_and_changes_nothing(implementation: Any, tmp_path: Path) -> None:
    state = started(implementation)
    before = snapshot(state)
    read_only = os.open(tmp_path / "read-only.log", os.O_CREAT | os.O_RDONLY)
    try:
        with pytest.raises(OSError, match="Bad file descriptor"):
            state.append(read_only, batch(), BASE + 1, None, 60, BIG, BIG, BIG)
    finally:
        os.close(read_only)
    assert snapshot(state) == before


def test_the_twins_agree_on_a_run_of_appends(tmp_path: Path) -> None:
    if Compiled is None:
        pytest.skip("no C compiler: PyAppendState is the fallback")
    outcomes = []
    for implementation in (PyAppendState, Compiled):
        state = started(implementation)
        path = tmp_path / f"{implementation.__name__}.log"
        descriptor = os.open(path, os.O_CREAT | os.O_RDWR | os.O_APPEND)
        answers, position = [], 60
        for i in range(12):
            data = batch(1 + i % 3, NOW + (i * 7) % 11)
            limit = 150 if i == 5 else BIG  # one over max.message.bytes
            fields = state.append(descriptor, data, state.next_offset, i, position, limit, BIG, BIG)
            answers.append((fields, snapshot(state)))
            if fields is not None:
                position += len(data)
            if state.tail is not None and len(state.tail[1]) >= TAIL_MAX:
                state.tail = new_tail(state.next_offset)  # as a trim would
        os.close(descriptor)
        outcomes.append((answers, path.read_bytes()))
    assert outcomes[0] == outcomes[1]
    assert sum(fields is not None for fields, _ in outcomes[0][0]) >= 8
