"""A group consumer for the group interop tests, run as a subprocess (so a test can SIGKILL it).

    python group_member.py LIBRARY BOOTSTRAP TOPIC GROUP

LIBRARY is confluent-kafka, kafka-python or aiokafka. Prints one JSON object a line:
``{"assignment": [partitions]}`` whenever the assignment changes, ``{"record": [partition,
offset]}`` for each record, ``{"committed": {partition: offset}}`` after each synchronous
commit (the next offset to read). Runs until killed.
"""

# Each runner imports only its own library: one process, one client.
# ruff: noqa: PLC0415

from __future__ import annotations

import asyncio
import json
import sys
import warnings
from typing import Any

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500


def emit(**event: Any) -> None:
    print(json.dumps(event), flush=True)


class Tracker:
    """Emits assignment changes and records; returns the offsets to commit."""

    def __init__(self) -> None:
        self.assignment: list[int] | None = None

    def assigned(self, partitions: list[int]) -> None:
        partitions = sorted(partitions)
        if partitions != self.assignment:
            self.assignment = partitions
            emit(assignment=partitions)


def run_confluent(bootstrap: str, topic: str, group: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            "partition.assignment.strategy": "range",
        }
    )
    consumer.subscribe([topic])
    tracker = Tracker()
    while True:
        messages = consumer.consume(100, 0.1)
        tracker.assigned([tp.partition for tp in consumer.assignment()])
        positions: dict[int, int] = {}
        for message in messages:
            if message.error():
                continue
            emit(record=[message.partition(), message.offset()])
            positions[message.partition()] = message.offset() + 1
        if positions:
            offsets = [TopicPartition(topic, p, o) for p, o in positions.items()]
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
            except Exception as error:  # a rebalance in between: the next owner re-reads
                emit(commit_failed=str(error))
                continue
            emit(committed=positions)


def run_kafka_python(bootstrap: str, topic: str, group: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
    )
    tracker = Tracker()
    while True:
        # Not 100 ms: kafka-python 3.0 can lose a completed join's assignment when a short
        # poll's timer runs out under load (as tests/cli/test_groups.py found).
        batches = consumer.poll(timeout_ms=1000)
        tracker.assigned([tp.partition for tp in consumer.assignment()])
        positions: dict[int, int] = {}
        for tp, records in batches.items():
            for record in records:
                emit(record=[tp.partition, record.offset])
                positions[tp.partition] = record.offset + 1
        if positions:
            offsets = {
                TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in positions.items()
            }
            try:
                consumer.commit(offsets)
            except Exception as error:
                emit(commit_failed=str(error))
                continue
            emit(committed=positions)


async def run_aiokafka(bootstrap: str, topic: str, group: str) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
    )
    await consumer.start()
    tracker = Tracker()
    while True:
        batches = await consumer.getmany(timeout_ms=100)
        tracker.assigned([tp.partition for tp in consumer.assignment()])
        positions: dict[int, int] = {}
        for tp, records in batches.items():
            for record in records:
                emit(record=[tp.partition, record.offset])
                positions[tp.partition] = record.offset + 1
        if positions:
            offsets = {
                TopicPartition(topic, p): OffsetAndMetadata(o, "") for p, o in positions.items()
            }
            try:
                await consumer.commit(offsets)
            except Exception as error:
                emit(commit_failed=str(error))
                continue
            emit(committed=positions)


def main() -> None:
    library, bootstrap, topic, group = sys.argv[1:5]
    if library == "confluent-kafka":
        run_confluent(bootstrap, topic, group)
    elif library == "kafka-python":
        run_kafka_python(bootstrap, topic, group)
    elif library == "aiokafka":
        asyncio.run(run_aiokafka(bootstrap, topic, group))
    else:
        raise SystemExit(f"unknown library {library!r}")


if __name__ == "__main__":
    main()
