"""``producer.sender`` with idempotence, without a broker (the fake network and mock clock of
``test_sender``): InitProducerId before the first batch, stamped batches, several requests in
flight per partition whose retries keep sequence order, DUPLICATE_SEQUENCE_NUMBER as success,
OUT_OF_ORDER_SEQUENCE_NUMBER behind an unacknowledged batch retried, a real sequence gap and
UNKNOWN_PRODUCER_ID failed to the application (with the partition's later batches of that
epoch) and followed by InitProducerId naming the current id and epoch (KIP-360), and an
InitProducerId refusal failing the queued records."""

from __future__ import annotations

from typing import Any

from tests.client.producer.test_sender import T0, T1, Harness

from odradek._types import TopicPartition
from odradek.client.producer.future import RecordFuture
from odradek.client.producer.sequences import ProducerSequences
from odradek.errors import ErrorCode, KafkaError
from odradek.records.batch import validate_batch

ACKS_ALL = -1


class IdempotentHarness(Harness):
    def __init__(self, **overrides: Any) -> None:
        super().__init__(acks=ACKS_ALL, idempotent=True, **overrides)
        self.sequences = ProducerSequences()
        self.sender.sequences = self.sequences
        self.accumulator.drain_gate = self.sequences.may_drain

    def grant(self, index: int, producer_id: int, epoch: int = 0, code: int = 0) -> None:
        _, _, future = self.network.init_requests[index]
        future.set_result(
            {
                "throttle_time": 0,
                "error_code": code,
                "producer_id": producer_id if not code else -1,
                "producer_epoch": epoch if not code else -1,
            }
        )

    def stamp_of(self, index: int, tp: TopicPartition = T0) -> tuple[int, int, int]:
        records = self.requests()[index][1][(tp.topic, tp.partition)]
        header = validate_batch(records)
        return header.producer_id, header.producer_epoch, header.base_sequence

    def started(self, producer_id: int = 42) -> IdempotentHarness:
        self.sender.run_once()
        self.grant(0, producer_id)
        return self


def failure(future: RecordFuture) -> KafkaError:
    error = future.exception(0)
    assert isinstance(error, KafkaError)
    return error


def test_a_producer_id_before_the_first_batch() -> None:
    h = IdempotentHarness()
    future = h.append(T0)
    h.sender.run_once()
    assert h.network.sent == [], "no Produce before the producer id"
    [(_node, fields, _)] = h.network.init_requests
    assert fields["transactional_id"] is None
    assert (fields["producer_id"], fields["producer_epoch"]) == (-1, -1)
    h.sender.run_once()
    assert len(h.network.init_requests) == 1, "one request at a time"
    h.grant(0, 42)
    h.sender.run_once()
    assert h.stamp_of(0) == (42, 0, 0)
    assert not validate_batch(h.requests()[0][1][("t", 0)]).is_transactional
    h.answer(0, base_offset=3)
    assert future.result(0).offset == 3
    h.append(T0)
    h.append(T1)
    h.sender.run_once()
    assert h.stamp_of(1, T0) == (42, 0, 1)
    assert h.stamp_of(1, T1) == (42, 0, 0)


def test_retries_keep_sequence_order_with_several_requests_in_flight() -> None:
    h = IdempotentHarness().started()
    first = h.append(T0, b"first")
    h.sender.run_once()
    second = h.append(T0, b"second")
    h.sender.run_once()
    assert [h.stamp_of(i)[2] for i in (0, 1)] == [0, 1], "two requests in flight"
    # The first is refused, so the second meets a gap: behind an unacknowledged batch that
    # is retried, not failed. The retries go back into the queue in sequence order.
    h.answer(0, {T0: ErrorCode.NOT_LEADER_OR_FOLLOWER})
    h.answer(1, {T0: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER})
    assert not first.done()
    assert not second.done()
    h.clock.advance(100)
    h.sender.run_once()
    h.sender.run_once()
    assert len(h.network.sent) == 3, "the second waits for the first"
    assert h.stamp_of(2)[2] == 0
    h.answer(2, base_offset=10)
    h.clock.advance(100)
    h.sender.run_once()
    assert h.stamp_of(3)[2] == 1, "the same sequence again"
    h.answer(3, base_offset=11)
    assert (first.result(0).offset, second.result(0).offset) == (10, 11)
    assert h.network.init_requests[1:] == [], "no new epoch needed"


