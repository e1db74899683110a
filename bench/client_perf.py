"""Producer throughput of odradek's client next to kafka-python, aiokafka and confluent-kafka,
against the same ``odradek serve`` (a child process) in the same run. The consumer part comes
with the consumer.

Workloads: 500,000 records of 100 B and 100,000 records of 1 KB to a 1-partition topic,
``acks=1``, every client otherwise at its defaults (kafka-python: ``enable_idempotence=False``,
which ``acks=1`` requires; its default is idempotence with ``acks=all``). Each measurement runs
in its own child process (a fresh interpreter: one client's threads cannot slow another), on
its own topic, warmed up first (metadata and connection: one record sent and acknowledged);
the clock runs from the first timed ``send`` until every record is acknowledged (``flush``).
Records/s and MB/s (values only), then odradek's ratio to each other client. The machine's
other load shows in the figures: ``--repeat N`` keeps each client's best of N runs.

Two more clients on request (``--clients``): ``odradek-idempotent`` and
``kafka-python-idempotent``, each with ``acks=all`` and idempotence (odradek's defaults):
what a producer id and per-batch sequences cost next to the ``acks=1`` runs.

    .venv/bin/python bench/client_perf.py [--scale 1.0] [--repeat 1]
        [--clients odradek,kafka-python,aiokafka,confluent-kafka]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import warnings
from collections.abc import Callable

from aiokafka import AIOKafkaProducer
from confluent_kafka import Producer as ConfluentProducer

from _client_bench import main, measure
from odradek import Producer

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaProducer

WORKLOADS = ((500_000, 100), (100_000, 1024))
WARMUP_TIMEOUT_S = 30.0


# ---------------------------------------------------------------------- one client (child side)


def run_odradek(
    bootstrap: str, topic: str, records: int, value: bytes, *, idempotent: bool = False
) -> float:
    # acks=1 switches idempotence off (it was not asked for); the defaults are acks=all with it.
    producer = Producer(
        {"bootstrap.servers": bootstrap}
        if idempotent
        else {"bootstrap.servers": bootstrap, "acks": 1}
    )
    try:
        producer.send(topic, value).result(WARMUP_TIMEOUT_S)
        send = producer.send
        started = time.perf_counter()
        for _ in range(records):
            send(topic, value)
        producer.flush()
        return time.perf_counter() - started
    finally:
        producer.close()


def run_kafka_python(
    bootstrap: str, topic: str, records: int, value: bytes, *, idempotent: bool = False
) -> float:
    producer = (
        KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
        if idempotent
        else KafkaProducer(bootstrap_servers=bootstrap, acks=1, enable_idempotence=False)
    )
    try:
        producer.send(topic, value).get(WARMUP_TIMEOUT_S)
        send = producer.send
        started = time.perf_counter()
        for _ in range(records):
            send(topic, value)
        producer.flush()
        return time.perf_counter() - started
    finally:
        producer.close()


def run_aiokafka(bootstrap: str, topic: str, records: int, value: bytes) -> float:
    async def main() -> float:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1)
        await producer.start()
        try:
            await (await producer.send(topic, value))
            send = producer.send
            started = time.perf_counter()
            for _ in range(records):
                await send(topic, value)
            await producer.flush()
            return time.perf_counter() - started
        finally:
            await producer.stop()

    return asyncio.run(main())


def run_confluent_kafka(bootstrap: str, topic: str, records: int, value: bytes) -> float:
    producer = ConfluentProducer({"bootstrap.servers": bootstrap, "acks": 1})
    producer.produce(topic, value)
    if producer.flush(WARMUP_TIMEOUT_S):
        raise RuntimeError("confluent-kafka: warm-up record not delivered")
    produce = producer.produce
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:  # its queue is full (queue.buffering.max.messages)
                producer.poll(0.001)
    producer.flush()
    return time.perf_counter() - started


RUNNERS: dict[str, Callable[[str, str, int, bytes], float]] = {
    "odradek": run_odradek,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
    "confluent-kafka": run_confluent_kafka,
    "odradek-idempotent": lambda *args: run_odradek(*args, idempotent=True),
    "kafka-python-idempotent": lambda *args: run_kafka_python(*args, idempotent=True),
}


# ---------------------------------------------------------------------- orchestration


def child(args: argparse.Namespace) -> float:
    return RUNNERS[args.run](args.bootstrap, args.topic, args.records, os.urandom(args.size))


def measure_retrying(client: str, bootstrap: str, topic: str, records: int, size: int) -> float:
    """``measure``, run once more (on a fresh topic) if the child failed; the failure is shown."""
    try:
        return measure(__file__, client, bootstrap, topic, records, size)
    except RuntimeError as error:
        print(f"  ({error}; running it again)", file=sys.stderr, flush=True)
        return measure(__file__, client, bootstrap, f"{topic}-again", records, size)


def start_workload(bootstrap: str, records: int, size: int) -> Callable[[str, int], float]:
    """Each client's runs produce to topics of their own."""

    def time_run(client: str, rep: int) -> float:
        topic = f"perf-{client}-{size}-{rep}"
        return measure_retrying(client, bootstrap, topic, records, size)

    return time_run


if __name__ == "__main__":
    main(child, "producer, acks=1, 1 partition", "odradek-client-perf-", WORKLOADS, start_workload)
