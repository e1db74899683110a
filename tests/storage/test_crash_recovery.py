"""Crash-recovery fuzz test: randomized runs that write a log, take the disk image a crash
would leave, damage it, reopen it, and check that the log equals the longest valid prefix of
what was written and never returns a corrupted batch.

A crash is simulated by copying the partition directory while the log is open (the page
cache's view, with preallocated, untrimmed index files), then damaging the copy:

- cut the newest segment's ``.log`` at a random byte (a lost, torn tail);
- append random garbage to it (nonsense bytes after the end);
- flip a random bit inside a batch of the newest segment, in the bytes the CRC32C covers
  (the v2 format leaves the base offset and partition leader epoch outside the CRC);
- overwrite, shorten or delete random index and time-index files;
- shut down cleanly instead (the clean-shutdown marker case), then damage indexes or the tail.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from dataclasses import dataclass, field

import pytest

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.records.batch import ATTRIBUTES_OFFSET, CompressionType, iter_batches
from odradek.records.codec import build_batch, decode_batch_records
from odradek.records.record import SimpleRecord
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.naming import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX

RUNS = int(os.environ.get("ODRADEK_FUZZ_RUNS", "160"))
TP = TopicPartition("fuzz", 0)


@dataclass
class Written:
    """What the writer appended: each batch's stored bytes, in offset order."""

    batches: list[bytes] = field(default_factory=list)
    base_offsets: list[int] = field(default_factory=list)


def _random_batch(rng: random.Random, clock: MockClock) -> bytes:
    count = rng.randint(1, 6)
    records = [
        SimpleRecord(
            clock.now_ms() + rng.randint(-5_000, 5_000),
            None if rng.random() < 0.3 else rng.randbytes(rng.randint(0, 12)),
            rng.randbytes(rng.randint(0, 300)),
            (("h", rng.randbytes(3)),) if rng.random() < 0.2 else (),
        )
        for _ in range(count)
    ]
    compression = rng.choice([CompressionType.NONE] * 3 + [CompressionType.GZIP])
    return build_batch(records, compression=compression)


def _write(rng: random.Random, directory: str, clock: MockClock) -> tuple[Log, Written]:
    config = LogConfig(
        segment_bytes=rng.choice([4_000, 8_000, 16_000]),
        index_interval_bytes=rng.choice([0, 200, 1_000]),
        segment_index_bytes=rng.choice([48, 240, 4_096]),
        flush_messages=rng.randint(3, 60),
    )
    log = Log.open(directory, TP, config, clock=clock)
    written = Written()
    for _ in range(rng.randint(1, 120)):
        clock.advance(rng.randint(0, 50))
        data = bytearray(_random_batch(rng, clock))
        info = log.append(data)
        written.batches.append(bytes(data))
        written.base_offsets.append(info.first_offset)
    return log, written


def _crash_image(log: Log, parent: str) -> str:
    """Copies the partition directory as a crash would leave it (log still open)."""
    image = os.path.join(parent, "image", "fuzz-0")
    shutil.copytree(log.directory, image)
    return image


def _segment_files(directory: str, suffix: str) -> list[str]:
    return sorted(
        os.path.join(directory, name) for name in os.listdir(directory) if name.endswith(suffix)
    )


def _batch_spans(path: str) -> list[tuple[int, int]]:
    """(position, size) of every whole valid batch of a .log file."""
    with open(path, "rb") as handle:
        data = handle.read()
    spans = []
    try:
        for position, header in iter_batches(data):
            spans.append((position, header.size))
    except Exception:  # the damaged tail ends the list
        pass
    return spans


def _damage_log(rng: random.Random, image: str, *, allow_bit_flip: bool) -> int | None:
    """Damages the newest segment; returns the byte position in it from which nothing is
    expected to survive (None when all batches survive)."""
    newest = _segment_files(image, LOG_SUFFIX)[-1]
    size = os.path.getsize(newest)
    spans = _batch_spans(newest)
    kinds = ["cut", "garbage"] + (["flip"] if allow_bit_flip and spans else [])
    kind = rng.choice(kinds)
    if kind == "cut":
        cut = rng.randint(0, size)
        os.truncate(newest, cut)
        return cut
    if kind == "garbage":
        with open(newest, "ab") as handle:
            handle.write(rng.randbytes(rng.randint(1, 300)))
        return size
    position, batch_size = rng.choice(spans)
    target = position + rng.randint(ATTRIBUTES_OFFSET, batch_size - 1)
    with open(newest, "r+b") as handle:
        handle.seek(target)
        byte = handle.read(1)[0]
        handle.seek(target)
        handle.write(bytes([byte ^ (1 << rng.randint(0, 7))]))
    return position