def test_a_duplicate_sequence_is_a_success() -> None:
    h = IdempotentHarness().started()
    future = h.append(T0)
    h.sender.run_once()
    h.answer(0, {T0: ErrorCode.DUPLICATE_SEQUENCE_NUMBER})
    assert future.result(0).offset == -1
    assert h.sender.statistics()["duplicates"] == 1


def test_a_real_gap_fails_the_partitions_epoch_and_bumps_it() -> None:
    h = IdempotentHarness().started()
    first = h.append(T0, b"first")
    h.sender.run_once()
    second = h.append(T0, b"second")
    h.sender.run_once()
    other = h.append(T1)
    h.sender.run_once()
    h.answer(1, {T0: ErrorCode.NOT_LEADER_OR_FOLLOWER})  # the second waits for a retry
    h.answer(0, {T0: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER})  # the oldest: a real gap
    assert failure(first).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    error = failure(second)
    assert error.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert "not resent" in str(error)
    h.answer(2, base_offset=5)
    assert other.result(0).offset == 5, "other partitions are unaffected"
    third = h.append(T0, b"third")
    h.clock.advance(100)
    h.sender.run_once()
    assert len(h.network.sent) == 3, "no batch before the new epoch"
    [_, (_, bump, _)] = h.network.init_requests
    assert (bump["producer_id"], bump["producer_epoch"]) == (42, 0)
    h.grant(1, 42, epoch=1)
    h.sender.run_once()
    assert h.stamp_of(3) == (42, 1, 0)
    h.answer(3, base_offset=6)
    assert third.result(0).offset == 6
    h.append(T1)
    h.sender.run_once()
    assert h.stamp_of(4, T1) == (42, 1, 0), "every partition starts over under the new epoch"


def test_an_unknown_producer_id_fails_the_batch_and_gets_a_new_id() -> None:
    h = IdempotentHarness().started()
    future = h.append(T0)
    h.sender.run_once()
    h.answer(0, {T0: ErrorCode.UNKNOWN_PRODUCER_ID})
    assert failure(future).error_code == ErrorCode.UNKNOWN_PRODUCER_ID
    h.append(T0)
    h.sender.run_once()
    h.grant(1, 77)  # a broker without epoch bumps for plain producers: a new id
    h.sender.run_once()
    assert h.stamp_of(1) == (77, 0, 0)


def test_an_in_flight_batch_of_an_old_epoch_goes_first() -> None:
    h = IdempotentHarness().started()
    h.append(T0, b"first")
    h.sender.run_once()
    h.append(T1)
    h.sender.run_once()
    h.answer(1, {T1: ErrorCode.UNKNOWN_PRODUCER_ID})  # T1's epoch breaks
    h.sender.run_once()
    h.grant(1, 42, epoch=1)
    h.append(T0, b"second")
    h.sender.run_once()
    assert len(h.network.sent) == 2, "T0's new-epoch batch waits for its old one"
    h.answer(0, base_offset=1)
    h.sender.run_once()
    assert h.stamp_of(2) == (42, 1, 0)


def test_a_refused_producer_id_fails_the_queued_records() -> None:
    h = IdempotentHarness()
    future = h.append(T0)
    h.sender.run_once()
    h.grant(0, -1, code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    assert failure(future).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    h.sender.run_once()
    assert len(h.network.init_requests) == 1, "retried after retry.backoff.ms"
    h.clock.advance(100)
    h.sender.run_once()
    assert len(h.network.init_requests) == 2
