"""Log append and read throughput, next to raw sequential ``os.write`` into the same directory.

For 1 KB, 16 KB and 1 MB batches this prints, measured in the same run:

- raw: ``os.write`` of the same bytes, batch by batch, to one file (the ceiling);
  best of 5 alternating rounds each (single runs swing by 3x with page-cache state);
- append: ``Log.append`` of a prebuilt v2 batch (validation, CRC32C, offset assignment, index
  entries, rolls at segment.bytes);
- read: reading the whole log back by offset, as bytes (``pread``) and with ``os.sendfile``.

Target (issue 2): append ≥ 70 % of raw for batches of 16 KB and up.

    .venv/bin/python bench/log_append_read.py [--total-mb 256] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Iterator

from odradek._types import TopicPartition
from odradek.errors import CorruptRecordError
from odradek.records.batch import BatchHeader, iter_batches
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.scheduler import ThreadScheduler

SIZES = {"1 KB": 1024, "16 KB": 16 * 1024, "1 MB": 1024 * 1024}
RECORD_VALUE_BYTES = 100
SCHEDULER = ThreadScheduler(name="bench-storage")
ROUNDS = 5


def make_batch(target_bytes: int) -> bytearray:
    """A batch of ~100-byte records about ``target_bytes`` long."""
    count = max(1, target_bytes // (RECORD_VALUE_BYTES + 20))
    records = [
        SimpleRecord(1_700_000_000_000 + i, None, os.urandom(RECORD_VALUE_BYTES))
        for i in range(count)
    ]
    return bytearray(build_batch(records))


def raw_write(directory: str, batch: bytes, count: int) -> float:
    path = os.path.join(directory, "raw.bin")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.sync()  # start both measurements with no dirty pages waiting for writeback
    try:
        start = time.perf_counter()
        for _ in range(count):
            os.write(fd, batch)
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
        os.remove(path)
    return elapsed


def log_append(directory: str, batch: bytearray, count: int) -> tuple[float, Log]:
    config = LogConfig()  # Kafka's defaults: 1 GiB segments, an index entry every 4 KiB
    # As in the broker: the fsync of a rolled segment runs on the storage thread.
    log = Log.open(
        os.path.join(directory, "bench-0"),
        TopicPartition("bench", 0),
        config,
        scheduler=SCHEDULER,
    )
    os.sync()
    start = time.perf_counter()
    for _ in range(count):
        log.append(batch)
    return time.perf_counter() - start, log


def read_as_bytes(log: Log, fetch_bytes: int) -> tuple[float, int, list[int]]:
    """Reads the log like a consumer: fetch, parse the whole batches, continue after them.
    Returns (seconds, bytes, the fetch offsets used)."""
    total = 0
    offsets = []
    offset = log.log_start_offset
    start = time.perf_counter()
    while offset < log.log_end_offset:
        offsets.append(offset)
        data = log.read(offset, fetch_bytes).read_bytes()
        total += len(data)
        for _, header in whole_batches(data):
            offset = header.next_offset
    return time.perf_counter() - start, total, offsets


def read_with_sendfile(log: Log, fetch_bytes: int, offsets: list[int]) -> tuple[float, int]:
    """The broker's path: the same fetches, each sent with os.sendfile (to /dev/null)."""
    sink = os.open(os.devnull, os.O_WRONLY)
    total = 0
    start = time.perf_counter()
    try:
        for offset in offsets:
            records = log.read(offset, fetch_bytes).records
            assert records is not None
            total += os.sendfile(sink, records.fd, records.position, records.length)
    finally:
        os.close(sink)
    return time.perf_counter() - start, total


def whole_batches(data: bytes) -> Iterator[tuple[int, BatchHeader]]:
    """The whole batches of a fetched slice (it may end in a partial batch)."""
    try:
        yield from iter_batches(data)
    except CorruptRecordError:
        return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-mb", type=int, default=256, help="bytes written per size")
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    args = parser.parse_args()
    parent = tempfile.mkdtemp(prefix="odradek-bench-", dir=args.dir)
    total_bytes = args.total_mb * 1024 * 1024
    print(
        f"directory {parent}; {args.total_mb} MB per batch size; best of {ROUNDS} rounds "
        "(raw and append alternate, each starting with no dirty pages)"
    )
    print(
        f"{'batch':>6} {'raw MB/s':>9} {'append MB/s':>12} {'batches/s':>10} {'ratio':>6} "
        f"{'read MB/s':>10} {'sendfile MB/s':>14}"
    )
    try:
        for label, size in SIZES.items():
            batch = make_batch(size)
            count = max(1, total_bytes // len(batch))
            megabytes = count * len(batch) / 1e6
            raws, appends, reads, sends = [], [], [], []
            for round_number in range(ROUNDS):
                # Alternate which goes first, so page-cache state favours neither.
                if round_number % 2:
                    elapsed, log = log_append(parent, batch, count)
                    raws.append(raw_write(parent, bytes(batch), count))
                else:
                    raws.append(raw_write(parent, bytes(batch), count))
                    elapsed, log = log_append(parent, batch, count)
                appends.append(elapsed)
                read_elapsed, read_total, offsets = read_as_bytes(log, 1024 * 1024)
                reads.append(read_total / 1e6 / read_elapsed)
                send_elapsed, send_total = read_with_sendfile(log, 1024 * 1024, offsets)
                sends.append(send_total / 1e6 / send_elapsed)
                log.delete()
            # Best of the rounds: page-cache allocation makes single runs swing by 3x.
            raw = megabytes / min(raws)
            append_seconds = min(appends)
            append = megabytes / append_seconds
            print(
                f"{label:>6} {raw:9.0f} {append:12.0f} {count / append_seconds:10.0f} "
                f"{append / raw:6.0%} {max(reads):10.0f} {max(sends):14.0f}"
            )
    finally:
        shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
