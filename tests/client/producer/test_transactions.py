"""A transactional producer's batch stamping (pure): the producer id, epoch and base sequence
land in the header with the transactional bit, the CRC still checks out, the records are
untouched, and each partition's sequences follow on from batch to batch."""

from __future__ import annotations

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.client.config import PRODUCER, ClientConfig
from odradek.client.producer.transactions import TransactionManager, stamp_batch
from odradek.records.batch import validate_batch
from odradek.records.codec import SimpleRecord, build_batch, decode_batch


def plain(count: int) -> bytes:
    return build_batch([SimpleRecord(1, b"k", b"v%d" % i) for i in range(count)])


def test_a_stamped_batch_is_a_valid_transactional_batch() -> None:
    stamped = stamp_batch(plain(3), 77, 4, 1_000)
    header = validate_batch(stamped)  # the CRC was recomputed
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 4, 1_000)
    assert header.is_transactional
    assert not header.is_control
    assert [r.value for r in decode_batch(stamped).records] == [b"v0", b"v1", b"v2"]


def test_sequences_follow_on_per_partition() -> None:
    config = ClientConfig(
        {"bootstrap.servers": "127.0.0.1:1", "transactional.id": "t"}, client_type=PRODUCER
    )
    manager = TransactionManager(config, MockClock())
    manager.producer_id, manager.epoch = 9, 2
    a, b = TopicPartition("a", 0), TopicPartition("b", 0)
    try:
        sequences = [
            validate_batch(manager.stamp(tp, plain(n), n)).base_sequence
            for tp, n in ((a, 3), (b, 2), (a, 4), (a, 1), (b, 1))
        ]
    finally:
        manager.close()
    assert sequences == [0, 0, 3, 7, 2]
