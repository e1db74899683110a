"""OpenFiles and the lazily opened segment files: the bound on open descriptors, the idle
sweep, reopening on use, slices that outlive a release, indexes mapped only while written, and
the start-up log line of a new log directory."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from tests.storage.conftest import BatchFactory, LogHarness

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.storage.config import LogConfig
from odradek.storage.file_records import FileRecords
from odradek.storage.log import Log
from odradek.storage.manager import LogManager
from odradek.storage.offset_index import OffsetIndex
from odradek.storage.open_files import OpenFiles
from odradek.storage.scheduler import ManualScheduler

CONFIG = LogConfig(segment_bytes=4096, index_interval_bytes=100, segment_index_bytes=4096)


def open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def fd_target(fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except FileNotFoundError:
        return None


def mapped_paths() -> set[str]:
    with open("/proc/self/maps") as maps:
        return {line.split(maxsplit=5)[-1].strip() for line in maps if "/" in line}


class Owner:
    """A stand-in for a segment file: records whether it was released."""

    def __init__(self, busy: bool = False) -> None:
        self.recently_used = False
        self.busy = busy
        self.released = 0

    def release_file(self) -> bool:
        if self.busy:
            return False
        self.released += 1
        return True


def test_the_bound_releases_owners_not_used_recently_oldest_first() -> None:
    files = OpenFiles(3)
    a, b, c, d = Owner(), Owner(), Owner(), Owner()
    for owner in (a, b, c):
        files.opened(owner)
    a.recently_used = True  # used again since it opened: a second chance
    b.recently_used = False
    c.recently_used = False
    files.opened(d)
    assert (a.released, b.released, c.released, d.released) == (0, 1, 0, 0)
    assert files.count == 3
    assert not a.recently_used  # the chance is spent: next time it goes
    files.opened(Owner())
    assert a.released == 1 or c.released == 1
    assert files.count == 3


def test_a_busy_owner_is_kept_and_the_bound_is_exceeded_rather_than_blocking() -> None:
    files = OpenFiles(1)
    busy = Owner(busy=True)
    files.opened(busy)
    busy.recently_used = False
    other = Owner()
    files.opened(other)
    assert busy.released == 0
    assert files.count <= 2
    assert files.statistics()["max_open_files"] == 1


def test_the_idle_sweep_releases_what_was_not_used_since_the_previous_sweep() -> None:
    files = OpenFiles(100)
    idle, active = Owner(), Owner()
    files.opened(idle)
    files.opened(active)
    assert files.close_idle() == 0  # both were used (opened) since the last sweep
    active.recently_used = True
    assert files.close_idle() == 1
    assert (idle.released, active.released) == (1, 0)
    assert files.close_idle() == 1
    assert active.released == 1
    assert files.count == 0


def test_bound_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_open_files"):
        OpenFiles(0)
    assert OpenFiles().max_open_files >= 64


def test_many_logs_stay_within_the_bound_and_read_back_after_reopening(
    tmp_path: Path, clock: MockClock, make_batch: BatchFactory
) -> None:
    files = OpenFiles(8)
    before = open_fds()
    opened: list[Log] = []
    batches: dict[int, list[bytes]] = {}
    for partition in range(60):
        log = Log.open(
            str(tmp_path / f"t-{partition}"),
            TopicPartition("t", partition),
            CONFIG,
            clock=clock,
            open_files=files,
        )
        opened.append(log)
        # Several segments each (rolls), with index entries (maps) on the way.
        for _ in range(6):
            batch = make_batch(10, value_bytes=60)
            log.append(bytearray(batch))
            batches.setdefault(partition, []).append(batch)
        assert len(open_fds() - before) <= files.max_open_files + 2
    for partition, log in enumerate(opened):
        assert len(log.segments()) > 1
        assert [r.value for r in LogHarness.read_all(log)] == [
            r.value for batch in batches[partition] for r in BatchFactory.records(batch)
        ]
        assert len(open_fds() - before) <= files.max_open_files + 2
    for log in opened:
        log.close()
    assert open_fds() - before == set()


def test_a_slice_keeps_its_file_open_after_a_release(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000000.log")
    files = OpenFiles(1)
    records = FileRecords(path, open_files=files)
    records.append(b"first-file-bytes")
    piece = records.slice(0, 16)
    other = FileRecords(str(tmp_path / "other.log"), open_files=files)  # releases ``records``
    other.append(b"X" * 16)
    assert not records.is_open
    # Descriptors released and opened again must not make the slice read another file.
    for n in range(5):
        FileRecords(str(tmp_path / f"more-{n}.log"), open_files=files).append(b"Y" * 16)
    assert piece.read() == b"first-file-bytes"
    assert os.pread(piece.fd, 5, 0) == b"first"
    fd = piece.fd
    del piece
    assert fd_target(fd) != path  # closed with the last slice using it
    assert records.read(0, 5) == b"first"  # opened again
    records.close()
    with pytest.raises(OSError, match="closed"):
        records.read(0, 5)


def test_indexes_are_mapped_only_while_written(logs: LogHarness, make_batch: BatchFactory) -> None:
    log = logs.open(CONFIG)
    active = log.segments()[-1]
    assert not active.offset_index.is_mapped
    assert not active.time_index.is_mapped
    while len(log.segments()) < 3:
        log.append(bytearray(make_batch(10, value_bytes=60)))
    inactive = log.segments()[:-1]
    maps = mapped_paths()
    for segment in inactive:
        assert not segment.offset_index.is_mapped
        assert not segment.time_index.is_mapped
        assert segment.offset_index.path not in maps
        assert segment.offset_index.entries > 0
    current = log.segments()[-1]
    if current.offset_index.entries:
        assert current.offset_index.path in maps
    # Lookups in inactive segments answer from memory without mapping anything.
    first = inactive[0]
    assert log.read(first.base_offset + 1, 100).records is not None
    assert not first.offset_index.is_mapped


def test_an_index_released_while_active_maps_again_on_the_next_append(tmp_path: Path) -> None:
    files = OpenFiles(10)
    index = OffsetIndex(str(tmp_path / "0.index"), 0, 800, open_files=files)
    assert not index.is_mapped
    index.append(5, 100)
    assert index.is_mapped
    assert files.count == 1
    assert files.close_idle() == 0
    assert files.close_idle() == 1
    assert not index.is_mapped
    assert files.count == 0
    index.append_trusted(9, 300)
    assert index.is_mapped
    index.flush()
    index.close()
    assert files.count == 0
    reopened = OffsetIndex(str(tmp_path / "0.index"), 0, 800)
    assert [tuple(reopened.entry(slot)) for slot in range(reopened.entries)] == [
        (5, 100),
        (9, 300),
    ]
    reopened.close()


def test_the_manager_closes_idle_files_on_its_schedule_and_reopens_them_on_use(
    tmp_path: Path, clock: MockClock, scheduler: ManualScheduler, make_batch: BatchFactory
) -> None:
    before = open_fds()
    manager = LogManager(
        [str(tmp_path / "dir0")],
        CONFIG,
        clock=clock,
        scheduler=scheduler,
        idle_file_close_ms=1000,
    )
    manager.startup()
    try:
        logs = [manager.get_or_create_log(TopicPartition("idle", p)) for p in range(20)]
        assert manager.open_files.count == 0  # a new log holds no descriptor until used
        assert len(open_fds() - before) <= 1
        batch = make_batch(3)
        for log in logs:
            log.append(bytearray(batch))
        assert manager.open_files.count >= 20
        clock.advance(1000)
        scheduler.run_due()  # the sweep clears every flag: all were used
        logs[0].append(bytearray(batch))
        clock.advance(1000)
        scheduler.run_due()  # releases all but the files of the log used since
        assert all(not log.segments()[-1].log.is_open for log in logs[1:])
        # logs[0]'s .log and, after its second batch, both index maps; one more for listdir.
        assert manager.open_files.count <= 3
        assert len(open_fds() - before) <= 3 + 1
        assert [r.value for r in BatchFactory.records(logs[5].read(0, 10_000).read_bytes())] == [
            r.value for r in BatchFactory.records(batch)
        ]
        assert logs[5].segments()[-1].log.is_open
    finally:
        manager.shutdown()
    assert open_fds() - before == set()
    again = LogManager([str(tmp_path / "dir0")], CONFIG, clock=clock, scheduler=scheduler)
    again.startup()
    try:
        assert again.open_files.count == 0  # loaded logs hold no descriptor either
        assert len(open_fds() - before) <= 1
        assert again.get_log(TopicPartition("idle", 7)) is not None
    finally:
        again.shutdown()


def test_a_new_log_directory_is_not_called_an_unclean_shutdown(
    tmp_path: Path,
    clock: MockClock,
    scheduler: ManualScheduler,
    caplog: pytest.LogCaptureFixture,
) -> None:
    directory = str(tmp_path / "dir0")

    def start() -> LogManager:
        manager = LogManager([directory], CONFIG, clock=clock, scheduler=scheduler)
        with caplog.at_level(logging.INFO, logger="odradek.storage.manager"):
            caplog.clear()
            manager.startup()
        return manager

    def said() -> str:
        return " ".join(r.getMessage() for r in caplog.records if "loading logs" in r.message)

    first = start()
    assert "(new log directory)" in said()
    first.get_or_create_log(TopicPartition("t", 0)).close()
    # No shutdown: the next start follows a crash.
    crashed = start()
    assert "(unclean shutdown)" in said()
    crashed.shutdown()
    clean = start()
    assert "(clean shutdown)" in said()
    clean.shutdown()


def test_an_index_is_synced_only_when_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    index = OffsetIndex(str(tmp_path / "0.index"), 0, 800)
    index.flush()  # created: the new file is synced
    index.flush()
    assert len(synced) == 1
    index.append_trusted(3, 50)
    index.flush()
    index.flush()
    assert len(synced) == 2
    index.truncate_to(0)
    index.flush()
    assert len(synced) == 3
    index.close()
    reopened = OffsetIndex(str(tmp_path / "0.index"), 0, 800)
    reopened.flush()  # loaded, unchanged
    assert len(synced) == 3
    reopened.close()


def test_many_logs_created_at_once_spread_over_the_log_dirs_with_one_fsync_per_dir(
    tmp_path: Path,
    clock: MockClock,
    scheduler: ManualScheduler,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dirs = [str(tmp_path / "dir0"), str(tmp_path / "dir1")]
    manager = LogManager(dirs, CONFIG, clock=clock, scheduler=scheduler)
    manager.startup()
    try:
        existing = manager.get_or_create_log(TopicPartition("t", 0))
        synced: list[str] = []
        monkeypatch.setattr("odradek.storage.manager.fsync_directory", synced.append)
        wanted = [TopicPartition("t", p) for p in range(40)]
        logs = manager.get_or_create_logs(wanted)
        assert list(logs) == wanted
        assert logs[TopicPartition("t", 0)] is existing
        assert sorted(synced) == dirs
        per_dir = [len(os.listdir(d)) for d in dirs]
        assert per_dir == [20, 20]
        assert manager.get_or_create_log(TopicPartition("t", 7)) is logs[TopicPartition("t", 7)]
        assert manager.open_files.count == 0
        assert manager.delete_log(TopicPartition("t", 3))
        made = manager.get_or_create_log(TopicPartition("u", 0))
        assert os.path.dirname(made.directory) == os.path.dirname(
            logs[TopicPartition("t", 3)].directory
        )
    finally:
        manager.shutdown()
