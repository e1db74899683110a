"""Transactions with real clients against the embedded broker (KIP-98).

confluent-kafka, kafka-python and aiokafka transactional producers each commit a
transaction, abort one (its records written first: flushed before the abort) and commit
another; read_committed consumers of each client then see exactly the committed records, in
order, while a read_uncommitted reader sees the aborted ones too (so they were really
written). A producer fenced by a newer one with its transactional id cannot commit, and its
records stay invisible. A consume-transform-produce loop (``txn_pipeline.py``) is killed with
SIGKILL in the middle of a transaction and restarted: the output holds each input exactly
once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from odradek import Broker, SimpleConsumer
from odradek import Consumer as OdradekConsumer
from odradek import Producer as OdradekProducer
from odradek import TopicPartition as OdradekTopicPartition
from odradek.errors import ErrorCode
from odradek.errors import KafkaError as OdradekKafkaError

from .conftest import wait_until

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KpTopicPartition

pytestmark = pytest.mark.interop

TIMEOUT_S = 30.0
TOPIC = "txn-out"
PIPELINE = Path(__file__).parent / "txn_pipeline.py"


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(
        config={
            "num.partitions": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.num.partitions": "3",
            "group.initial.rebalance.delay.ms": "0",
        }
    ) as running:
        yield running


def bootstrap(broker: Broker) -> str:
    return f"127.0.0.1:{broker.port}"


def values(prefix: str, start: int, stop: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(start, stop)]


# --- producers ------------------------------------------------------------------------------


def produce_with_confluent(bs: str, prefix: str) -> None:
    producer = Producer({"bootstrap.servers": bs, "transactional.id": f"{prefix}-tid"})
    producer.init_transactions(TIMEOUT_S)
    for batch, commit in (
        (values(f"{prefix}-c", 0, 5), True),
        (values(f"{prefix}-a", 0, 5), False),
        (values(f"{prefix}-c", 5, 10), True),
    ):
        producer.begin_transaction()
        for value in batch:
            producer.produce(TOPIC, value=value, partition=0)
        if commit:
            producer.commit_transaction(TIMEOUT_S)
        else:
            assert producer.flush(TIMEOUT_S) == 0
            producer.abort_transaction(TIMEOUT_S)


def produce_with_kafka_python(bs: str, prefix: str) -> None:
    producer = KafkaProducer(bootstrap_servers=bs, transactional_id=f"{prefix}-tid")
    try:
        producer.init_transactions()
        for batch, commit in (
            (values(f"{prefix}-c", 0, 5), True),
            (values(f"{prefix}-a", 0, 5), False),
            (values(f"{prefix}-c", 5, 10), True),
        ):
            producer.begin_transaction()
            for value in batch:
                producer.send(TOPIC, value=value, partition=0)
            producer.flush()
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close()


async def produce_with_aiokafka(bs: str, prefix: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bs, transactional_id=f"{prefix}-tid")
    await producer.start()
    try:
        for batch, commit in (
            (values(f"{prefix}-c", 0, 5), True),
            (values(f"{prefix}-a", 0, 5), False),
            (values(f"{prefix}-c", 5, 10), True),
        ):
            await producer.begin_transaction()
            for value in batch:
                await producer.send_and_wait(TOPIC, value=value, partition=0)
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
    finally:
        await producer.stop()


def produce_with_odradek(bs: str, prefix: str) -> None:
    with OdradekProducer(
        {"bootstrap.servers": bs, "transactional.id": f"{prefix}-tid"}
    ) as producer:
        producer.init_transactions()
        for batch, commit in (
            (values(f"{prefix}-c", 0, 5), True),
            (values(f"{prefix}-a", 0, 5), False),
            (values(f"{prefix}-c", 5, 10), True),
        ):
            producer.begin_transaction()
            for value in batch:
                producer.send(TOPIC, value, partition=0)
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()


# --- readers --------------------------------------------------------------------------------


def wait_for_markers(bs: str, topic: str) -> None:
    """Until no transaction is open on partition 0: EndTxn is answered once the coordinator
    has logged PrepareCommit / PrepareAbort, and the markers follow — a reader that took the
    last stable offset before them would stop short of the last transaction."""
    with (
        SimpleConsumer({"bootstrap.servers": bs, "isolation.level": "read_committed"}) as stable,
        SimpleConsumer({"bootstrap.servers": bs}) as high,
    ):
        wait_until(
            lambda: stable.latest_offset(topic, 0) == high.latest_offset(topic, 0),
            TIMEOUT_S,
            what="the last stable offset up to the high watermark",
        )


def read_with_confluent(bs: str, topic: str, *, committed: bool = True) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": "reader-confluent",
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if committed else "read_uncommitted",
        }
    )
    try:
        tp = KafkaTopicPartition(topic, 0, 0)
        end = consumer.get_watermark_offsets(tp, timeout=TIMEOUT_S)[1]
        consumer.assign([tp])
        got: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT_S
        while consumer.position([tp])[0].offset < end:
            assert time.monotonic() < deadline, f"read {len(got)} records, position below {end}"
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                got.append(message.value())
        return got
    finally:
        consumer.close()


def read_with_kafka_python(bs: str, topic: str) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=bs, isolation_level="read_committed", enable_auto_commit=False
    )
    try:
        tp = KpTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        got: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT_S
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"read {len(got)} records, position below {end}"
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(record.value for record in records)
        return got
    finally:
        consumer.close()


async def read_with_aiokafka(bs: str, topic: str) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bs, isolation_level="read_committed", enable_auto_commit=False
    )
    await consumer.start()
    try:
        tp = AioTopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        end = (await consumer.end_offsets([tp]))[tp]
        got: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT_S
        while await consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"read {len(got)} records, position below {end}"
            for records in (await consumer.getmany(timeout_ms=200)).values():
                got.extend(record.value for record in records)
        return got
    finally:
        await consumer.stop()


def read_with_odradek(bs: str, topic: str) -> list[bytes]:
    with SimpleConsumer({"bootstrap.servers": bs, "isolation.level": "read_committed"}) as client:
        end = client.latest_offset(topic, 0)  # the last stable offset
    consumer = OdradekConsumer({"bootstrap.servers": bs, "isolation.level": "read_committed"})
    try:
        tp = OdradekTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        got: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT_S
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"read {len(got)} records, position below {end}"
            got.extend(record.value for record in consumer.poll(timeout_ms=200))
        return got
    finally:
        consumer.close()


def read_with_odradek_simple(bs: str, topic: str) -> list[bytes]:
    client = SimpleConsumer({"bootstrap.servers": bs, "isolation.level": "read_committed"})
    try:
        end = client.latest_offset(topic, 0)
        got: list[bytes] = []
        offset = 0
        while offset < end:
            messages = client.fetch(topic, 0, offset)
            if not messages:  # only markers or aborted batches were left in that read
                offset += 1
                continue
            got.extend(m.value for m in messages if m.value is not None)
            offset = messages[-1].offset + 1
        return got
    finally:
        client.close()


# --- tests ----------------------------------------------------------------------------------


def test_transactional_producers_commit_and_abort_for_every_reader(broker: Broker) -> None:
    bs = bootstrap(broker)
    produce_with_confluent(bs, "ck")
    produce_with_kafka_python(bs, "kp")
    asyncio.run(produce_with_aiokafka(bs, "aio"))
    produce_with_odradek(bs, "od")
    prefixes = ("ck", "kp", "aio", "od")
    expected = [value for prefix in prefixes for value in values(f"{prefix}-c", 0, 10)]
    wait_for_markers(bs, TOPIC)
    assert read_with_confluent(bs, TOPIC) == expected
    assert read_with_kafka_python(bs, TOPIC) == expected
    assert asyncio.run(read_with_aiokafka(bs, TOPIC)) == expected
    assert read_with_odradek(bs, TOPIC) == expected
    assert read_with_odradek_simple(bs, TOPIC) == expected
    everything = read_with_confluent(bs, TOPIC, committed=False)
    for prefix in prefixes:
        aborted = values(f"{prefix}-a", 0, 5)
        assert [value for value in everything if value in aborted] == aborted


def test_a_fenced_producer_cannot_commit(broker: Broker) -> None:
    bs = bootstrap(broker)
    topic = "txn-fenced"
    old = Producer({"bootstrap.servers": bs, "transactional.id": "fence-me"})
    old.init_transactions(TIMEOUT_S)
    old.begin_transaction()
    old.produce(topic, value=b"zombie", partition=0)
    assert old.flush(TIMEOUT_S) == 0
    new = Producer({"bootstrap.servers": bs, "transactional.id": "fence-me"})
    new.init_transactions(TIMEOUT_S)  # aborts the old producer's transaction
    new.begin_transaction()
    new.produce(topic, value=b"live", partition=0)
    new.commit_transaction(TIMEOUT_S)
    with pytest.raises(KafkaException) as refused:
        old.commit_transaction(TIMEOUT_S)
    error = refused.value.args[0]
    assert error.fatal() or "fenced" in error.str().lower(), error
    wait_for_markers(bs, topic)
    assert read_with_confluent(bs, topic) == [b"live"]


def test_an_odradek_producer_fenced_by_a_newer_one_cannot_commit(broker: Broker) -> None:
    bs = bootstrap(broker)
    topic = "txn-fenced-odradek"
    config = {"bootstrap.servers": bs, "transactional.id": "fence-odradek"}
    with OdradekProducer(config) as old, OdradekProducer(config) as new:
        old.init_transactions()
        old.begin_transaction()
        old.send(topic, b"zombie", partition=0)
        old.flush()
        new.init_transactions()
        new.begin_transaction()
        new.send(topic, b"live", partition=0)
        new.commit_transaction()
        with pytest.raises(OdradekKafkaError) as refused:
            old.commit_transaction()
        assert refused.value.error_code in (
            ErrorCode.PRODUCER_FENCED,
            ErrorCode.INVALID_PRODUCER_EPOCH,
        )
    wait_for_markers(bs, topic)
    assert read_with_confluent(bs, topic) == [b"live"]


class Pipeline:
    """``txn_pipeline.py`` as a subprocess, its output lines collected as they come."""

    def __init__(self, bs: str, names: list[str], *extra: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(PIPELINE), bs, *names, *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines: list[str] = []
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.strip())

    def kill(self) -> None:
        """SIGKILL (by its pid) and reap it."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(TIMEOUT_S)
        self._pump.join(TIMEOUT_S)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.mark.parametrize("client", ["confluent-kafka", "odradek"])
def test_a_killed_consume_transform_produce_loop_yields_each_input_once(
    broker: Broker, client: str
) -> None:
    bs = bootstrap(broker)
    names = [f"ctp-{client}-{what}" for what in ("in", "out", "group", "tid")]
    inputs = [f"in-{i}".encode() for i in range(60)]
    producer = Producer({"bootstrap.servers": bs})
    for value in inputs:
        producer.produce(names[0], value=value, partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    extra = ("--odradek",) if client == "odradek" else ()
    first = Pipeline(bs, names, *extra, "--pause-after", "3")
    try:
        wait_until(lambda: "PAUSED" in first.lines, TIMEOUT_S, "the pipeline to pause")
    finally:
        first.kill()  # in the middle of its fourth transaction
    assert sum(line.startswith("COMMITTED") for line in first.lines) == 3
    second = Pipeline(bs, names, *extra)
    try:
        wait_until(lambda: "DONE" in second.lines, 60, "the restarted pipeline to finish")
    finally:
        second.kill()
    assert read_with_confluent(bs, names[1]) == [b"out-" + value for value in inputs]
