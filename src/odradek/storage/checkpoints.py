"""Offset checkpoint files, written atomically: write a temporary file, fsync, rename, fsync
the directory — a crash leaves either the old file or the new one, never a torn one.

Text layout (Kafka's ``recovery-point-offset-checkpoint`` format)::

    0                     version
    2                     number of entries
    orders 0 1234         topic, partition, offset
    orders 1 99
"""

from __future__ import annotations

import logging
import os

from odradek._types import TopicPartition

logger = logging.getLogger(__name__)

_VERSION = 0


def atomic_write(path: str, data: bytes) -> None:
    """Replaces ``path`` with ``data`` durably and atomically."""
    directory = os.path.dirname(path) or "."
    temporary = path + ".tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
    fsync_directory(directory)


def fsync_directory(directory: str) -> None:
    """Makes renames and creations in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class OffsetCheckpointFile:
    """A map of partition → offset persisted in one file.

    Thread safety: callers serialise writes (the log manager does).
    """

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, offsets: dict[TopicPartition, int]) -> None:
        lines = [str(_VERSION), str(len(offsets))]
        lines += [f"{tp.topic} {tp.partition} {offset}" for tp, offset in sorted(offsets.items())]
        atomic_write(self.path, ("\n".join(lines) + "\n").encode())

    def read(self) -> dict[TopicPartition, int]:
        """The stored map; empty when the file is missing. A malformed file is logged and
        treated as empty (recovery then checks every segment, which is safe)."""
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return {}
        try:
            # Decoded here, not by open(): bytes that are not UTF-8 (garbage left by a disk
            # fault) are a malformed file like any other, never an error at start-up.
            lines = data.decode("utf-8").splitlines()
            if int(lines[0]) != _VERSION:
                raise ValueError(f"unknown version {lines[0]}")
            count = int(lines[1])
            entries: dict[TopicPartition, int] = {}
            for line in lines[2 : 2 + count]:
                topic, partition, offset = line.rsplit(" ", 2)
                entries[TopicPartition(topic, int(partition))] = int(offset)
            if len(entries) != count:
                raise ValueError(f"expected {count} entries, found {len(entries)}")
        except (ValueError, IndexError) as error:
            logger.warning("ignoring malformed checkpoint file %s: %s", self.path, error)
            return {}
        return entries
