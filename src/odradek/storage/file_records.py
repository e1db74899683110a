"""The ``.log`` file of one segment: record batches back to back, appended and sliced.

``FileRecords`` owns one open file descriptor. Appends go to the end with ``os.write`` (the file
is opened ``O_APPEND``); reads use ``os.pread``; ``FileSlice`` names a byte range that the
broker can hand to ``os.sendfile`` without copying.

The leader's append fast path, ``FileRecords.append_batch``, checks one whole batch, patches
its base offset (and leader epoch) and writes it in one call: compiled (``odradek._append``,
an optional C extension) when it is built, else ``py_append_batch``, its Python reference.
Both take the same arguments, write the same bytes and answer the same; either declines
(returns None, having written nothing) whatever it does not handle, and the caller then takes
the general path, which validates again and raises the precise error.

Writes go out in pieces of at most ``WRITE_PIECE_BYTES`` (64 KiB) per system call. Linux (6.x,
ext4 and others with large folios) sizes the page-cache folios it allocates for a write by the
write's length, and a large folio comes from a large block of free memory; on a VM whose host
takes free memory back (virtio-balloon free page reporting) those blocks are the ones the host
must fault in again, page by page, on first touch. Measured on this project's 2-core VM
(``bench/page_cache_write.py``), 200 MB in 1 MB writes: 400–510 ms when free memory is cold,
45–150 ms warm; in 64 KiB writes: 60–100 ms either way (128 KiB and up are sometimes cold
again). The price is paid on warm memory with large batches: ``bench/log_append_read.py``'s
1 MB appends reach 51–53 % of raw 1 MB writes (78–86 % in whole writes), while in
``bench/broker_perf.py`` 1 KB records in 1 MB batches went from 53–73 % to 94–106 % of the
null server.

Thread safety: one writer thread appends and truncates; any thread may read. ``size`` is
published after the bytes are written, so a reader that honours ``size`` never sees a batch
being written. A reader may see a file grow between two calls; never shrink, except through
``truncate_to`` (replication and recovery), which the log serialises with its lock.
"""

from __future__ import annotations

import functools
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from odradek._compiled import compiled_attr
from odradek._types import ReadableBuffer
from odradek.errors import CorruptRecordError, UnsupportedForMessageFormatError
from odradek.records.batch import (
    ATTRIBUTES_OFFSET,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    PARTITION_LEADER_EPOCH_OFFSET,
    BatchHeader,
    parse_header,
    validate_batch,
)
from odradek.records.crc import crc32c

#: What an accepted fast-path append reports: (last_offset_delta, max_timestamp,
#: records_count) of the batch written.
BatchFields: TypeAlias = tuple[int, int, int]
#: The signature shared by ``py_append_batch`` and the compiled ``odradek._append``.
AppendBatch: TypeAlias = Callable[
    [int, ReadableBuffer, int, int | None, int, int, int], BatchFields | None
]

#: The optional extension module holding the compiled ``append_batch``.
COMPILED_MODULE = "odradek._append"

# The header fields the fast path reads, in one unpack: batch_length (8), magic (16), crc
# (17), last_offset_delta (23), max_timestamp (35), records_count (57).
_FAST_FIELDS = struct.Struct(">8xi4xbI2xi8xq14xi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")


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


