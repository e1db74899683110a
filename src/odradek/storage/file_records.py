"""The ``.log`` file of one segment: record batches back to back, appended and sliced.

``FileRecords`` owns one open file descriptor. Appends go to the end with ``os.write`` (the file
is opened ``O_APPEND``); reads use ``os.pread``; ``FileSlice`` names a byte range that the
broker can hand to ``os.sendfile`` without copying.

Thread safety: one writer thread appends and truncates; any thread may read. ``size`` is
published after the bytes are written, so a reader that honours ``size`` never sees a batch
being written. A reader may see a file grow between two calls; never shrink, except through
``truncate_to`` (replication and recovery), which the log serialises with its lock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from odradek._types import ReadableBuffer
from odradek.errors import CorruptRecordError, UnsupportedForMessageFormatError
from odradek.records.batch import HEADER_SIZE, BatchHeader, parse_header, validate_batch


@dataclass(frozen=True, slots=True)
class FileSlice:
    """A byte range of a segment file: what a read returns.

    ``fd`` stays valid at least ``file.delete.delay.ms`` after the segment is deleted, long
    enough for a sendfile in progress. The range may end in the middle of a batch.
    """

    fd: int
    position: int
    length: int

    def read(self) -> bytes:
        """The bytes of the slice (the copy path; the broker prefers ``os.sendfile``)."""
        if self.length == 0:
            return b""
        data = os.pread(self.fd, self.length, self.position)
        if len(data) != self.length:
            raise CorruptRecordError(
                f"short read: wanted {self.length} bytes at {self.position}, got {len(data)}"
            )
        return data


class FileRecords:
    """An append-only file of record batches.

    Args:
        path: the ``.log`` file; created when missing.
        size: bytes known to be valid, when the caller already knows them (recovery);
            defaults to the file's length.
    """

    def __init__(self, path: str, *, size: int | None = None) -> None:
        self._path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        file_size = os.fstat(self._fd).st_size
        self._size = file_size if size is None else size
        self._closed = False

    @property
    def path(self) -> str:
        return self._path

    @property
    def fd(self) -> int:
        return self._fd

    @property
    def size(self) -> int:
        """Bytes of whole batches appended so far (the next append's position)."""
        return self._size

    def file_size(self) -> int:
        """The length of the file on disk, which may exceed ``size`` after a crash."""
        return os.fstat(self._fd).st_size

    def append(self, data: ReadableBuffer) -> int:
        """Appends ``data`` (whole batches) and returns the position it starts at."""
        position = self._size
        view = memoryview(data)
        written = 0
        total = len(view)
        while written < total:
            written += os.write(self._fd, view[written:])
        self._size = position + total
        return position

    def append_parts(self, parts: Sequence[ReadableBuffer]) -> int:
        """Appends the concatenation of ``parts`` with ``writev`` (no copy); returns the
        position it starts at."""
        position = self._size
        views = [memoryview(part) for part in parts]
        total = sum(len(view) for view in views)
        written = os.writev(self._fd, views)
        while written < total:  # a short write: finish the rest piece by piece
            skip = written
            remaining = []
            for view in views:
                if skip >= len(view):
                    skip -= len(view)
                    continue
                remaining.append(view[skip:])
                skip = 0
            views = remaining
            total -= written
            written = os.writev(self._fd, views)
        self._size = position + sum(len(memoryview(part)) for part in parts)
        return position

    def slice(self, position: int, length: int) -> FileSlice:
        """A slice of ``length`` bytes at ``position``, clipped to ``size``."""
        end = min(position + length, self._size)
        return FileSlice(self._fd, position, max(0, end - position))

    def read(self, position: int, length: int) -> bytes:
        """Up to ``length`` bytes at ``position`` (fewer at the end of the file)."""
        return os.pread(self._fd, length, position)

    def header_at(self, position: int) -> BatchHeader:
        """The batch header at ``position`` (not CRC-checked).

        Raises CorruptRecordError when the header is malformed or runs past ``size``.
        """
        data = os.pread(self._fd, HEADER_SIZE, position)
        try:
            header = parse_header(data)
        except UnsupportedForMessageFormatError as error:
            # Only v2 batches are ever stored: another magic byte here is damage.
            raise CorruptRecordError(f"{self._path} at {position}: {error}") from None
        if position + header.size > self._size:
            raise CorruptRecordError(
                f"{self._path}: batch at {position} of {header.size} bytes runs past the "
                f"end of the log ({self._size})"
            )
        return header

    def batches_from(self, position: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """Yields ``(position, header)`` for every batch from ``position`` up to ``size``.

        Headers are parsed but not CRC-checked. Raises CorruptRecordError at a bad header.
        """
        while position < self._size:
            header = self.header_at(position)
            yield position, header
            position += header.size

    def validated_batches(
        self, position: int = 0, *, chunk_bytes: int = 8 * 1024 * 1024
    ) -> Iterator[tuple[int, BatchHeader]]:
        """Yields ``(position, header)`` for each whole batch whose CRC32C matches, reading the
        file (up to its real length, not ``size``) in large chunks. Stops silently at the first
        batch that is truncated or corrupt: the caller truncates there (recovery).
        """
        file_size = self.file_size()
        buffer = b""
        buffer_start = position
        while position < file_size:
            offset_in_buffer = position - buffer_start
            if len(buffer) - offset_in_buffer < HEADER_SIZE:
                buffer = os.pread(self._fd, max(chunk_bytes, HEADER_SIZE), position)
                buffer_start = position
                offset_in_buffer = 0
                if len(buffer) < HEADER_SIZE:
                    return
            try:
                header = parse_header(buffer, offset_in_buffer)
            except (CorruptRecordError, UnsupportedForMessageFormatError):
                return
            if position + header.size > file_size:
                return
            if offset_in_buffer + header.size > len(buffer):
                buffer = os.pread(self._fd, max(chunk_bytes, header.size), position)
                buffer_start = position
                offset_in_buffer = 0
                if len(buffer) < header.size:
                    return
            try:
                validate_batch(buffer, offset_in_buffer)
            except (CorruptRecordError, UnsupportedForMessageFormatError):
                return
            yield position, header
            position += header.size

    def truncate_to(self, size: int) -> int:
        """Cuts the file to ``size`` bytes; returns how many bytes were removed."""
        removed = self.file_size() - size
        os.ftruncate(self._fd, size)
        self._size = size
        return removed

    def flush(self) -> None:
        """Makes appended bytes durable (fdatasync)."""
        os.fdatasync(self._fd)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self._fd)

    def rename_to(self, path: str) -> None:
        """Renames the file; the descriptor keeps working."""
        os.replace(self._path, path)
        self._path = path
