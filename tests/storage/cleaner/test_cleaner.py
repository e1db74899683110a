"""Cleaner end to end on real logs: a randomized key/value workload against a dict model,
tombstones and their delete horizon, the dirty ratio and the compaction lags driving passes,
reads and timestamp lookups through cleaned segments, reopening, and aborted passes."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from odradek._clock import MockClock
from odradek.records.batch import CompressionType, iter_batches
from odradek.records.codec import decode_batch_records
from odradek.records.record import SimpleRecord
from odradek.storage.checkpoints import OffsetCheckpointFile
from odradek.storage.cleaner.cleaner import Cleaner, LogCleaningAbortedError
from odradek.storage.cleaner.cleaner_manager import CLEANER_CHECKPOINT
from odradek.storage.cleaner.log_to_clean import LogToClean
from odradek.storage.cleaner.offset_map import OffsetMap
from odradek.storage.log import Log

if TYPE_CHECKING:
    from tests.storage.cleaner.conftest import CleanerFactory, KeyValueTools
    from tests.storage.conftest import LogHarness

HOUR_MS = 3_600_000
COMPACT = {
    "cleanup_policy": "compact",
    "min_cleanable_dirty_ratio": 0.0,
    "delete_retention_ms": HOUR_MS,
    "file_delete_delay_ms": 0,
}


def compacted(logs: LogHarness, directory: str | None = None, **overrides: object) -> Log:
    settings = {**COMPACT, "segment_bytes": 1_000, "index_interval_bytes": 200, **overrides}
    return logs.open(directory=directory, **settings)


def inactive_records(kv: KeyValueTools, log: Log) -> list[tuple[bytes | None, bytes | None]]:
    stored = []
    for segment in log.segments()[:-1]:
        data = segment.log.read(0, segment.size)
        for position, _header in iter_batches(data):
            stored += [(r.key, r.value) for r in decode_batch_records(data, position)]
    return stored


def leftovers(directory: str) -> list[str]:
    return [
        name for name in os.listdir(directory) if name.endswith((".cleaned", ".swap", ".deleted"))
    ]


# -- the randomized workload ---------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_cleaning_keeps_the_latest_record_of_every_key(
    seed: int,
    logs: LogHarness,
    kv: KeyValueTools,
    cleaners: CleanerFactory,
    clock: MockClock,
    tmp_path: Path,
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    rng = random.Random(seed)
    directory = str(tmp_path / f"run{seed}" / "orders-0")
    log = compacted(
        logs,
        directory,
        segment_bytes=rng.choice([400, 1_000, 3_000]),
        index_interval_bytes=rng.choice([0, 150, 4_096]),
    )
    cleaner = cleaners(log, dedupe_buffer_size=rng.choice([1_024, 64 * 1_024]))
    workload = Workload()
    codecs = rng.choice([(CompressionType.NONE,), tuple(CompressionType)])
    keys = rng.choice([6, 30, 120])
    for _round in range(2):
        kv.append(log, rng, workload, batches=rng.randint(60, 160), keys=keys, codecs=codecs)
        active = log.segments()[-1]
        active_bytes = active.log.read(0, active.size)
        results = cleaner.clean_until_done()
        assert results
        assert log.segments()[-1] is active
        assert active.log.read(0, active.size) == active_bytes
        check_log(kv, log, workload)
    # A key whose latest record below the active segment is a tombstone keeps that tombstone
    # until delete.retention.ms after the pass that kept it.
    active_base = log.segments()[-1].base_offset
    latest = {r.key: r for r in workload.records if r.offset < active_base}
    deleted = sorted(key for key, r in latest.items() if r.value is None)
    assert sorted(key for key, value in inactive_records(kv, log) if value is None) == deleted
    clock.advance(HOUR_MS + 1)
    cleaner.clean_until_done()
    check_log(kv, log, workload)
    assert all(value is not None for _key, value in inactive_records(kv, log))
    assert leftovers(directory) == []
    # The cleaned log reads the same after a clean and after an unclean reopen.
    log.close()
    for clean in (True, False):
        reopened = logs.open(log.config, directory=directory, clean=clean)
        check_log(kv, reopened, workload)
        reopened.close()


def check_log(kv: KeyValueTools, log: Log, workload: object) -> None:
    """Reads equal stored records, each the appended record at its offset, in order; the
    dict model holds; the inactive segments hold each key at most once."""
    written = workload.by_offset()  # type: ignore[attr-defined]
    stored = kv.stored(log)
    assert kv.read(log) == stored
    kv.check_same(stored, written)
    assert kv.apply(stored) == workload.model()  # type: ignore[attr-defined]
    keys = [key for key, _value in inactive_records(kv, log)]
    assert len(keys) == len(set(keys))
    # A consumer fetching from any offset gets the first surviving record at or after it.
    offsets = [record.offset for record in stored]
    for probe in range(log.log_start_offset, log.log_end_offset, 7):
        expected = [offset for offset in offsets if offset >= probe]
        assert first_fetched(log, probe) == (expected[0] if expected else None), probe


def first_fetched(log: Log, offset: int) -> int | None:
    """The first record offset ≥ ``offset`` a consumer gets, fetching from there on."""
    fetch = offset
    while fetch < log.log_end_offset:
        data = log.read(fetch, 1_000_000).read_bytes()
        assert data, fetch
        for position, header in iter_batches(data):
            for record in decode_batch_records(data, position):
                if record.offset >= offset:
                    return record.offset
            fetch = header.next_offset
    return None


# -- tombstones ----------------------------------------------------------------------------


def test_a_tombstone_stays_for_delete_retention_ms_after_the_pass_that_kept_it(
    logs: LogHarness, kv: KeyValueTools, cleaners: CleanerFactory, clock: MockClock
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = compacted(logs, delete_retention_ms=10_000)
    cleaner = cleaners(log)
    workload = Workload()
    kv.put(log, workload, b"a", b"1")
    kv.put(log, workload, b"b", b"2")
    clock.advance(5)
    tombstone_offset = kv.put(log, workload, b"a", None)
    kv.put(log, workload, b"c", b"3")
    log.roll()
    kv.put(log, workload, b"d", b"4")  # the active segment
    clock.advance(1_000)
    cleaned_at = clock.now_ms()
    assert cleaner.clean_once() is not None
    stored = kv.stored(log)
    assert [(r.key, r.value) for r in stored] == [
        (b"b", b"2"),
        (b"a", None),
        (b"c", b"3"),
        (b"d", b"4"),
    ]
    kv.check_same(stored, workload.by_offset())  # timestamps and offsets kept
    # The tombstone's batch now carries its delete horizon (attribute bit 6, base timestamp).
    segment = log.segments()[0]
    data = segment.log.read(0, segment.size)
    horizons = [
        (header.base_offset, header.base_timestamp)
        for _position, header in iter_batches(data)
        if header.has_delete_horizon
    ]
    assert horizons == [(tombstone_offset, cleaned_at + 10_000)]
    clock.advance(9_999)
    assert cleaner.clean_once() is None  # nothing dirty, the horizon not reached
    assert (b"a", None) in [(r.key, r.value) for r in kv.stored(log)]
    clock.advance(1)
    result = cleaner.clean_once()  # the horizon is due: a pass just for it
    assert result is not None
    assert result.stats.records_removed == 1
    assert [(r.key, r.value) for r in kv.stored(log)] == [(b"b", b"2"), (b"c", b"3"), (b"d", b"4")]
    assert cleaner.clean_once() is None
    assert kv.read(log) == kv.stored(log)


def test_a_tombstone_in_the_active_segment_is_never_touched(
    logs: LogHarness, kv: KeyValueTools, cleaners: CleanerFactory, clock: MockClock
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = compacted(logs, delete_retention_ms=0)
    cleaner = cleaners(log)
    workload = Workload()
    kv.put(log, workload, b"a", b"1")
    log.roll()
    kv.put(log, workload, b"a", None)
    clock.advance(HOUR_MS)
    cleaner.clean_until_done()
    # The active segment is outside the offset map: the tombstone there supersedes nothing
    # yet and is itself untouched.
    assert [(r.key, r.value) for r in kv.stored(log)] == [(b"a", b"1"), (b"a", None)]
    log.roll()
    kv.put(log, workload, b"other", b"1")
    assert cleaner.clean_once() is not None  # supersedes a=1, keeps the tombstone
    assert [(r.key, r.value) for r in kv.stored(log)] == [(b"a", None), (b"other", b"1")]
    assert cleaner.clean_once() is not None  # delete.retention.ms=0: due at once
    assert [(r.key, r.value) for r in kv.stored(log)] == [(b"other", b"1")]


def test_keyless_records_and_superseded_ones_go_and_batches_keep_their_offsets(
    logs: LogHarness, kv: KeyValueTools, cleaners: CleanerFactory
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    # A topic that switched from delete to compact may hold keyless records.
    log = logs.open(segment_bytes=10_000)
    workload = Workload()
    now = kv.clock.now_ms()
    first = kv.append_records(
        log,
        [
            SimpleRecord(now, b"k", b"1"),
            SimpleRecord(now, None, b"x"),
            SimpleRecord(now, b"k", b"2"),
        ],
        workload,
        compression=CompressionType.GZIP,
    )
    last_batch = kv.append_records(
        log, [SimpleRecord(now, b"j", b"1"), SimpleRecord(now, b"k", b"3")], workload
    )
    log.roll()
    kv.put(log, workload, b"z", b"active")
    log.update_config(compacted(logs, directory=str(logs.root / "other-0")).config)
    cleaners(log).clean_until_done()
    segment = log.segments()[0]
    data = segment.log.read(0, segment.size)
    headers = [header for _position, header in iter_batches(data)]
    # The first batch loses every record (k=1 and k=2 are superseded by k=3, the keyless one
    # goes) and disappears; the last one is kept as it was; the segment still ends where it
    # ended.
    assert [(h.base_offset, h.last_offset, h.records_count) for h in headers] == [
        (last_batch, last_batch + 1, 2)
    ]
    assert first == 0
    assert segment.next_offset == last_batch + 2
    assert [(r.offset, r.key, r.value) for r in kv.stored(log)] == [
        (3, b"j", b"1"),
        (4, b"k", b"3"),
        (5, b"z", b"active"),
    ]


def test_the_last_batch_of_a_cleaned_segment_stays_as_an_empty_batch(
    logs: LogHarness, kv: KeyValueTools, cleaners: CleanerFactory
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = compacted(logs, segment_bytes=100)  # one batch per segment, no merging
    workload = Workload()
    for key, value in ((b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"c", b"1")):
        kv.put(log, workload, key, value)
    assert [s.base_offset for s in log.segments()] == [0, 1, 2, 3]
    cleaners(log).clean_until_done()
    first = log.segments()[0]
    data = first.log.read(0, first.size)
    headers = [header for _position, header in iter_batches(data)]
    # a=1 is superseded; its batch stays, empty and uncompressed, so the cleaned segment
    # still spans offset 0 (a crash-time swap is matched to the segments it replaces by it).
    assert [
        (h.base_offset, h.last_offset, h.records_count, h.compression_bits) for h in headers
    ] == [(0, 0, 0, 0)]
    assert (first.base_offset, first.next_offset) == (0, 1)
    expected = [(1, b"b", b"1"), (2, b"a", b"2"), (3, b"c", b"1")]
    assert [(r.offset, r.key, r.value) for r in kv.read(log)] == expected
    assert first_fetched(log, 0) == 1
    log.close()
    for clean in (True, False):
        reopened = logs.open(log.config, clean=clean)
        assert [(r.offset, r.key, r.value) for r in kv.read(reopened)] == expected
        reopened.close()


# -- when a log is cleaned -----------------------------------------------------------------


def test_min_cleanable_dirty_ratio_decides_when_a_log_is_cleaned(
    logs: LogHarness, kv: KeyValueTools, cleaners: CleanerFactory, clock: MockClock
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = compacted(logs, min_cleanable_dirty_ratio=0.5, segment_bytes=10_000)
    cleaner = cleaners(log)
    workload = Workload()
    for n in range(20):
        kv.put(log, workload, b"k%d" % n, b"v")
    log.roll()
    kv.put(log, workload, b"x", b"active")
    assert cleaner.clean_once() is not None  # everything is dirty: ratio 1
    checkpoint = OffsetCheckpointFile(os.path.join(logs.root, CLEANER_CHECKPOINT)).read()
    assert checkpoint == {log.topic_partition: log.segments()[-1].base_offset}
    clean_size = log.segments()[0].size
    # A dirty segment a little smaller than the clean section: ratio < 0.5, no pass.
    for n in range(15):
        kv.put(log, workload, b"k%d" % n, b"w")
    log.roll()
    measured = cleaner.cleaner.manager.measure(log, clock.now_ms())
    assert measured.cleanable_ratio < 0.5
    assert cleaner.clean_once() is None
    for n in range(15, 20):
        kv.put(log, workload, b"k%d" % n, b"w")
    log.roll()
    measured = cleaner.cleaner.manager.measure(log, clock.now_ms())
    assert measured.cleanable_ratio > 0.5
    assert measured.clean_bytes == clean_size
    assert cleaner.clean_once() is not None
    assert kv.apply(kv.stored(log)) == workload.model()
    assert len(kv.stored(log)) == 21  # k0..k19 and x


def test_min_compaction_lag_holds_young_segments_back(
    logs: LogHarness, kv: KeyValueTools, cleaners: CleanerFactory, clock: MockClock
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = compacted(logs, min_compaction_lag_ms=60_000, segment_bytes=10_000)
    cleaner = cleaners(log)
    workload = Workload()
    kv.put(log, workload, b"a", b"1")
    log.roll()
    clock.advance(30_000)
    kv.put(log, workload, b"a", b"2")
    log.roll()
    kv.put(log, workload, b"a", b"3")  # active
    assert cleaner.clean_once() is None  # both segments are younger than the lag
    clock.advance(30_001)
    # The first segment is old enough now, the second (30 s old) waits: a=2 is not mapped,
    # so a=1 stays.
    measured = cleaner.cleaner.manager.measure(log, clock.now_ms())
    assert measured.first_uncleanable_offset == log.segments()[1].base_offset
    cleaner.clean_until_done()
    assert [r.value for r in kv.stored(log)] == [b"1", b"2", b"3"]
    clock.advance(30_000)
    assert cleaner.clean_once() is not None
    assert [r.value for r in kv.stored(log)] == [b"2", b"3"]


def test_max_compaction_lag_forces_a_pass_whatever_the_ratio(
    logs: LogHarness, kv: KeyValueTools, cleaners: CleanerFactory, clock: MockClock
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = compacted(
        logs, min_cleanable_dirty_ratio=1.0, max_compaction_lag_ms=60_000, segment_bytes=10_000
    )
    cleaner = cleaners(log)
    workload = Workload()
    kv.put(log, workload, b"a", b"1")
    kv.put(log, workload, b"a", b"2")
    log.roll()
    kv.put(log, workload, b"b", b"1")
    assert cleaner.clean_once() is None  # a ratio of 1.0 is never exceeded
    clock.advance(60_001)
    result = cleaner.clean_once()
    assert result is not None
    assert result.stats.records_removed == 1
    # The active segment rolls by max.compaction.lag.ms too, so its records get their turn.
    kv.put(log, workload, b"b", b"2")
    assert len(log.segments()) == 3


def test_the_filthiest_log_is_cleaned_first(
    logs: LogHarness, kv: KeyValueTools, cleaners: CleanerFactory, tmp_path: Path
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    from odradek._types import TopicPartition  # noqa: PLC0415

    dirty = compacted(logs, str(tmp_path / "orders-0"), segment_bytes=10_000)
    dirtier = Log.open(
        str(tmp_path / "orders-1"),
        TopicPartition("orders", 1),
        dirty.config,
        clock=kv.clock,
    )
    logs.opened.append(dirtier)
    workload = Workload()
    for log, count in ((dirty, 3), (dirtier, 30)):
        for n in range(count):
            kv.put(log, workload, b"k", b"%d" % n)
        log.roll()
    cleaner = cleaners(dirty, dirtier)
    # Both are all dirty (ratio 1); clean the first, then the other has the higher ratio.
    first = cleaner.clean_once()
    second = cleaner.clean_once()
    assert first is not None
    assert second is not None
    assert {first.topic_partition, second.topic_partition} == {
        dirty.topic_partition,
        dirtier.topic_partition,
    }
    assert cleaner.clean_once() is None


# -- aborted and failed passes ---------------------------------------------------------------


def test_an_aborted_pass_leaves_the_log_as_it_was(
    logs: LogHarness, kv: KeyValueTools, clock: MockClock
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = compacted(logs, segment_bytes=300)
    workload = Workload()
    for n in range(40):
        kv.put(log, workload, b"k%d" % (n % 3), b"%d" % n)
    before = kv.stored(log)
    calls = []

    def abort_on_third_check(_tp: object) -> bool:
        calls.append(1)
        return len(calls) > 30

    cleaner = Cleaner(OffsetMap(64 * 1024), is_aborted=abort_on_third_check)
    segments = log.segments()
    to_clean = LogToClean(log.topic_partition, 0, segments[-1].base_offset, 0, 1, 0)
    with pytest.raises(LogCleaningAbortedError):
        cleaner.clean(log, to_clean, clock.now_ms())
    assert leftovers(log.directory) == []
    assert kv.apply(kv.stored(log)) == kv.apply(before)
    assert kv.read(log) == kv.stored(log)


@pytest.mark.parametrize("change", ["truncation", "retention"])
def test_a_pass_over_a_log_that_changed_is_abandoned(
    change: str, logs: LogHarness, kv: KeyValueTools, clock: MockClock
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    # Deleted files stay open for file.delete.delay.ms, so the pass can go on reading.
    log = compacted(
        logs,
        segment_bytes=300,
        file_delete_delay_ms=60_000,
        cleanup_policy="compact,delete",
        retention_bytes=1_000,
    )
    workload = Workload()
    for n in range(40):
        kv.put(log, workload, b"k%d" % (n % 3), b"%d" % n)
    segments = log.segments()
    to_clean = LogToClean(log.topic_partition, 0, segments[-1].base_offset, 0, 1, 0)
    changed: list[bool] = []

    def change_the_log(_tp: object) -> bool:
        if not changed:  # the first batch of the pass: the log changes under it
            changed.append(True)
            if change == "truncation":
                log.truncate_to(segments[-2].base_offset)
            else:
                assert log.delete_old_segments() > 0
        return False

    cleaner = Cleaner(OffsetMap(64 * 1024), is_aborted=change_the_log)
    with pytest.raises(LogCleaningAbortedError):
        cleaner.clean(log, to_clean, clock.now_ms())
    assert not [name for name in os.listdir(log.directory) if name.endswith((".cleaned", ".swap"))]
    assert kv.read(log) == kv.stored(log)
    kv.check_same(kv.stored(log), workload.by_offset())


def test_replace_segments_refuses_segments_no_longer_in_the_log(
    logs: LogHarness, kv: KeyValueTools
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = compacted(logs, segment_bytes=300, retention_bytes=1, cleanup_policy="compact,delete")
    workload = Workload()
    for n in range(40):
        kv.put(log, workload, b"k%d" % (n % 3), b"%d" % n)
    segments = log.segments()
    truncations = log.truncation_count
    log.delete_old_segments()  # retention removed them meanwhile
    calls: list[str] = []
    replaced = log.replace_segments(
        segments[0],
        segments[:2],
        truncations=truncations,
        commit=lambda: calls.append("commit"),
        finish=lambda: calls.append("finish"),
    )
    assert not replaced
    assert calls == []
    active = log.segments()[-1]
    assert not log.replace_segments(
        active, [active], truncations=truncations, commit=lambda: None, finish=lambda: None
    )


def test_a_batch_too_big_for_the_dedupe_buffer_makes_the_log_uncleanable(
    logs: LogHarness, kv: KeyValueTools, cleaners: CleanerFactory
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = compacted(logs, segment_bytes=100_000)
    workload = Workload()
    now = kv.clock.now_ms()
    kv.append_records(log, [SimpleRecord(now, b"k%d" % n, b"v") for n in range(60)], workload)
    log.roll()
    before = kv.stored(log)
    cleaner = cleaners(log, dedupe_buffer_size=1_024)  # 38 keys
    assert cleaner.clean_once() is None
    assert cleaner.cleaner.manager.uncleanable() == {log.topic_partition}
    assert cleaner.cleaner.statistics()["failures"] == 1
    assert cleaner.clean_once() is None
    assert kv.stored(log) == before
    assert leftovers(log.directory) == []


def test_a_full_offset_map_cleans_in_several_passes(
    logs: LogHarness, kv: KeyValueTools, cleaners: CleanerFactory
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = compacted(logs, segment_bytes=2_000)
    workload = Workload()
    for n in range(300):
        kv.put(log, workload, b"k%d" % (n % 100), b"%d" % n)
    log.roll()
    cleaner = cleaners(log, dedupe_buffer_size=1_024)  # 38 keys per pass
    results = cleaner.clean_until_done()
    assert len(results) > 3
    assert [r.end_offset for r in results] == sorted(r.end_offset for r in results)
    stored = kv.stored(log)
    assert kv.apply(stored) == workload.model()
    assert sorted(r.key for r in stored) == sorted(b"k%d" % n for n in range(100))


def test_timestamp_lookups_work_on_cleaned_segments(
    logs: LogHarness, kv: KeyValueTools, cleaners: CleanerFactory, clock: MockClock
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = compacted(logs, segment_bytes=400, index_interval_bytes=0)
    workload = Workload()
    for n in range(60):
        clock.advance(10)
        kv.put(log, workload, b"k%d" % (n % 7), b"%d" % n)
    log.roll()
    cleaners(log).clean_until_done()
    stored = kv.stored(log)
    for record in workload.records:
        found = log.offset_for_timestamp(record.timestamp)
        expected = next((r for r in stored if r.timestamp >= record.timestamp), None)
        assert found is not None
        assert expected is not None
        assert (found.offset, found.timestamp) == (expected.offset, expected.timestamp)


def test_records_past_the_high_watermark_supersede_nothing(
    logs: LogHarness, kv: KeyValueTools, cleaners: CleanerFactory
) -> None:
    from tests.storage.cleaner.conftest import Workload  # noqa: PLC0415

    log = compacted(logs, segment_bytes=10_000)
    cleaner = cleaners(log)
    workload = Workload()
    kv.put(log, workload, b"a", b"1")
    kv.put(log, workload, b"b", b"1")
    log.roll()
    kv.put(log, workload, b"a", b"2")  # not committed yet
    kv.put(log, workload, b"b", b"2")
    log.roll()
    kv.put(log, workload, b"c", b"active")
    log.update_high_watermark(2)
    cleaner.clean_until_done()
    assert [r.value for r in kv.stored(log)] == [b"1", b"1", b"2", b"2", b"active"]
    log.update_high_watermark(log.log_end_offset)
    assert cleaner.clean_once() is not None
    assert [r.value for r in kv.stored(log)] == [b"2", b"2", b"active"]
