"""Acknowledged writes survive ``kill -9`` of the broker process (confluent-kafka, acks=all).

The broker runs as a separate process (``odradek serve`` on a data directory of the test's own),
so it can be killed without a clean shutdown: no flush, no checkpoints, no clean-shutdown
marker; its restart on the same directory goes through log recovery. The log is not fsynced
per write, but a killed process loses nothing the kernel already has, so every acknowledged
record must come back, at the offset it was acknowledged with, in send order, exactly once.

- ``test_acknowledged_records_survive_kill_between_produce_and_consume``: produce and flush
  (everything acknowledged), kill -9, restart, read everything.
- ``test_acknowledged_records_survive_kill_during_produce``: kill -9 while the producer has
  requests in flight (retries off, so a record appears at most once whatever the client saw);
  the acknowledged ones must all be there; unacknowledged ones may or may not be.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.storage.manager import CLEAN_SHUTDOWN_FILE

pytestmark = pytest.mark.interop

TOPIC = "durable"
PARTITIONS = 3
START_TIMEOUT_S = 30.0
SERVING = re.compile(rb"serving on 127\.0\.0\.1:(\d+)")


class BrokerProcess:
    """``odradek serve`` in a child process; stdout and stderr go to files in ``work_dir``."""

    def __init__(self, data_dir: Path, work_dir: Path) -> None:
        self.data_dir = data_dir
        self.work_dir = work_dir
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.starts = 0

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        assert self.process is None
        self.starts += 1
        stdout_path = self.work_dir / f"broker-{self.starts}.out"
        stderr_path = self.work_dir / f"broker-{self.starts}.err"
        with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "odradek.cli.main",
                    "serve",
                    "-o",
                    "listeners=PLAINTEXT://127.0.0.1:0",
                    "-o",
                    f"log.dirs={self.data_dir}",
                    "-o",
                    f"num.partitions={PARTITIONS}",
                ],
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (match := SERVING.search(stdout_path.read_bytes())):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"the broker did not start: {stderr_path.read_text()[-2000:]}")
            time.sleep(0.02)
        self.port = int(match.group(1))

    def kill(self) -> None:
        """``kill -9`` by PID and reap the process; the log directory is left unclean (no
        clean-shutdown marker), so the next start recovers the logs."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        assert self.process.wait(10) == -signal.SIGKILL
        self.process = None
        assert not (self.data_dir / CLEAN_SHUTDOWN_FILE).exists()

    def stop(self) -> None:
        """SIGTERM by PID (a clean shutdown), SIGKILL if it does not exit in time."""
        if self.process is None:
            return
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self.process = None


@pytest.fixture
def broker_process(tmp_path: Path) -> Iterator[BrokerProcess]:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    broker = BrokerProcess(data_dir, tmp_path)
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()


@dataclass
class Acks:
    """Delivery reports: ``value -> (partition, offset)`` for acknowledged records."""

    acked: dict[bytes, tuple[int, int]] = field(default_factory=dict)
    failed: list[KafkaError] = field(default_factory=list)

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.failed.append(error)
            return
        value = message.value()
        assert value not in self.acked, "one record acknowledged twice"
        self.acked[value] = (message.partition(), message.offset())


def create_topic(bootstrap_servers: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(10)


def new_producer(bootstrap_servers: str, **config: str | int | bool) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap_servers,
            "acks": "all",
            "linger.ms": 2,
            "batch.num.messages": 50,
            "compression.type": "lz4",
            **config,
        }
    )


def value_of(seq: int) -> bytes:
    return f"record-{seq:06d}|".encode() + b"d" * (seq % 97)


def seq_of(value: bytes) -> int:
    return int(value.split(b"|")[0].removeprefix(b"record-"))


