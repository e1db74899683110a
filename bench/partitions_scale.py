"""A broker with many partitions: creation time, open descriptors, memory, start-up time
(after a clean shutdown and after kill -9) and produce/fetch latency, at 100 / 1,000 / 10,000
partitions, each against a baseline measured in the same run.

For every partition count N (and for 1 partition, the baseline of every figure), an
``odradek serve`` child on a fresh data directory:

- creates one topic of N partitions (CreateTopics, timed to the answer); the raw baseline is
  the same file-system work done directly — N directories of three files each, with one
  directory fsync per partition — in the same directory;
- reports its open descriptors (``/proc/<pid>/fd``) and RSS right after creation and after
  produce/fetch touched 200 partitions spread over the topic;
- produce latency (one 10-record batch, acks=1) and fetch latency (the batch back) to those
  partitions, p50 and p99;
- is stopped with SIGTERM and started again (start-up after a clean shutdown), then killed
  with SIGKILL and started again (start-up after an unclean shutdown: recovery of every
  partition), timing each start until the broker serves; then the batches produced are
  fetched back and checked (data intact after both restarts).

Ratios print against the 1-partition figures (and creation against the raw baseline). The
child's descriptor limit is this process's (``ulimit -n``); the broker bounds its open segment
files to half of it (``storage/open_files.py``).

    .venv/bin/python bench/partitions_scale.py [--counts 100,1000,10000] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass

from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic
from odradek.client.config import ClientConfig
from odradek.client.network import NetworkClient
from odradek.client.simple_consumer import SimpleConsumer
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey, VersionRange
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.testing.serve import start_serve, stop_serve

TOPIC = "scale"
SAMPLES = 200
CREATE_TIMEOUT_MS = 1_800_000


@dataclass(frozen=True, slots=True)
class Figures:
    partitions: int
    create_s: float
    raw_create_s: float
    fds_created: int
    rss_created_mb: float
    fds_touched: int
    rss_touched_mb: float
    produce_p50_ms: float
    produce_p99_ms: float
    fetch_p50_ms: float
    fetch_p99_ms: float
    start_clean_s: float
    fds_clean: int
    start_unclean_s: float
    fds_unclean: int
    intact: bool


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def raw_create(root: str, partitions: int) -> float:
    """Seconds to create ``partitions`` directories of three files each (a 10 MiB sparse
    preallocation for two of them, as the indexes get), fsyncing the parent per directory."""
    os.makedirs(root)
    parent = os.open(root, os.O_RDONLY)
    start = time.perf_counter()
    try:
        for partition in range(partitions):
            directory = os.path.join(root, f"{TOPIC}-{partition}")
            os.mkdir(directory)
            for suffix, length in (("log", 0), ("index", 10 << 20), ("timeindex", 10 << 20)):
                fd = os.open(os.path.join(directory, f"{0:020d}.{suffix}"), os.O_CREAT | os.O_RDWR)
                if length:
                    os.ftruncate(fd, length)
                os.close(fd)
            os.fsync(parent)
    finally:
        os.close(parent)
    return time.perf_counter() - start


def timed_start(data_dir: str) -> tuple[subprocess.Popen[str], str, float]:
    start = time.perf_counter()
    process, bootstrap = start_serve(data_dir)
    return process, bootstrap, time.perf_counter() - start


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def values_of(partition: int, offset_hint: int) -> list[bytes]:
    return [f"{partition}:{offset_hint}:{i}".encode() for i in range(10)]


def produce_and_fetch(
    bootstrap: str, partitions: list[int]
) -> tuple[list[float], list[float], list[tuple[int, int, int]]]:
    """Produces one batch to each partition in turn and fetches it back; returns the
    latencies (ms) and (partition, base offset, sample number) of every batch."""
    network = NetworkClient(ClientConfig(bootstrap_servers=bootstrap))
    consumer = SimpleConsumer(bootstrap)
    produce_ms: list[float] = []
    fetch_ms: list[float] = []
    offsets: list[tuple[int, int, int]] = []
    now_ms = int(time.time() * 1000)
    try:
        for sample, partition in enumerate(partitions):
            records = [SimpleRecord(now_ms, None, value) for value in values_of(partition, sample)]
            body = {
                "transactional_id": None,
                "acks": 1,
                "timeout": 30_000,
                "topic_data": [
                    {
                        "name": TOPIC,
                        "partition_data": [{"index": partition, "records": build_batch(records)}],
                    }
                ],
            }
            start = time.perf_counter()
            future = network.send(-1, ApiKey.PRODUCE, body, versions=VersionRange(3, 7))
            if not network.wait([future], network.clock.monotonic_ms() + 30_000):
                raise RuntimeError(f"produce to partition {partition} timed out")
            produce_ms.append((time.perf_counter() - start) * 1000)
            [result] = future.result()["responses"][0]["partition_responses"]
            if result["error_code"] != ErrorCode.NONE:
                raise RuntimeError(f"produce to partition {partition}: {result}")
            offset = int(result["base_offset"])
            offsets.append((partition, offset, sample))
            start = time.perf_counter()
            messages = consumer.fetch(TOPIC, partition, offset, 1024)
            fetch_ms.append((time.perf_counter() - start) * 1000)
            if [m.value for m in messages] != values_of(partition, sample):
                raise RuntimeError(f"fetched {len(messages)} of 10 from partition {partition}")
    finally:
        consumer.close()
        network.close()
    return produce_ms, fetch_ms, offsets


def intact(bootstrap: str, offsets: list[tuple[int, int, int]]) -> bool:
    consumer = SimpleConsumer(bootstrap)
    try:
        for partition, offset, sample in offsets:
            values = [m.value for m in consumer.fetch(TOPIC, partition, offset, 1024)]
            if values[:10] != values_of(partition, sample):
                return False
    finally:
        consumer.close()
    return True


def measure(root: str, partitions: int) -> Figures:
    raw_root = os.path.join(root, f"raw-{partitions}")
    raw_create_s = raw_create(raw_root, partitions)
    shutil.rmtree(raw_root)
    data_dir = os.path.join(root, f"broker-{partitions}")
    process, bootstrap, _fresh_start_s = timed_start(data_dir)
    try:
        # The broker answers CreateTopics when every partition exists: wait for it rather
        # than time out and retry (which would then find the topic there).
        with AdminClient(
            bootstrap_servers=bootstrap, request_timeout_ms=CREATE_TIMEOUT_MS
        ) as admin:
            start = time.perf_counter()
            admin.create_topics(
                [NewTopic(TOPIC, partitions, 1)], timeout_ms=CREATE_TIMEOUT_MS
            ).all()
            create_s = time.perf_counter() - start
        fds_created, rss_created = open_fds(process.pid), rss_mb(process.pid)
        stride = max(1, partitions // SAMPLES)
        sampled = [(i * stride) % partitions for i in range(SAMPLES)]
        produce_ms, fetch_ms, offsets = produce_and_fetch(bootstrap, sampled)
        fds_touched, rss_touched = open_fds(process.pid), rss_mb(process.pid)
        stop_serve(process, timeout_s=600)
        process, bootstrap, start_clean_s = timed_start(data_dir)
        fds_clean = open_fds(process.pid)
        process.send_signal(signal.SIGKILL)
        process.wait()
        process, bootstrap, start_unclean_s = timed_start(data_dir)
        fds_unclean = open_fds(process.pid)
        data_intact = intact(bootstrap, offsets)
    finally:
        stop_serve(process, timeout_s=600)
        shutil.rmtree(data_dir, ignore_errors=True)
    return Figures(
        partitions,
        create_s,
        raw_create_s,
        fds_created,
        rss_created,
        fds_touched,
        rss_touched,
        statistics.median(produce_ms),
        percentile(produce_ms, 0.99),
        statistics.median(fetch_ms),
        percentile(fetch_ms, 0.99),
        start_clean_s,
        fds_clean,
        start_unclean_s,
        fds_unclean,
        data_intact,
    )


def ratio(value: float, base: float) -> str:
    return f"{value / base:.1f}x" if base > 0 else "-"


def report(base: Figures, rows: list[Figures]) -> None:
    print(
        "partitions  create s (raw s, x raw)  fds created/touched/clean/killed"
        "  RSS MB created/touched"
    )
    for row in [base, *rows]:
        print(
            f"{row.partitions:>10,}  {row.create_s:8.2f} ({row.raw_create_s:6.2f}, "
            f"{ratio(row.create_s, row.raw_create_s):>5})  "
            f"{row.fds_created:>6} {row.fds_touched:>6} {row.fds_clean:>6} {row.fds_unclean:>6}"
            f"  {row.rss_created_mb:7.1f} {row.rss_touched_mb:7.1f}"
        )
    print(
        "partitions  start clean s (x 1p)  start killed s (x 1p)  produce p50/p99 ms (x 1p)"
        "  fetch p50/p99 ms (x 1p)  intact"
    )
    for row in [base, *rows]:
        print(
            f"{row.partitions:>10,}  {row.start_clean_s:6.2f} "
            f"({ratio(row.start_clean_s, base.start_clean_s):>6})"
            f"  {row.start_unclean_s:6.2f} "
            f"({ratio(row.start_unclean_s, base.start_unclean_s):>6})"
            f"  {row.produce_p50_ms:5.2f}/{row.produce_p99_ms:6.2f}"
            f" ({ratio(row.produce_p50_ms, base.produce_p50_ms)}/"
            f"{ratio(row.produce_p99_ms, base.produce_p99_ms)})"
            f"  {row.fetch_p50_ms:5.2f}/{row.fetch_p99_ms:6.2f}"
            f" ({ratio(row.fetch_p50_ms, base.fetch_p50_ms)}/"
            f"{ratio(row.fetch_p99_ms, base.fetch_p99_ms)})"
            f"  {'yes' if row.intact else 'NO'}"
        )
    base_fds = base.fds_touched
    for row in rows:
        per_partition = (row.fds_touched - base_fds) / max(1, row.partitions - 1)
        print(
            f"{row.partitions:,} partitions: {per_partition:.3f} descriptors per partition "
            f"above the 1-partition broker after produce/fetch"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="100,1000,10000")
    parser.add_argument("--dir", help="where the data directories go (default: a temp dir)")
    args = parser.parse_args()
    counts = [int(count) for count in args.counts.split(",")]
    root = tempfile.mkdtemp(prefix="odradek-partitions-", dir=args.dir)
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    print(f"data in {root}; descriptor limit (ulimit -n) {soft}; {SAMPLES} partitions sampled")
    try:
        base = measure(root, 1)
        print(base, flush=True)
        rows = []
        for count in counts:
            rows.append(measure(root, count))
            print(rows[-1], flush=True)  # the figures so far, should a long run be cut short
        report(base, rows)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
