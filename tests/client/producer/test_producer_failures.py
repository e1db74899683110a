"""``Producer`` failure paths against a live embedded broker: a broker restart during produce
(retries deliver, no acknowledged record lost), ``delivery.timeout.ms`` expiry, oversized
records (client and broker side), serializer and partitioner exceptions, ``buffer.memory``
and metadata blocking up to ``max.block.ms``, ``close()`` with pending sends."""

from __future__ import annotations

import logging
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from odradek import Broker
from odradek.client.producer import Producer, RecordMetadata
from odradek.client.producer.future import RecordFuture
from odradek.errors import (
    InvalidTopicError,
    KafkaTimeoutError,
    MessageTooLargeError,
    ProducerClosedError,
    SerializationError,
    UnknownTopicOrPartitionError,
)

from .conftest import TIMEOUT_S, read_back, wait_until

Outcomes = list[tuple[RecordMetadata, BaseException | None]]


def recorder() -> tuple[Outcomes, Any]:
    outcomes: Outcomes = []

    def callback(metadata: RecordMetadata, exception: BaseException | None) -> None:
        outcomes.append((metadata, exception))

    return outcomes, callback


def test_broker_restart_during_produce_loses_no_acknowledged_record(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "data")
    broker = Broker(data_dir, config={"num.partitions": "2"}).start()
    port = broker.port
    producer = Producer(
        bootstrap_servers=broker.bootstrap_servers,
        acks="all",
        max_in_flight_requests_per_connection=1,
        linger_ms=0,
        batch_size=1024,
        retry_backoff_ms=50,
        retry_backoff_max_ms=200,
        reconnect_backoff_ms=20,
        reconnect_backoff_max_ms=200,
        request_timeout_ms=3000,
        delivery_timeout_ms=60_000,
    )
    futures: list[tuple[bytes, RecordFuture]] = []
    stop = threading.Event()
    pause = threading.Event()

    def produce() -> None:
        # Keeps producing while the broker goes away and comes back.
        while not stop.is_set():
            value = b"seq-%06d" % len(futures)
            futures.append((value, producer.send("restart", value, partition=len(futures) % 2)))
            if len(futures) % 50 == 0:
                pause.wait(0.002)

    def pending() -> int:
        return sum(not f.done() for _, f in futures[:-1])

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        wait_until(lambda: sum(f.done() for _, f in futures[:-1]) >= 500, what="first acks")
        broker.stop()
        # Records are sent (or in flight) to a broker that is gone.
        wait_until(lambda: pending() >= 500, what="records queued during the outage")
        broker = Broker(data_dir, port=port, config={"num.partitions": "2"}).start()
        sent_before = len(futures)
        wait_until(lambda: len(futures) >= sent_before + 500, what="more records")
        stop.set()
        thread.join(TIMEOUT_S)
        producer.flush(TIMEOUT_S * 2)
        outcomes = [(value, f.result(0)) for value, f in futures]  # every record delivered
        back = read_back(broker.bootstrap_servers, "restart", len(futures), 2, exact=False)
        stored = {(r.partition, r.offset): r.value for r in back}
        for value, metadata in outcomes:
            assert stored[(metadata.partition, metadata.offset)] == value, (value, metadata)
        # One request in flight per connection: each partition keeps send order.
        for partition in (0, 1):
            offsets = [m.offset for _, m in outcomes if m.partition == partition]
            assert offsets == sorted(offsets)
        # The requests in flight when the broker stopped failed and were sent again.
        assert producer.statistics()["sender"]["retries"] > 0
    finally:
        stop.set()
        producer.close(5)
        broker.stop()


def test_delivery_timeout_expires_records_when_the_broker_is_gone() -> None:
    broker = Broker().start()
    producer = Producer(
        bootstrap_servers=broker.bootstrap_servers,
        linger_ms=0,
        request_timeout_ms=500,
        delivery_timeout_ms=1500,
        reconnect_backoff_ms=50,
    )
    try:
        producer.send("expiry", b"first").result(TIMEOUT_S)
        broker.stop()
        outcomes, callback = recorder()
        started = time.monotonic()
        future = producer.send("expiry", b"lost", callback=callback)
        error = future.exception(TIMEOUT_S)
        elapsed = time.monotonic() - started
        assert isinstance(error, KafkaTimeoutError)
        assert "delivery.timeout.ms=1500" in str(error)
        assert 1.0 <= elapsed < 10
        assert outcomes == [(future.metadata(), error)]
        assert outcomes[0][0].offset == -1
        assert outcomes[0][0].partition == 0
        assert producer.statistics()["sender"]["batches_expired"] == 1
    finally:
        producer.close(2)
        broker.stop()


