"""``producer.accumulator``: batching per partition, ``linger.ms`` and fullness on a mock
clock, ``buffer.memory`` blocking, drain per node within ``max.request.size``, retries at the
front of the deque with backoff, muting, ``delivery.timeout.ms`` expiry, flush and close."""

from __future__ import annotations

import threading

import pytest

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.client.producer.accumulator import (
    BATCH_FULL,
    NEW_BATCH,
    AccumulatorSettings,
    RecordAccumulator,
    estimate_record_size,
)
from odradek.client.producer.buffer_pool import BufferPool
from odradek.errors import KafkaTimeoutError, ProducerClosedError
from odradek.records.batch import CompressionType
from odradek.records.codec import decode_batch
from odradek.records.record_format import encode_record

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
U0 = TopicPartition("u", 0)
LEADERS = {T0: 1, T1: 2, U0: 1}
VALUE = b"v" * 100


def leader_of(tp: TopicPartition) -> int | None:
    return LEADERS.get(tp)


def make(
    *,
    batch_size: int = 1024,
    linger_ms: int = 10,
    memory: int = 1 << 20,
    compression: CompressionType = CompressionType.NONE,
) -> tuple[RecordAccumulator, MockClock, BufferPool]:
    clock = MockClock()
    pool = BufferPool(memory, clock)
    settings = AccumulatorSettings(
        batch_size=batch_size,
        linger_ms=linger_ms,
        compression=compression,
        delivery_timeout_ms=1_000,
        retry_backoff_ms=100,
        retry_backoff_max_ms=300,
    )
    return RecordAccumulator(settings, pool, clock), clock, pool


def append(acc: RecordAccumulator, tp: TopicPartition = T0, value: bytes = VALUE, **kw: object):
    return acc.append(tp, 1_000, None, value, (), None, 0, **kw)  # type: ignore[arg-type]


def test_records_fill_a_batch_then_open_the_next() -> None:
    acc, _, _ = make(batch_size=61 + 3 * 110)
    results = [append(acc) for _ in range(4)]
    assert [flags for _, flags in results] == [NEW_BATCH, 0, 0, NEW_BATCH | BATCH_FULL]
    assert acc.statistics()["queued_batches"] == 2
    assert acc.statistics()["queued_records"] == 4


def test_linger_then_ready() -> None:
    acc, clock, _ = make(linger_ms=10)
    append(acc)
    ready = acc.ready(leader_of, clock.monotonic_ms())
    assert ready.ready_nodes == set()
    assert ready.next_ready_check_delay_ms == 10
    clock.advance(4)
    assert acc.ready(leader_of, clock.monotonic_ms()).next_ready_check_delay_ms == 6
    clock.advance(6)
    assert acc.ready(leader_of, clock.monotonic_ms()).ready_nodes == {1}


def test_a_full_batch_is_ready_at_once() -> None:
    acc, clock, _ = make(batch_size=61 + 2 * 110, linger_ms=10_000)
    for _ in range(3):
        append(acc, T1)
    assert acc.ready(leader_of, clock.monotonic_ms()).ready_nodes == {2}


def test_flush_and_close_make_everything_ready() -> None:
    acc, clock, _ = make(linger_ms=10_000)
    append(acc, T0)
    append(acc, T1)
    acc.begin_flush()
    assert acc.ready(leader_of, clock.monotonic_ms()).ready_nodes == {1, 2}
    acc.end_flush()
    assert acc.ready(leader_of, clock.monotonic_ms()).ready_nodes == set()
    acc.close()
    assert acc.ready(leader_of, clock.monotonic_ms()).ready_nodes == {1, 2}
    with pytest.raises(ProducerClosedError):
        append(acc)


def test_unknown_leaders_are_reported() -> None:
    acc, clock, _ = make(linger_ms=0)
    append(acc, TopicPartition("nowhere", 0))
    append(acc, T0)
    ready = acc.ready(leader_of, clock.monotonic_ms())
    assert ready.ready_nodes == {1}
    assert ready.unknown_leader_topics == {"nowhere"}


