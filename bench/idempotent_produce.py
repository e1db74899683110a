"""What enforcing idempotence costs on the produce path: idempotent batches against plain ones,
measured in the same run.

Two levels, each as the median ratio idempotent / plain over paired rounds (1.00 = free):

- partition: ``Partition.append_as_leader`` over a real log of prebuilt batches of 1, 10 and 130
  records of 100 B (≈ 0.1, 1 and 16 KB) — plain batches (producer id -1) take the log's fast
  path alone; idempotent ones (one producer, sequences in order) also parse the header, check
  the sequence and record the batch. The two partitions append in turns of 200.
- broker: confluent-kafka producing ``--records`` × 100 B to an embedded broker over
  127.0.0.1 with ``enable.idempotence`` false and true (acks=all and 5 requests in flight
  for both, as idempotence requires), records/s, one after the other in each round, and how
  many records the client put in each stored batch (what the broker's per-batch cost is
  spread over).

    .venv/bin/python bench/idempotent_produce.py [--appends 20000] [--records 200000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import struct
import tempfile
import time
from typing import Any

from confluent_kafka import Producer

from odradek import Broker
from odradek._clock import SYSTEM_CLOCK
from odradek._types import TopicPartition
from odradek.broker.replication.partition import Partition
from odradek.records.batch import CRC_OFFSET, compute_crc, iter_batches
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


def append_rates(plain: list[bytes], idempotent: list[bytes], chunk: int) -> tuple[float, float]:
    """Appends per second of each list through its own leader partition over a fresh log,
    interleaved ``chunk`` appends at a time (both see the same load on a shared machine)."""
    directory = tempfile.mkdtemp(prefix="odradek-idem-bench-")
    partitions = []
    for name in ("plain", "idempotent"):
        log = Log.open(os.path.join(directory, name), TP, LogConfig(), clock=SYSTEM_CLOCK)
        partitions.append(Partition(TP, log, broker_id=0, replicas=[0], clock=SYSTEM_CLOCK))
    elapsed = [0.0, 0.0]
    try:
        for begin in range(0, len(plain), chunk):
            for kind, data in enumerate((plain, idempotent)):
                append = partitions[kind].append_as_leader
                start = time.perf_counter()
                for batch in data[begin : begin + chunk]:
                    append(batch)
                elapsed[kind] += time.perf_counter() - start
    finally:
        for partition in partitions:
            partition.log.close()
        shutil.rmtree(directory, ignore_errors=True)
    return len(plain) / elapsed[0], len(idempotent) / elapsed[1]


def produce_rate(bootstrap: str, topic: str, records: int, idempotent: bool) -> float:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": idempotent,
            # Idempotence caps it at 5: the plain producer too, so only idempotence differs.
            "max.in.flight.requests.per.connection": 5,
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


def records_per_batch(broker: Broker, topic: str) -> float:
    """How many records the client put in each batch the broker stored (the client's
    batching, which the broker's per-batch cost is spread over)."""
    topics = broker.app.topics
    assert topics is not None
    partition = topics.replicas.get(TopicPartition(topic, 0))
    assert partition is not None
    data = partition.log.read(0, 1 << 30).read_bytes()
    headers = [header for _, header in iter_batches(data)]
    return sum(h.records_count for h in headers) / len(headers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=20_000)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    print(f"partition.append_as_leader, appends/s (median of {args.rounds} paired rounds)")
    for records in (1, 10, 130):
        plain = batches(records, args.appends, -1)
        idempotent = batches(records, args.appends, 7)
        rounds = [append_rates(plain, idempotent, 200) for _ in range(args.rounds)]
        plain_rate = statistics.median(r[0] for r in rounds)
        idempotent_rate = statistics.median(r[1] for r in rounds)
        ratio = statistics.median(r[1] / r[0] for r in rounds)
        print(
            f"  {records:4d} records/batch: plain {plain_rate:10,.0f}  idempotent "
            f"{idempotent_rate:10,.0f}  ratio {ratio:.2f}"
        )

    print(f"confluent-kafka → embedded broker, {args.records} × 100 B, records/s (paired rounds)")
    with Broker(config={"num.partitions": 1}) as broker:
        pairs = []
        for round_ in range(args.rounds):
            rates = [
                produce_rate(broker.bootstrap_servers, f"{name}-{round_}", args.records, on)
                for name, on in (("plain", False), ("idempotent", True))
            ]
            pairs.append(rates)
            print(f"  round {round_}: plain {rates[0]:10,.0f}  idempotent {rates[1]:10,.0f}")
        ratio = statistics.median(idem / plain for plain, idem in pairs)
        print(f"  median ratio idempotent / plain (acks=all both) {ratio:.2f}")
        for name in ("plain", "idempotent"):
            counts = [records_per_batch(broker, f"{name}-{r}") for r in range(args.rounds)]
            print(f"  {name}: {statistics.mean(counts):,.0f} records per stored batch")


if __name__ == "__main__":
    main()
