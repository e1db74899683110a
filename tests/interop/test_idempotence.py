"""Idempotent producers against the embedded broker when responses are lost.

confluent-kafka (librdkafka) with ``enable.idempotence=true`` talks to the broker through a
proxy in this test that swallows Produce responses and drops the connection: the producer
cannot know its batch was written and sends it again, with the same producer id, epoch and
sequence. The broker must answer the retry with the original offsets and keep exactly one copy.
Raw frames check the same on the wire without a client's retry logic: the same batch twice
gets the same base offset, a gap gets OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch
INVALID_PRODUCER_EPOCH. Without enable.idempotence the same lost responses do duplicate (the
control that shows the proxy really makes the client resend). odradek's own producer goes
through the same proxy (idempotent by default), and through the epoch-bump path: after the
broker expired its producer state, the batch refused with UNKNOWN_PRODUCER_ID fails to the
application, InitProducerId naming the old id and epoch (v3+, KIP-360) gets a new id, and the
next records are stored.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from tests.broker._wire import Wire

from odradek import Broker
from odradek import Producer as OdradekProducer
from odradek.errors import ErrorCode
from odradek.errors import KafkaError as OdradekKafkaError
from odradek.protocol.api_keys import ApiKey
from odradek.records.codec import SimpleRecord, build_batch

from .conftest import wait_until

pytestmark = pytest.mark.interop

TIMEOUT_S = 30.0


class ResponseDroppingProxy:
    """Forwards Kafka connections from its port to the broker's, except that the responses
    to the first ``drops`` Produce requests are swallowed and their connection closed (a
    response lost with the connection, after the broker appended)."""

    def __init__(self, drops: int) -> None:
        self.drops = drops
        self.dropped = 0
        self.broker_port = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._closed = False

    def start(self, broker_port: int) -> None:
        self.broker_port = broker_port
        self._spawn(self._accept)

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.broker_port))
            with self._lock:
                self._sockets += [client, upstream]
            produce_ids: set[int] = set()
            self._spawn(self._requests, client, upstream, produce_ids)
            self._spawn(self._responses, upstream, client, produce_ids)

    @staticmethod
    def _frame(source: socket.socket) -> bytes | None:
        data = b""
        size = 4
        while len(data) < size:
            try:
                chunk = source.recv(size - len(data))
            except OSError:
                return None
            if not chunk:
                return None
            data += chunk
            if size == 4 and len(data) == 4:
                size = 4 + struct.unpack(">i", data)[0]
        return data

    def _requests(self, client: socket.socket, upstream: socket.socket, ids: set[int]) -> None:
        while (frame := self._frame(client)) is not None:
            api_key, _version, correlation_id = struct.unpack_from(">hhi", frame, 4)
            if api_key == ApiKey.PRODUCE:
                ids.add(correlation_id)
            try:
                upstream.sendall(frame)
            except OSError:
                break
        self._close(client, upstream)

    def _responses(self, upstream: socket.socket, client: socket.socket, ids: set[int]) -> None:
        while (frame := self._frame(upstream)) is not None:
            (correlation_id,) = struct.unpack_from(">i", frame, 4)
            with self._lock:
                drop = correlation_id in ids and self.dropped < self.drops
                if drop:
                    self.dropped += 1
            if drop:
                break  # the response is lost with the connection
            try:
                client.sendall(frame)
            except OSError:
                break
        self._close(client, upstream)

    @staticmethod
    def _close(*sockets: socket.socket) -> None:
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        with self._lock:
            self._close(*self._sockets)
        for thread in self._threads:
            thread.join(5)


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[Broker, ResponseDroppingProxy]]:
    proxy = ResponseDroppingProxy(drops=3)
    broker = Broker(
        str(tmp_path),
        config={
            # Clients learn the proxy's address from Metadata, so every connection goes through it.
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}",
            "num.partitions": 1,
        },
    ).start()
    proxy.start(broker.port)
    try:
        yield broker, proxy
    finally:
        proxy.close()
        broker.stop()


def produce_through(proxy: ResponseDroppingProxy, topic: str, count: int, idempotent: bool) -> int:
    """Produces ``count`` values one flush at a time; returns how many were delivered."""
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{proxy.port}",
            "enable.idempotence": idempotent,
            "acks": "all",
            "linger.ms": 0,
            "retry.backoff.ms": 20,
            "reconnect.backoff.ms": 20,
            "message.timeout.ms": 60_000,
        }
    )
    delivered: list[Message] = []
    errors: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, message: Message) -> None:
        if error is None:
            delivered.append(message)
        else:
            errors.append(error)

    for value in range(count):
        producer.produce(topic, value=b"%d" % value, partition=0, on_delivery=on_delivery)
        producer.flush(TIMEOUT_S)
    assert producer.flush(TIMEOUT_S) == 0
    assert errors == []
    return len(delivered)


def values_in(broker: Broker, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "idempotence-check",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([KafkaTopicPartition(topic, 0, 0)])
        values: list[bytes] = []

        def read_enough() -> bool:
            for message in consumer.consume(100, timeout=0.2):
                assert message.error() is None
                values.append(message.value())
            _low, high = consumer.get_watermark_offsets(KafkaTopicPartition(topic, 0))
            return len(values) >= max(expected, high)

        wait_until(read_enough, what=f"{expected} records of {topic}")
        return values
    finally:
        consumer.close()


def test_lost_produce_responses_leave_exactly_one_copy(
    proxied: tuple[Broker, ResponseDroppingProxy],
) -> None:
    broker, proxy = proxied
    assert produce_through(proxy, "idempotent", 10, idempotent=True) == 10
    assert proxy.dropped == 3, "the proxy lost three responses, so the client resent"
    assert values_in(broker, "idempotent", 10) == [b"%d" % v for v in range(10)]


def test_without_idempotence_the_same_losses_duplicate(
    proxied: tuple[Broker, ResponseDroppingProxy],
) -> None:
    broker, proxy = proxied
    assert produce_through(proxy, "plain", 10, idempotent=False) == 10
    assert proxy.dropped == 3
    values = values_in(broker, "plain", 13)
    assert len(values) == 13, "each lost response made the client append its batch again"
    assert sorted(set(values)) == sorted(b"%d" % v for v in range(10))


def produce_with_odradek(
    proxy: ResponseDroppingProxy, topic: str, count: int, idempotent: bool | None
) -> int:
    """``produce_through`` with odradek's producer (``idempotent`` None: its default)."""
    config: dict[str, Any] = {
        "bootstrap.servers": f"127.0.0.1:{proxy.port}",
        "linger.ms": 0,
        "retry.backoff.ms": 20,
        "reconnect.backoff.ms": 20,
    }
    if idempotent is not None:
        config["enable.idempotence"] = idempotent
    with OdradekProducer(config) as producer:
        futures = []
        for value in range(count):
            futures.append(producer.send(topic, b"%d" % value, partition=0))
            producer.flush(TIMEOUT_S)
        return sum(1 for future in futures if future.exception(TIMEOUT_S) is None)


