"""The exactly-once sink (``deliveryGuarantee=exactlyOnce``, ``spark.exactly_once``): a
streaming query whose driver is SIGKILLed in the middle of a micro-batch and restarted from its
checkpoint leaves each input row once in the output read with read_committed (the same kill
with the at-least-once sink duplicates the batch: the test can tell); task attempts of one
batch fence each other and a later one sends nothing; a batch write lands once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import BinaryType, StructField, StructType

from odradek import AdminClient, Broker, Consumer, NewTopic, Producer, SimpleConsumer
from odradek.client import TopicPartition
from odradek.errors import ConfigError, KafkaError
from odradek.spark.exactly_once import (
    TaskTransaction,
    commit_task,
    open_task_producer,
)
from odradek.spark.options import parse_sink_options
from odradek.spark.writer import BatchWriter

pytestmark = [pytest.mark.spark]

DRIVER = Path(__file__).with_name("_eos_driver.py")
#: What the driver's query reads: 2 partitions, 3 micro-batches of 200 rows.
INPUT_ROWS = 600
#: A deadline for each wait: a driver's Spark session and first micro-batch take ~40 s on an
#: idle 2-core machine and several minutes on a loaded one.
TIMEOUT_S = 480.0


@pytest.fixture(scope="module")
def admin(broker: Broker) -> Iterator[AdminClient]:
    client = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    yield client
    client.close()


def new_topic(admin: AdminClient, prefix: str, partitions: int) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, partitions, 1)]).all()
    return name


def wait_for(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def read_committed(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    """Every value of the topic up to its last stable offsets, read with read_committed."""
    config = {"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}
    with SimpleConsumer(config) as simple:
        ends = {p: simple.latest_offset(topic, p) for p in range(partitions)}
    consumer = Consumer(config)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        values: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT_S
        while any(consumer.position(tp) < ends[tp.partition] for tp in tps):
            assert time.monotonic() < deadline, f"read {len(values)} records of {topic}"
            values.extend(r.value for r in consumer.poll(timeout_ms=200) if r.value is not None)
        return values
    finally:
        consumer.close()


def produce_input(bootstrap: str, topic: str) -> list[bytes]:
    values = [f"row-{i}".encode() for i in range(INPUT_ROWS)]
    producer = Producer({"bootstrap.servers": bootstrap})
    try:
        for i, value in enumerate(values):
            producer.send(topic, value, f"k{i}".encode(), partition=i % 2)
        producer.flush()
    finally:
        producer.close()
    return values


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (from /proc), children first."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def run_driver(
    bootstrap: str,
    source: str,
    output: str,
    checkpoint: Path,
    guarantee: str,
    block: str,
    ready: Path,
) -> subprocess.Popen[bytes]:
    """The driver, its output in ``<checkpoint>.<block>.log``."""
    with open(f"{checkpoint}.{block}.log", "wb") as log:
        return subprocess.Popen(
            [
                sys.executable,
                str(DRIVER),
                bootstrap,
                source,
                output,
                str(checkpoint),
                guarantee,
                block,
                str(ready),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def log_tail(checkpoint: Path, block: str) -> str:
    return Path(f"{checkpoint}.{block}.log").read_text(errors="replace")[-3000:]


def kill_driver(driver: subprocess.Popen[bytes]) -> None:
    """SIGKILL the driver; its JVM and Python workers (started by it) follow it out, and
    any still there after the deadline are killed by their PIDs."""
    below = descendants(driver.pid)
    driver.send_signal(signal.SIGKILL)
    driver.wait(TIMEOUT_S)
    deadline = time.monotonic() + 60
    while any(alive(p) for p in below) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in below:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def killed_and_restarted(
    broker: Broker, admin: AdminClient, tmp_path: Path, guarantee: str, block: str
) -> tuple[list[bytes], list[bytes]]:
    """Runs the query until it blocks as ``block`` says in micro-batch 1, SIGKILLs the driver,
    restarts it from the checkpoint to the end; returns (input values, committed output)."""
    bootstrap = broker.bootstrap_servers
    source = new_topic(admin, "eos-in", 2)
    output = new_topic(admin, "eos-out", 2)
    values = produce_input(bootstrap, source)
    checkpoint = tmp_path / "checkpoint"
    ready = tmp_path / "ready"
    driver = run_driver(bootstrap, source, output, checkpoint, guarantee, block, ready)
    try:
        wait_for(lambda: ready.exists() or driver.poll() is not None, "the query to block")
        assert driver.poll() is None, log_tail(checkpoint, block)
        if block == "task":  # partition 0's task commits while partition 1's stays open
            group = f"odradek-spark-{query_id(checkpoint)}-0"
            wait_for(lambda: committed_marker(admin, group, output) == 2, "task 0's commit")
    finally:
        kill_driver(driver)
    # The kill came inside micro-batch 1: planned, not in the commit log; the restart replays it.
    assert (checkpoint / "offsets" / "1").exists()
    assert not (checkpoint / "commits" / "1").exists()
    restart = run_driver(bootstrap, source, output, checkpoint, guarantee, "none", ready)
    try:
        restart.wait(TIMEOUT_S)
    finally:
        if restart.poll() is None:
            kill_driver(restart)
    assert restart.returncode == 0, log_tail(checkpoint, "none")
    assert (checkpoint / "commits" / "2").exists()
    return values, read_committed(bootstrap, output, 2)


def query_id(checkpoint: Path) -> str:
    metadata = (checkpoint / "metadata").read_text()
    return metadata.split('"id":"', 1)[1].split('"', 1)[0]


def committed_marker(admin: AdminClient, group: str, topic: str) -> int:
    marker = TopicPartition(topic, 0)
    try:
        committed = admin.list_group_offsets(group, [marker])[marker]
    except KafkaError:
        return -1
    return -1 if committed is None else committed.offset


@pytest.mark.slow
@pytest.mark.timeout(1800)  # two driver runs, each starting Spark
@pytest.mark.parametrize("block", ["commit", "task"])
def test_a_killed_and_restarted_query_writes_each_row_once(
    broker: Broker, admin: AdminClient, tmp_path: Path, block: str
) -> None:
    values, output = killed_and_restarted(broker, admin, tmp_path, "exactlyOnce", block)
    assert len(output) == len(values)
    assert Counter(output) == Counter(values)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_same_kill_duplicates_with_the_at_least_once_sink(
    broker: Broker, admin: AdminClient, tmp_path: Path
) -> None:
    values, output = killed_and_restarted(broker, admin, tmp_path, "atLeastOnce", "commit")
    counts = Counter(output)
    assert set(counts) == set(values)
    assert sum(1 for n in counts.values() if n == 2) == 200  # micro-batch 1, written twice


def test_task_attempts_fence_each_other_and_a_later_one_sends_nothing(
    broker: Broker, admin: AdminClient
) -> None:
    bootstrap = broker.bootstrap_servers
    topic = new_topic(admin, "eos-task", 1)
    config = {"bootstrap.servers": bootstrap, "acks": "all"}
    task = TaskTransaction(f"eos-test-{uuid.uuid4().hex[:8]}-0", batch_id=4)
    zombie = open_task_producer(config, task, topic)
    assert zombie is not None
    zombie.send(topic, b"zombie").result(30)
    retry = open_task_producer(config, task, topic)  # fences the zombie, aborting its rows
    assert retry is not None
    with pytest.raises(KafkaError):
        commit_task(zombie, task, topic)
    zombie.close(0)
    retry.send(topic, b"retry").result(30)
    commit_task(retry, task, topic)
    retry.close()
    assert committed_marker(admin, task.group_id, topic) == 5
    # Another attempt of batch 4 finds it committed; batch 5 is new work.
    assert open_task_producer(config, task, topic) is None
    later = open_task_producer(config, TaskTransaction(task.transactional_id, 5), topic)
    assert later is not None
    later.abort_transaction()
    later.close()
    assert read_committed(bootstrap, topic, 1) == [b"retry"]


def test_a_batch_write_lands_once_and_leaves_a_marker_per_task(
    spark: SparkSession, broker: Broker, admin: AdminClient
) -> None:
    bootstrap = broker.bootstrap_servers
    topic = new_topic(admin, "eos-batch", 2)
    (
        spark.range(0, 3000, numPartitions=3)
        .selectExpr("cast(id as string) as value")
        .write.format("odradek")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("deliveryGuarantee", "exactlyOnce")
        .mode("append")
        .save()
    )
    output = read_committed(bootstrap, topic, 2)
    assert Counter(output) == Counter(str(i).encode() for i in range(3000))
    groups = [g.group_id for g in admin.list_groups() if g.group_id.startswith("odradek-spark-")]
    written = [g for g in groups if committed_marker(admin, g, topic) == 1]
    assert len(written) == 3  # one progress group per task, batch 0 done


def test_exactly_once_needs_acks_all_before_any_task_runs() -> None:
    schema = StructType([StructField("value", BinaryType())])
    options = {"kafka.bootstrap.servers": "127.0.0.1:9", "topic": "t", "kafka.acks": "1"}
    BatchWriter(parse_sink_options(options), schema)  # at-least-once takes acks=1
    with pytest.raises(ConfigError, match=r"transactional\.id needs acks=all"):
        BatchWriter(parse_sink_options({**options, "deliveryGuarantee": "exactlyOnce"}), schema)
