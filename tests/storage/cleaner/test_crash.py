"""A crash at any point of a cleaner pass: the log reopened (unclean) is, segment run by
segment run, either the original or the cleaned one — never a mix that loses or duplicates a
record — reads correctly, and cleaning resumes to the same result.

Every file rename of the pass is a crash point (``.cleaned`` → ``.swap``, old segments →
``.deleted``, ``.swap`` → final names, the checkpoint): the test copies the partition directory
just before the k-th rename — the disk a crash would leave, page cache included — and stops
the pass there. Before the first rename the ``.cleaned`` files are complete; a variant cuts the
cleaned ``.log`` short, as a crash while writing it would. Each run tries every step of the
first swap and a random sample of the later renames.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.records.batch import CompressionType
from odradek.records.record import Record
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.naming import CLEANED_SUFFIX, LOG_SUFFIX

if TYPE_CHECKING:
    from tests.storage.cleaner.conftest import CleanerFactory, KeyValueTools

TP = TopicPartition("orders", 0)
HOUR_MS = 3_600_000


class Crash(BaseException):
    """Stops the pass where a crash would."""


def open_log(directory: str, config: LogConfig, now_ms: int, *, clean: bool) -> Log:
    return Log.open(directory, TP, config, had_clean_shutdown=clean, clock=MockClock(now_ms))


def crash_before_rename(
    monkeypatch: pytest.MonkeyPatch, directory: str, k: int, image: str, cut_cleaned: bool
) -> Callable[[], list[str]]:
    """Makes the k-th rename (0-based) copy ``directory`` to ``image`` and raise Crash;
    returns the sources of the renames done so far."""
    real_replace = os.replace
    done: list[str] = []

    def replace(source: str, target: str) -> None:
        if len(done) == k:
            shutil.copytree(directory, image)
            if cut_cleaned:
                for name in os.listdir(image):
                    if name.endswith(LOG_SUFFIX + CLEANED_SUFFIX):
                        path = os.path.join(image, name)
                        os.truncate(path, os.path.getsize(path) // 2)
            raise Crash
        done.append(source)
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    return lambda: done


def by_range(records: list[Record], bounds: list[int]) -> list[list[Record]]:
    """Splits records (in offset order) at the segment run boundaries."""
    out: list[list[Record]] = [[] for _ in bounds]
    for record in records:
        index = max(i for i, bound in enumerate(bounds) if bound <= record.offset)
        out[index].append(record)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_a_crash_anywhere_in_a_pass_keeps_every_run_original_or_cleaned(
    seed: int,
    tmp_path: Path,
    kv: KeyValueTools,
    cleaners: CleanerFactory,
    clock: MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    rng = random.Random(seed)
    config = LogConfig(
        cleanup_policy="compact",
        segment_bytes=rng.choice([700, 1_200]),
        index_interval_bytes=rng.choice([0, 200]),
        segment_index_bytes=4_096,
        min_cleanable_dirty_ratio=0.0,
        delete_retention_ms=HOUR_MS,
        file_delete_delay_ms=rng.choice([0, 60_000]),
    )
    # The starting log: cleaned once (tombstones get their horizon), then more writes, then
    # past the horizon, so the crashed pass merges, drops records and drops tombstones.
    pristine = str(tmp_path / "pristine" / "orders-0")
    log = Log.open(pristine, TP, config, clock=clock)
    workload = Workload()
    codecs = (CompressionType.NONE, CompressionType.GZIP)
    kv.append(log, rng, workload, batches=30, keys=8, tombstone_ratio=0.25, codecs=codecs)
    cleaners(log).clean_until_done()
    kv.append(log, rng, workload, batches=30, keys=8, tombstone_ratio=0.25, codecs=codecs)
    clock.advance(HOUR_MS + 1)
    original = kv.stored(log)
    log.close()
    now_ms = clock.now_ms()

    def fresh(name: str) -> Log:
        directory = str(tmp_path / name / "orders-0")
        shutil.copytree(pristine, directory)
        return open_log(directory, config, now_ms, clean=True)

    # The pass without a crash: the cleaned log, its segment runs and how many renames.
    with monkeypatch.context() as patch:
        reference = fresh("reference")
        renames = crash_before_rename(patch, reference.directory, -1, "", cut_cleaned=False)
        cleaners(reference).clean_once()
        sources = renames()
    total = len(sources)
    cleaned = kv.stored(reference)
    bounds = [segment.base_offset for segment in reference.segments()]
    reference.close()
    assert total > 3
    assert cleaned != original
    # The first swap: the commit (3 renames to .swap), the first old segment's renames to
    # .deleted, the last renames to the final names and just after them; then a sample.
    end = next(i for i, source in enumerate(sources) if source.endswith(".log.swap"))
    first_steps = set(range(min(7, end))) | set(range(end - 3, end + 2))
    points = sorted(first_steps | set(rng.sample(range(total), min(total, 3))) | {total - 1})
    for k in points:
        cut = k == 0 and seed % 2 == 0
        with monkeypatch.context() as patch:
            victim = fresh(f"victim{k}")
            image = str(tmp_path / f"image{k}" / "orders-0")
            crash_before_rename(patch, victim.directory, k, image, cut_cleaned=cut)
            with pytest.raises(Crash):
                cleaners(victim).clean_once()
            with contextlib.suppress(Exception):
                victim.close()
        recovered = open_log(image, config, now_ms, clean=False)
        names = os.listdir(image)
        assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))], k
        stored = kv.stored(recovered)
        assert kv.read(recovered) == stored, k
        kv.check_same(stored, workload.by_offset())
        for got, before, after in zip(
            by_range(stored, bounds),
            by_range(original, bounds),
            by_range(cleaned, bounds),
            strict=True,
        ):
            assert got in (before, after), k
        assert kv.apply(stored) == kv.apply(original), k
        # Cleaning resumes and ends where the uninterrupted pass did.
        cleaners(recovered).clean_until_done()
        assert kv.apply(kv.stored(recovered)) == kv.apply(cleaned), k
        recovered.close()
        shutil.rmtree(os.path.dirname(image))
        shutil.rmtree(os.path.dirname(victim.directory))
