"""FileRecords' append fast path: ``py_append_batch`` (the reference) and its compiled twin
``odradek._append.append_batch`` accept, decline, patch and write identically, on random
batches, random damage and random limits; ``FileRecords.append_batch`` accounts the size."""

from __future__ import annotations

import errno
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from array import array
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import crc32c as crc32c_package
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from odradek.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER_SIZE,
    CompressionType,
    compute_crc,
    parse_header,
)
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage import file_records
from odradek.storage.file_records import (
    COMPILED_MODULE,
    WRITE_PIECE_BYTES,
    FileRecords,
    compiled_append_batch,
    py_append_batch,
)

compiled = compiled_append_batch()
needs_compiled = pytest.mark.skipif(compiled is None, reason=f"{COMPILED_MODULE} is not built")
IMPLEMENTATIONS = [
    pytest.param(py_append_batch, id="python"),
    pytest.param(compiled, id="compiled", marks=needs_compiled),
]
NOW = 1_700_000_000_000
PREFIX = b"earlier batches."  # what the file holds before the append
BIG = 2**70  # limits past int64 limit nothing; below -int64 they accept nothing

Outcome = tuple[str, Any, bytes, bytes]
BufferKind = Callable[[bytes], Any]
BUFFER_KINDS: dict[str, BufferKind] = {
    "bytes": bytes,
    "bytearray": bytearray,
    "memoryview of bytes": lambda raw: memoryview(bytes(raw)),
    "memoryview of bytearray": lambda raw: memoryview(bytearray(raw)),
}


def batch(
    count: int = 3,
    *,
    timestamp_ms: int = NOW,
    value_bytes: int = 20,
    compression: CompressionType = CompressionType.NONE,
) -> bytes:
    records = [
        SimpleRecord(timestamp_ms + i, b"k%d" % i, bytes([i]) * value_bytes) for i in range(count)
    ]
    return build_batch(records, base_offset=7, compression=compression)


def with_field(raw: bytes, offset: int, fmt: str, value: int, *, fix_crc: bool = True) -> bytes:
    """``raw`` with a header field rewritten (and its CRC32C recomputed, so that only the
    field's own check can decline it)."""
    data = bytearray(raw)
    struct.pack_into(fmt, data, offset, value)
    if fix_crc and len(data) >= HEADER_SIZE:
        struct.pack_into(">I", data, CRC_OFFSET, compute_crc(data, 0, len(data)))
    return bytes(data)


@contextmanager
def scratch_file() -> Iterator[int]:
    directory = tempfile.mkdtemp(prefix="odradek-append-")
    fd = os.open(os.path.join(directory, "segment.log"), os.O_RDWR | os.O_CREAT | os.O_APPEND)
    try:
        os.write(fd, PREFIX)
        yield fd
    finally:
        os.close(fd)
        shutil.rmtree(directory)


def file_bytes(fd: int) -> bytes:
    return os.pread(fd, os.fstat(fd).st_size + 1, 0)


def run(implementation: Any, data: Any, *args: Any) -> Outcome:
    """Calls ``implementation`` on a scratch file: (kind, answer, file bytes, data after)."""
    with scratch_file() as fd:
        try:
            answer = implementation(fd, data, *args)
        except Exception as error:
            return ("error", type(error), file_bytes(fd), bytes(data))
        return ("ok", answer, file_bytes(fd), bytes(data))


def assert_same(kind: str, raw: bytes, *args: Any) -> Outcome:
    """Both implementations give the same outcome on fresh buffers; returns the reference's."""
    expected = run(py_append_batch, BUFFER_KINDS[kind](raw), *args)
    if compiled is not None:
        assert run(compiled, BUFFER_KINDS[kind](raw), *args) == expected
    return expected


def patched(raw: bytes, base_offset: int, leader_epoch: int | None) -> bytes:
    data = bytearray(raw)
    struct.pack_into(">q", data, 0, base_offset)
    if leader_epoch is not None:
        struct.pack_into(">i", data, 12, leader_epoch)
    return bytes(data)


