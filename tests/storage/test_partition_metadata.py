"""partition.metadata: Kafka's text layout, written atomically, read back; malformed files and
ids are refused; the segment loader leaves the file alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.storage.partition_metadata import (
    FILE_NAME,
    read_partition_metadata,
    write_partition_metadata,
)

TOPIC_ID = "AAECAwQFBgcICQoLDA0ODw"  # the UUID 00010203-0405-0607-0809-0a0b0c0d0e0f


def test_written_as_kafka_writes_it(tmp_path: Path) -> None:
    write_partition_metadata(str(tmp_path), TOPIC_ID)
    assert (tmp_path / FILE_NAME).read_text() == f"version: 0\ntopic_id: {TOPIC_ID}\n"
    assert read_partition_metadata(str(tmp_path)) == TOPIC_ID
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILE_NAME]  # no temporary left


def test_absent_file(tmp_path: Path) -> None:
    assert read_partition_metadata(str(tmp_path)) is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "version: 1\ntopic_id: AAECAwQFBgcICQoLDA0ODw\n",
        "version: 0\n",
        "version: 0\ntopic_id: short\n",
    ],
)
def test_malformed_files_are_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / FILE_NAME).write_text(text)
    with pytest.raises(ValueError, match=r"partition\.metadata|topic id"):
        read_partition_metadata(str(tmp_path))


@pytest.mark.parametrize("topic_id", ["", "x" * 21, "AAECAwQFBgcICQoLDA0OD/", "é" * 22])
def test_malformed_ids_are_not_written(tmp_path: Path, topic_id: str) -> None:
    with pytest.raises(ValueError, match="not a topic id"):
        write_partition_metadata(str(tmp_path), topic_id)
    assert not (tmp_path / FILE_NAME).exists()
