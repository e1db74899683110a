"""Broker throughput and latency with confluent-kafka (librdkafka, the fastest client), next to
a bench-only null server measured in the same run.

The null server is the same broker (same protocol stack, same handlers) whose partition does
not store anything: Produce is answered at once, Fetch is served from batches prebuilt in
memory. Its figures are the client-and-network ceiling; the broker should reach ≥ 80 % of them.

Phases, for each server (each runs in its own process):
- produce 1,000,000 × 100 B and 200,000 × 1 KB records to one partition (acks=1, linger.ms 5,
  batch.size 1 MB) — records/s and MB/s;
- consume them back from offset 0 by assignment — records/s and MB/s;
- end-to-end latency at a steady 10,000 records/s for a few seconds (linger.ms 0; the
  consumer long-polls) — p50 and p99 in ms.

    .venv/bin/python bench/broker_perf.py [--scale 1.0] [--latency-seconds 5]

Flags (their defaults are the method): ``--sizes 1024`` runs one case, ``--data-root /dev/shm``
puts the logs in tmpfs, ``--settle-seconds 3`` starts every round with cold free memory,
``--each-round`` prints every round (the spread), ``--no-latency`` skips the last phase,
``--fetch-queue-backoff-ms 10`` keeps the consumer from pausing a second when its prefetch queue
overflows (which makes the 1 KB consume figures bimodal).

On a VM, writing 200 MB into new page-cache pages costs up to seven times more when the host
has taken back the free memory they come from; the log writes in 64 KiB pieces, which keeps
that cost off the produce path (``bench/page_cache_write.py`` measures it without the broker).
``--settle-seconds 3`` shows it: every round then starts with cold free memory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from odradek._types import TopicPartition
from odradek.broker.allocator import retain_freed_memory
from odradek.broker.app import BrokerApp
from odradek.broker.config import BrokerConfig
from odradek.records.batch import parse_header
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage.file_records import FileSlice
from odradek.storage.log import AppendInfo, LogReadInfo

TOPIC = "perf"


# ---------------------------------------------------------------------- servers (child side)


class _NullPartition:
    """Accepts appends without storing them; serves reads from prebuilt batches."""

    def __init__(self, blob: bytes, batch_positions: list[int], records_per_batch: int) -> None:
        # The batches live in an in-memory file, so reads are file regions like the real
        # log's (the server sends large ones with sendfile).
        self.fd = os.memfd_create("null-partition")
        view = memoryview(blob)
        while view:
            view = view[os.write(self.fd, view) :]
        self.positions = batch_positions
        self.records_per_batch = records_per_batch
        self.log_end_offset = 0
        self.high_watermark = 10**12
        self.log_start_offset = 0
        self.leader_epoch = 0
        self.isr = [0]

    def append_as_leader(self, data: bytes, required_acks: int) -> Any:
        header = parse_header(data)
        first = self.log_end_offset
        self.log_end_offset += header.last_offset_delta + 1
        return AppendInfo(
            first,
            self.log_end_offset - 1,
            header.max_timestamp,
            -1,
            header.records_count,
            len(data),
            0,
        )

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        min_one_message: bool = True,
        committed_only: bool = True,
    ) -> Any:
        index = offset // self.records_per_batch
        if index >= len(self.positions) - 1:
            return LogReadInfo(None, offset, 0, offset)
        start = self.positions[index]
        end = min(self.positions[-1], start + max(max_bytes, 1))
        return LogReadInfo(FileSlice(self.fd, start, end - start), offset, 0, 10**12)


def _prebuilt(records: int, value_bytes: int) -> tuple[bytes, list[int], int]:
    per_batch = max(1, (1024 * 1024) // (value_bytes + 20))
    value = os.urandom(value_bytes)
    now = int(time.time() * 1000)
    chunks, positions, position = [], [0], 0
    for base in range(0, records, per_batch):
        count = min(per_batch, records - base)
        batch = build_batch([SimpleRecord(now, None, value)] * count, base_offset=base)
        chunks.append(batch)
        position += len(batch)
        positions.append(position)
    return b"".join(chunks), positions, per_batch


def serve(kind: str, data_dir: str, value_bytes: int, records: int) -> None:
    """Child process: runs a broker (real or null) and prints its port.

    Both servers set the allocator up as ``odradek serve`` does (``retain_freed_memory``).
    """
    retain_freed_memory()
    config = BrokerConfig.from_mapping(
        {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": data_dir, "num.partitions": "1"}
    )
    try:
        import uvloop  # noqa: PLC0415 (optional)

        loop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()
    app = BrokerApp(config)
    loop.run_until_complete(app.start())
    assert app.ctx is not None
    assert app.topics is not None
    app.topics.create_topic(TOPIC, 1)
    if kind == "null":
        null = _NullPartition(*_prebuilt(records, value_bytes))
        replicas = app.ctx.replicas
        real_get = replicas.get

        def get(tp: TopicPartition) -> Any:
            return null if tp.topic == TOPIC else real_get(tp)

        replicas.get = get  # type: ignore[method-assign]
    print(app.port, flush=True)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.run_until_complete(stop.wait())
    loop.run_until_complete(app.stop())


# ---------------------------------------------------------------------- clients (parent side)


@dataclass
class Figures:
    produce_rps: float
    produce_mbps: float
    consume_rps: float
    consume_mbps: float


class Server:
    def __init__(
        self, kind: str, value_bytes: int, records: int, data_root: str | None = None
    ) -> None:
        self.dir = tempfile.mkdtemp(prefix=f"odradek-perf-{kind}-", dir=data_root)
        self.process = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--serve",
                kind,
                "--dir",
                self.dir,
                "--value-bytes",
                str(value_bytes),
                "--records",
                str(records),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        self.bootstrap = f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def produce(bootstrap: str, records: int, value_bytes: int) -> tuple[float, float]:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "linger.ms": 5,
            "batch.size": 1024 * 1024,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1024 * 1024,
            "compression.type": "none",
        }
    )
    value = os.urandom(value_bytes)
    errors = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            errors.append(error)

    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(TOPIC, value, partition=0, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.001)
    producer.flush(120)
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} delivery errors, first: {errors[0]}")
    return records / elapsed, records * value_bytes / 1e6 / elapsed


def consume(
    bootstrap: str, records: int, value_bytes: int, queue_backoff_ms: int | None = None
) -> tuple[float, float]:
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": "perf",
        "enable.auto.commit": False,
        "fetch.max.bytes": 64 * 1024 * 1024,
        "max.partition.fetch.bytes": 8 * 1024 * 1024,
        "queued.min.messages": 1_000_000,
        "log_level": 3,
    }
    if queue_backoff_ms is not None:
        config["fetch.queue.backoff.ms"] = queue_backoff_ms
    consumer = Consumer(config)
    consumer.assign([KafkaTopicPartition(TOPIC, 0, 0)])
    seen = 0
    start = time.perf_counter()
    deadline = start + 300
    while seen < records and time.perf_counter() < deadline:
        for message in consumer.consume(10_000, 1.0):
            if message.error() is None:
                seen += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    if seen < records:
        raise RuntimeError(f"consumed {seen} of {records}")
    return records / elapsed, records * value_bytes / 1e6 / elapsed


def latency_consumer(bootstrap: str, count: int) -> None:
    """Child process: reads ``count`` timestamped records and prints their latencies.

    The consumer runs in its own process: in one process the producer's pacing loop and the
    consumer's poll loop would fight over the GIL and measure that instead of the broker.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "latency",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
            "fetch.min.bytes": 1,
            "log_level": 3,
        }
    )
    start = consumer.get_watermark_offsets(KafkaTopicPartition(TOPIC, 0), 10)[1]
    consumer.assign([KafkaTopicPartition(TOPIC, 0, start)])
    print("ready", flush=True)
    samples: list[float] = []
    warmed_up = False
    deadline = time.perf_counter() + 120
    while len(samples) < count and time.perf_counter() < deadline:
        message = consumer.poll(0.1)  # one at a time: batching here would add latency
        if message is None or message.error() is not None:
            continue
        value = message.value()
        if value.startswith(b"t="):
            samples.append((time.perf_counter_ns() - int(value[2:])) / 1e6)
        elif value == b"warm-up" and not warmed_up:
            warmed_up = True
            print("warm", flush=True)
    consumer.close()
    print(" ".join(f"{sample:.3f}" for sample in samples), flush=True)