# ---- the compiled helper is there ----


def test_the_compiled_append_is_built_where_there_is_a_compiler() -> None:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: py_append_batch is the fallback")
    assert compiled is not None, f"{COMPILED_MODULE} was not built (see the pip install log)"
    assert file_records.append_batch_impl is compiled


# ---- accepted batches ----


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("kind", list(BUFFER_KINDS))
@pytest.mark.parametrize("leader_epoch", [None, 0, 5, -1, 2**31 - 1])
def test_a_valid_batch_is_patched_and_appended(
    implementation: Any, kind: str, leader_epoch: int | None
) -> None:
    raw = batch()
    header = parse_header(raw)
    data = BUFFER_KINDS[kind](raw)
    outcome = run(implementation, data, 1234, leader_epoch, BIG, BIG, BIG)
    assert outcome[0] == "ok"
    assert outcome[1] == (header.last_offset_delta, header.max_timestamp, header.records_count)
    assert outcome[2] == PREFIX + patched(raw, 1234, leader_epoch)
    # A bytearray is patched in place (no copy); any other buffer is left as it was.
    assert outcome[3] == (patched(raw, 1234, leader_epoch) if kind == "bytearray" else raw)


#: The compiled helper copies an immutable batch of at most this many bytes to write it in one
#: piece (SMALL_COPY_BYTES in _append.c), and writes a larger one as header copy + rest.
SMALL_COPY_BYTES = 16 * 1024


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("kind", list(BUFFER_KINDS))
@pytest.mark.parametrize("size", [0, SMALL_COPY_BYTES - 1, SMALL_COPY_BYTES, SMALL_COPY_BYTES + 1])
def test_a_batch_either_side_of_the_small_copy_limit_goes_out_whole(
    implementation: Any, kind: str, size: int
) -> None:
    """Whether the batch is copied whole or written as header + rest, the file gets every
    byte of it, patched, and the caller's immutable buffer keeps its own (size 0: the
    smallest batch there is, one empty record)."""
    raw = batch_of_size(size) if size else batch(count=1, value_bytes=0)
    data = BUFFER_KINDS[kind](raw)
    header = parse_header(raw)
    outcome = run(implementation, data, 2**40 + 7, 9, BIG, BIG, BIG)
    assert outcome[1] == (header.last_offset_delta, header.max_timestamp, header.records_count)
    assert outcome[2] == PREFIX + patched(raw, 2**40 + 7, 9)
    assert outcome[3] == (patched(raw, 2**40 + 7, 9) if kind == "bytearray" else raw)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_crc32c_is_the_packages(implementation: Any) -> None:
    raw = batch(count=50, value_bytes=300, compression=CompressionType.GZIP)
    stored = struct.unpack_from(">I", raw, CRC_OFFSET)[0]
    assert stored == crc32c_package.crc32c(raw[ATTRIBUTES_OFFSET:])
    assert run(implementation, raw, 0, None, BIG, BIG, BIG)[0:2] == (
        "ok",
        (49, NOW + 49, 50),
    )
    bad = with_field(raw, CRC_OFFSET, ">I", stored ^ 1, fix_crc=False)
    assert run(implementation, bad, 0, None, BIG, BIG, BIG) == ("ok", None, PREFIX, bad)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_limits_are_inclusive(implementation: Any) -> None:
    raw = batch(count=4)
    size = len(raw)
    ok = ("ok", (3, NOW + 3, 4))
    assert run(implementation, raw, 0, None, size, NOW + 3, 3)[0:2] == ok
    assert run(implementation, raw, 0, None, size - 1, NOW + 3, 3)[1] is None
    assert run(implementation, raw, 0, None, size, NOW + 2, 3)[1] is None
    assert run(implementation, raw, 0, None, size, NOW + 3, 2)[1] is None
    for limits in [(-BIG, BIG, BIG), (BIG, -BIG, BIG), (BIG, BIG, -BIG), (-1, -1, -1)]:
        assert run(implementation, raw, 0, None, *limits)[1] is None