def _damage_indexes(rng: random.Random, image: str) -> None:
    candidates = _segment_files(image, INDEX_SUFFIX) + _segment_files(image, TIME_INDEX_SUFFIX)
    for path in rng.sample(candidates, k=rng.randint(1, len(candidates))):
        action = rng.choice(["delete", "shorten", "scribble", "scribble"])
        size = os.path.getsize(path)
        if action == "delete":
            os.remove(path)
        elif action == "shorten":
            os.truncate(path, rng.randint(0, size))
        elif size:
            with open(path, "r+b") as handle:
                handle.seek(rng.randrange(size))
                handle.write(rng.randbytes(rng.randint(1, 16)))


def _expected(written: Written, image: str, damage_from: int | None) -> list[bytes]:
    """The longest valid prefix: every batch before the damaged byte of the newest segment."""
    if damage_from is None:
        return written.batches
    newest = _segment_files(image, LOG_SUFFIX)[-1]
    newest_base = int(os.path.basename(newest)[:20])
    kept = []
    position = 0
    for data, base in zip(written.batches, written.base_offsets, strict=True):
        if base < newest_base:
            kept.append(data)
            continue
        if position + len(data) > damage_from:
            break
        kept.append(data)
        position += len(data)
    return kept


def _read_all(log: Log) -> list[bytes]:
    """Every batch from the log start offset to the end, each CRC-checked."""
    batches: list[bytes] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 30).read_bytes()
        assert data, f"no data at offset {offset} < log end offset {log.log_end_offset}"
        for position, header in iter_batches(data):  # raises on a corrupted batch
            batches.append(data[position : position + header.size])
            offset = header.next_offset
    return batches


def _check_offset_for_timestamp(rng: random.Random, log: Log, batches: list[bytes]) -> None:
    records = [record for data in batches for record in decode_batch_records(data)]
    for _ in range(5):
        if records:
            target = rng.choice(records).timestamp + rng.randint(-2, 2)
        else:
            target = rng.randint(0, 2**41)
        linear = next((r for r in records if r.timestamp >= target), None)
        found = log.offset_for_timestamp(target)
        assert (found is None) == (linear is None)
        if found is not None and linear is not None:
            assert (found.offset, found.timestamp) == (linear.offset, linear.timestamp)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(4))
def test_recovery_returns_the_longest_valid_prefix(chunk: int) -> None:
    for run in range(chunk * RUNS // 4, (chunk + 1) * RUNS // 4):
        rng = random.Random(run)
        with tempfile.TemporaryDirectory() as parent:
            clock = MockClock()
            log, written = _write(rng, os.path.join(parent, "live", "fuzz-0"), clock)
            clean = rng.random() < 0.3
            if clean:
                log.close()
            recovery_point = log.recovery_point
            image = _crash_image(log, parent)
            if not clean:
                log.close()
            damage_from = None
            if rng.random() < 0.8:
                damage_from = _damage_log(rng, image, allow_bit_flip=not clean)
            if rng.random() < 0.5:
                _damage_indexes(rng, image)
            expected = _expected(written, image, damage_from)

            reopened = Log.open(
                image,
                TP,
                log.config,
                recovery_point=recovery_point,
                had_clean_shutdown=clean,
                clock=clock,
            )
            try:
                got = _read_all(reopened)
                assert got == expected, f"run {run}: {len(got)} batches, {len(expected)} expected"
                expected_end = (
                    written.base_offsets[len(expected)]
                    if expected != written.batches
                    else log.log_end_offset
                )
                assert reopened.log_end_offset == expected_end, f"run {run}"
                _check_offset_for_timestamp(rng, reopened, got)
                # The recovered log takes appends at its end.
                info = reopened.append(_random_batch(rng, clock))
                assert info.first_offset == expected_end
            finally:
                reopened.close()
