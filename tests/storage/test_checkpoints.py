"""Offset checkpoint files: Kafka's text layout, atomic replacement, malformed files read as
empty."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from odradek._types import TopicPartition
from odradek.storage.checkpoints import OffsetCheckpointFile, atomic_write, fsync_directory

OFFSETS = {
    TopicPartition("orders", 1): 99,
    TopicPartition("orders", 0): 1234,
    TopicPartition("my-topic.v2_x", 12): 0,
}


def test_round_trip_and_layout(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpointFile(str(tmp_path / "recovery-point-offset-checkpoint"))
    checkpoint.write(OFFSETS)
    assert checkpoint.read() == OFFSETS
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == (
        "0\n3\nmy-topic.v2_x 12 0\norders 0 1234\norders 1 99\n"
    )


def test_empty_map(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpointFile(str(tmp_path / "cp"))
    checkpoint.write({})
    assert (tmp_path / "cp").read_text() == "0\n0\n"
    assert checkpoint.read() == {}


def test_missing_file_reads_empty(tmp_path: Path) -> None:
    assert OffsetCheckpointFile(str(tmp_path / "absent")).read() == {}


def test_write_replaces_the_previous_file(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpointFile(str(tmp_path / "cp"))
    checkpoint.write(OFFSETS)
    checkpoint.write({TopicPartition("t", 0): 5})
    assert checkpoint.read() == {TopicPartition("t", 0): 5}
    assert sorted(os.listdir(tmp_path)) == ["cp"]  # no temporary file left


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1\n1\norders 0 5\n",  # unknown version
        "0\n2\norders 0 5\n",  # fewer entries than announced
        "0\n1\norders 0 five\n",
        "0\n1\norders 5\n",
        "0\nx\n",
        "\x00\x00\x00",
        "0\n2\norders 0 5\norders 0 6\n",  # a duplicate: two lines, one entry
    ],
    ids=["empty", "version", "short", "offset", "fields", "count", "binary", "duplicate"],
)
def test_malformed_file_reads_empty(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str
) -> None:
    path = tmp_path / "cp"
    path.write_text(text)
    with caplog.at_level(logging.WARNING, logger="odradek.storage.checkpoints"):
        assert OffsetCheckpointFile(str(path)).read() == {}
    assert "malformed checkpoint" in caplog.text


def test_atomic_write_leaves_the_old_file_when_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = OffsetCheckpointFile(str(tmp_path / "cp"))
    checkpoint.write(OFFSETS)

    def crash(src: str, dst: str) -> None:
        raise OSError("crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="crash"):
        checkpoint.write({TopicPartition("t", 0): 5})
    monkeypatch.undo()
    assert checkpoint.read() == OFFSETS
    # The next write overwrites the stale temporary file.
    checkpoint.write({TopicPartition("t", 0): 6})
    assert checkpoint.read() == {TopicPartition("t", 0): 6}
    assert sorted(os.listdir(tmp_path)) == ["cp"]


def test_atomic_write_bytes(tmp_path: Path) -> None:
    target = tmp_path / "marker"
    atomic_write(str(target), b"")
    assert target.read_bytes() == b""
    atomic_write(str(target), b"x" * 100_000)
    assert target.read_bytes() == b"x" * 100_000
    fsync_directory(str(tmp_path))


def test_garbage_checkpoint_that_is_not_utf8_reads_empty(tmp_path: Path) -> None:
    # Found by the crash-recovery fuzz: bytes that do not decode as UTF-8 raised
    # UnicodeDecodeError out of read() and so out of the broker's start.
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_bytes(b"0\n1\norders 0 12\x83\xfe\n")
    assert OffsetCheckpointFile(str(path)).read() == {}