# ---- declined batches: nothing written, nothing changed ----


def _declined_cases() -> Iterator[Any]:
    raw = batch()
    header = parse_header(raw)
    yield pytest.param(b"", id="empty")
    yield pytest.param(raw[: HEADER_SIZE - 1], id="shorter than a header")
    yield pytest.param(raw[:-1], id="truncated")
    yield pytest.param(raw + b"\x00", id="a trailing byte")
    yield pytest.param(raw + raw, id="two batches")
    for magic in (0, 1, 3, 255):
        yield pytest.param(
            with_field(raw, 16, ">b" if magic < 128 else ">B", magic), id=f"magic {magic}"
        )
    yield pytest.param(with_field(raw, 8, ">i", header.batch_length - 1), id="length too short")
    yield pytest.param(with_field(raw, 8, ">i", -12), id="negative length")
    yield pytest.param(with_field(raw, 23, ">i", -1), id="negative offset delta")
    yield pytest.param(with_field(raw, 57, ">i", -1), id="negative record count")
    yield pytest.param(with_field(raw, 35, ">q", -1), id="no max timestamp")
    yield pytest.param(with_field(raw, 35, ">q", -(2**63)), id="minimum max timestamp")
    yield pytest.param(with_field(raw, 30, ">B", raw[30] ^ 0x10, fix_crc=False), id="a bit flip")
    yield pytest.param(with_field(raw, 17, ">I", 0, fix_crc=False), id="a zero crc")


@pytest.mark.parametrize("raw", list(_declined_cases()))
@pytest.mark.parametrize("kind", list(BUFFER_KINDS))
def test_a_bad_batch_is_declined_by_both(raw: bytes, kind: str) -> None:
    outcome = assert_same(kind, raw, 99, 3, BIG, BIG, BIG)
    assert outcome == ("ok", None, PREFIX, raw)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_other_buffers_are_declined(implementation: Any) -> None:
    raw = batch(count=4)  # 4-byte aligned or not, a wider item is declined
    words = memoryview(bytearray(raw[: len(raw) - len(raw) % 4])).cast("I")
    cases = [
        array("B", raw),
        words,
        memoryview(raw + raw)[::2],  # not contiguous
        memoryview(bytearray(raw)).toreadonly()[::1].cast("B", (len(raw),)),
    ]
    for data in cases[:3]:
        with scratch_file() as fd:
            assert implementation(fd, data, 0, None, BIG, BIG, BIG) is None
            assert file_bytes(fd) == PREFIX
    with scratch_file() as fd:  # a read-only contiguous byte view is an ordinary buffer
        assert implementation(fd, cases[3], 0, None, BIG, BIG, BIG) is not None


# ---- errors ----