def read_everything(bootstrap_servers: str) -> list[tuple[int, int, bytes | None, bytes]]:
    """``(partition, offset, key, value)`` of every record, read by assignment from offset 0
    up to each partition's high watermark after the restart."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": "durability-check",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        high = {
            index: consumer.get_watermark_offsets(TopicPartition(TOPIC, index), timeout=10)[1]
            for index in range(PARTITIONS)
        }
        consumer.assign([TopicPartition(TOPIC, index, 0) for index in range(PARTITIONS)])
        records: list[tuple[int, int, bytes | None, bytes]] = []
        deadline = time.monotonic() + 30
        while len(records) < sum(high.values()):
            assert time.monotonic() < deadline, f"read {len(records)} of {sum(high.values())}"
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            records.append((message.partition(), message.offset(), message.key(), message.value()))
        return records
    finally:
        consumer.close()


def check_log(records: list[tuple[int, int, bytes | None, bytes]], acks: Acks, sent: int) -> None:
    """Every acknowledged record at its acknowledged offset; each partition's offsets
    contiguous from 0 and in send order; nothing twice; nothing that was never sent."""
    by_value = {}
    for partition, offset, key, value in records:
        assert value not in by_value, f"{value!r} stored twice"
        by_value[value] = (partition, offset)
        seq = seq_of(value)
        assert 0 <= seq < sent
        assert value == value_of(seq)
        assert key == str(seq % 7).encode()
    lost = {value: where for value, where in acks.acked.items() if value not in by_value}
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {next(iter(lost.items()))}"
    moved = {v: (where, by_value[v]) for v, where in acks.acked.items() if by_value[v] != where}
    assert not moved, f"acknowledged records at other offsets: {list(moved.items())[:5]}"
    for index in range(PARTITIONS):
        in_partition = sorted((o, v) for p, o, _k, v in records if p == index)
        assert [o for o, _v in in_partition] == list(range(len(in_partition)))
        seqs = [seq_of(v) for _o, v in in_partition]
        assert seqs == sorted(seqs), f"partition {index} out of send order"


def test_acknowledged_records_survive_kill_between_produce_and_consume(
    broker_process: BrokerProcess,
) -> None:
    create_topic(broker_process.bootstrap_servers)
    producer = new_producer(broker_process.bootstrap_servers)
    acks = Acks()
    count = 3000
    for seq in range(count):
        producer.produce(
            TOPIC, key=str(seq % 7).encode(), value=value_of(seq), on_delivery=acks.on_delivery
        )
        producer.poll(0)
    assert producer.flush(30) == 0
    producer.close()
    assert acks.failed == []
    assert len(acks.acked) == count

    broker_process.kill()
    broker_process.start()

    records = read_everything(broker_process.bootstrap_servers)
    assert len(records) == count
    check_log(records, acks, count)


def test_acknowledged_records_survive_kill_during_produce(
    broker_process: BrokerProcess,
) -> None:
    create_topic(broker_process.bootstrap_servers)
    # No retries: a record the broker stored whose acknowledgement the kill swallowed is not
    # sent again, so any duplicate would be the broker's doing.
    producer = new_producer(
        broker_process.bootstrap_servers,
        retries=0,
        **{"enable.idempotence": False, "message.timeout.ms": 5000},
    )
    acks = Acks()
    sent = 0
    deadline = time.monotonic() + 30
    # Keep requests in flight; kill once a good number have been acknowledged.
    while len(acks.acked) < 2000:
        assert time.monotonic() < deadline, "the producer made no progress"
        for _ in range(100):
            producer.produce(
                TOPIC,
                key=str(sent % 7).encode(),
                value=value_of(sent),
                on_delivery=acks.on_delivery,
            )
            sent += 1
        producer.poll(0)
    broker_process.kill()
    acked_at_kill = len(acks.acked)
    # Every outstanding record now fails (connection refused, then the message timeout).
    producer.flush(15)
    assert len(producer) == 0
    producer.close()
    assert len(acks.acked) + len(acks.failed) == sent
    assert len(acks.acked) >= acked_at_kill

    broker_process.start()
    records = read_everything(broker_process.bootstrap_servers)
    assert len(records) >= len(acks.acked)
    check_log(records, acks, sent)
