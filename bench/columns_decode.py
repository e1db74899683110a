"""Prints the speed of column decoding: records/s of PyColumnBuilder and the compiled builder.

A fetch of 20 batches of 150 records (key 8 B, value 100 B, no headers), uncompressed and LZ4,
decoded with CRC checks on, as the Spark read task decodes them; then the ratio. Run:
``.venv/bin/python bench/columns_decode.py``. Best of several rounds, so a busy machine shows
its quiet-moment figure; no assertion, figures only.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import Any

from odradek.records.batch import CompressionType
from odradek.records.codec import build_batch
from odradek.records.columns import COMPILED_MODULE, PyColumnBuilder
from odradek.records.record import SimpleRecord

ROUNDS = 7
BATCHES = 20
RECORDS_PER_BATCH = 150


def fetch(codec: CompressionType) -> bytes:
    """BATCHES batches back to back, as a Fetch response's records."""
    return b"".join(
        build_batch(
            [
                SimpleRecord(1_700_000_000_000 + i, b"key-%04d" % i, b"v" * 100)
                for i in range(RECORDS_PER_BATCH)
            ],
            base_offset=n * RECORDS_PER_BATCH,
            compression=codec,
        )
        for n in range(BATCHES)
    )


def best_rate(make: Callable[[bool], Any], data: bytes, repeat: int) -> float:
    """Records/s decoding ``data`` into a new builder, best of ROUNDS."""
    records = BATCHES * RECORDS_PER_BATCH
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(repeat):
            builder = make(False)
            builder.add_batches(data, 0, records, True)
            builder.finish()
        best = min(best, time.perf_counter() - start)
    return records * repeat / best


def main() -> None:
    try:
        compiled: Any = importlib.import_module(COMPILED_MODULE).ColumnBuilder
    except ImportError:
        compiled = None
        print(f"{COMPILED_MODULE} is not built: Python figures only")
    for codec in (CompressionType.NONE, CompressionType.LZ4):
        data = fetch(codec)
        python = best_rate(PyColumnBuilder, data, 2)
        line = f"{codec.name.lower():5} python {python / 1e6:6.2f} M rec/s"
        if compiled is not None:
            fast = best_rate(compiled, data, 20)
            line += f"   compiled {fast / 1e6:6.2f} M rec/s   x{fast / python:5.1f}"
        print(line)


if __name__ == "__main__":
    main()
