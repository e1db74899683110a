"""Tests for ``odradek dump-log`` on ``.index`` and ``.timeindex`` files (odradek.cli.dump_index),
run through ``main`` on files the storage layer wrote."""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cli.main import main
from odradek.records.batch import parse_header
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage.config import LogConfig
from odradek.storage.segment import BatchPosition, LogSegment

NOW = 1_700_000_000_000
BASE = 40
TIMESTAMPS = [NOW + 10, NOW + 5, NOW + 30, NOW + 30, NOW + 50]  # two do not raise the maximum
LOG = f"{BASE:020d}.log"
INDEX = f"{BASE:020d}.index"
TIME_INDEX = f"{BASE:020d}.timeindex"


@dataclasses.dataclass
class Written:
    directory: Path
    #: (base offset, position, max timestamp) of each batch appended.
    batches: list[tuple[int, int, int]]

    @property
    def indexed(self) -> list[tuple[int, int, int]]:
        """The batches with an offset index entry: every one after the first (an entry is
        added once ``index.interval.bytes`` have been written since the last one)."""
        return self.batches[1:]


def _write_segment(directory: Path, *, close: bool) -> tuple[LogSegment, Written]:
    # index.interval.bytes 1: an offset index entry for every batch.
    config = dataclasses.replace(LogConfig(), index_interval_bytes=1)
    segment = LogSegment.create(str(directory), BASE, config, NOW)
    batches = []
    for timestamp in TIMESTAMPS:
        data = bytearray(
            build_batch(
                [SimpleRecord(timestamp - 1, b"k", b"v"), SimpleRecord(timestamp, None, b"w")]
            )
        )
        struct.pack_into(">q", data, 0, segment.next_offset)
        header = parse_header(data)
        position = segment.size
        segment.append(data, [BatchPosition(0, header)])
        batches.append((header.base_offset, position, header.max_timestamp))
    if close:
        segment.close()
    return segment, Written(directory, batches)


@pytest.fixture
def closed(tmp_path: Path) -> Written:
    return _write_segment(tmp_path, close=True)[1]


@pytest.fixture
def active(tmp_path: Path) -> Iterator[Written]:
    segment, written = _write_segment(tmp_path, close=False)
    yield written
    segment.close()


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    status = main(["dump-log", *args])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def test_offset_index_entries(closed: Written, capsys: pytest.CaptureFixture[str]) -> None:
    path = closed.directory / INDEX
    status, lines, err = run(capsys, str(path))
    assert (status, err) == (0, "")
    assert lines == [f"Dumping {path}"] + [
        f"offset: {offset} position: {position}" for offset, position, _ in closed.indexed
    ]
    assert closed.batches[0][0] == BASE
    assert closed.batches[1][0] == BASE + 2


def test_time_index_entries(closed: Written, capsys: pytest.CaptureFixture[str]) -> None:
    path = closed.directory / TIME_INDEX
    status, lines, err = run(capsys, str(path))
    assert (status, err) == (0, "")
    # The running maximum and the batch where each new maximum was first seen.
    offsets = [offset for offset, _, _ in closed.batches]
    assert lines == [
        f"Dumping {path}",
        f"timestamp: {NOW + 10} offset: {offsets[0]}",
        f"timestamp: {NOW + 30} offset: {offsets[2]}",
        f"timestamp: {NOW + 50} offset: {offsets[4]}",
    ]