def latency(bootstrap: str, seconds: float, rate: int) -> tuple[float, float]:
    """p50 and p99 end-to-end latency (ms) at a steady ``rate`` for ``seconds``."""
    count = int(seconds * rate)
    child = subprocess.Popen(
        [sys.executable, __file__, "--latency-consumer", bootstrap, "--records", str(count)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    try:
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError("the latency consumer did not start")
        producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0})
        # Measure the steady state: start once the consumer is fetching.
        warm = threading.Event()

        def wait_warm() -> None:
            assert child.stdout is not None
            if child.stdout.readline().strip() == "warm":
                warm.set()

        waiter = threading.Thread(target=wait_warm)
        waiter.start()
        warm_deadline = time.perf_counter() + 30
        while not warm.is_set() and time.perf_counter() < warm_deadline:
            producer.produce(TOPIC, b"warm-up", partition=0)
            producer.flush(10)
            warm.wait(0.2)
        waiter.join(1)
        interval = 1 / rate
        begin = time.perf_counter()
        for i in range(count):
            target = begin + i * interval
            while time.perf_counter() < target:
                pass
            producer.produce(TOPIC, b"t=%d" % time.perf_counter_ns(), partition=0)
            producer.poll(0)
        producer.flush(10)
        output, _ = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    samples = sorted(float(value) for value in output.split())
    if not samples:
        raise RuntimeError("no latency samples")
    return samples[len(samples) // 2], samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", choices=["real", "null"])
    parser.add_argument("--dir")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--records", type=int, default=0)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--latency-seconds", type=float, default=5.0)
    parser.add_argument("--latency-consumer", metavar="BOOTSTRAP")
    parser.add_argument("--rounds", type=int, default=3, help="best of this many runs")
    parser.add_argument(
        "--data-root",
        help="where the servers' data directories go (default: the temp dir, e.g. /tmp; "
        "/dev/shm puts the log in tmpfs)",
    )
    parser.add_argument(
        "--sizes",
        default="100,1024",
        help="record sizes to run, comma-separated (100 and 1024: the standard cases)",
    )
    parser.add_argument("--no-latency", action="store_true", help="skip the latency phase")
    parser.add_argument("--each-round", action="store_true", help="print every round too")
    parser.add_argument(
        "--settle-seconds",
        type=float,
        default=0.0,
        help="wait this long after a server starts before producing to it: on a VM whose "
        "balloon reports free pages to the host (~2 s after they are freed), 3 s makes every "
        "round write into cold memory instead of into what the previous server just freed "
        "(see bench/page_cache_write.py)",
    )
    parser.add_argument(
        "--fetch-queue-backoff-ms",
        type=int,
        help="the consumer's fetch.queue.backoff.ms (librdkafka's default: 1000). 200 MB of "
        "1 KB records overflow its 64 MB prefetch queue (queued.max.messages.kbytes), and "
        "when the server outruns the consuming loop the next fetch waits this long: consume "
        "figures then fall to ~140k records/s whatever the server. 10 takes that out",
    )
    args = parser.parse_args()
    if args.latency_consumer:
        latency_consumer(args.latency_consumer, args.records)
        return
    if args.serve:
        serve(args.serve, args.dir, args.value_bytes, args.records)
        return
    sizes = {int(size) for size in args.sizes.split(",")}
    cases = [(int(1_000_000 * args.scale), 100), (int(200_000 * args.scale), 1024)]
    cases = [(records, size) for records, size in cases if size in sizes]
    data_root = args.data_root or tempfile.gettempdir()
    print(f"best of {args.rounds} alternating rounds per server, data in {data_root}")
    print("server  records x size     produce rec/s   MB/s    consume rec/s   MB/s")
    results: dict[tuple[str, int], Figures] = {}
    for records, size in cases:
        best: dict[str, Figures] = {}
        # Alternate null and real rounds and keep each one's best: single runs on a shared
        # 2-core machine swing by more than the difference being measured.
        for _ in range(args.rounds):
            for kind in ("null", "real"):
                server = Server(kind, size, records, args.data_root)
                time.sleep(args.settle_seconds)
                try:
                    p_rps, p_mbps = produce(server.bootstrap, records, size)
                    c_rps, c_mbps = consume(
                        server.bootstrap, records, size, args.fetch_queue_backoff_ms
                    )
                finally:
                    server.stop()
                if args.each_round:
                    print(
                        f"  round: {kind:4} produce {p_rps:>10,.0f} rec/s, "
                        f"consume {c_rps:>10,.0f} rec/s",
                        flush=True,
                    )
                previous = best.get(kind)
                best[kind] = Figures(
                    max(p_rps, previous.produce_rps if previous else 0),
                    max(p_mbps, previous.produce_mbps if previous else 0),
                    max(c_rps, previous.consume_rps if previous else 0),
                    max(c_mbps, previous.consume_mbps if previous else 0),
                )
        for kind in ("null", "real"):
            figures = results[kind, size] = best[kind]
            print(
                f"{kind:6} {records:>9,} x {size:>4} B {figures.produce_rps:>12,.0f} "
                f"{figures.produce_mbps:>7.1f} {figures.consume_rps:>14,.0f} "
                f"{figures.consume_mbps:>7.1f}"
            )
        real, null = results["real", size], results["null", size]
        print(
            f"  ratio real/null: produce {real.produce_rps / null.produce_rps:.0%}, "
            f"consume {real.consume_rps / null.consume_rps:.0%}"
        )
    if args.no_latency:
        return
    # Latency needs the records back, so only the real broker can be measured.
    server = Server("real", 100, 0, args.data_root)
    try:
        p50, p99 = latency(server.bootstrap, args.latency_seconds, 10_000)
    finally:
        server.stop()
    print(f"end-to-end latency at 10,000 records/s: p50 {p50:.2f} ms, p99 {p99:.2f} ms")


if __name__ == "__main__":
    main()
