"""Writes a small sample partition log (a few segments of JSON page views) and prints where.

Used by ``scripts/demo`` until the broker exists, so that ``odradek dump-log`` has something
real to show.

    .venv/bin/python bench/sample_log.py DIRECTORY
"""

from __future__ import annotations

import json
import os
import random
import sys

from odradek._types import TopicPartition
from odradek.records.batch import CompressionType
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage.config import LogConfig
from odradek.storage.manager import LogManager


def main(directory: str) -> None:
    rng = random.Random(7)
    manager = LogManager([directory], LogConfig(segment_bytes=64 * 1024))
    manager.startup()
    log = manager.get_or_create_log(TopicPartition("page-views", 0))
    pages = ["/", "/pricing", "/docs", "/blog/kafka", "/signup"]
    timestamp = 1_700_000_000_000
    for batch_number in range(60):
        records = []
        for _ in range(rng.randint(5, 30)):
            timestamp += rng.randint(1, 400)
            user = f"user-{rng.randint(1, 50)}"
            event = {"user": user, "page": rng.choice(pages), "ts": timestamp}
            records.append(
                SimpleRecord(
                    timestamp, user.encode(), json.dumps(event).encode(), (("src", b"demo"),)
                )
            )
        codec = CompressionType.GZIP if batch_number % 3 == 0 else CompressionType.NONE
        log.append(build_batch(records, compression=codec))
    print(
        f"wrote {log.log_end_offset} records in {len(log.segments())} segments to {log.directory}"
    )
    manager.shutdown()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.getcwd(), "data"))
