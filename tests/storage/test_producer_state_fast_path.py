"""The leader's in-order shortcut of the producer state (``next_in_order`` + ``record_next``,
read from the batch bytes) against its reference (``check`` + ``update``, from a parsed
header), over generated runs of batches: in order, duplicates, gaps, new and old epochs,
unknown producers, the sequence wrap-around, transactional and control batches, and damaged
headers.

Held equal: the shortcut only ever answers for a batch ``check`` accepts with no error
(never for one it would refuse, answer as a duplicate or must see as a marker), the state it
leaves is the reference's, and it does answer for every well-formed data batch that is its
producer's next in order at its epoch (so the produce path takes it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek._compiled import compiled_attr
from odradek.errors import KafkaError
from odradek.records.batch import parse_header
from odradek.records.codec import SimpleRecord, build_batch
from odradek.records.control import build_marker_batch
from odradek.storage import producer_state
from odradek.storage.producer_state import MAX_SEQUENCE, ProducerState

PRODUCERS = (3, 4)
_COMPILED = "odradek._producer_state"
#: Each implementation of the shortcut: the Python references and the compiled functions.
IMPLEMENTATIONS: dict[str, tuple[Callable[..., Any] | None, Callable[..., Any] | None]] = {
    "python": (producer_state.py_next_in_order, producer_state.py_record_next),
    "compiled": (
        compiled_attr(_COMPILED, "producer_next_in_order"),
        compiled_attr(_COMPILED, "producer_record_next"),
    ),
}


@contextmanager
def _implementation(name: str) -> Iterator[None]:
    next_in_order, record_next = IMPLEMENTATIONS[name]
    if next_in_order is None or record_next is None:
        pytest.skip(f"{_COMPILED} is not built")
    with mock.patch.multiple(
        producer_state, _next_in_order=next_in_order, _record_next=record_next
    ):
        yield


#: How a generated batch relates to its producer's state.
_SEQUENCE_KIND = st.sampled_from([*["next"] * 8, "zero", "repeat", "gap", "near-wrap"])
_EPOCH_KIND = st.sampled_from([*["same"] * 8, "bump", "older"])
_SHAPE = st.sampled_from(
    [
        *["data"] * 8,
        "transactional",
        "marker",
        "magic1",
        "trailing",
        "negative-count",
        "negative-delta",
    ]
)


@st.composite
def _steps(draw: st.DrawFn) -> list[tuple[int, str, str, int, str]]:
    return draw(
        st.lists(
            st.tuples(
                st.sampled_from(PRODUCERS),
                _EPOCH_KIND,
                _SEQUENCE_KIND,
                st.integers(1, 3),  # records
                _SHAPE,
            ),
            max_size=60,
        )
    )


def _sequence(state: ProducerState, producer_id: int, kind: str, count: int) -> int:
    entry = state.get(producer_id)
    last = entry.last_sequence if entry is not None else -1
    following = 0 if last in (-1, MAX_SEQUENCE) else last + 1
    if kind == "next":
        return following
    if kind == "zero":
        return 0
    if kind == "repeat":
        return entry.batches[-1].first_sequence if entry and entry.batches else following
    if kind == "gap":
        return (following + 2) & MAX_SEQUENCE
    return MAX_SEQUENCE - (count - 1) // 2  # at 2^31-1, or its records wrap to 0


def _epoch(state: ProducerState, producer_id: int, kind: str) -> int:
    entry = state.get(producer_id)
    current = entry.producer_epoch if entry is not None else 0
    if kind == "bump":
        return current + 1
    if kind == "older":
        return max(current - 1, 0)
    return current


def _batch(producer_id: int, epoch: int, sequence: int, count: int, shape: str) -> bytes:
    if shape == "marker":
        return build_marker_batch(producer_id, epoch, True, coordinator_epoch=0, timestamp_ms=5)
    data = build_batch(
        [SimpleRecord(1_000 + i, None, b"v") for i in range(count)],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        transactional=shape == "transactional",
    )
    if shape == "magic1":
        damaged = bytearray(data)
        damaged[16] = 1
        return bytes(damaged)
    if shape == "trailing":
        return data + b"\0" * 3
    if shape.startswith("negative"):  # a damaged records count or last offset delta
        damaged = bytearray(data)
        at = 57 if shape == "negative-count" else 23
        damaged[at : at + 4] = b"\xff" * 4
        return bytes(damaged)
    return data


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@settings(max_examples=300, deadline=None)
@given(steps=_steps(), near_the_wrap=st.booleans())
def test_the_in_order_shortcut_answers_and_records_as_check_and_update_do(
    implementation: str, steps: list[tuple[int, str, str, int, str]], near_the_wrap: bool
) -> None:
    with _implementation(implementation):
        _run(steps, near_the_wrap)


def _run(steps: list[tuple[int, str, str, int, str]], near_the_wrap: bool) -> None:
    reference = ProducerState()
    shortcut = ProducerState()
    offset = 0
    now_ms = 10
    if near_the_wrap:
        # A follower's batch (``update``, no check) leaves producer 4 one sequence before
        # 2^31-1, so its next batches wrap to 0.
        seed = parse_header(_batch(PRODUCERS[1], 0, MAX_SEQUENCE - 2, 2, "data"))
        for state in (reference, shortcut):
            state.update(seed, 0, 1_000, now_ms)
        offset = 2
    for producer_id, epoch_kind, kind, count, shape in steps:
        epoch = _epoch(reference, producer_id, epoch_kind)
        sequence = _sequence(reference, producer_id, kind, count)
        data = _batch(producer_id, epoch, sequence, count, shape)
        now_ms += 1
        entry = shortcut.next_in_order(data)
        well_formed = shape in ("data", "transactional", "marker")
        if not well_formed:
            assert entry is None
            continue
        header = parse_header(data)
        try:
            duplicate = reference.check(header) if shape != "marker" else None
        except KafkaError:
            assert entry is None  # refused: never the shortcut's
            continue
        known = reference.get(producer_id)
        in_order = (
            shape == "data"
            and duplicate is None
            and known is not None
            and known.producer_epoch == epoch
            and bool(known.batches)
        )
        # It answers exactly for the next data batch in order of a producer at its epoch.
        assert (entry is not None) == in_order
        if duplicate is not None:
            continue  # answered with its original offsets, nothing appended
        reference.update(header, offset, header.max_timestamp, now_ms)
        if entry is not None:
            shortcut.record_next(entry, data, offset, header.max_timestamp, now_ms)
        else:
            shortcut.update(header, offset, header.max_timestamp, now_ms)
        offset += header.last_offset_delta + 1
        assert shortcut.entries() == reference.entries()
        assert shortcut.end_offset == reference.end_offset


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_short_buffer_is_left_to_check_and_refused_by_record_next(implementation: str) -> None:
    with _implementation(implementation):
        _short_buffer()


def _short_buffer() -> None:
    state = ProducerState()
    data = build_batch(
        [SimpleRecord(1, None, b"v")], producer_id=3, producer_epoch=0, base_sequence=0
    )
    state.update(parse_header(data), 0, 1, 0)
    following = build_batch(
        [SimpleRecord(1, None, b"v")], producer_id=3, producer_epoch=0, base_sequence=1
    )
    assert state.next_in_order(following) is not None
    assert state.next_in_order(following[:60]) is None
    entry = state.get(3)
    assert entry is not None
    with pytest.raises(ValueError, match="not a whole batch header"):
        state.record_next(entry, following[:60], 1, 1, 0)
    assert state.get(3) is entry
