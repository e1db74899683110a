"""Fixtures of the cleaner tests.

- ``kv`` (a ``KeyValueTools``): appends a random key/value workload (keys from a small set,
  random values, some tombstones) and keeps its dict model; reads a log's records back.
- ``cleaners`` (a ``CleanerFactory``): a ``LogCleaner`` over given logs, on the test's
  ``MockClock``, driven by hand with ``clean_once`` (no threads).

Tests never sleep: they advance ``clock``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.records.batch import CompressionType, iter_batches, parse_header
from odradek.records.codec import build_batch, decode_batch_records
from odradek.records.record import Record, SimpleRecord
from odradek.storage.cleaner.cleaner import CleanResult
from odradek.storage.cleaner.config import CleanerConfig
from odradek.storage.cleaner.log_cleaner import LogCleaner
from odradek.storage.log import Log

HOUR_MS = 3_600_000


@dataclass
class Workload:
    """Records appended to a log, with their offsets."""

    records: list[Record] = field(default_factory=list)

    def model(self) -> dict[bytes, bytes]:
        return KeyValueTools.apply(self.records)

    def by_offset(self) -> dict[int, Record]:
        return {record.offset: record for record in self.records}


class KeyValueTools:
    """Workload writing and reading helpers (see the module docstring)."""

    def __init__(self, clock: MockClock) -> None:
        self.clock = clock

    @staticmethod
    def apply(records: Sequence[Record]) -> dict[bytes, bytes]:
        """Latest value per key, tombstoned keys absent."""
        state: dict[bytes, bytes] = {}
        for record in records:
            assert record.key is not None
            if record.value is None:
                state.pop(record.key, None)
            else:
                state[record.key] = record.value
        return state

    def append(
        self,
        log: Log,
        rng: random.Random,
        workload: Workload,
        *,
        batches: int,
        keys: int = 12,
        tombstone_ratio: float = 0.15,
        max_records: int = 5,
        codecs: Sequence[CompressionType] = (CompressionType.NONE,),
        advance_ms: int = 10,
    ) -> None:
        """Appends ``batches`` batches of 1..max_records random records."""
        for _ in range(batches):
            self.clock.advance(rng.randint(0, advance_ms))
            simple = [
                SimpleRecord(
                    self.clock.now_ms(),
                    b"key-%d" % rng.randrange(keys),
                    None if rng.random() < tombstone_ratio else rng.randbytes(rng.randint(0, 40)),
                    (("h", b"x"),) if rng.random() < 0.1 else (),
                )
                for _ in range(rng.randint(1, max_records))
            ]
            self.append_records(log, simple, workload, compression=rng.choice(list(codecs)))

    def append_records(
        self,
        log: Log,
        records: Sequence[SimpleRecord],
        workload: Workload,
        compression: CompressionType = CompressionType.NONE,
    ) -> int:
        """Appends one batch; returns its first offset."""
        info = log.append(build_batch(records, compression=compression))
        for index, record in enumerate(records):
            workload.records.append(
                Record(
                    info.first_offset + index,
                    record.timestamp_ms,
                    record.key,
                    record.value,
                    tuple(record.headers),
                )
            )
        return info.first_offset

    def put(self, log: Log, workload: Workload, key: bytes, value: bytes | None) -> int:
        """Appends one record at the clock's time; returns its offset."""
        record = SimpleRecord(self.clock.now_ms(), key, value)
        return self.append_records(log, [record], workload)

    @staticmethod
    def stored(log: Log) -> list[Record]:
        """Every record of every segment, read straight from the files (CRC-checked)."""
        out: list[Record] = []
        for segment in log.segments():
            data = segment.log.read(0, segment.size)
            for position, _header in iter_batches(data):
                out += decode_batch_records(data, position)
        return out

    @staticmethod
    def read(log: Log) -> list[Record]:
        """Every record from the log start offset, through ``Log.read`` one batch at a time
        (the index path), checking the reads land where they should."""
        offset = log.log_start_offset
        records: list[Record] = []
        while offset < log.log_end_offset:
            data = log.read(offset, 1).read_bytes()
            if not data:
                break
            batches = list(iter_batches(data[: _first_size(data)]))
            assert len(batches) == 1
            _position, header = batches[0]
            assert header.last_offset >= offset
            records += [r for r in decode_batch_records(data, 0) if r.offset >= offset]
            offset = header.next_offset
        return records

    @staticmethod
    def check_same(actual: Sequence[Record], written: Mapping[int, Record]) -> None:
        """Each record equals the one appended at its offset; offsets strictly increase."""
        previous = -1
        for record in actual:
            assert record.offset > previous
            previous = record.offset
            assert written[record.offset] == record, record.offset


def _first_size(data: bytes) -> int:
    return parse_header(data).size


class CleanerHarness:
    """A LogCleaner over a fixed set of logs, driven by hand."""

    def __init__(self, clock: MockClock, **overrides: object) -> None:
        self.logs: dict[TopicPartition, Log] = {}
        self.clock = clock
        config = CleanerConfig(enable=False, **overrides)  # type: ignore[arg-type]
        self.cleaner = LogCleaner(lambda: self.logs, config, clock=clock)

    def add(self, log: Log) -> Log:
        self.logs[log.topic_partition] = log
        return log

    def clean_once(self) -> CleanResult | None:
        return self.cleaner.clean_once(self.clock.now_ms())

    def clean_until_done(self, limit: int = 200) -> list[CleanResult]:
        """Runs passes until none is needed; returns them."""
        results = []
        for _ in range(limit):
            result = self.clean_once()
            if result is None:
                return results
            results.append(result)
        raise AssertionError(f"still cleaning after {limit} passes")


class CleanerFactory:
    def __init__(self, clock: MockClock) -> None:
        self.clock = clock

    def __call__(self, *logs: Log, **overrides: object) -> CleanerHarness:
        harness = CleanerHarness(self.clock, **overrides)
        for log in logs:
            harness.add(log)
        return harness


@pytest.fixture
def kv(clock: MockClock) -> KeyValueTools:
    return KeyValueTools(clock)


@pytest.fixture
def cleaners(clock: MockClock) -> CleanerFactory:
    return CleanerFactory(clock)
