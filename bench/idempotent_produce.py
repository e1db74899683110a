"""What enforcing idempotence costs on the produce path: idempotent batches against plain ones,
measured in the same run.

Two levels, each as the ratio idempotent / plain (1.00 = free):

- partition: ``Partition.append_as_leader`` over a real log of prebuilt batches of 1, 10 and 130
  records of 100 B (≈ 0.1, 1 and 16 KB) — plain batches (producer id -1) take the log's fast
  path alone; idempotent ones (one producer, sequences in order) also parse the header, check
  the sequence and record the batch. Best of ``--rounds`` alternating rounds.
- broker: confluent-kafka producing ``--records`` × 100 B to an embedded broker over
  127.0.0.1 with ``enable.idempotence`` false (acks=all) and true (acks=all, as idempotence
  requires), records/s, best of ``--rounds`` alternating rounds.

    .venv/bin/python bench/idempotent_produce.py [--appends 20000] [--records 200000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import tempfile
import time
from typing import Any

from confluent_kafka import Producer

from odradek import Broker
from odradek._clock import SYSTEM_CLOCK
from odradek._types import TopicPartition
from odradek.broker.replication.partition import Partition
from odradek.records.batch import CRC_OFFSET, compute_crc
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage.config import LogConfig
from odradek.storage.log import Log

TP = TopicPartition("bench", 0)
_SEQUENCE = struct.Struct(">i")
_SEQUENCE_OFFSET = 53


def batches(records: int, count: int, producer_id: int) -> list[bytes]:
    """``count`` batches of ``records`` × 100 B; with a producer id, sequences in order."""
    template = bytearray(
        build_batch(
            [SimpleRecord(1_700_000_000_000 + i, None, os.urandom(100)) for i in range(records)],
            producer_id=producer_id,
            producer_epoch=0 if producer_id >= 0 else -1,
            base_sequence=0 if producer_id >= 0 else -1,
        )
    )
    if producer_id < 0:
        return [bytes(template)] * count
    made = []
    for index in range(count):
        _SEQUENCE.pack_into(template, _SEQUENCE_OFFSET, (index * records) % 2**31)
        struct.pack_into(">I", template, CRC_OFFSET, compute_crc(template, 0, len(template)))
        made.append(bytes(template))
    return made


def append_rate(data: list[bytes]) -> float:
    """Appends per second of ``data`` through a leader partition over a fresh log."""
    directory = tempfile.mkdtemp(prefix="odradek-idem-bench-")
    log = Log.open(directory, TP, LogConfig(), clock=SYSTEM_CLOCK)
    partition = Partition(TP, log, broker_id=0, replicas=[0], clock=SYSTEM_CLOCK)
    try:
        append = partition.append_as_leader
        start = time.perf_counter()
        for batch in data:
            append(batch)
        elapsed = time.perf_counter() - start
    finally:
        log.close()
        shutil.rmtree(directory, ignore_errors=True)
    return len(data) / elapsed


def produce_rate(bootstrap: str, topic: str, records: int, idempotent: bool) -> float:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": idempotent,
            "linger.ms": 5,
            "batch.size": 1_000_000,
        }
    )
    value = os.urandom(100)
    failed: list[Any] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failed.append(error)

    producer.produce(topic, value, partition=0)  # metadata and producer id before timing
    producer.flush(30)
    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=0, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    elapsed = time.perf_counter() - start
    assert not failed, failed[:3]
    return records / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=20_000)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    print(f"partition.append_as_leader, appends/s (best of {args.rounds})")
    for records in (1, 10, 130):
        plain = batches(records, args.appends, -1)
        idempotent = batches(records, args.appends, 7)
        best = {"plain": 0.0, "idempotent": 0.0}
        for _ in range(args.rounds):
            best["plain"] = max(best["plain"], append_rate(plain))
            best["idempotent"] = max(best["idempotent"], append_rate(idempotent))
        print(
            f"  {records:4d} records/batch: plain {best['plain']:10,.0f}  idempotent "
            f"{best['idempotent']:10,.0f}  ratio {best['idempotent'] / best['plain']:.2f}"
        )

    print(f"confluent-kafka → embedded broker, {args.records} × 100 B, records/s")
    with Broker(config={"num.partitions": 1}) as broker:
        best = {"plain": 0.0, "idempotent": 0.0}
        for round_ in range(args.rounds):
            for name, idempotent in (("plain", False), ("idempotent", True)):
                rate = produce_rate(
                    broker.bootstrap_servers, f"{name}-{round_}", args.records, idempotent
                )
                best[name] = max(best[name], rate)
        print(
            f"  plain (acks=all) {best['plain']:10,.0f}  idempotent {best['idempotent']:10,.0f}"
            f"  ratio {best['idempotent'] / best['plain']:.2f}"
        )


if __name__ == "__main__":
    main()
