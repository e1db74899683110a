"""``producer.sender`` with Produce v8+ per-record errors (KIP-467), without a broker: the
records the answer names fail with INVALID_RECORD and their message, the batch's other records
with ``RecordNotAppendedError`` and are not retried (Java's producer); one named record takes
the partition's own error; a retriable answer retries the whole batch. Then the same against
a live embedded broker: keyed and keyless records in one batch to a compacted topic."""

from __future__ import annotations

from typing import Any

from odradek import Broker
from odradek.client import AdminClient, NewTopic
from odradek.client.producer import RecordMetadata
from odradek.errors import (
    ErrorCode,
    InvalidRecordError,
    InvalidTimestampError,
    RecordNotAppendedError,
)

from .conftest import TIMEOUT_S, read_back
from .test_sender import T0, Harness


def answer_with_record_errors(
    h: Harness,
    index: int,
    code: int,
    record_errors: list[tuple[int, str | None]],
    message: str | None = "the partition's message",
) -> None:
    _, fields, _, future = h.network.sent[index]
    [topic] = fields["topic_data"]
    [partition] = topic["partition_data"]
    future.set_result(
        {
            "responses": [
                {
                    "name": topic["name"],
                    "partition_responses": [
                        {
                            "index": partition["index"],
                            "error_code": code,
                            "base_offset": -1,
                            "log_append_time": None,
                            "log_start_offset": 0,
                            "record_errors": [
                                {"batch_index": i, "batch_index_error_message": text}
                                for i, text in record_errors
                            ],
                            "error_message": message,
                        }
                    ],
                }
            ],
            "throttle_time": 0,
        }
    )


def test_named_records_fail_alone_and_the_others_are_not_retried() -> None:
    h = Harness(linger_ms=100)
    outcomes: dict[int, BaseException | None] = {}
    futures = []
    for index in range(5):

        def callback(
            metadata: RecordMetadata, error: BaseException | None, index: int = index
        ) -> None:
            outcomes[index] = error

        future, _ = h.accumulator.append(T0, 1000, None, b"v%d" % index, (), callback, 0)
        assert future is not None
        futures.append(future)
    h.clock.advance(100)
    h.sender.run_once()
    assert len(h.network.sent) == 1
    answer_with_record_errors(
        h, 0, ErrorCode.INVALID_RECORD, [(1, "no key"), (3, None)], "2 keyless records"
    )
    errors = [future.exception(0) for future in futures]
    for index in (1, 3):
        error = errors[index]
        assert isinstance(error, InvalidRecordError)
        assert f"record {index} of the batch to t-0 from broker 1" in str(error)
    assert str(errors[1]).endswith(": no key")
    assert str(errors[3]).endswith(": 2 keyless records"), "no own message: the partition's"
    for index in (0, 2, 4):
        error = errors[index]
        assert isinstance(error, RecordNotAppendedError)
        assert not isinstance(error, InvalidRecordError)
        assert "broker 1 refused 2 other record(s)" in str(error)
        assert isinstance(error.__cause__, InvalidRecordError)
    assert outcomes == dict(enumerate(errors)), "each callback gets its own record's error"
    assert all(future.metadata().offset == -1 for future in futures)
    h.clock.advance(10_000)
    h.sender.run_once()
    assert len(h.network.sent) == 1, "nothing is retried"
    assert h.pool.available_bytes == h.settings.buffer_memory
    stats = h.sender.statistics()
    assert (stats["retries"], stats["batches_failed"]) == (0, 1)


def test_one_named_record_takes_the_partition_error() -> None:
    h = Harness(linger_ms=100)
    futures = [h.append(T0, b"a"), h.append(T0, b"b")]
    h.clock.advance(100)
    h.sender.run_once()
    answer_with_record_errors(h, 0, ErrorCode.INVALID_TIMESTAMP, [(0, None)], None)
    named = futures[0].exception(0)
    assert isinstance(named, InvalidTimestampError)
    assert str(named).endswith(": INVALID_TIMESTAMP"), "no message at all: the code's name"
    assert isinstance(futures[1].exception(0), RecordNotAppendedError)


def test_a_retriable_answer_with_record_errors_retries_the_whole_batch() -> None:
    h = Harness()
    future = h.append(T0)
    h.sender.run_once()
    answer_with_record_errors(h, 0, ErrorCode.NOT_LEADER_OR_FOLLOWER, [(0, "moved")])
    assert not future.done()
    h.clock.advance(100)
    h.sender.run_once()
    assert len(h.network.sent) == 2
    h.answer(1, base_offset=4)
    assert future.result(0).offset == 4


def test_keyless_records_in_a_batch_to_a_compacted_topic(
    broker: Broker, make_producer: Any
) -> None:
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics(
            [NewTopic("compacted-mixed", 1, 1, {"cleanup.policy": "compact"})]
        ).all()
    producer = make_producer(linger_ms=60_000, batch_size=1 << 20)
    keyless = {2, 5}
    futures = [
        producer.send(
            "compacted-mixed",
            b"v%d" % index,
            key=None if index in keyless else b"k%d" % index,
            partition=0,
        )
        for index in range(8)
    ]
    producer.flush(TIMEOUT_S)
    for index, future in enumerate(futures):
        error = future.exception(0)
        if index in keyless:
            assert isinstance(error, InvalidRecordError)
            assert error.error_code is ErrorCode.INVALID_RECORD
            assert "without a key" in str(error)
        else:
            assert isinstance(error, RecordNotAppendedError)
    assert producer.statistics()["sender"]["retries"] == 0
    ok = producer.send("compacted-mixed", b"ok", key=b"k", partition=0)
    producer.flush(TIMEOUT_S)
    assert ok.result(0).offset == 0, "nothing of the refused batch was appended"
    written = read_back(broker.bootstrap_servers, "compacted-mixed", 1, 1)
    assert [record.value for record in written] == [b"ok"]
