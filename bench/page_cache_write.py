"""The kernel's cost of the broker's write pattern, without the broker: why the log writes in
pieces of at most 64 KiB (``odradek.storage.file_records.WRITE_PIECE_BYTES``).

Replays what the broker does for 200,000 × 1 KB records in 1 MB batches — 200 batches of a
61-byte patched header plus the rest of a 999,875-byte batch, ``O_APPEND``, into a new segment
file — in two ways:

- whole: one ``writev`` per batch (what the broker did before the pieces);
- pieces: ``writev`` calls of at most 64 KiB each (what ``FileRecords`` does now);

and times each in two states of the machine's free memory:

- cold: 3 s after the previous round freed its file's pages. On a VM whose balloon reports
  free memory to the host (virtio-balloon free page reporting: the guest hands free blocks of
  2 MB and more back after ~2 s), the host must fault those pages in again on first touch;
- warm: right after freeing them, when the page cache reuses pages the host still backs.

Linux (6.x, ext4 with large folios) sizes the page-cache folios a write allocates by the
write's length: a 1 MB write asks for large folios, which come from exactly those large free
blocks, so whole-batch writes pay the refault on cold memory; 64 KiB pieces get small folios,
served from memory the host still backs. ``/proc/self/stat``'s system time says where the time
goes. On bare metal, or on tmpfs, cold and warm are about the same.

    .venv/bin/python bench/page_cache_write.py [--dir /tmp] [--rounds 3] [--megabytes 200]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from odradek.storage.file_records import WRITE_PIECE_BYTES

HEADER_BYTES = 61
BATCH_BYTES = 999_875


def _pieces(header: bytes, rest: bytes, limit: int) -> list[list[memoryview]]:
    """The writev calls for one batch, each at most ``limit`` bytes."""
    views = [memoryview(header), memoryview(rest)]
    calls: list[list[memoryview]] = []
    while views:
        call, budget = [], limit
        while views and budget:
            piece = views[0][:budget]
            call.append(piece)
            budget -= len(piece)
            if len(piece) == len(views[0]):
                del views[0]
            else:
                views[0] = views[0][len(piece) :]
        calls.append(call)
    return calls


def _write_segment(
    directory: str, batches: int, calls: list[list[memoryview]]
) -> tuple[float, float]:
    """Writes ``batches`` batches into a new file; returns (seconds, system seconds)."""
    path = os.path.join(directory, "00000000000000000000.log")
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND | os.O_TRUNC, 0o644)
    try:
        system = os.times().system
        start = time.perf_counter()
        for _ in range(batches):
            for call in calls:
                os.writev(fd, call)
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
    ways = {
        "whole": _pieces(header, rest, BATCH_BYTES),
        f"{WRITE_PIECE_BYTES // 1024} KiB": _pieces(header, rest, WRITE_PIECE_BYTES),
    }
    directory = tempfile.mkdtemp(prefix="odradek-page-cache-", dir=args.dir)
    megabytes = batches * BATCH_BYTES / 1e6
    print(f"{batches} batches of {BATCH_BYTES:,} B into {directory}; ms (MB/s, system s)")
    try:
        for _ in range(args.rounds):
            for name, calls in ways.items():
                time.sleep(args.settle_seconds)
                cold, cold_system = _write_segment(directory, batches, calls)
                warm, warm_system = _write_segment(directory, batches, calls)
                print(
                    f"{name:>7}: cold {cold * 1000:5.0f} ms ({megabytes / cold:5.0f} MB/s, "
                    f"{cold_system:.2f} s)   warm {warm * 1000:5.0f} ms "
                    f"({megabytes / warm:5.0f} MB/s, {warm_system:.2f} s)",
                    flush=True,
                )
    finally:
        os.rmdir(directory)


if __name__ == "__main__":
    main()
