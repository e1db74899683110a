"""``producer.sequences`` (pure): stamped batches carry the producer id, epoch and base
sequence (with the transactional bit only for a transactional producer), the CRC still checks
out and the records are untouched; each partition's sequences follow on from batch to batch and
restart at 0 under a new epoch; the drain rules keep retries in sequence order and new batches
behind an older epoch's; a broken run needs a new epoch."""

from __future__ import annotations

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.client.config import PRODUCER, ClientConfig
from odradek.client.producer.batch import ProducerBatch
from odradek.client.producer.sequences import ProducerSequences, stamp_batch
from odradek.client.producer.transactions import TransactionManager
from odradek.records.batch import CompressionType, validate_batch
from odradek.records.codec import BatchBuilder, SimpleRecord, build_batch, decode_batch

A, B = TopicPartition("a", 0), TopicPartition("b", 0)


def plain(count: int) -> bytes:
    return build_batch([SimpleRecord(1, b"k", b"v%d" % i) for i in range(count)])


def closed_batch(tp: TopicPartition, count: int) -> ProducerBatch:
    batch = ProducerBatch(
        tp, BatchBuilder(batch_size_bytes=16_384, compression=CompressionType.NONE), 0, 0
    )
    for i in range(count):
        assert batch.try_append(1, None, b"r%d" % i, (), None) is not None
    batch.close()
    return batch


def test_a_stamped_batch_is_a_valid_transactional_batch() -> None:
    stamped = stamp_batch(plain(3), 77, 4, 1_000, transactional=True)
    header = validate_batch(stamped)  # the CRC was recomputed
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 4, 1_000)
    assert header.is_transactional
    assert not header.is_control
    assert [r.value for r in decode_batch(stamped).records] == [b"v0", b"v1", b"v2"]


def test_an_idempotent_batch_is_not_transactional() -> None:
    header = validate_batch(stamp_batch(plain(2), 5, 0, 7, transactional=False))
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (5, 0, 7)
    assert not header.is_transactional


def test_sequences_follow_on_per_partition_and_restart_under_a_new_epoch() -> None:
    sequences = ProducerSequences()
    assert sequences.needs_producer_id
    assert not sequences.has_producer_id
    sequences.set_producer(9, 2)
    stamped = []
    for tp, n in ((A, 3), (B, 2), (A, 4), (A, 1), (B, 1)):
        batch = closed_batch(tp, n)
        sequences.stamp(batch)
        header = validate_batch(batch.records)
        assert (header.producer_id, header.producer_epoch) == (9, 2)
        assert not header.is_transactional
        assert [r.value for r in decode_batch(batch.records).records] == [
            b"r%d" % i for i in range(n)
        ]
        stamped.append(batch)
    assert [b.base_sequence for b in stamped] == [0, 0, 3, 7, 2]
    assert [b.stamp_order for b in stamped] == [1, 2, 3, 4, 5]
    for batch in stamped:
        sequences.completed(batch)
    sequences.set_producer(9, 3)
    again = closed_batch(A, 2)
    sequences.stamp(again)
    assert (again.producer_epoch, again.base_sequence) == (3, 0)
    assert sequences.statistics()["producer_id_changes"] == 1


def test_drain_rules() -> None:
    sequences = ProducerSequences()
    first, second = closed_batch(A, 1), closed_batch(A, 1)
    assert not sequences.may_drain(first), "no producer id yet"
    sequences.set_producer(1, 0)
    assert sequences.may_drain(first)
    sequences.stamp(first)
    sequences.stamp(second)
    # Both retried: only the oldest incomplete one may go.
    assert sequences.may_drain(first)
    assert not sequences.may_drain(second)
    assert sequences.is_first_incomplete(first)
    assert not sequences.is_first_incomplete(second)
    sequences.completed(first)
    assert sequences.may_drain(second)
    # A new epoch: a new batch waits until the old epoch's batches are done.
    sequences.set_producer(1, 1)
    fresh = closed_batch(A, 1)
    assert not sequences.may_drain(fresh)
    assert sequences.may_drain(closed_batch(B, 1)), "other partitions go on"
    sequences.completed(second)
    assert sequences.may_drain(fresh)


def test_a_broken_run_asks_for_a_new_epoch_once() -> None:
    sequences = ProducerSequences()
    sequences.set_producer(1, 0)
    first, second = closed_batch(A, 1), closed_batch(A, 1)
    sequences.stamp(first)
    sequences.stamp(second)
    assert sequences.break_run(first)
    assert sequences.needs_producer_id
    assert sequences.is_broken(second)
    assert not sequences.break_run(second), "already broken"
    sequences.set_producer(1, 1)
    later = closed_batch(A, 1)
    sequences.stamp(later)
    assert not sequences.is_broken(later)


def test_the_transaction_manager_stamps_transactional_batches() -> None:
    config = ClientConfig(
        {"bootstrap.servers": "127.0.0.1:1", "transactional.id": "t"}, client_type=PRODUCER
    )
    manager = TransactionManager(config, MockClock())
    try:
        sequences = manager.sequences
        assert not sequences.needs_producer_id, "init_transactions gives the id"
        sequences.set_producer(9, 2)
        batch = closed_batch(A, 2)
        sequences.stamp(batch)
        header = validate_batch(batch.records)
        assert header.is_transactional
        assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 2, 0)
    finally:
        manager.close()
