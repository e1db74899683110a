"""Test data for the Spark tests: records produced with known fields, and the rows a read of
them must return."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from odradek import AdminClient, NewTopic, Producer

#: key, value, topic, partition, offset, timestamp (ms), timestampType, headers
Expected = tuple[
    bytes | None, bytes | None, str, int, int, int, int, tuple[tuple[str, bytes | None], ...]
]


class Produced(NamedTuple):
    rows: list[Expected]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, name: str, partitions: int = 1, **configs: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(name, partitions, 1, configs=configs)]).all()
    finally:
        admin.close()
    return name


def produce(
    bootstrap: str,
    topic: str,
    count: int,
    *,
    partitions: int = 1,
    start: int = 0,
    base_ts: int = 1_700_000_000_000,
    compression: str = "none",
    batch_size: int = 16_384,
) -> list[Expected]:
    """Sends ``count`` records spread over ``partitions`` with varied keys, values, headers
    and timestamps; returns the rows a read must give, in send order."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "compression.type": compression,
            "batch.size": batch_size,
        }
    )
    try:
        futures = []
        for i in range(start, start + count):
            key = None if i % 5 == 0 else f"k{i % 11}".encode()
            value = b"" if i % 7 == 0 else None if i % 13 == 0 else f"v{i}".encode() * (1 + i % 3)
            headers: Sequence[tuple[str, bytes | None]] = (
                [("h", f"{i}".encode()), ("n", None)] if i % 4 == 0 else []
            )
            futures.append(
                producer.send(
                    topic,
                    value=value,
                    key=key,
                    partition=i % partitions,
                    timestamp_ms=base_ts + i * 10,
                    headers=headers,
                )
            )
        producer.flush()
        rows: list[Expected] = []
        for i, future in enumerate(futures, start):
            meta = future.result(10)
            key = None if i % 5 == 0 else f"k{i % 11}".encode()
            value = b"" if i % 7 == 0 else None if i % 13 == 0 else f"v{i}".encode() * (1 + i % 3)
            headers_t = (("h", f"{i}".encode()), ("n", None)) if i % 4 == 0 else ()
            rows.append(
                (key, value, topic, meta.partition, meta.offset, meta.timestamp, 0, headers_t)
            )
        return rows
    finally:
        producer.close()


def as_expected(rows: Iterable[Any], *, headers: bool = True) -> list[Expected]:
    """Spark rows → comparable tuples (timestamps back to ms since the epoch)."""
    out: list[Expected] = []
    for row in rows:
        ts: datetime = row["timestamp"]
        millis = round(ts.timestamp() * 1000)
        hdrs = tuple((h["key"], h["value"]) for h in row["headers"]) if headers else ()
        out.append(
            (
                None if row["key"] is None else bytes(row["key"]),
                None if row["value"] is None else bytes(row["value"]),
                row["topic"],
                row["partition"],
                row["offset"],
                millis,
                row["timestampType"],
                hdrs,
            )
        )
    return out


def by_position(rows: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=lambda r: (r[2], r[3], r[4]))
