"""``producer.sender`` without a broker: a fake network records Produce requests and the test
answers them, on a mock clock. One request per node, retries with backoff and a metadata
refresh, exhausted retries, non-retriable errors, network failures, muting with one request in
flight, in-flight expiry (and the late answer ignored), acks=0, a response that forgets a
partition, forced close."""

from __future__ import annotations

from typing import Any

import pytest

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.client.cluster import BrokerMetadata, Cluster, PartitionMetadata, TopicMetadata
from odradek.client.connection import RequestFuture
from odradek.client.producer.accumulator import AccumulatorSettings, RecordAccumulator
from odradek.client.producer.buffer_pool import BufferPool
from odradek.client.producer.config import ProducerSettings
from odradek.client.producer.future import RecordFuture
from odradek.client.producer.sender import Sender
from odradek.errors import (
    ErrorCode,
    KafkaError,
    KafkaTimeoutError,
    MessageTooLargeError,
    ProducerClosedError,
)
from odradek.protocol.api_keys import ApiKey
from odradek.records.batch import CompressionType
from odradek.records.codec import decode_batch

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
LEADERS = {0: 1, 1: 1, 2: 2}  # partition -> node


class FakeNetwork:
    """Records what the sender submits; ``busy`` nodes refuse new requests."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, dict[str, Any], bool, RequestFuture]] = []
        #: InitProducerId requests (an idempotent producer's): (node, fields, future).
        self.init_requests: list[tuple[int, dict[str, Any], RequestFuture]] = []
        self.busy: set[int] = set()
        self.polls: list[int] = []
        self.closed = False

    def ready(self, node: int) -> bool:
        return node not in self.busy

    def connection_delay_ms(self, node: int) -> int:
        return 0

    def send(
        self,
        node: int,
        api_key: int,
        fields: Any,
        *,
        versions: Any,
        expect_response: bool = True,
        timeout_ms: int,
    ) -> RequestFuture:
        future = RequestFuture(node, api_key)
        if api_key == ApiKey.INIT_PRODUCER_ID:
            self.init_requests.append((node, fields, future))
            return future
        assert api_key == ApiKey.PRODUCE
        self.sent.append((node, fields, expect_response, future))
        return future

    def least_loaded_node(self) -> int | None:
        return 1

    def poll(self, timeout_ms: int) -> int:
        self.polls.append(timeout_ms)
        return 0

    def in_flight_count(self, node: int | None = None) -> int:
        return sum(not f.done() for *_, f in self.sent)

    def wakeup(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


class FakeMetadata:
    def __init__(self) -> None:
        partitions = tuple(PartitionMetadata("t", p, leader=n) for p, n in LEADERS.items())
        self.cluster = Cluster.build(
            [BrokerMetadata(1, "h1", 1), BrokerMetadata(2, "h2", 2)],
            [TopicMetadata("t", 0, False, partitions)],
        )
        self.updates = 0

    def request_update(self) -> int:
        self.updates += 1
        return 0

    def add_topics(self, topics: Any) -> bool:
        return False


def settings(**overrides: Any) -> ProducerSettings:
    values: dict[str, Any] = {
        "acks": 1,
        "batch_size": 16_384,
        "linger_ms": 0,
        "buffer_memory": 1 << 20,
        "max_block_ms": 0,
        "max_request_size": 1 << 20,
        "compression": CompressionType.NONE,
        "retries": 5,
        "retry_backoff_ms": 100,
        "retry_backoff_max_ms": 1000,
        "delivery_timeout_ms": 10_000,
        "request_timeout_ms": 1000,
        "max_in_flight": 5,
        "sync": False,
        "client_id": "test",
    }
    values.update(overrides)
    return ProducerSettings(**values)


class Harness:
    def __init__(self, **overrides: Any) -> None:
        self.settings = settings(**overrides)
        self.clock = MockClock()
        self.pool = BufferPool(self.settings.buffer_memory, self.clock)
        self.accumulator = RecordAccumulator(
            AccumulatorSettings(
                batch_size=self.settings.batch_size,
                linger_ms=self.settings.linger_ms,
                delivery_timeout_ms=self.settings.delivery_timeout_ms,
                retry_backoff_ms=self.settings.retry_backoff_ms,
                retry_backoff_max_ms=self.settings.retry_backoff_max_ms,
            ),
            self.pool,
            self.clock,
        )
        self.network = FakeNetwork()
        self.metadata = FakeMetadata()
        self.sender = Sender(
            self.network,  # type: ignore[arg-type]
            self.metadata,  # type: ignore[arg-type]
            self.accumulator,
            self.settings,
            self.clock,
        )

    def append(self, tp: TopicPartition, value: bytes = b"v") -> RecordFuture:
        future, _ = self.accumulator.append(tp, 1000, None, value, (), None, 0)
        assert future is not None
        return future

    def requests(self) -> list[tuple[int, dict[tuple[str, int], bytes]]]:
        """Each sent request as (node, {(topic, partition): records})."""
        return [
            (
                node,
                {
                    (topic["name"], p["index"]): p["records"]
                    for topic in fields["topic_data"]
                    for p in topic["partition_data"]
                },
            )
            for node, fields, _, _ in self.network.sent
        ]

    def answer(
        self,
        index: int,
        errors: dict[TopicPartition, int] | None = None,
        base_offset: int = 0,
        skip: tuple[TopicPartition, ...] = (),
    ) -> None:
        _, fields, _, future = self.network.sent[index]
        errors = errors or {}
        responses = []
        for topic in fields["topic_data"]:
            partitions = []
            for p in topic["partition_data"]:
                tp = TopicPartition(topic["name"], p["index"])
                if tp in skip:
                    continue
                code = errors.get(tp, 0)
                partitions.append(
                    {
                        "index": p["index"],
                        "error_code": code,
                        "base_offset": -1 if code else base_offset,
                        "log_append_time": None,
                    }
                )
            responses.append({"name": topic["name"], "partition_responses": partitions})
        future.set_result({"responses": responses, "throttle_time": 0})


def test_one_request_per_node_and_success() -> None:
    h = Harness()
    f0, f1, f2 = h.append(T0, b"a"), h.append(T1, b"b"), h.append(T2, b"c")
    h.sender.run_once()
    requests = dict(h.requests())
    assert set(requests) == {1, 2}
    assert set(requests[1]) == {("t", 0), ("t", 1)}
    assert decode_batch(requests[2][("t", 2)]).records[0].value == b"c"
    _, fields, expect_response, _ = h.network.sent[0]
    assert (fields["acks"], fields["timeout"], expect_response) == (1, 1000, True)
    for index in range(2):
        h.answer(index, base_offset=7)
    assert [f.result(0).offset for f in (f0, f1, f2)] == [7, 7, 7]
    assert h.pool.available_bytes == h.settings.buffer_memory
    assert not h.accumulator.has_incomplete()


def test_retriable_error_retries_after_backoff_with_a_metadata_refresh() -> None:
    h = Harness()
    future = h.append(T0)
    h.sender.run_once()
    h.answer(0, {T0: ErrorCode.NOT_LEADER_OR_FOLLOWER})
    assert not future.done()
    assert h.metadata.updates >= 1
    h.sender.run_once()
    assert len(h.network.sent) == 1, "backing off"
    assert h.network.polls[-1] == 100, "polls until the backoff ends"
    h.clock.advance(100)
    h.sender.run_once()
    assert len(h.network.sent) == 2
    h.answer(1, base_offset=3)
    assert future.result(0).offset == 3
    assert h.sender.statistics()["retries"] == 1


def test_retries_run_out() -> None:
    h = Harness(retries=1)
    future = h.append(T0)
    h.sender.run_once()
    h.answer(0, {T0: ErrorCode.NOT_ENOUGH_REPLICAS})
    h.clock.advance(100)
    h.sender.run_once()
    h.answer(1, {T0: ErrorCode.NOT_ENOUGH_REPLICAS})
    error = future.exception(0)
    assert isinstance(error, KafkaError)
    assert error.error_code is ErrorCode.NOT_ENOUGH_REPLICAS
    assert "t-0 from broker 1" in str(error)


def test_non_retriable_error_fails_at_once() -> None:
    h = Harness()
    future = h.append(T0)
    h.sender.run_once()
    h.answer(0, {T0: ErrorCode.MESSAGE_TOO_LARGE})
    assert isinstance(future.exception(0), MessageTooLargeError)
    h.clock.advance(10_000)
    h.sender.run_once()
    assert len(h.network.sent) == 1
    assert h.pool.available_bytes == h.settings.buffer_memory


def test_network_failure_is_retried() -> None:
    h = Harness()
    future = h.append(T2)
    h.sender.run_once()
    h.network.sent[0][3].set_exception(
        KafkaError("connection lost", code=ErrorCode.NETWORK_EXCEPTION)
    )
    assert not future.done()
    h.clock.advance(100)
    h.sender.run_once()
    h.answer(1, base_offset=1)
    assert future.result(0).offset == 1


def test_one_in_flight_mutes_the_partition() -> None:
    h = Harness(max_in_flight=1)
    first = h.append(T0, b"first")
    h.sender.run_once()
    second = h.append(T0, b"second")  # a new batch: the first one is in flight
    h.sender.run_once()
    assert len(h.network.sent) == 1, "muted until the first batch is answered"
    h.answer(0, {T0: ErrorCode.NOT_LEADER_OR_FOLLOWER})
    h.clock.advance(100)
    h.sender.run_once()
    # The retried first batch goes before the second one.
    [(_, retried)] = h.requests()[1:]
    assert decode_batch(retried[("t", 0)]).records[0].value == b"first"
    h.answer(1, base_offset=0)
    h.sender.run_once()
    h.answer(2, base_offset=1)
    assert (first.result(0).offset, second.result(0).offset) == (0, 1)


def test_in_flight_batches_expire_and_late_answers_are_ignored() -> None:
    h = Harness(max_in_flight=1)
    future = h.append(T0)
    h.sender.run_once()
    h.clock.advance(10_000)
    h.sender.run_once()
    error = future.exception(0)
    assert isinstance(error, KafkaTimeoutError)
    assert "delivery.timeout.ms=10000" in str(error)
    assert h.pool.available_bytes == h.settings.buffer_memory
    later = h.append(T0)
    h.sender.run_once()
    assert len(h.network.sent) == 1, "still muted: the request is unanswered"
    h.answer(0, base_offset=5)  # the late answer
    assert isinstance(future.exception(0), KafkaTimeoutError)
    h.sender.run_once()
    assert len(h.network.sent) == 2
    h.answer(1, base_offset=6)
    assert later.result(0).offset == 6
    assert h.sender.statistics()["batches_expired"] == 1


def test_queued_batches_expire() -> None:
    h = Harness()
    h.network.busy.add(1)
    future = h.append(T0)
    h.sender.run_once()
    assert not h.network.sent
    h.clock.advance(10_000)
    h.sender.run_once()
    assert isinstance(future.exception(0), KafkaTimeoutError)


def test_acks_zero() -> None:
    h = Harness(acks=0)
    future = h.append(T0)
    h.sender.run_once()
    _, fields, expect_response, request = h.network.sent[0]
    assert (fields["acks"], expect_response) == (0, False)
    request.set_result({})
    assert future.result(0).offset == -1


def test_a_partition_missing_from_the_response_fails() -> None:
    h = Harness()
    f0, f1 = h.append(T0), h.append(T1)
    h.sender.run_once()
    h.answer(0, base_offset=2, skip=(T1,))
    assert f0.result(0).offset == 2
    error = f1.exception(0)
    assert isinstance(error, KafkaError)
    assert "lacks t-1" in str(error)


def test_force_close_fails_everything_incomplete() -> None:
    h = Harness()
    h.network.busy.add(1)
    queued = h.append(T0)
    in_flight = h.append(T2)
    h.sender.run_once()
    error = ProducerClosedError("closed")
    h.sender.force_close(error)
    h.sender.run()  # returns at once: not running any more
    assert queued.exception(0) is error
    assert in_flight.exception(0) is error
    assert h.network.closed
    assert h.sender.stopped


@pytest.mark.parametrize("linger_ms", [0, 50])
def test_graceful_close_sends_what_is_queued(linger_ms: int) -> None:
    h = Harness(linger_ms=linger_ms)
    future = h.append(T0)
    h.sender.initiate_close()
    original_poll = h.network.poll

    def poll_and_answer(timeout_ms: int) -> int:
        for index, (*_, request) in enumerate(h.network.sent):
            if not request.done():
                h.answer(index, base_offset=9)
        return original_poll(timeout_ms)

    h.network.poll = poll_and_answer  # type: ignore[method-assign]
    h.sender.run()
    assert future.result(0).offset == 9
    assert h.network.closed
