"""The ``.log`` file of one segment: record batches back to back, appended and sliced.

``FileRecords`` owns the file and at most one open descriptor of it, a ``FileHandle``: opened
when needed, and let go when ``OpenFiles`` (the broker's bound on open files, see
``open_files``) releases it as idle or over the bound — it is opened again at the next use, so a
broker with thousands of idle partitions holds no descriptor for most of them. Appends go to the
end with ``os.write`` (the file is opened ``O_APPEND``); reads use ``os.pread``; ``FileSlice``
names a byte range that the broker can hand to ``os.sendfile`` without copying, and holds the
handle it reads from, so the descriptor stays open (and means the same file) as long as the
slice lives, whatever is released or deleted meanwhile. A ``FileHandle`` closes its descriptor
when the last reference to it goes: every user takes a reference of its own for the duration of
a call, which is what makes releasing safe from another thread.

The leader's append fast path, ``FileRecords.append_batch``, checks one whole batch, patches
its base offset (and leader epoch) and writes it in one call: compiled (``odradek._append``,
an optional C extension) when it is built, else ``py_append_batch``, its Python reference.
Both take the same arguments, write the same bytes and answer the same; either declines
(returns None, having written nothing) whatever it does not handle, and the caller then takes
the general path, which validates again and raises the precise error.

A write that fails (``ENOSPC`` on a full disk, ``EIO``) may have put part of the data in the
file; as the file is ``O_APPEND``, the next append would land after those bytes while ``size``
still names the old end, and every later position would be wrong. So every append that fails
cuts the file back to ``size`` and raises ``KafkaStorageError``: nothing was appended, and the
log appends again once the disk has room.

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

import errno
import functools
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from odradek._compiled import compiled_attr
from odradek._types import ReadableBuffer
from odradek.errors import CorruptRecordError, KafkaStorageError, UnsupportedForMessageFormatError
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
from odradek.storage.open_files import OpenFiles

#: What an accepted fast-path append reports: (last_offset_delta, max_timestamp,
#: records_count) of the batch written.
BatchFields: TypeAlias = tuple[int, int, int]
#: The signature shared by ``py_append_batch`` and the compiled ``odradek._append``.
AppendBatch: TypeAlias = Callable[
    [int, ReadableBuffer, int, int | None, int, int, int], BatchFields | None
]


class AppendsBatch(Protocol):
    """What ``append_with_state`` calls (``append_state.AppendState``'s ``append``)."""

    def append(
        self,
        fd: int,
        data: ReadableBuffer,
        base_offset: int,
        leader_epoch: int | None,
        position: int,
        max_batch_bytes: int,
        max_file_bytes: int,
        segment_ms: int,
        /,
    ) -> BatchFields | None: ...


#: The optional extension module holding the compiled ``append_batch``.
COMPILED_MODULE = "odradek._append"

# The header fields the fast path reads, in one unpack: batch_length (8), magic (16), crc
# (17), last_offset_delta (23), max_timestamp (35), records_count (57).
_FAST_FIELDS = struct.Struct(">8xi4xbI2xi8xq14xi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")


class FileHandle:
    """One open descriptor of a segment file, closed when the last reference to it goes (or
    by ``close``). Reference counting closes it as soon as nobody uses it."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self, _close: Callable[[int], None] = os.close) -> None:
        # ``os.close`` is bound at definition: module globals may be gone at interpreter exit.
        fd = self.fd
        if fd >= 0:
            self.fd = -1
            try:  # noqa: SIM105 - contextlib may be torn down at interpreter exit too
                _close(fd)
            except OSError:
                pass


@dataclass(frozen=True, slots=True)
class FileSlice:
    """A byte range of a segment file: what a read returns.

    ``fd`` stays open, and names the same file, as long as the slice lives (``handle`` keeps
    it open: see the module docstring), even after the segment is released or deleted. The
    range may end in the middle of a batch.
    """

    fd: int
    position: int
    length: int
    handle: FileHandle | None = field(default=None, compare=False, repr=False)

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
        open_files: the bound the descriptor counts against (None: unbounded, never
            released but by ``close``).

    After ``close`` every operation raises ``OSError`` (EBADF).
    """

    __slots__ = ("_closed", "_handle", "_open_files", "_path", "_size", "recently_used")

    def __init__(
        self, path: str, *, size: int | None = None, open_files: OpenFiles | None = None
    ) -> None:
        self._path = path
        self._open_files = open_files
        self._closed = False
        self.recently_used = True
        # O_CREAT only here: reopening a file removed behind our back must fail, not
        # create an empty one.
        handle = FileHandle(os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644))
        self._handle: FileHandle | None = handle
        file_size = os.fstat(handle.fd).st_size
        self._size = file_size if size is None else size
        if open_files is not None:
            open_files.opened(self)

    def _open(self) -> FileHandle:
        """Opens the file again after a release (the slow path of every operation)."""
        if self._closed:
            raise OSError(errno.EBADF, f"{self._path}: the file is closed")
        handle = FileHandle(os.open(self._path, os.O_RDWR | os.O_APPEND))
        self._handle = handle
        if self._open_files is not None:
            self._open_files.opened(self)
        return handle

    def release_file(self) -> bool:
        """Lets the descriptor go (``OpenFiles``): it closes once no call or slice uses it;
        the next operation opens the file again."""
        self._handle = None
        return True

    @property
    def is_open(self) -> bool:
        """Whether the file holds a descriptor now."""
        return self._handle is not None

    @property
    def path(self) -> str:
        return self._path

    @property
    def size(self) -> int:
        """Bytes of whole batches appended so far (the next append's position)."""
        return self._size

    def file_size(self) -> int:
        """The length of the file on disk, which may exceed ``size`` after a crash."""
        handle = self._handle or self._open()
        return os.fstat(handle.fd).st_size

    def append(self, data: ReadableBuffer) -> int:
        """Appends ``data`` (whole batches) and returns the position it starts at."""
        handle = self._handle or self._open()
        self.recently_used = True
        position = self._size
        with memoryview(data) as view:
            try:
                _write_all(handle.fd, view)
            except OSError as error:
                raise self._undo_append(handle, error) from error
            self._size = position + len(view)
        return position

    def append_parts(self, parts: Sequence[ReadableBuffer]) -> int:
        """Appends the concatenation of ``parts`` with ``writev`` (no copy); returns the
        position it starts at."""
        handle = self._handle or self._open()
        self.recently_used = True
        position = self._size
        views = [memoryview(part) for part in parts]
        try:
            _writev_all(handle.fd, views)
        except OSError as error:
            raise self._undo_append(handle, error) from error
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
        handle = self._handle or self._open()
        self.recently_used = True
        room = max_file_bytes - self._size
        try:
            fields = append_batch_impl(
                handle.fd,
                data,
                base_offset,
                leader_epoch,
                room if room < max_batch_bytes else max_batch_bytes,
                max_timestamp,
                max_last_offset_delta,
            )
        except OSError as error:
            raise self._undo_append(handle, error) from error
        if fields is not None:
            self._size += len(data)
        return fields

    def append_with_state(
        self,
        state: AppendsBatch,
        data: ReadableBuffer,
        base_offset: int,
        leader_epoch: int | None,
        max_batch_bytes: int,
        max_file_bytes: int,
        segment_ms: int,
    ) -> BatchFields | None:
        """``append_batch`` through a segment's append state (``append_state``), which checks
        its own limits and accounts for the batch: the file's part (the descriptor, the size,
        undoing a partial write) stays here."""
        handle = self._handle or self._open()
        self.recently_used = True
        size = self._size
        try:
            fields = state.append(
                handle.fd,
                data,
                base_offset,
                leader_epoch,
                size,
                max_batch_bytes,
                max_file_bytes,
                segment_ms,
            )
        except OSError as error:
            raise self._undo_append(handle, error) from error
        if fields is not None:
            self._size = size + len(data)
        return fields

    def _undo_append(self, handle: FileHandle, error: OSError) -> KafkaStorageError:
        """Cuts off what a failed write left past ``size``; returns the error to raise."""
        try:
            os.ftruncate(handle.fd, self._size)
        except OSError as cut:
            return KafkaStorageError(
                f"{self._path}: append failed ({error}) and the partial write could not be "
                f"cut off ({cut})"
            )
        return KafkaStorageError(f"{self._path}: append failed: {error}")

    def slice(self, position: int, length: int) -> FileSlice:
        """A slice of ``length`` bytes at ``position``, clipped to ``size``."""
        handle = self._handle or self._open()
        self.recently_used = True
        end = min(position + length, self._size)
        return FileSlice(handle.fd, position, max(0, end - position), handle)

    def read(self, position: int, length: int) -> bytes:
        """Up to ``length`` bytes at ``position`` (fewer at the end of the file)."""
        handle = self._handle or self._open()
        self.recently_used = True
        return os.pread(handle.fd, length, position)

    def header_at(self, position: int) -> BatchHeader:
        """The batch header at ``position`` (not CRC-checked).

        Raises CorruptRecordError when the header is malformed or runs past ``size``.
        """
        handle = self._handle or self._open()
        self.recently_used = True
        data = os.pread(handle.fd, HEADER_SIZE, position)
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
        handle = self._handle or self._open()
        file_size = os.fstat(handle.fd).st_size
        buffer = b""
        buffer_start = position
        while position < file_size:
            offset_in_buffer = position - buffer_start
            if len(buffer) - offset_in_buffer < HEADER_SIZE:
                buffer = os.pread(handle.fd, max(chunk_bytes, HEADER_SIZE), position)
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
                buffer = os.pread(handle.fd, max(chunk_bytes, header.size), position)
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
        handle = self._handle or self._open()
        removed = os.fstat(handle.fd).st_size - size
        os.ftruncate(handle.fd, size)
        self._size = size
        return removed

    def flush(self) -> None:
        """Makes appended bytes durable (fdatasync; dirty pages belong to the file, so a
        descriptor opened after a release syncs what an earlier one wrote)."""
        handle = self._handle or self._open()
        os.fdatasync(handle.fd)

    def close(self) -> None:
        """Lets the descriptor go for good (it closes once no slice uses it)."""
        if not self._closed:
            self._closed = True
            self._handle = None
            if self._open_files is not None:
                self._open_files.closed(self)

    def rename_to(self, path: str) -> None:
        """Renames the file; a descriptor in use keeps working."""
        os.replace(self._path, path)
        self._path = path

    def moved_to(self, path: str) -> None:
        """Records that the file was moved (its directory renamed) without renaming it."""
        self._path = path
