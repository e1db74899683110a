"""``producer.future`` and ``producer.batch``: one completion per batch shared by its records'
futures, metadata per record, callbacks before waiters are released, errors in callbacks
logged and contained, completion once only."""

from __future__ import annotations

import logging
import threading

import pytest

from odradek._types import TopicPartition
from odradek.client.producer.batch import ProducerBatch
from odradek.client.producer.future import RecordFuture
from odradek.client.producer.record import RecordMetadata
from odradek.errors import KafkaTimeoutError, MessageTooLargeError
from odradek.records.codec import BatchBuilder, decode_batch

TP = TopicPartition("t", 2)


def make_batch(batch_size: int = 16_384) -> ProducerBatch:
    return ProducerBatch(TP, BatchBuilder(batch_size_bytes=batch_size), 0, batch_size)


def test_record_futures_share_the_batch_outcome() -> None:
    batch = make_batch()
    calls: list[tuple[RecordMetadata, BaseException | None]] = []
    first = batch.try_append(1000, b"k", b"value", (), lambda m, e: calls.append((m, e)))
    second = batch.try_append(1005, None, None, (), None)
    assert first is not None
    assert second is not None
    assert not first.done()
    records = batch.close()
    assert [r.offset for r in decode_batch(records).records] == [0, 1]
    with pytest.raises(KafkaTimeoutError):
        first.result(timeout=0)
    assert batch.complete(40, -1, None)
    assert first.result() == RecordMetadata("t", 2, 40, 1000, 1, 5)
    assert second.get(0) == RecordMetadata("t", 2, 41, 1005, -1, -1)
    assert calls == [(RecordMetadata("t", 2, 40, 1000, 1, 5), None)]
    assert not batch.complete(99, -1, None), "a batch completes once"
    assert first.result().offset == 40


def test_log_append_time_replaces_the_create_time() -> None:
    batch = make_batch()
    future = batch.try_append(1000, None, b"v", (), None)
    assert future is not None
    batch.close()
    batch.complete(0, 123_456, None)
    assert future.result().timestamp == 123_456


def test_failure_reaches_futures_callbacks_and_listeners() -> None:
    batch = make_batch()
    calls: list[tuple[RecordMetadata, BaseException | None]] = []
    future = batch.try_append(1000, b"k", b"v", (), lambda m, e: calls.append((m, e)))
    assert future is not None
    seen: list[RecordFuture] = []
    future.add_done_callback(seen.append)
    error = MessageTooLargeError("too big")
    batch.complete(-1, -1, error)
    with pytest.raises(MessageTooLargeError):
        future.result()
    assert future.exception() is error
    assert calls == [(RecordMetadata("t", 2, -1, 1000, 1, 1), error)]
    assert seen == [future]
    late: list[RecordFuture] = []
    future.add_done_callback(late.append)  # already done: runs at once
    assert late == [future]


def test_callbacks_run_before_waiters_wake() -> None:
    batch = make_batch()
    order: list[str] = []
    release = threading.Event()

    def slow_callback(metadata: RecordMetadata, error: BaseException | None) -> None:
        release.wait(5)
        order.append("callback")

    future = batch.try_append(1, None, b"v", (), slow_callback)
    assert future is not None
    waiter = threading.Thread(target=lambda: (future.result(5), order.append("waiter")))
    waiter.start()
    completer = threading.Thread(target=batch.complete, args=(0, -1, None))
    completer.start()
    release.set()
    completer.join(5)
    waiter.join(5)
    assert order == ["callback", "waiter"]


def test_callback_errors_are_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    batch = make_batch()

    def broken(metadata: RecordMetadata, error: BaseException | None) -> None:
        raise RuntimeError("user bug")

    calls: list[RecordMetadata] = []
    first = batch.try_append(1, None, b"a", (), broken)
    second = batch.try_append(2, None, b"b", (), lambda m, e: calls.append(m))
    assert first is not None
    assert second is not None
    first.add_done_callback(lambda f: 1 / 0)
    with caplog.at_level(logging.ERROR):
        assert batch.complete(10, -1, None)
    assert [m.offset for m in calls] == [11], "the next callback still ran"
    assert first.result().offset == 10
    messages = [r.getMessage() for r in caplog.records]
    assert any("delivery callback" in m and "t-2" in m for m in messages)
    assert any("done-callback" in m and "t-2" in m for m in messages)


def test_full_batch_refuses_and_closed_batch_refuses() -> None:
    batch = make_batch(batch_size=61 + 40)
    assert batch.try_append(1, None, b"x" * 30, (), None) is not None
    assert batch.try_append(1, None, b"x" * 30, (), None) is None
    assert batch.full
    other = make_batch()
    assert other.try_append(1, None, b"x", (), None) is not None
    other.close()
    assert other.try_append(1, None, b"x", (), None) is None
    assert other.record_count == 1


def test_failed_future() -> None:
    future = RecordFuture.failed("t", -1, ValueError("bad"), 5, 1, 2)
    assert future.done()
    assert isinstance(future.exception(), ValueError)
    assert future.metadata() == RecordMetadata("t", -1, -1, 5, 1, 2)
    assert not future.cancel()
    assert "failed" in repr(future)
