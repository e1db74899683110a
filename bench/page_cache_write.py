"""The kernel's cost of the broker's write pattern, without the broker: the floor under
``bench/broker_perf.py``'s 1 KB produce figures.

Replays what the broker does for 200,000 × 1 KB records in 1 MB batches — 200 ``writev`` calls
of a 61-byte patched header plus the rest of a 999,875-byte batch, ``O_APPEND``, into a new
segment file — from a loop that spends its time in the kernel, and times it in two states of
the machine's free memory:

- cold: 3 s after the previous round freed its file's pages. On a VM whose balloon reports
  free pages to the host (virtio-balloon free page reporting: the guest hands free blocks back
  after ~2 s), the host must fault each page in again when the page cache reuses it; on bare
  metal cold and warm are the same;
- warm: right after freeing them, when the page cache reuses pages the host still backs.

Kafka's ``FileRecords.append`` (``FileChannel.write``) goes through the same kernel path and
pays the same. ``/proc/self/stat``'s system time says where the time goes.

    .venv/bin/python bench/page_cache_write.py [--dir /tmp] [--rounds 3] [--megabytes 200]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

HEADER_BYTES = 61
BATCH_BYTES = 999_875


def _write_segment(directory: str, batches: int, header: bytes, rest: bytes) -> tuple[float, float]:
    """Writes ``batches`` batches into a new file; returns (seconds, system seconds)."""
    path = os.path.join(directory, "00000000000000000000.log")
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND | os.O_TRUNC, 0o644)
    try:
        system = os.times().system
        start = time.perf_counter()
        for _ in range(batches):
            os.writev(fd, [header, rest])
        elapsed = time.perf_counter() - start
        return elapsed, os.times().system - system
    finally:
        os.close(fd)
        os.unlink(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--settle-seconds", type=float, default=3.0, help="the cold wait")
    args = parser.parse_args()
    batches = args.megabytes * 1_000_000 // BATCH_BYTES
    header = os.urandom(HEADER_BYTES)
    rest = os.urandom(BATCH_BYTES - HEADER_BYTES)
    directory = tempfile.mkdtemp(prefix="odradek-page-cache-", dir=args.dir)
    try:
        rest_bytes = BATCH_BYTES - HEADER_BYTES
        print(f"{batches} x writev({HEADER_BYTES} B + {rest_bytes:,} B) into {directory}")
        for _ in range(args.rounds):
            time.sleep(args.settle_seconds)
            cold, cold_system = _write_segment(directory, batches, header, rest)
            warm, warm_system = _write_segment(directory, batches, header, rest)
            megabytes = batches * BATCH_BYTES / 1e6
            print(
                f"cold {cold * 1000:6.0f} ms {megabytes / cold:6.0f} MB/s "
                f"(system {cold_system:.2f} s)   warm {warm * 1000:6.0f} ms "
                f"{megabytes / warm:6.0f} MB/s (system {warm_system:.2f} s)",
                flush=True,
            )
    finally:
        os.rmdir(directory)


if __name__ == "__main__":
    main()
