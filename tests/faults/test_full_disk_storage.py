"""A full disk under a log (found by the full-disk fault: the produce handler crashed on the
OSError and closed the connection, and an O_APPEND write cut short left bytes past the log's
end, so the next append landed at a position the log did not know): the append is refused with
KAFKA_STORAGE_ERROR, nothing of it stays in the file, and the log appends again once there is
room."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek._types import TopicPartition
from odradek.errors import ErrorCode, KafkaStorageError
from odradek.records.batch import iter_batches, validate_batch
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage import file_records
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.testing.faults.disks import Tmpfs, probe_tmpfs

TP = TopicPartition("full", 0)


def _batch(count: int, size: int) -> bytes:
    return build_batch(
        [SimpleRecord(1_700_000_000_000 + i, None, os.urandom(size)) for i in range(count)],
        base_offset=0,
    )


def _offsets(log: Log) -> list[int]:
    """The base offset of every batch in the log, read back from the segment file (each
    batch's CRC checked, so bytes at a wrong position would show)."""
    data = log.read(0, 1 << 30, max_offset=log.log_end_offset).read_bytes()
    return [validate_batch(data, position).base_offset for position, _ in iter_batches(data)]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Tmpfs]:
    reason = probe_tmpfs(tmp_path)
    if reason is not None:
        pytest.skip(reason)
    disk = Tmpfs(tmp_path / "disk", 2 << 20).mount()
    try:
        yield disk
    finally:
        disk.unmount()


def test_full_disk_append_is_refused_with_storage_error_then_appends_again(
    small_disk: Tmpfs,
) -> None:
    log = Log.open(str(small_disk.path / "full-0"), TP, LogConfig())
    try:
        first = log.append(_batch(4, 100))
        small_disk.fill()
        big = _batch(8, 8 << 10)  # 64 KiB: more than the full disk takes
        with pytest.raises(KafkaStorageError) as refused:
            log.append(bytearray(big))
        assert refused.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert log.log_end_offset == first.last_offset + 1
        small_disk.free()
        after = log.append(bytearray(big))
        assert after.first_offset == first.last_offset + 1
        assert _offsets(log) == [0, after.first_offset]
    finally:
        log.close()


def test_a_write_cut_short_by_enospc_leaves_nothing_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = file_records.FileRecords(str(tmp_path / "short.log"))
    records.append(b"A" * 10)

    def short_then_full(fd: int, view: memoryview) -> None:
        os.write(fd, view[:3])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(file_records, "_write_all", short_then_full)
    with pytest.raises(KafkaStorageError, match="No space left"):
        records.append(b"B" * 10)
    monkeypatch.undo()
    assert records.size == 10
    assert records.file_size() == 10
    assert records.append(b"C" * 4) == 10
    assert (tmp_path / "short.log").read_bytes() == b"A" * 10 + b"C" * 4
    records.close()


_NEAR_FULL_APPENDS = """
import dataclasses, os, sys
from odradek._types import TopicPartition
from odradek.errors import KafkaStorageError
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage.config import LogConfig
from odradek.storage.log import Log

disk, ballast = sys.argv[1], sys.argv[2]
config = dataclasses.replace(LogConfig(), index_interval_bytes=0)  # an entry per batch
log = Log.open(os.path.join(disk, "near-0"), TopicPartition("near", 0), config)
batch = build_batch([SimpleRecord(1_700_000_000_000, None, b"x" * 20)], base_offset=0)
for _ in range(600):
    log.append(bytearray(batch))
with open(ballast, "ab") as handle:  # fill the disk
    try:
        while True:
            handle.write(bytes(1 << 16))
            handle.flush()
    except OSError:
        pass
appended = refused = 0
for _ in range(1500):  # a page of room at a time: log and index pages compete for it
    try:
        log.append(bytearray(batch))
        appended += 1
    except KafkaStorageError:
        refused += 1
        os.truncate(ballast, os.path.getsize(ballast) - 4096)
os.unlink(ballast)
print(appended, refused, log.log_end_offset)
log.close()
"""


def test_near_full_disk_index_page_is_a_storage_error_not_a_sigbus(small_disk: Tmpfs) -> None:
    # Found by the full-disk fault: an index entry is stored through a memory map into a
    # sparse file; on a full tmpfs the page fault is a SIGBUS that killed the broker. Run in
    # a child process, so that a regression kills the child, not the test run.
    result = subprocess.run(
        [sys.executable, "-c", _NEAR_FULL_APPENDS, str(small_disk.path), str(small_disk.ballast)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    appended, refused, log_end_offset = map(int, result.stdout.split())
    assert refused > 0  # the disk really was full
    assert appended > 512  # past at least one index page boundary
    assert log_end_offset == 600 + appended
    log = Log.open(str(small_disk.path / "near-0"), TopicPartition("near", 0), LogConfig())
    try:
        assert _offsets(log) == list(range(log_end_offset))
    finally:
        log.close()
