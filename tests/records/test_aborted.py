"""Dropping aborted transactions from fetched bytes: a producer's batches from the listed
first offset until its marker go, everything else stays as it was (other producers, plain
batches, markers, a cut-off batch at the end), and with nothing listed the bytes are kept;
``drop_aborted_batches`` also tells where the whole batches end, dropped ones included."""

from __future__ import annotations

from odradek.records.aborted import drop_aborted, drop_aborted_batches
from odradek.records.batch import iter_batches, set_base_offset
from odradek.records.codec import SimpleRecord, build_batch
from odradek.records.control import ControlType, build_marker_batch, control_type


def at(offset: int, data: bytes) -> bytes:
    patched = bytearray(data)
    set_base_offset(patched, 0, offset)
    return bytes(patched)


def txn(pid: int, offset: int, count: int = 2) -> bytes:
    batch = build_batch(
        [SimpleRecord(1, None, b"%d" % i) for i in range(count)],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=offset,
        transactional=True,
    )
    return at(offset, batch)


def marker(pid: int, offset: int, commit: bool) -> bytes:
    return at(offset, build_marker_batch(pid, 0, commit, coordinator_epoch=0, timestamp_ms=1))


def offsets(data: bytes) -> list[int]:
    return [header.base_offset for _, header in iter_batches(data)]


def test_the_aborted_producers_batches_go_until_its_marker() -> None:
    log = b"".join(
        [
            txn(1, 0),  # 0-1 aborted later
            txn(2, 2),  # 2-3 committed
            txn(1, 4),  # 4-5 aborted
            marker(1, 6, False),
            marker(2, 7, True),
            txn(1, 8),  # 8-9: producer 1's next transaction, committed
            marker(1, 10, True),
        ]
    )
    kept = drop_aborted(log, [(1, 0)])
    assert offsets(kept) == [2, 6, 7, 8, 10]
    assert drop_aborted(log, []) == log
    assert drop_aborted(log, None) == log


def test_a_first_offset_past_the_batches_drops_nothing_before_it() -> None:
    log = txn(1, 0) + marker(1, 2, True) + txn(1, 3) + marker(1, 5, False)
    assert offsets(drop_aborted(log, [(1, 3)])) == [0, 2, 5]


def test_a_batch_cut_off_at_the_end_is_kept_as_it_was() -> None:
    whole = txn(2, 0) + txn(1, 2)
    cut = txn(2, 4)[:30]
    assert drop_aborted(whole + cut, [(1, 2)]) == txn(2, 0) + cut


def test_a_marker_says_its_type() -> None:
    for commit, kind in ((True, ControlType.COMMIT), (False, ControlType.ABORT)):
        data = marker(9, 0, commit)
        ((position, header),) = list(iter_batches(data))
        assert header.is_control
        assert header.is_transactional
        assert control_type(data, header, position) == kind


def test_the_end_of_the_whole_batches_counts_the_dropped_ones() -> None:
    """A fetch of only an aborted transaction's data (its marker not reached yet) keeps
    nothing, but the reader still learns to go on past it."""
    only_aborted = txn(1, 0) + txn(1, 2, count=3)
    kept, end = drop_aborted_batches(only_aborted, [(1, 0)])
    assert (kept, end) == (b"", 5)
    cut = txn(2, 5) + marker(2, 7, True)
    kept, end = drop_aborted_batches(only_aborted + cut[:-3], [(1, 0)])
    assert (kept, end) == (cut[:-3], 7)  # the cut-off marker is kept as bytes, not counted
    assert drop_aborted_batches(b"", [(1, 0)]) == (b"", -1)