def test_active_segment_zero_tail_is_skipped(
    active: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    path = active.directory / INDEX
    assert path.stat().st_size > 8 * len(active.batches)  # preallocated
    status, lines, _ = run(capsys, str(path))
    assert status == 0
    entries = len(active.indexed)
    assert lines[1 : 1 + entries] == [
        f"offset: {offset} position: {position}" for offset, position, _ in active.indexed
    ]
    zeros = path.stat().st_size // 8 - entries
    assert lines[1 + entries :] == [f"Skipped {zeros} zero entries at the end (preallocated space)"]


@pytest.mark.parametrize("name", [INDEX, TIME_INDEX])
def test_verify_and_sanity_check_pass(
    closed: Written, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = closed.directory / name
    status, lines, _ = run(capsys, "--verify-index-only", str(path))
    assert status == 0
    assert lines == [
        f"Dumping {path}",
        f"{path} passed verification against {closed.directory / LOG}.",
    ]
    status, lines, _ = run(capsys, "--index-sanity-check", str(path))
    assert status == 0
    assert lines == [f"Dumping {path}", f"{path} passed sanity check."]


def test_verify_finds_an_entry_pointing_elsewhere(
    closed: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    path = closed.directory / INDEX
    data = bytearray(path.read_bytes())
    # Entry 1 names an offset inside its batch (still between its neighbours: in order).
    offset, position, _ = closed.indexed[1]
    struct.pack_into(">i", data, 8, offset + 1 - BASE)
    path.write_bytes(bytes(data))
    status, lines, err = run(capsys, "--verify-index-only", str(path))
    assert status == 1
    assert lines[1:] == [
        f"Problem: entry 1: index offset {offset + 1}, but the batch at position "
        f"{position} starts at offset {offset}"
    ]
    assert err == f"odradek: index problems: {path} (1 problems)\n"


def test_verify_finds_a_wrong_timestamp(
    closed: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    path = closed.directory / TIME_INDEX
    data = bytearray(path.read_bytes())
    struct.pack_into(">q", data, 12, NOW + 31)  # entry 1: batch 2's max timestamp is NOW + 30
    path.write_bytes(bytes(data))
    status, lines, _ = run(capsys, "--verify-index-only", str(path))
    assert status == 1
    assert lines[1:] == [
        f"Problem: entry 1: index timestamp {NOW + 31}, but the batch at offset "
        f"{closed.batches[2][0]} has max timestamp {NOW + 30}"
    ]


def test_verify_without_the_log(closed: Written, capsys: pytest.CaptureFixture[str]) -> None:
    (closed.directory / LOG).unlink()
    path = closed.directory / INDEX
    status, lines, err = run(capsys, "--verify-index-only", str(path))
    assert status == 1
    assert lines[1:] == [f"Problem: cannot verify: {closed.directory / LOG} does not exist"]
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_out_of_order_entries(closed: Written, capsys: pytest.CaptureFixture[str]) -> None:
    path = closed.directory / INDEX
    data = bytearray(path.read_bytes())
    data[16:24], data[8:16] = data[8:16], data[16:24]  # swap entries 1 and 2
    path.write_bytes(bytes(data))
    status, lines, err = run(capsys, "--index-sanity-check", str(path))
    assert status == 1
    third = (closed.indexed[2][0] - BASE, closed.indexed[2][1])
    second = (closed.indexed[1][0] - BASE, closed.indexed[1][1])
    assert lines[1:] == [
        f"Problem: entry 2: relative offset {second[0]} at position {second[1]} does not come "
        f"after entry 1's {third[0]} at {third[1]}"
    ]
    assert err.startswith("odradek: index problems: ")
    assert err.count("\n") == 1


def test_truncated_entry(closed: Written, capsys: pytest.CaptureFixture[str]) -> None:
    path = closed.directory / TIME_INDEX
    data = path.read_bytes()
    path.write_bytes(data + b"\x00\x01\x02")
    status, lines, err = run(capsys, str(path))
    assert status == 1
    assert lines[-1] == (
        f"Problem: the file is {len(data) + 3} bytes, not a whole number of 12-byte entries "
        f"(3 bytes left over at position {len(data)})"
    )
    assert len([line for line in lines if line.startswith("timestamp: ")]) == 3
    assert "Traceback" not in err


def test_garbage_file_is_one_line_per_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / INDEX
    path.write_bytes(b"\xff" * 16)  # two entries of relative offset -1, position -1
    status, lines, err = run(capsys, str(path))
    assert status == 1
    assert lines == [
        f"Dumping {path}",
        f"offset: {BASE - 1} position: -1",
        f"offset: {BASE - 1} position: -1",
        "Problem: entry 0: negative relative offset -1 or position -1",
        "Problem: entry 1: negative relative offset -1 or position -1",
    ]
    assert err == f"odradek: index problems: {path} (2 problems)\n"


def test_empty_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / TIME_INDEX
    path.write_bytes(b"")
    status, lines, _ = run(capsys, str(path))
    assert status == 0
    assert lines == [f"Dumping {path}", f"{path} is empty."]


def test_index_name_without_a_base_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "segment.index"
    path.write_bytes(b"\x00" * 8)
    status, lines, err = run(capsys, str(path))
    assert status == 2
    assert lines == []
    assert err == (
        f"odradek: Invalid value for FILE: {path}: an index file is named after its segment's "
        "base offset (e.g. 00000000000000000042.index)\n"
    )