@pytest.mark.parametrize("kind", list(BUFFER_KINDS))
def test_a_failed_write_raises_oserror_from_both(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "read-only.log"
    path.write_bytes(PREFIX)
    raw = batch()
    outcomes = []
    for implementation in [py_append_batch, compiled] if compiled else [py_append_batch]:
        data = BUFFER_KINDS[kind](raw)
        fd = os.open(path, os.O_RDONLY)
        try:
            with pytest.raises(OSError, match="Bad file descriptor") as raised:
                implementation(fd, data, 5, 1, BIG, BIG, BIG)
        finally:
            os.close(fd)
        outcomes.append((type(raised.value), raised.value.errno, bytes(data)))
    assert all(outcome == outcomes[0] for outcome in outcomes)
    assert path.read_bytes() == PREFIX


@needs_compiled
def test_the_compiled_helper_checks_its_arguments() -> None:
    assert compiled is not None
    raw = batch()
    with pytest.raises(TypeError):
        compiled(0, raw, 0, None, BIG, BIG)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        compiled("0", raw, 0, None, BIG, BIG, BIG)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        compiled(0, raw, 0, None, 1.5, BIG, BIG)  # type: ignore[arg-type]
    with pytest.raises(OverflowError):
        compiled(0, raw, 0, 2**31, BIG, BIG, BIG)
    with pytest.raises(OverflowError):
        compiled(0, raw, 2**63, None, BIG, BIG, BIG)


# ---- random batches, random damage, random limits ----

_records = st.lists(
    st.tuples(
        st.integers(-2, 5_000),  # timestamp delta: -2 gives NOW - 2 ... and no timestamp
        st.one_of(st.none(), st.binary(max_size=6)),
        st.binary(max_size=120),
    ),
    min_size=1,
    max_size=8,
)
_undamaged = st.just(("none", 0, 0))
_damage = st.one_of(
    _undamaged,
    _undamaged,
    _undamaged,
    _undamaged,
    st.tuples(st.just("flip"), st.integers(0, 10_000), st.integers(1, 255)),
    st.tuples(st.just("cut"), st.integers(0, 10_000), st.just(0)),
    st.tuples(st.just("extend"), st.integers(1, 70), st.just(0)),
    st.tuples(
        st.just("field"),
        st.sampled_from([8, 16, 23, 35, 57]),
        st.integers(-(2**31), 2**31 - 1),
    ),
)


def _damaged(raw: bytes, damage: tuple[str, int, int]) -> bytes:
    what, where, value = damage
    data = bytearray(raw)
    if what == "flip":
        data[where % len(data)] ^= value
    elif what == "cut":
        del data[where % len(data) :]
    elif what == "extend":
        data += raw[:where]
    elif what == "field":
        fmt = {16: ">B", 35: ">q"}.get(where, ">i")
        struct.pack_into(fmt, data, where, value % 256 if where == 16 else value)
        struct.pack_into(">I", data, CRC_OFFSET, compute_crc(data, 0, len(data)))
    return bytes(data)


def _limit(actual: int) -> st.SearchStrategy[int]:
    return st.one_of(
        st.just(BIG),
        st.just(2**63 - 1),
        st.integers(actual - 1, actual + 2),
        st.sampled_from([-BIG, -(2**63), 0]),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=_records,
    compression=st.sampled_from([CompressionType.NONE, CompressionType.GZIP]),
    damage=_damage,
    kind=st.sampled_from(list(BUFFER_KINDS)),
    base_offset=st.integers(0, 2**63 - 1),
    leader_epoch=st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
    data=st.data(),
)
def test_both_implementations_agree_on_random_input(
    records: list[tuple[int, bytes | None, bytes]],
    compression: CompressionType,
    damage: tuple[str, int, int],
    kind: str,
    base_offset: int,
    leader_epoch: int | None,
    data: st.DataObject,
) -> None:
    raw = build_batch(
        [
            SimpleRecord(-1 if delta == -2 else NOW + delta, key, value)
            for delta, key, value in records
        ],
        compression=compression,
    )
    raw = _damaged(raw, damage)
    try:
        header = parse_header(raw)
        size, last_offset_delta, max_timestamp = (
            header.size,
            header.last_offset_delta,
            header.max_timestamp,
        )
    except Exception:
        size, last_offset_delta, max_timestamp = len(raw), 0, NOW
    limits = (
        data.draw(_limit(size), label="max_size"),
        data.draw(_limit(max_timestamp), label="max_timestamp"),
        data.draw(_limit(last_offset_delta), label="max_last_offset_delta"),
    )
    outcome = assert_same(kind, raw, base_offset, leader_epoch, *limits)
    kind_of_outcome, answer, written, after = outcome
    assert kind_of_outcome == "ok"
    event("declined" if answer is None else "accepted")
    if answer is None:
        assert (written, after) == (PREFIX, raw)
    else:
        assert written == PREFIX + patched(raw, base_offset, leader_epoch)


# ---- FileRecords.append_batch ----


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_file_records_counts_what_it_appends(
    implementation: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_records, "append_batch_impl", implementation)
    records = FileRecords(str(tmp_path / "0.log"))
    raw = batch()
    size = len(raw)
    assert records.append_batch(raw, 0, None, BIG, size, BIG, BIG) == (2, NOW + 2, 3)
    assert records.size == size
    # Room for the batch, but not under max_batch_bytes; then not in max_file_bytes.
    assert records.append_batch(raw, 3, None, size - 1, BIG, BIG, BIG) is None
    assert records.append_batch(raw, 3, None, BIG, 2 * size - 1, BIG, BIG) is None
    assert records.size == size
    assert records.append_batch(bytearray(raw), 3, 9, size, 2 * size, BIG, BIG) is not None
    assert records.size == 2 * size == records.file_size()
    assert records.read(size, size) == patched(raw, 3, 9)
    records.close()


# ---- writes go out in pieces of at most WRITE_PIECE_BYTES ----


def batch_of_size(size: int) -> bytes:
    """A one-record batch exactly ``size`` bytes long."""
    value_bytes = size - len(batch(count=1, value_bytes=0))
    while True:
        raw = batch(count=1, value_bytes=value_bytes)
        if len(raw) == size:
            return raw
        value_bytes += size - len(raw)  # a varint grew a byte: take it off the value


def write_calls(write: Callable[[int], Any]) -> list[bytes]:
    """What ``write(fd)`` sent, one item per write system call: ``fd`` is a SOCK_SEQPACKET
    socket, which keeps each call's bytes as one message."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    messages: list[bytes] = []

    def read_all() -> None:
        while message := theirs.recv(4 * WRITE_PIECE_BYTES):
            messages.append(message)

    reader = threading.Thread(target=read_all)
    reader.start()
    try:
        write(ours.fileno())
    finally:
        ours.shutdown(socket.SHUT_WR)
        reader.join(10)
        ours.close()
        theirs.close()
    return messages


PIECE_CASES = [
    pytest.param(size, id=f"{size} B")
    for size in (
        WRITE_PIECE_BYTES - 1,
        WRITE_PIECE_BYTES,
        WRITE_PIECE_BYTES + 1,
        3 * WRITE_PIECE_BYTES + HEADER_SIZE,
        1_000_000,
    )
]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("kind", list(BUFFER_KINDS))
@pytest.mark.parametrize("size", PIECE_CASES)
def test_append_batch_writes_in_pieces(implementation: Any, kind: str, size: int) -> None:
    raw = batch_of_size(size)
    data = BUFFER_KINDS[kind](raw)
    answer: list[Any] = []
    calls = write_calls(lambda fd: answer.append(implementation(fd, data, 42, 3, BIG, BIG, BIG)))
    assert answer[0] is not None
    assert b"".join(calls) == patched(raw, 42, 3)
    # As few calls as the limit allows: every one full but the last.
    assert [len(call) for call in calls[:-1]] == [WRITE_PIECE_BYTES] * (len(calls) - 1)
    assert 0 < len(calls[-1]) <= WRITE_PIECE_BYTES


@pytest.mark.parametrize("size", PIECE_CASES)
def test_the_general_path_appends_in_pieces(
    size: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``FileRecords.append`` and ``append_parts`` (the log's general path) too."""
    raw = batch_of_size(size)
    real_write, real_writev = os.write, os.writev
    calls: list[int] = []

    def write(fd: int, data: Any) -> int:
        calls.append(len(memoryview(data)))
        return real_write(fd, data)

    def writev(fd: int, buffers: Any) -> int:
        calls.append(sum(len(memoryview(buffer)) for buffer in buffers))
        return real_writev(fd, buffers)

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(os, "writev", writev)
    records = FileRecords(str(tmp_path / "0.log"))
    records.append(raw)
    records.append_parts([raw[:HEADER_SIZE], memoryview(raw)[HEADER_SIZE:]])
    assert records.read(0, 2 * size) == raw + raw
    records.close()
    assert max(calls) <= WRITE_PIECE_BYTES
    assert len(calls) == 2 * -(-size // WRITE_PIECE_BYTES)


@pytest.mark.parametrize("kind", list(BUFFER_KINDS))
def test_short_writes_are_finished(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python helpers finish what a write call left undone (the kernel may write less
    than asked, e.g. on a full disk's edge or after a signal)."""
    real_write = os.write

    def short_write(fd: int, data: Any) -> int:
        return real_write(fd, memoryview(data)[:1000])

    def short_writev(fd: int, buffers: Any) -> int:
        joined = b"".join(bytes(buffer) for buffer in buffers)
        return real_write(fd, joined[:1000])

    monkeypatch.setattr(os, "write", short_write)
    monkeypatch.setattr(os, "writev", short_writev)
    raw = batch_of_size(3 * WRITE_PIECE_BYTES + 17)
    with scratch_file() as fd:
        assert py_append_batch(fd, BUFFER_KINDS[kind](raw), 5, None, BIG, BIG, BIG) is not None
        assert file_bytes(fd) == PREFIX + patched(raw, 5, None)


# ---- a full disk ----

#: Run in a child process: a file-size limit (RLIMIT_FSIZE, with SIGXFSZ ignored) makes the
#: kernel take the first pieces of a large append and refuse the rest with EFBIG, as a full
#: disk does with ENOSPC — without limiting the test process's own files.
_FULL_DISK_CHILD = """
import os, resource, signal, sys
from odradek.records.batch import iter_batches
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage import file_records
from odradek.storage.file_records import FileRecords, compiled_append_batch, py_append_batch

path, how = sys.argv[1], sys.argv[2]
if how == "append_batch-compiled":
    file_records.append_batch_impl = compiled_append_batch()
elif how == "append_batch-python":
    file_records.append_batch_impl = py_append_batch

def batch(value_bytes):
    return build_batch([SimpleRecord(1_700_000_000_000, None, b"v" * value_bytes)])

def append(records, raw, base_offset):
    if how == "append":
        records.append(raw)
    elif how == "append_parts":
        records.append_parts([raw[:61], memoryview(raw)[61:]])
    else:
        fields = records.append_batch(raw, base_offset, None, 2**40, 2**40, 2**62, 2**31)
        assert fields is not None

records = FileRecords(path)
small = batch(100)
append(records, small, 0)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (records.size + 150_000, hard))
try:
    append(records, batch(300_000), 1)
    failed = None
except Exception as error:  # the storage error the broker answers, caused by the OSError
    failed = getattr(error.__cause__, "errno", getattr(error, "errno", None))
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
append(records, small, 2)
data = open(path, "rb").read()
print(failed, records.size, len(data), [h.base_offset for _, h in iter_batches(data)])
"""


@pytest.mark.parametrize(
    "how",
    [
        "append",
        "append_parts",
        "append_batch-python",
        pytest.param("append_batch-compiled", marks=needs_compiled),
    ],
)
def test_an_append_cut_short_by_a_full_disk_leaves_no_torn_batch(how: str, tmp_path: Path) -> None:
    """Found by the fault suite (full-disk): the torn start of a refused batch stayed in the
    leader's segment, the next batch went after it, and followers were served a batch that
    failed its CRC, forever. Now the failed append is undone before its error is raised."""
    path = tmp_path / "0.log"
    child = subprocess.run(
        [sys.executable, "-c", _FULL_DISK_CHILD, str(path), how],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    failed, size, file_size, base_offsets = child.stdout.split(" ", 3)
    assert failed == str(errno.EFBIG)
    assert size == file_size  # nothing past what the log counts
    assert base_offsets.strip() == ("[0, 2]" if how.startswith("append_batch") else "[0, 0]")