def test_drain_takes_every_partition_of_the_node_within_max_request_size() -> None:
    acc, clock, _ = make(linger_ms=0)
    append(acc, T0)
    append(acc, U0)  # same leader (1), not necessarily ready on its own: goes along
    append(acc, T1)
    drained = acc.drain(leader_of, {1}, 1 << 20, clock.monotonic_ms())
    assert set(drained) == {1}
    assert {b.tp for b in drained[1]} == {T0, U0}
    for batch in drained[1]:
        assert not batch.is_open
        assert decode_batch(batch.records).records[0].value == VALUE
    assert acc.statistics()["queued_batches"] == 1  # T1's
    # max.request.size: the first batch always goes, the next one must fit.
    append(acc, T0)
    append(acc, U0)
    one = acc.drain(leader_of, {1}, 10, clock.monotonic_ms())
    assert len(one[1]) == 1
    other = acc.drain(leader_of, {1}, 10, clock.monotonic_ms())
    assert {one[1][0].tp, other[1][0].tp} == {T0, U0}


def test_only_the_first_batch_of_a_partition_is_drained() -> None:
    acc, clock, _ = make(batch_size=61 + 110, linger_ms=0)
    first, _ = append(acc)
    second, _ = append(acc)
    drained = acc.drain(leader_of, {1}, 1 << 20, clock.monotonic_ms())
    assert len(drained[1]) == 1
    assert drained[1][0].result is first._result  # type: ignore[union-attr]
    again = acc.drain(leader_of, {1}, 1 << 20, clock.monotonic_ms())
    assert again[1][0].result is second._result  # type: ignore[union-attr]


def test_retry_goes_first_after_its_backoff() -> None:
    acc, clock, _ = make(batch_size=61 + 110, linger_ms=0)
    append(acc)
    [batch] = acc.drain(leader_of, {1}, 1 << 20, clock.monotonic_ms())[1]
    append(acc)  # a later batch of the same partition
    acc.reenqueue(batch, clock.monotonic_ms())
    ready = acc.ready(leader_of, clock.monotonic_ms())
    assert ready.ready_nodes == set(), "backing off"
    assert ready.next_ready_check_delay_ms == 100
    assert acc.drain(leader_of, {1}, 1 << 20, clock.monotonic_ms()) == {}
    clock.advance(100)
    assert acc.ready(leader_of, clock.monotonic_ms()).ready_nodes == {1}
    assert acc.drain(leader_of, {1}, 1 << 20, clock.monotonic_ms())[1] == [batch]
    # The backoff doubles per attempt, up to retry.backoff.max.ms.
    acc.reenqueue(batch, clock.monotonic_ms())
    assert acc.ready(leader_of, clock.monotonic_ms()).next_ready_check_delay_ms == 200
    acc.drain(leader_of, {1}, 1 << 20, clock.monotonic_ms() + 200)
    acc.reenqueue(batch, clock.monotonic_ms())
    assert acc.ready(leader_of, clock.monotonic_ms()).next_ready_check_delay_ms == 300


def test_muted_partitions_are_skipped() -> None:
    acc, clock, _ = make(linger_ms=0)
    append(acc, T0)
    acc.mute(T0)
    assert acc.ready(leader_of, clock.monotonic_ms()).ready_nodes == set()
    assert acc.drain(leader_of, {1}, 1 << 20, clock.monotonic_ms()) == {}
    acc.unmute(T0)
    assert acc.ready(leader_of, clock.monotonic_ms()).ready_nodes == {1}


def test_expired_batches_leave_the_queue() -> None:
    acc, clock, _ = make()
    append(acc, T0)
    clock.advance(500)
    append(acc, T1)
    assert acc.next_expiry_delay_ms(clock.monotonic_ms()) == 500
    clock.advance(500)
    expired = acc.expired_batches(clock.monotonic_ms())
    assert [b.tp for b in expired] == [T0]
    assert acc.statistics()["queued_batches"] == 1


def test_memory_blocks_then_times_out() -> None:
    acc, _, pool = make(batch_size=1000, memory=2000)
    append(acc, T0)
    append(acc, T1)
    assert pool.available_bytes == 0
    with pytest.raises(KafkaTimeoutError):
        append(acc, U0)
    # The failed attempt gave nothing away and took nothing.
    assert pool.available_bytes == 0
    # Appending to an existing batch needs no memory.
    assert append(acc, T0)[0] is not None


