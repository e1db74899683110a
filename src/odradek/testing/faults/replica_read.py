"""The final reads of a fault run: every partition of a topic from every one of its replicas,
up to the leader's high watermark, as ``ReplicaLog`` values for the checker.

How: the topic's metadata (replicas and leader of each partition) and each leader's high
watermark come from the brokers (a confluent-kafka consumer: Metadata and ListOffsets); each
replica's records come from the segment files in its broker's log directory, decoded with
``odradek.records`` (whole, CRC-checked batches only: a batch being written at the end of a
segment is left out). Call it after the workload stopped and the faults healed, when the
full ISR has the records below the high watermark; ``read_replicas`` re-reads until every
replica holds every offset below the high watermark or ``timeout_s`` passes — then it
returns what it read, and the checker reports the replicas that fall short as divergent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from odradek.errors import KafkaError
from odradek.records.batch import validate_batch
from odradek.records.codec import decode_records
from odradek.testing.faults.history import ReplicaLog

_RETRY_S = 0.2


@dataclass(frozen=True, slots=True)
class PartitionLayout:
    """What the brokers said of one partition: its replicas, leader and high watermark."""

    partition: int
    replicas: tuple[int, ...]
    leader: int
    high_watermark: int


def partition_layouts(
    bootstrap_servers: str, topic: str, timeout_s: float = 30.0
) -> list[PartitionLayout]:
    """Every partition of ``topic`` with its replicas, leader and the leader's high
    watermark.

    Raises:
        RuntimeError: the metadata or a watermark could not be read in time.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"replica-read-{time.monotonic_ns()}",
            "enable.auto.commit": False,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s)
        described = metadata.topics.get(topic)
        if described is None or described.error is not None:
            raise RuntimeError(f"no metadata for {topic}: {described and described.error}")
        layouts = []
        for partition, info in sorted(described.partitions.items()):
            _, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=timeout_s, cached=False
            )
            layouts.append(PartitionLayout(partition, tuple(info.replicas), info.leader, high))
        return layouts
    finally:
        consumer.close()


def read_log_dir(log_dir: Path, topic: str, partition: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every record in the whole batches of one partition's segment
    files under ``log_dir``, in offset order (empty when the directory is missing)."""
    directory = log_dir / f"{topic}-{partition}"
    records: list[tuple[int, bytes]] = []
    for path in sorted(directory.glob("*.log")):
        data = path.read_bytes()
        position = 0
        while position < len(data):
            try:
                header = validate_batch(data, position)
                decoded = decode_records(data, header, position)
            except (KafkaError, ValueError, IndexError):
                break  # a batch being written (or the zeros after the last one)
            records.extend((r.offset, r.value or b"") for r in decoded)
            position += header.size
    return records


def read_replicas(
    layouts: list[PartitionLayout],
    topic: str,
    log_dir: Callable[[int], Path],
    timeout_s: float = 60.0,
) -> list[ReplicaLog]:
    """Every replica of every partition in ``layouts``, below its leader's high watermark;
    see the module docstring for the retry rule."""
    deadline = time.monotonic() + timeout_s
    while True:
        logs = [
            ReplicaLog(
                layout.partition,
                broker_id,
                layout.high_watermark,
                tuple(
                    (offset, value)
                    for offset, value in read_log_dir(log_dir(broker_id), topic, layout.partition)
                    if offset < layout.high_watermark
                ),
            )
            for layout in layouts
            for broker_id in layout.replicas
        ]
        if all(_complete(log) for log in logs) or time.monotonic() > deadline:
            return logs
        time.sleep(_RETRY_S)


def _complete(log: ReplicaLog) -> bool:
    offsets = {offset for offset, _ in log.records}
    start = min(offsets, default=0)
    return all(offset in offsets for offset in range(start, log.high_watermark))
