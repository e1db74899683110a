"""Consumer throughput of odradek's ``Consumer`` next to kafka-python, aiokafka and
confluent-kafka, reading the same topic from the same ``odradek serve`` (a child process).

(The consumer half of issue 4's ``bench/client_perf.py``; kept in its own file while that one is
being changed.) Workloads: 500,000 records of 100 B and 100,000 of 1 KB in a 1-partition topic,
written once per workload by confluent-kafka (uncompressed). Each client runs in its own child
process, assigns partition 0 without a group, seeks to the beginning, and the clock runs from
the first poll until the last record has been returned to the caller (values touched, default
fetch settings otherwise). ``--repeat N`` keeps each client's best of N runs.

    .venv/bin/python bench/consumer_perf.py [--scale 1.0] [--repeat 1]
        [--clients odradek,kafka-python,aiokafka,confluent-kafka]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import warnings
from collections.abc import Callable
from typing import Final

from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import OFFSET_BEGINNING
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from _client_bench import main, measure
from odradek import Consumer, TopicPartition

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

WORKLOADS: Final = ((500_000, 100), (100_000, 1_000))


def run_odradek(bootstrap: str, topic: str, records: int) -> float:
    consumer = Consumer(bootstrap_servers=bootstrap)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    seen = 0
    started = time.perf_counter()
    while seen < records:
        for record in consumer.poll(1_000):
            _ = record.value
            seen += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed


def run_kafka_python(bootstrap: str, topic: str, records: int) -> float:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = KafkaTopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    seen = 0
    started = time.perf_counter()
    while seen < records:
        for batch in consumer.poll(1_000).values():
            for record in batch:
                _ = record.value
                seen += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed


def run_aiokafka(bootstrap: str, topic: str, records: int) -> float:
    async def main() -> float:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        tp = AioTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        seen = 0
        started = time.perf_counter()
        while seen < records:
            for batch in (await consumer.getmany(timeout_ms=1_000)).values():
                for record in batch:
                    _ = record.value
                    seen += 1
        elapsed = time.perf_counter() - started
        await consumer.stop()
        return elapsed

    return asyncio.run(main())


def run_confluent_kafka(bootstrap: str, topic: str, records: int) -> float:
    consumer = ConfluentConsumer(
        {"bootstrap.servers": bootstrap, "group.id": "perf", "enable.auto.commit": False}
    )
    consumer.assign([ConfluentTopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen = 0
    started = time.perf_counter()
    while seen < records:
        for message in consumer.consume(10_000, 1.0):
            if message.error() is None:
                _ = message.value()
                seen += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed


RUNNERS: dict[str, Callable[[str, str, int], float]] = {
    "odradek": run_odradek,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
    "confluent-kafka": run_confluent_kafka,
}


def fill(bootstrap: str, topic: str, records: int, size: int) -> None:
    producer = ConfluentProducer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10_000}
    )
    value = os.urandom(size)
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(60) == 0


def child(args: argparse.Namespace) -> float:
    return RUNNERS[args.run](args.bootstrap, args.topic, args.records)


def start_workload(bootstrap: str, records: int, size: int) -> Callable[[str, int], float]:
    """One topic, filled once, that every client reads from the beginning in every run."""
    topic = f"consume-{size}"
    fill(bootstrap, topic, records, size)

    def time_run(client: str, _rep: int) -> float:
        return measure(__file__, client, bootstrap, topic, records, size, timeout=600)

    return time_run


if __name__ == "__main__":
    main(child, "consumer, 1 partition", "odradek-consumer-perf-", WORKLOADS, start_workload)