def py_append_batch(
    fd: int,
    data: ReadableBuffer,
    base_offset: int,
    leader_epoch: int | None,
    max_size: int,
    max_timestamp: int,
    max_last_offset_delta: int,
) -> BatchFields | None:
    """Checks that ``data`` is one whole, valid v2 batch within the limits, sets its base
    offset (and partition leader epoch) and appends it to ``fd``. The reference of the
    compiled ``odradek._append.append_batch``, which behaves identically.

    Args:
        fd: the ``O_APPEND`` file to write to.
        data: exactly one batch. A ``bytearray`` is patched in place and written as it is
            (no copy); any other buffer is left untouched: a patched copy of its 61-byte
            header and the rest of it go out with ``writev``.
        base_offset: written into the batch (the CRC32C does not cover it).
        leader_epoch: written into the batch's partition leader epoch, unless None.
        max_size: the largest batch accepted, in bytes.
        max_timestamp: the largest ``max_timestamp`` accepted.
        max_last_offset_delta: the largest ``last_offset_delta`` accepted.

    Returns:
        ``(last_offset_delta, max_timestamp, records_count)`` of the batch written; or None,
        having written nothing and changed nothing, when ``data`` is not exactly one batch,
        is not a v2 batch, is malformed (a length below the minimum, a negative offset delta
        or record count), fails its CRC32C, has a negative ``max_timestamp`` or exceeds a
        limit; and when ``data`` is neither ``bytes``, ``bytearray`` nor a contiguous
        ``memoryview`` of single bytes.
    Raises:
        OSError: the write failed (part of the batch may have been written).
    """
    in_place = isinstance(data, bytearray)
    if not (
        in_place
        or isinstance(data, bytes)
        or (type(data) is memoryview and data.itemsize == 1 and data.c_contiguous)
    ):
        return None
    size = len(data)
    if size < HEADER_SIZE:
        return None
    batch_length, magic, crc, last_offset_delta, batch_max_timestamp, records = (
        _FAST_FIELDS.unpack_from(data)
    )
    if (
        magic != MAGIC_V2
        or batch_length + LOG_OVERHEAD != size
        or size > max_size
        or not 0 <= last_offset_delta <= max_last_offset_delta
        or not 0 <= batch_max_timestamp <= max_timestamp
        or records < 0
    ):
        return None
    with memoryview(data) as view:
        if crc32c(view[ATTRIBUTES_OFFSET:]) != crc:
            return None
        if in_place:
            _INT64.pack_into(data, 0, base_offset)
            if leader_epoch is not None:
                _INT32.pack_into(data, PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
            _write_all(fd, view)
        else:
            head = bytearray(view[:HEADER_SIZE])
            _INT64.pack_into(head, 0, base_offset)
            if leader_epoch is not None:
                _INT32.pack_into(head, PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
            _writev_all(fd, [memoryview(head), view[HEADER_SIZE:]])
    return last_offset_delta, batch_max_timestamp, records


@functools.cache
def compiled_append_batch() -> AppendBatch | None:
    """The compiled ``append_batch``, or None when ``odradek._append`` is not built (looked
    up once, by name: the extension is optional)."""
    function: AppendBatch | None = compiled_attr(COMPILED_MODULE, "append_batch")
    return function


#: The implementation ``FileRecords.append_batch`` uses: compiled when available.
append_batch_impl: AppendBatch = compiled_append_batch() or py_append_batch


#: The most bytes one write system call takes (see the module docstring).
WRITE_PIECE_BYTES = 64 * 1024


def _write_all(fd: int, view: memoryview) -> None:
    """Writes all of ``view``, in pieces of at most ``WRITE_PIECE_BYTES``."""
    total = len(view)
    written = os.write(fd, view) if total <= WRITE_PIECE_BYTES else 0
    while written < total:  # the next piece, or the rest of a short write
        written += os.write(fd, view[written : written + WRITE_PIECE_BYTES])


def _writev_all(fd: int, views: list[memoryview]) -> None:
    """Writes the concatenation of ``views``, with ``writev`` calls of at most
    ``WRITE_PIECE_BYTES`` each."""
    views = [view for view in views if len(view)]
    while views:
        pieces: list[memoryview] = []
        budget = WRITE_PIECE_BYTES
        for view in views:
            pieces.append(view[:budget])
            budget -= len(pieces[-1])
            if not budget:
                break
        written = os.writev(fd, pieces)
        while written:  # drop what went out (all of the pieces, or less on a short write)
            first = views[0]
            if written < len(first):
                views[0] = first[written:]
                break
            written -= len(first)
            del views[0]


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
        with memoryview(data) as view:
            _write_all(self._fd, view)
            self._size = position + len(view)
        return position

    def append_parts(self, parts: Sequence[ReadableBuffer]) -> int:
        """Appends the concatenation of ``parts`` with ``writev`` (no copy); returns the
        position it starts at."""
        position = self._size
        views = [memoryview(part) for part in parts]
        _writev_all(self._fd, views)
        self._size = position + sum(len(view) for view in views)
        return position

    def append_batch(
        self,
        data: ReadableBuffer,
        base_offset: int,
        leader_epoch: int | None,
        max_batch_bytes: int,
        max_file_bytes: int,
        max_timestamp: int,
        max_last_offset_delta: int,
    ) -> BatchFields | None:
        """The leader's fast path: checks, patches and appends one batch at ``size`` (see
        ``py_append_batch``), when it is at most ``max_batch_bytes`` and leaves the file at
        most ``max_file_bytes`` long. Returns None, having written nothing, for anything it
        does not handle."""
        room = max_file_bytes - self._size
        fields = append_batch_impl(
            self._fd,
            data,
            base_offset,
            leader_epoch,
            room if room < max_batch_bytes else max_batch_bytes,
            max_timestamp,
            max_last_offset_delta,
        )
        if fields is not None:
            self._size += len(data)
        return fields

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
