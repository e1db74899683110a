"""Metadata response encoding speed by version: the hand-written encoder
(``protocol.metadata_response``) against kio's writer, for a 3-broker cluster answering
10 topics of 10 partitions (RF 3, one offline replica each).

Prints µs per response (best of several runs) and each figure as a ratio of the hand-written
v4 encoding measured in the same run (the version clients used before v13 was advertised), so
a shared, noisy machine still gives comparable numbers.

    .venv/bin/python bench/metadata_encode.py [--quick]
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from typing import Any

from kio.index import load_response_schema

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.builder import build_entity
from odradek.protocol.codec import encode_response
from odradek.protocol.header import response_header_version
from odradek.protocol.metadata_response import (
    MetadataBroker,
    MetadataPartition,
    MetadataTopic,
    encode_metadata_response,
)

BROKERS = [MetadataBroker(b, "127.0.0.1", 9092 + b, None) for b in range(3)]
TOPICS = [
    MetadataTopic(
        0,
        f"topic-{t}",
        False,
        [
            MetadataPartition(0, p, p % 3, 4, [p % 3, (p + 1) % 3, (p + 2) % 3], [p % 3], [2])
            for p in range(10)
        ],
        topic_id=uuid.UUID(int=t + 1),
    )
    for t in range(10)
]


def best_us(work: Callable[[], Any], repeat: int, number: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            work()
        best = min(best, (time.perf_counter() - start) / number)
    return best * 1e6


def kio_encode(version: int) -> bytes:
    fields = {
        "throttle_time": 0,
        "error_code": 0,
        "brokers": [b._asdict() for b in BROKERS],
        "cluster_id": "cluster",
        "controller_id": 0,
        "topics": [
            {**t._asdict(), "partitions": [p._asdict() for p in t.partitions]} for t in TOPICS
        ],
    }
    entity = build_entity(load_response_schema(ApiKey.METADATA, version), fields)
    return encode_response(response_header_version(ApiKey.METADATA, version), 1, entity)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    repeat, number = (3, 200) if args.quick else (7, 1000)

    def ours(version: int) -> Callable[[], bytes]:
        return lambda: encode_metadata_response(version, 1, BROKERS, "cluster", 0, TOPICS)

    for version in (4, 13):  # warm up both paths
        best_us(ours(version), 1, number)
    baseline = best_us(ours(4), repeat, number)
    print(f"Metadata, 3 brokers, 10 topics x 10 partitions (baseline: ours v4 {baseline:.1f} µs)")
    for version in (4, 8, 9, 12, 13):
        assert ours(version)() == kio_encode(version)
        mine = best_us(ours(version), repeat, number)
        theirs = best_us(lambda v=version: kio_encode(v), repeat, max(1, number // 20))
        print(
            f"  v{version:<2}  ours {mine:7.1f} µs ({mine / baseline:4.2f}x)   "
            f"kio {theirs:8.1f} µs ({theirs / baseline:5.1f}x)"
        )


if __name__ == "__main__":
    main()