def test_odradek_producer_lost_responses_leave_exactly_one_copy(
    proxied: tuple[Broker, ResponseDroppingProxy],
) -> None:
    broker, proxy = proxied
    assert produce_with_odradek(proxy, "odradek-idempotent", 10, idempotent=None) == 10
    assert proxy.dropped == 3, "the proxy lost three responses, so the producer resent"
    assert values_in(broker, "odradek-idempotent", 10) == [b"%d" % v for v in range(10)]


def test_odradek_producer_without_idempotence_duplicates(
    proxied: tuple[Broker, ResponseDroppingProxy],
) -> None:
    broker, proxy = proxied
    assert produce_with_odradek(proxy, "odradek-plain", 10, idempotent=False) == 10
    assert proxy.dropped == 3
    values = values_in(broker, "odradek-plain", 13)
    assert len(values) == 13, "each lost response made the producer append its batch again"
    assert sorted(set(values)) == sorted(b"%d" % v for v in range(10))


def active_producers(wire: Wire, topic: str) -> list[int]:
    described = wire.request(
        ApiKey.DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]}
    )
    [partition] = described["topics"][0]["partitions"]
    assert partition["error_code"] == 0
    return [int(p["producer_id"]) for p in partition["active_producers"]]


def test_odradek_producer_gets_a_new_id_after_unknown_producer_id(tmp_path: Path) -> None:
    config = {"num.partitions": 1, "producer.id.expiration.ms": 200}
    with Broker(str(tmp_path), config=config) as broker:
        wire = Wire(broker.port)
        settings = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0}
        try:
            with OdradekProducer(settings) as idle, OdradekProducer(settings) as busy:
                assert idle.send("expiring", b"a0", partition=0).result(TIMEOUT_S).offset == 0
                first_id = idle.statistics()["sender"]["producer_id"]
                assert first_id in active_producers(wire, "expiring")

                def idle_one_forgotten() -> bool:
                    # Another producer's appends run the broker's expiry check.
                    busy.send("expiring", b"b", partition=0).result(TIMEOUT_S)
                    return first_id not in active_producers(wire, "expiring")

                wait_until(idle_one_forgotten, what="the idle producer's state to expire")
                refused = idle.send("expiring", b"a1", partition=0).exception(TIMEOUT_S)
                assert isinstance(refused, OdradekKafkaError)
                assert refused.error_code == ErrorCode.UNKNOWN_PRODUCER_ID
                stored = idle.send("expiring", b"a2", partition=0).result(TIMEOUT_S)
                stats = idle.statistics()["sender"]
                # Without a transactional id the broker answers an epoch bump with a new id.
                assert (stats["producer_id_changes"], stats["producer_epoch"]) == (1, 0)
                assert stats["producer_id"] not in (first_id, -1)
                assert stats["producer_id"] in active_producers(wire, "expiring")
            values = values_in(broker, "expiring", stored.offset + 1)
            assert values.count(b"a1") == 0
            assert (values[0], values[-1]) == (b"a0", b"a2")
        finally:
            wire.close()