def test_oversized_record_fails_at_send(
    broker: Broker, make_producer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    producer = make_producer(max_request_size=1000)
    outcomes, callback = recorder()
    future = producer.send("big", b"x" * 2000, callback=callback)
    assert future.done()
    error = future.exception()
    assert isinstance(error, MessageTooLargeError)
    assert "max.request.size (1000)" in str(error)
    assert outcomes == [(future.metadata(), error)]
    assert producer.send("big", b"small").result(TIMEOUT_S).offset == 0


def test_broker_message_too_large_fails_without_retries() -> None:
    with Broker(config={"message.max.bytes": "2000"}) as broker:
        producer = Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0)
        try:
            future = producer.send("toolarge", b"x" * 5000)
            assert isinstance(future.exception(TIMEOUT_S), MessageTooLargeError)
            assert producer.statistics()["sender"]["retries"] == 0
            assert producer.send("toolarge", b"ok").result(TIMEOUT_S).offset == 0
        finally:
            producer.close(5)


def test_serializer_exception_fails_the_record_and_is_logged(
    broker: Broker, make_producer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    class Picky:
        def serialize(self, topic: str, data: Any) -> bytes:
            if data == "bad":
                raise ValueError("cannot take 'bad'")
            return str(data).encode()

    acks: Outcomes = []

    class Watch:
        def on_acknowledgement(
            self, metadata: RecordMetadata, exception: BaseException | None
        ) -> None:
            acks.append((metadata, exception))

    producer = make_producer(value_serializer=Picky(), interceptor_classes=[Watch()])
    outcomes, callback = recorder()
    with caplog.at_level(logging.ERROR):
        bad = producer.send("ser", "bad", callback=callback)
    error = bad.exception(0)
    assert isinstance(error, SerializationError)
    assert isinstance(error.__cause__, ValueError)
    assert "value of a record to ser" in str(error)
    assert outcomes == [(bad.metadata(), error)]
    assert acks == [(bad.metadata(), error)]
    assert any(
        "value serializer" in r.getMessage() and "ser" in r.getMessage() for r in caplog.records
    )
    assert all(r.exc_info for r in caplog.records if "value serializer" in r.getMessage())
    # The producer and its sender thread go on.
    assert producer.send("ser", "good").result(TIMEOUT_S).offset == 0
    assert producer._thread.is_alive()


def test_partitioner_exception_and_invalid_partitions(
    broker: Broker, make_producer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        def partition(self, *args: Any) -> int:
            raise RuntimeError("partitioner bug")

    producer = make_producer(partitioner=Broken())
    with caplog.at_level(logging.ERROR):
        future = producer.send("part", b"v")
    assert isinstance(future.exception(0), RuntimeError)
    assert any("partitioner" in r.getMessage() and "part" in r.getMessage() for r in caplog.records)
    explicit = producer.send("part", b"v", partition=99)
    assert isinstance(explicit.exception(0), UnknownTopicOrPartitionError)
    assert producer.send("part", b"v", partition=0).result(TIMEOUT_S).offset == 0


def test_send_blocks_for_buffer_memory_then_times_out() -> None:
    broker = Broker().start()
    producer = Producer(
        bootstrap_servers=broker.bootstrap_servers,
        buffer_memory=20_000,
        batch_size=10_000,
        max_request_size=10_000,
        max_block_ms=300,
        linger_ms=0,
        request_timeout_ms=1000,
        delivery_timeout_ms=60_000,
    )
    try:
        producer.send("mem", b"warm").result(TIMEOUT_S)
        broker.stop()
        held = [producer.send("mem", b"x" * 8_000) for _ in range(2)]
        started = time.monotonic()
        blocked = producer.send("mem", b"x" * 8_000)
        assert time.monotonic() - started >= 0.25
        error = blocked.exception(0)
        assert isinstance(error, KafkaTimeoutError)
        assert "buffer.memory" in str(error)
        assert not any(f.done() for f in held)
    finally:
        producer.close(0.5)
        broker.stop()


def test_memory_is_reused_as_batches_complete(broker: Broker, make_producer: Any) -> None:
    producer = make_producer(buffer_memory=40_000, batch_size=16_384, max_request_size=20_000)
    futures = [producer.send("reuse", b"y" * 100, partition=0) for _ in range(3000)]
    producer.flush(TIMEOUT_S)
    assert [f.result().offset for f in futures] == list(range(3000))


def test_unknown_topic_blocks_up_to_max_block_ms() -> None:
    with Broker(config={"auto.create.topics.enable": "false"}) as broker:
        producer = Producer(bootstrap_servers=broker.bootstrap_servers, max_block_ms=400)
        try:
            started = time.monotonic()
            future = producer.send("missing", b"v")
            assert time.monotonic() - started >= 0.35
            error = future.exception(0)
            assert isinstance(error, KafkaTimeoutError)
            assert "missing" in str(error)
        finally:
            producer.close(5)


def test_close_with_pending_sends_fails_them_clearly() -> None:
    broker = Broker().start()
    producer = Producer(
        bootstrap_servers=broker.bootstrap_servers,
        linger_ms=0,
        request_timeout_ms=5000,
        delivery_timeout_ms=60_000,
    )
    try:
        producer.send("closing", b"warm").result(TIMEOUT_S)
        broker.stop()
        outcomes, callback = recorder()
        futures = [producer.send("closing", b"%d" % i, callback=callback) for i in range(20)]
        started = time.monotonic()
        producer.close(0.5)
        assert time.monotonic() - started < 5
        for future in futures:
            error = future.exception(0)
            assert isinstance(error, ProducerClosedError)
            assert "closed (timeout 0.5 s) before this record was acknowledged" in str(error)
        assert len(outcomes) == 20
        assert all(isinstance(e, ProducerClosedError) for _, e in outcomes)
        with pytest.raises(ProducerClosedError):
            producer.send("closing", b"late")
        producer.close()  # idempotent
        assert not producer._thread.is_alive()
    finally:
        broker.stop()


def test_flush_times_out_and_refuses_callbacks(broker: Broker, make_producer: Any) -> None:
    producer = make_producer()
    errors: list[BaseException] = []

    def flush_inside(metadata: RecordMetadata, exception: BaseException | None) -> None:
        try:
            producer.flush(1)
        except RuntimeError as error:
            errors.append(error)

    producer.send("flushcb", b"v", callback=flush_inside).result(TIMEOUT_S)
    producer.flush(TIMEOUT_S)
    assert len(errors) == 1
    assert "delivery callback" in str(errors[0])


def test_flush_timeout_when_the_broker_is_gone() -> None:
    broker = Broker().start()
    producer = Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0)
    try:
        producer.send("flushto", b"warm").result(TIMEOUT_S)
        broker.stop()
        producer.send("flushto", b"stuck")
        with pytest.raises(KafkaTimeoutError, match="incomplete"):
            producer.flush(0.3)
    finally:
        producer.close(0.2)
        broker.stop()


def test_headers_mapping_and_invalid_headers(broker: Broker, make_producer: Any) -> None:
    producer = make_producer()
    ok = producer.send("hdr", b"v", partition=0, headers={"a": b"1", "b": None})
    assert ok.result(TIMEOUT_S).offset == 0
    [got] = read_back(broker.bootstrap_servers, "hdr", 1)
    assert got.headers == (("a", b"1"), ("b", None))
    for bad in ([("a", "text")], [(b"a", b"1")], ["ab"], [("a", b"1", b"2")]):
        error = producer.send("hdr", b"v", headers=bad).exception(0)  # type: ignore[arg-type]
        assert isinstance(error, TypeError)
        assert "(str, bytes | None) pair" in str(error)


def test_invalid_topic_name_fails_the_record(broker: Broker, make_producer: Any) -> None:
    producer = make_producer(max_block_ms=5000)
    started = time.monotonic()
    error = producer.send("not a valid topic!", b"v").exception(TIMEOUT_S)
    assert isinstance(error, InvalidTopicError)
    assert time.monotonic() - started < 5


def test_close_from_a_delivery_callback_does_not_deadlock(broker: Broker) -> None:
    producer = Producer(bootstrap_servers=broker.bootstrap_servers)
    closed = threading.Event()

    def close_now(metadata: RecordMetadata, exception: BaseException | None) -> None:
        producer.close()
        closed.set()

    producer.send("cbclose", b"v", callback=close_now)
    assert closed.wait(TIMEOUT_S)
    wait_until(lambda: not producer._thread.is_alive(), what="the sender thread to end")
    with pytest.raises(ProducerClosedError):
        producer.send("cbclose", b"late")


def test_sync_mode_raises_the_failure(broker: Broker, make_producer: Any) -> None:
    producer = make_producer(producer_type="sync", max_request_size=1000)
    with pytest.raises(MessageTooLargeError, match=r"max\.request\.size"):
        producer.send("syncfail", b"x" * 2000)
    assert producer.send("syncfail", b"ok").done()


def test_unreachable_bootstrap_fails_sends_after_max_block_ms() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens here once closed
    producer = Producer(
        bootstrap_servers=f"127.0.0.1:{port}", max_block_ms=300, reconnect_backoff_ms=20
    )
    try:
        started = time.monotonic()
        error = producer.send("nowhere", b"v").exception(0)
        assert isinstance(error, KafkaTimeoutError)
        assert time.monotonic() - started < 5
    finally:
        started = time.monotonic()
        producer.close(5)
        assert time.monotonic() - started < 5
