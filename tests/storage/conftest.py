"""Fixtures and helpers of the storage tests.

- ``make_batch`` (a ``BatchFactory``): builds v2 record batches whose values are all distinct,
  and decodes buffers of batches back into headers and records.
- ``logs`` (a ``LogHarness``): opens ``Log``s in a temporary partition directory on a
  ``MockClock`` and a ``ManualScheduler`` (so time and background work move only when a test
  says so), and reads a log back batch by batch.

Tests never sleep: they advance ``clock`` and call ``scheduler.run_due()``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.errors import CorruptRecordError
from odradek.records.batch import HEADER_SIZE, BatchHeader, CompressionType, TimestampType
from odradek.records.batch import parse_header as _parse_header
from odradek.records.codec import build_batch, decode_batch_records
from odradek.records.record import Record, SimpleRecord
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.scheduler import ManualScheduler

TP = TopicPartition("orders", 0)
START_MS = 1_700_000_000_000


class BatchFactory:
    """Builds record batches with distinct keys and values (``k<n>``, ``v<n>`` padded with
    ``.``, ``n`` eight digits wide) so that a round trip can tell every record apart, while a
    batch's size depends only on its shape, never on how many were built before it."""

    def __init__(self) -> None:
        self._counter = itertools.count()

    def __call__(
        self,
        count: int = 1,
        *,
        timestamps: Sequence[int] | None = None,
        timestamp_ms: int = START_MS,
        value_bytes: int = 16,
        base_offset: int = 0,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        compression: CompressionType = CompressionType.NONE,
    ) -> bytes:
        """One batch of ``count`` records (or one per entry of ``timestamps``)."""
        if timestamps is None:
            timestamps = [timestamp_ms] * count
        records = []
        for timestamp in timestamps:
            n = next(self._counter)
            value = f"v{n:08d}".encode().ljust(value_bytes, b".")
            records.append(SimpleRecord(timestamp, f"k{n:08d}".encode(), value))
        return build_batch(
            records,
            base_offset=base_offset,
            timestamp_type=timestamp_type,
            compression=compression,
        )

    @staticmethod
    def headers(data: bytes) -> list[tuple[int, BatchHeader]]:
        """``(position, header)`` of every whole batch in ``data`` (a partial one at the end,
        as a fetch may return, is left out)."""
        return list(whole_batches(data))

    @staticmethod
    def records(data: bytes) -> list[Record]:
        """The records of every whole batch in ``data``, CRC-checked."""
        return [
            record
            for position, _header in whole_batches(data)
            for record in decode_batch_records(data, position)
        ]


def whole_batches(data: bytes) -> Iterator[tuple[int, BatchHeader]]:
    position = 0
    while len(data) - position >= HEADER_SIZE:
        header = _parse_header(data, position)
        if position + header.size > len(data):
            return
        yield position, header
        position += header.size


class LogHarness:
    """Opens logs of ``TP`` in ``directory`` on the test's clock and scheduler.

    Config overrides are ``LogConfig`` field names (``segment_bytes=1000``).
    """

    def __init__(self, root: Path, clock: MockClock, scheduler: ManualScheduler) -> None:
        self.root = root
        self.directory = str(root / "orders-0")
        self.clock = clock
        self.scheduler = scheduler
        self.opened: list[Log] = []

    def config(self, **overrides: object) -> LogConfig:
        return dataclasses.replace(LogConfig(), **overrides)  # type: ignore[arg-type]

    def open(
        self,
        config: LogConfig | None = None,
        *,
        directory: str | None = None,
        clean: bool = False,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        inline: bool = False,
        **overrides: object,
    ) -> Log:
        """Opens the log; ``inline=True`` opens it without a scheduler (flushes and file
        deletions then run on the caller's thread)."""
        if config is None:
            config = self.config(**overrides)
        log = Log.open(
            directory or self.directory,
            TP,
            config,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=clean,
            clock=self.clock,
            scheduler=None if inline else self.scheduler,
        )
        self.opened.append(log)
        return log

    def files(self, directory: str | None = None) -> list[str]:
        return sorted(os.listdir(directory or self.directory))

    @staticmethod
    def read_all(log: Log, start_offset: int | None = None) -> list[Record]:
        """Every record from ``start_offset`` (default: the log start offset) to the log end
        offset, read one batch at a time (``max_bytes=1`` with ``min_one_message``)."""
        offset = log.log_start_offset if start_offset is None else start_offset
        records: list[Record] = []
        while offset < log.log_end_offset:
            data = log.read(offset, 1).read_bytes()
            batches = list(whole_batches(data))
            if len(batches) != 1:
                raise CorruptRecordError(f"read at {offset} returned {len(batches)} batches")
            position, header = batches[0]
            assert header.last_offset >= offset
            records += [r for r in decode_batch_records(data, position) if r.offset >= offset]
            offset = header.next_offset
        return records

    def close_all(self) -> None:
        for log in self.opened:
            with contextlib.suppress(Exception):
                log.close()


@pytest.fixture
def clock() -> MockClock:
    return MockClock(START_MS)


@pytest.fixture
def scheduler(clock: MockClock) -> ManualScheduler:
    return ManualScheduler(clock)


@pytest.fixture(scope="session")
def make_batch() -> BatchFactory:
    return BatchFactory()


@pytest.fixture
def logs(tmp_path: Path, clock: MockClock, scheduler: ManualScheduler) -> Iterator[LogHarness]:
    harness = LogHarness(tmp_path, clock, scheduler)
    yield harness
    scheduler.shutdown()  # runs pending one-off tasks: delayed file deletions
    harness.close_all()
