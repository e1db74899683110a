"""Prints the speed of the pure-Python record codec: records/s to decode and to build batches.

Then the one Python record loop (``records.record_format``) through each of its callers'
visitors, uncompressed, with the ratio of each to the codec's (``Record`` values) in the same
run: the consumer's ``py_decode`` (``ConsumerRecord`` tuples) and the column builder
(``PyColumnBuilder``, headers kept). Run: ``.venv/bin/python bench/records_codec.py``. Best of
several rounds, so a busy machine shows its quiet-moment figure; no assertion, figures only.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from odradek.client.consumer.decoder import py_decode
from odradek.records.batch import CompressionType
from odradek.records.codec import BatchBuilder, build_batch, decode_batch_records
from odradek.records.columns import PyColumnBuilder
from odradek.records.record import SimpleRecord

ROUNDS = 7
RECORDS_PER_BATCH = 1000

SHAPES = {
    "small (key 8 B, value 100 B)": [
        SimpleRecord(1_700_000_000_000 + i * 3, b"key-%04d" % i, b"v" * 100)
        for i in range(RECORDS_PER_BATCH)
    ],
    "tiny (no key, value 10 B)": [
        SimpleRecord(1_700_000_000_000, None, b"0123456789") for _ in range(RECORDS_PER_BATCH)
    ],
    "with 2 headers": [
        SimpleRecord(1_700_000_000_000 + i, b"k", b"v" * 50, [("trace", b"abc"), ("n", None)])
        for i in range(RECORDS_PER_BATCH)
    ],
}


def best_rate(action: Callable[[], object], records: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(repeat):
            action()
        best = min(best, time.perf_counter() - start)
    return records * repeat / best


def build_with_builder(records: list[SimpleRecord]) -> bytes:
    builder = BatchBuilder(batch_size_bytes=1 << 30)
    for record in records:
        builder.append(record.timestamp_ms, record.key, record.value, record.headers)
    return builder.build()


def decode_columns(batch: bytes, count: int) -> None:
    builder = PyColumnBuilder(True)
    builder.add_batches(batch, 0, count, False)
    builder.finish()


def visitors() -> None:
    """The record loop through each caller's visitor (see the module docstring)."""
    for shape, records in SHAPES.items():
        batch = build_batch(records)
        n = len(records)
        codec = best_rate(lambda b=batch: decode_batch_records(b), n, 10)
        consumer = best_rate(lambda b=batch: py_decode("t", 0, b, 0, check_crcs=True), n, 10)
        columns = best_rate(lambda b=batch, n=n: decode_columns(b, n), n, 10)
        print(
            f"{shape:30} Record {codec / 1e6:5.2f}   ConsumerRecord {consumer / 1e6:5.2f} "
            f"(x{consumer / codec:4.2f})   columns {columns / 1e6:5.2f} (x{columns / codec:4.2f})"
            " M rec/s"
        )


def main() -> None:
    for shape, records in SHAPES.items():
        for codec in (CompressionType.NONE, CompressionType.LZ4, CompressionType.ZSTD):
            batch = build_batch(records, compression=codec)
            decode = best_rate(lambda b=batch: decode_batch_records(b), len(records), 20)
            build = best_rate(lambda r=records: build_with_builder(r), len(records), 5)
            print(
                f"{shape:30} {codec.name.lower():5} decode {decode / 1e6:5.2f} M rec/s   "
                f"build {build / 1e6:5.2f} M rec/s"
            )
    visitors()


if __name__ == "__main__":
    main()