def test_memory_freed_by_a_completed_batch_unblocks_send() -> None:
    acc, clock, pool = make(batch_size=1000, memory=1000, linger_ms=0)
    append(acc, T0)
    done = threading.Event()

    def blocked() -> None:
        acc.append(U0, 1, None, b"x", (), None, 60_000)
        done.set()

    thread = threading.Thread(target=blocked, daemon=True)
    thread.start()
    [batch] = acc.drain(leader_of, {1}, 1 << 20, clock.monotonic_ms())[1]
    assert not done.wait(0.02)
    batch.complete(0, -1, None)
    acc.deallocate(batch)
    acc.deallocate(batch)  # once only
    assert done.wait(5)
    thread.join(5)
    assert pool.available_bytes == 0


def test_a_record_larger_than_batch_size_reserves_its_size() -> None:
    acc, _, pool = make(batch_size=100, memory=10_000)
    big = b"x" * 2000
    append(acc, T0, big)
    assert pool.available_bytes == 10_000 - estimate_record_size(None, big)


def test_abort_on_new_batch() -> None:
    acc, _, _ = make()
    assert append(acc, abort_on_new_batch=True) == (None, 0)
    assert append(acc)[1] == NEW_BATCH
    assert append(acc, abort_on_new_batch=True)[0] is not None


def test_compressed_batches() -> None:
    acc, clock, _ = make(linger_ms=0, compression=CompressionType.ZSTD)
    for _ in range(5):
        append(acc)
    [batch] = acc.drain(leader_of, {1}, 1 << 20, clock.monotonic_ms())[1]
    decoded = decode_batch(batch.records)
    assert decoded.header.compression is CompressionType.ZSTD
    assert [r.value for r in decoded.records] == [VALUE] * 5


def test_incomplete_and_abort_undrained() -> None:
    acc, clock, _ = make(linger_ms=0)
    append(acc, T0)
    append(acc, T1)
    assert acc.has_incomplete()
    drained = acc.drain(leader_of, {1}, 1 << 20, clock.monotonic_ms())[1]
    queued = acc.abort_undrained()
    assert [b.tp for b in queued] == [T1]
    assert not acc.has_undrained()
    assert len(acc.incomplete_batches()) == 2
    for batch in (*drained, *queued):
        batch.complete(-1, -1, RuntimeError("x"))
        acc.deallocate(batch)
    assert not acc.has_incomplete()
    acc.await_completion(drained, 0)


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP, CompressionType.LZ4])
def test_an_encoded_batch_queues_after_the_open_one_and_is_sent_whole(
    codec: CompressionType,
) -> None:
    acc, clock, pool = make(compression=codec)
    append(acc)  # an open batch, lingering
    records = b"".join(
        encode_record(i, i, None, b"r%d" % i, ()) for i in range(3)
    )  # the records section of three records
    encoded = acc.append_encoded(T0, records, 3, 5_000, 5_002, 0)
    assert encoded.full
    assert not encoded.is_open
    assert encoded.record_count == 3
    assert acc.ready(leader_of, clock.monotonic_ms()).ready_nodes == {1}  # no linger wait
    later, _ = append(acc)  # a record sent after the batch does not join the earlier one
    assert later is not None
    assert later.batch is not encoded.result
    drained = acc.drain(leader_of, {1}, 1 << 20, clock.monotonic_ms())[1]
    assert drained[0].record_count == 1  # the open batch first: partition order kept
    drained = acc.drain(leader_of, {1}, 1 << 20, clock.monotonic_ms())[1]
    assert drained == [encoded]
    decoded = decode_batch(encoded.records)
    assert decoded.header.compression == codec
    assert [(r.offset, r.timestamp, r.value) for r in decoded.records] == [
        (0, 5_000, b"r0"),
        (1, 5_001, b"r1"),
        (2, 5_002, b"r2"),
    ]
    assert decoded.header.max_timestamp == 5_002
    # Two open batches' batch.size and the encoded batch's size, held until completed.
    assert pool.available_bytes == (1 << 20) - 2 * 1024 - (61 + len(records))