def test_init_producer_id_naming_the_current_id_and_epoch(tmp_path: Path) -> None:
    """The broker's side of the bump (v3+): without a transactional id it hands out a new id
    at epoch 0, as Kafka does; naming only one of the two is INVALID_REQUEST."""
    with Broker(str(tmp_path), config={"num.partitions": 1}) as broker:
        wire = Wire(broker.port)
        try:

            def init(producer_id: int, epoch: int) -> dict[str, Any]:
                return wire.request(
                    ApiKey.INIT_PRODUCER_ID,
                    4,
                    {
                        "transactional_id": None,
                        "transaction_timeout": 2**31 - 1,
                        "producer_id": producer_id,
                        "producer_epoch": epoch,
                    },
                )

            first = init(-1, -1)
            assert (first["error_code"], first["producer_epoch"]) == (0, 0)
            bumped = init(first["producer_id"], 0)
            assert bumped["error_code"] == 0
            assert bumped["producer_id"] not in (first["producer_id"], -1)
            assert bumped["producer_epoch"] == 0
            assert init(first["producer_id"], -1)["error_code"] == ErrorCode.INVALID_REQUEST
            assert wire.create_topics({"raw": 1}) == {"raw": 0}
            wait_until(lambda: wire.partitions_of("raw") == [0], what="topic raw")
            assert produce(wire, idempotent_batch(first["producer_id"], 0, 0))["error_code"] == 0
            # The new id starts its own sequences at 0 beside the old one's.
            assert produce(wire, idempotent_batch(bumped["producer_id"], 0, 0))["base_offset"] == 2
            assert produce(wire, idempotent_batch(first["producer_id"], 0, 2))["base_offset"] == 4
        finally:
            wire.close()


# --- raw frames ----------------------------------------------------------------------------


