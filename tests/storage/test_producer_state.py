"""The producer state of a partition with plain headers (no log): duplicates answered with
their original offsets, gaps, fenced epochs, unknown producers, sequence wrap-around at
2^31-1, the five-batch window, expiry, and the snapshot bytes round trip."""

from __future__ import annotations

import pytest

from odradek.errors import CorruptRecordError, ErrorCode, KafkaError
from odradek.records.batch import BatchHeader
from odradek.storage.producer_state import (
    MAX_SEQUENCE,
    BatchMetadata,
    ProducerState,
    decode_snapshot,
    encode_snapshot,
    last_sequence,
)

PID = 7


def header(
    sequence: int,
    count: int = 1,
    *,
    base_offset: int = 0,
    producer_id: int = PID,
    epoch: int = 0,
    timestamp: int = 1_000,
) -> BatchHeader:
    return BatchHeader(
        base_offset, 61, 0, 2, 0, 0, count - 1, timestamp, timestamp, producer_id, epoch,
        sequence, count,
    )  # fmt: skip


def appended(state: ProducerState, h: BatchHeader, base_offset: int) -> None:
    """What a leader does: check, then record the batch with its assigned offset (appended
    at the time of its max timestamp)."""
    assert state.check(h) is None
    state.update(h, base_offset, h.max_timestamp, now_ms=h.max_timestamp)


def code_of(state: ProducerState, h: BatchHeader) -> ErrorCode:
    with pytest.raises(KafkaError) as raised:
        state.check(h)
    return raised.value.error_code


def test_a_new_producer_starts_at_sequence_0_and_continues_in_order() -> None:
    state = ProducerState()
    appended(state, header(0, 3), 10)
    appended(state, header(3, 2), 13)
    entry = state.get(PID)
    assert entry is not None
    assert (entry.producer_epoch, entry.last_sequence, entry.last_offset) == (0, 4, 14)


def test_a_retried_batch_is_a_duplicate_answered_with_its_original_offsets() -> None:
    state = ProducerState()
    appended(state, header(0, 3), 10)
    appended(state, header(3, 2), 13)
    assert state.check(header(0, 3)) == BatchMetadata(0, 2, 10, 12, 1_000)
    assert state.check(header(3, 2)) == BatchMetadata(3, 4, 13, 14, 1_000)


def test_only_the_last_five_batches_are_remembered() -> None:
    state = ProducerState()
    for i in range(6):
        appended(state, header(i), 100 + i)
    assert code_of(state, header(0)) is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert state.check(header(1)) == BatchMetadata(1, 1, 101, 101, 1_000)


def test_a_gap_or_a_partial_overlap_is_out_of_order() -> None:
    state = ProducerState()
    appended(state, header(0, 3), 0)
    assert code_of(state, header(4)) is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert code_of(state, header(2, 2)) is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert code_of(state, header(0, 2)) is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_an_older_epoch_is_fenced_and_a_newer_one_starts_at_0() -> None:
    state = ProducerState()
    appended(state, header(0, epoch=3), 0)
    assert code_of(state, header(1, epoch=2)) is ErrorCode.INVALID_PRODUCER_EPOCH
    # A duplicate from the older epoch is fenced too, not answered.
    assert code_of(state, header(0, epoch=2)) is ErrorCode.INVALID_PRODUCER_EPOCH
    assert code_of(state, header(5, epoch=4)) is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    appended(state, header(0, epoch=4), 1)
    entry = state.get(PID)
    assert entry is not None
    assert entry.producer_epoch == 4
    assert len(entry.batches) == 1
    assert code_of(state, header(1, epoch=3)) is ErrorCode.INVALID_PRODUCER_EPOCH


def test_an_unknown_producer_not_at_sequence_0_is_unknown() -> None:
    state = ProducerState()
    assert code_of(state, header(5)) is ErrorCode.UNKNOWN_PRODUCER_ID
    assert state.get(PID) is None
    appended(state, header(0), 0)


def test_sequences_wrap_from_the_largest_int32_to_0() -> None:
    assert last_sequence(MAX_SEQUENCE - 1, 3) == 1
    state = ProducerState()
    appended(state, header(0), 0)
    # A producer far along: follower-style updates take it near the end of the range.
    state.update(header(MAX_SEQUENCE - 2, 2), 1, 1_000, 1_000)  # MAX-2 .. MAX-1
    appended(state, header(MAX_SEQUENCE, 3), 3)  # MAX, 0, 1
    entry = state.get(PID)
    assert entry is not None
    assert entry.last_sequence == 1
    appended(state, header(2), 6)
    assert state.check(header(MAX_SEQUENCE, 3)) == BatchMetadata(MAX_SEQUENCE, 1, 3, 5, 1_000)
    assert code_of(state, header(4)) is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_batches_without_a_producer_id_or_control_batches_leave_no_entry() -> None:
    state = ProducerState()
    state.update(header(-1, 4, producer_id=-1), 0, 1_000, 1_000)
    assert len(state) == 0
    assert state.end_offset == 4


def test_producers_expire_after_the_expiration_time_since_their_last_append() -> None:
    state = ProducerState()
    appended(state, header(0, timestamp=1_000), 0)
    appended(state, header(0, producer_id=8, timestamp=5_000), 1)
    assert state.remove_expired(now_ms=10_999, expiration_ms=10_000) == []
    assert state.remove_expired(now_ms=11_000, expiration_ms=10_000) == [PID]
    assert state.get(PID) is None
    assert state.get(8) is not None
    # Expired: the producer is unknown again.
    assert code_of(state, header(1)) is ErrorCode.UNKNOWN_PRODUCER_ID


def test_a_snapshot_round_trips_every_entry_and_batch() -> None:
    state = ProducerState()
    for i in range(7):
        appended(state, header(i * 2, 2, timestamp=1_000 + i), i * 2)
    appended(state, header(0, epoch=5, producer_id=9), 20)
    data = encode_snapshot(state)
    loaded = decode_snapshot(data, 21)
    assert loaded.end_offset == 21
    assert loaded.entries() == state.entries()
    assert loaded.check(header(12, 2, timestamp=1_006)) == BatchMetadata(12, 13, 12, 13, 1_006)
    assert decode_snapshot(encode_snapshot(ProducerState()), 0).entries() == []


@pytest.mark.parametrize("cut", [0, 3, 10, -1])
def test_a_damaged_snapshot_is_refused(cut: int) -> None:
    state = ProducerState()
    appended(state, header(0), 0)
    data = bytearray(encode_snapshot(state))
    if cut == -1:
        data[-1] ^= 1  # a flipped bit
    else:
        data = data[:cut]
    with pytest.raises(CorruptRecordError):
        decode_snapshot(bytes(data), 1)