def produce(wire: Wire, records: bytes) -> dict[str, Any]:
    response = wire.request(
        ApiKey.PRODUCE,
        7,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout": 5_000,
            "topic_data": [{"name": "raw", "partition_data": [{"index": 0, "records": records}]}],
        },
    )
    [topic] = response["responses"]
    [partition] = topic["partition_responses"]
    return partition  # type: ignore[no-any-return]


def idempotent_batch(producer_id: int, epoch: int, sequence: int, count: int = 2) -> bytes:
    return build_batch(
        [SimpleRecord(1_700_000_000_000, None, b"s%d" % (sequence + i)) for i in range(count)],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
    )


def test_raw_frames_duplicates_gaps_and_fenced_epochs(tmp_path: Path) -> None:
    with Broker(str(tmp_path), config={"num.partitions": 1}) as broker:
        wire = Wire(broker.port)
        try:
            init = wire.request(
                ApiKey.INIT_PRODUCER_ID,
                0,
                {"transactional_id": None, "transaction_timeout": 60_000},
            )
            assert init["error_code"] == 0
            producer_id = init["producer_id"]
            assert wire.create_topics({"raw": 1}) == {"raw": 0}
            wait_until(lambda: wire.partitions_of("raw") == [0], what="topic raw")

            first = produce(wire, idempotent_batch(producer_id, 0, 0))
            again = produce(wire, idempotent_batch(producer_id, 0, 0))
            assert (first["error_code"], first["base_offset"]) == (0, 0)
            assert (again["error_code"], again["base_offset"]) == (0, 0)
            gap = produce(wire, idempotent_batch(producer_id, 0, 5))
            assert gap["error_code"] == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
            assert produce(wire, idempotent_batch(producer_id, 1, 0))["base_offset"] == 2
            fenced = produce(wire, idempotent_batch(producer_id, 0, 2))
            assert fenced["error_code"] == 47  # INVALID_PRODUCER_EPOCH
            unknown = produce(wire, idempotent_batch(producer_id + 1, 0, 3))
            assert unknown["error_code"] == 59  # UNKNOWN_PRODUCER_ID
            # Only 4 records are stored: the next batch of epoch 1 goes at offset 4.
            assert produce(wire, idempotent_batch(producer_id, 1, 2))["base_offset"] == 4
        finally:
            wire.close()


def test_a_restarted_broker_still_knows_the_producer_and_reuses_no_id(tmp_path: Path) -> None:
    def init_producer_id(wire: Wire) -> int:
        init = wire.request(
            ApiKey.INIT_PRODUCER_ID, 0, {"transactional_id": None, "transaction_timeout": 60_000}
        )
        assert init["error_code"] == 0
        return int(init["producer_id"])

    with Broker(str(tmp_path), config={"num.partitions": 1}) as broker:
        wire = Wire(broker.port)
        try:
            producer_id = init_producer_id(wire)
            assert wire.create_topics({"raw": 1}) == {"raw": 0}
            wait_until(lambda: wire.partitions_of("raw") == [0], what="topic raw")
            for sequence in (0, 2, 4):
                assert produce(wire, idempotent_batch(producer_id, 0, sequence))["error_code"] == 0
        finally:
            wire.close()
    # The clean shutdown wrote the producer state beside the segments.
    assert sorted(p.name for p in (tmp_path / "raw-0").glob("*.snapshot")) == [
        "00000000000000000006.snapshot"
    ]

    with Broker(str(tmp_path), config={"num.partitions": 1}) as broker:
        wire = Wire(broker.port)
        try:
            assert init_producer_id(wire) >= producer_id + 1000  # a new block, never reused
            wait_until(lambda: wire.partitions_of("raw") == [0], what="topic raw")
            retried = produce(wire, idempotent_batch(producer_id, 0, 4))
            assert (retried["error_code"], retried["base_offset"]) == (0, 4)
            assert produce(wire, idempotent_batch(producer_id, 0, 6))["base_offset"] == 6
            assert produce(wire, idempotent_batch(producer_id, 0, 9))["error_code"] == 45
        finally:
            wire.close()
