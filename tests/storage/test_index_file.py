"""IndexFile: the file lifecycle (preallocate, trim, resize, reset), mmap writes, close,
delete, rename and the lock-free lookup contract, exercised through both concrete indexes."""

from __future__ import annotations

import inspect
import operator
import os
import shutil
import struct
import threading
from array import array
from pathlib import Path

import pytest

from odradek.storage import offset_index, time_index
from odradek.storage.index_errors import CorruptIndexError, IndexFullError
from odradek.storage.index_file import IndexFile, first_out_of_order
from odradek.storage.offset_index import IndexEntry, OffsetIndex
from odradek.storage.time_index import TimeIndex

BASE = 1000


def _fill(index: IndexFile, count: int) -> None:
    """Appends ``count`` entries at offsets BASE, BASE+10, ... (timestamps 100, 200, ...)."""
    start = index.entries
    for i in range(start, start + count):
        if isinstance(index, OffsetIndex):
            index.append(BASE + 10 * i, 100 * i)
        else:
            assert isinstance(index, TimeIndex)
            assert index.maybe_append(100 * (i + 1), BASE + 10 * i, skip_full_check=True)


def _entry_list(index: IndexFile) -> list[tuple[int, int]]:
    assert isinstance(index, OffsetIndex | TimeIndex)
    return [(e[0], e[1]) for e in map(index.entry, range(index.entries))]


@pytest.fixture(params=[OffsetIndex, TimeIndex], ids=["offset", "time"])
def index_cls(request: pytest.FixtureRequest) -> type[IndexFile]:
    cls: type[IndexFile] = request.param
    return cls


def _open(cls: type[IndexFile], path: Path, max_bytes: int = 1024) -> IndexFile:
    return cls(path, BASE, max_bytes)


def test_new_file_is_preallocated_rounded_down(index_cls: type[IndexFile], tmp_path: Path) -> None:
    path = tmp_path / "x"
    with _open(index_cls, path, 1000) as index:
        expected = 1000 - 1000 % index.entry_size
        assert os.path.getsize(path) == expected
        assert index.file_size_bytes == expected
        assert index.max_entries == expected // index.entry_size
        assert index.entries == 0
        assert index.size_bytes == 0
        assert index.path == str(path)
        assert index.base_offset == BASE
        assert index.max_index_size_bytes == 1000
        assert not index.closed


def test_rejects_negative_arguments(index_cls: type[IndexFile], tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="base_offset"):
        index_cls(tmp_path / "a", -1, 100)
    with pytest.raises(ValueError, match="max_index_size_bytes"):
        index_cls(tmp_path / "b", 0, -1)


def test_accepts_str_path(index_cls: type[IndexFile], tmp_path: Path) -> None:
    with index_cls(str(tmp_path / "s"), BASE, 100) as index:
        assert index.path == str(tmp_path / "s")


def test_smaller_than_one_entry_is_full_from_the_start(
    index_cls: type[IndexFile], tmp_path: Path
) -> None:
    with _open(index_cls, tmp_path / "x", 3) as index:
        assert index.max_entries == 0
        assert index.is_full
        assert index.file_size_bytes == 0
        with pytest.raises(IndexFullError):
            _fill(index, 1)


def test_appends_reach_the_file_without_flush(index_cls: type[IndexFile], tmp_path: Path) -> None:
    path = tmp_path / "x"
    with _open(index_cls, path) as index:
        _fill(index, 3)
        on_disk = path.read_bytes()
        assert len(on_disk) == index.file_size_bytes
        size = index.size_bytes
        assert size == 3 * index.entry_size
        assert on_disk[size:] == bytes(len(on_disk) - size)
        assert on_disk[:size] != bytes(size)


def test_trim_cuts_to_the_entries_and_makes_the_index_full(
    index_cls: type[IndexFile], tmp_path: Path
) -> None:
    path = tmp_path / "x"
    with _open(index_cls, path) as index:
        _fill(index, 3)
        assert index.trim()
        assert not index.trim()  # already trimmed
        assert os.path.getsize(path) == 3 * index.entry_size
        assert index.max_entries == 3
        assert index.is_full
        with pytest.raises(IndexFullError):
            _fill(index, 1)


def test_close_trims_and_is_idempotent(index_cls: type[IndexFile], tmp_path: Path) -> None:
    path = tmp_path / "x"
    index = _open(index_cls, path)
    _fill(index, 2)
    index.close()
    index.close()
    assert index.closed
    assert os.path.getsize(path) == 2 * index.entry_size


def test_closed_index_refuses_mutations_but_answers_lookups(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "x", BASE, 1024)
    index.append(BASE + 5, 50)
    index.close()
    for mutation in (
        lambda: index.append(BASE + 6, 60),
        lambda: index.truncate_to(BASE),
        lambda: index.truncate_to_entries(0),
        index.reset,
        index.trim,
        lambda: index.resize(1024),
        index.flush,
    ):
        with pytest.raises(ValueError, match="closed"):
            mutation()
    assert index.lookup(BASE + 7) == IndexEntry(BASE + 5, 50)
    assert index.entries == 1


def test_reopen_after_trim_keeps_the_entries(index_cls: type[IndexFile], tmp_path: Path) -> None:
    path = tmp_path / "x"
    with _open(index_cls, path) as index:
        _fill(index, 5)
        before = _entry_list(index)
    with _open(index_cls, path, 4096) as reopened:
        assert reopened.entries == 5
        assert reopened.max_entries == 5  # taken as it is, not preallocated again
        assert reopened.is_full
        assert _entry_list(reopened) == before
        reopened.sanity_check()


def test_resize_preallocates_a_reopened_index_for_appends(
    index_cls: type[IndexFile], tmp_path: Path
) -> None:
    path = tmp_path / "x"
    with _open(index_cls, path) as index:
        _fill(index, 2)
    with _open(index_cls, path, 0) as reopened:
        assert reopened.resize(1000)
        assert reopened.max_index_size_bytes == 1000
        assert reopened.file_size_bytes == 1000 - 1000 % reopened.entry_size
        assert not reopened.resize(1000)
        _fill(reopened, 3)
        assert reopened.entries == 5
        reopened.sanity_check()
    with _open(index_cls, path) as again:
        assert again.entries == 5


def test_resize_cannot_drop_entries(index_cls: type[IndexFile], tmp_path: Path) -> None:
    with _open(index_cls, tmp_path / "x") as index:
        _fill(index, 3)
        with pytest.raises(ValueError, match="cannot resize"):
            index.resize(3 * index.entry_size - 1)
        assert index.resize(3 * index.entry_size)
        assert index.entries == 3


def test_reopen_of_an_empty_file(index_cls: type[IndexFile], tmp_path: Path) -> None:
    path = tmp_path / "x"
    path.touch()
    with _open(index_cls, path) as index:
        assert index.entries == 0
        assert index.max_entries == 0
        assert index.is_full
        index.sanity_check()
        index.resize(100)
        _fill(index, 1)
        assert index.entries == 1


def test_reopen_of_an_untrimmed_preallocated_file_fails_the_sanity_check(
    index_cls: type[IndexFile], tmp_path: Path
) -> None:
    path = tmp_path / "x"
    crashed = tmp_path / "crashed"
    with _open(index_cls, path) as index:
        _fill(index, 3)
        index.flush()
        shutil.copyfile(path, crashed)  # what a crash leaves: the preallocated file
    with _open(index_cls, crashed) as reopened:
        # The zero tail is not decoded (nor, past the first hole, read) but still rejected.
        assert reopened.entries == 3
        assert reopened.max_entries > 3
        with pytest.raises(CorruptIndexError, match="zero entries"):
            reopened.sanity_check()
        reopened.reset()  # what recovery does: rebuilt from nothing, preallocated
        reopened.sanity_check()
        assert reopened.entries == 0


def test_reopen_of_an_untrimmed_file_after_truncation_fails_the_sanity_check(
    index_cls: type[IndexFile], tmp_path: Path
) -> None:
    # Truncation zeroes the dropped entries: stale ones must not survive a crash looking valid.
    path = tmp_path / "x"
    crashed = tmp_path / "crashed"
    with _open(index_cls, path, 8 * 12) as index:
        _fill(index, index.max_entries - 1)
        index.truncate_to_entries(2)
        shutil.copyfile(path, crashed)
    with _open(index_cls, crashed) as reopened, pytest.raises(CorruptIndexError):
        reopened.sanity_check()


def test_sanity_check_rejects_a_size_that_is_not_a_multiple(
    index_cls: type[IndexFile], tmp_path: Path
) -> None:
    path = tmp_path / "x"
    with _open(index_cls, path) as index:
        _fill(index, 2)
    with path.open("ab") as f:
        f.write(b"\x7f")
    with _open(index_cls, path) as reopened:
        assert reopened.entries == 2
        with pytest.raises(CorruptIndexError, match="not a multiple"):
            reopened.sanity_check()
        reopened.trim()  # rounding down repairs it
        reopened.sanity_check()


def test_truncate_to_entries(index_cls: type[IndexFile], tmp_path: Path) -> None:
    path = tmp_path / "x"
    with _open(index_cls, path) as index:
        _fill(index, 4)
        with pytest.raises(ValueError, match="cannot truncate"):
            index.truncate_to_entries(5)
        with pytest.raises(ValueError, match="cannot truncate"):
            index.truncate_to_entries(-1)
        index.truncate_to_entries(4)
        assert index.entries == 4
        index.truncate_to_entries(1)
        assert index.entries == 1
        data = path.read_bytes()
        assert data[index.entry_size :] == bytes(len(data) - index.entry_size)
        _fill(index, 2)
        assert index.entries == 3
        index.sanity_check()


def test_reset_empties_and_preallocates_again(index_cls: type[IndexFile], tmp_path: Path) -> None:
    path = tmp_path / "x"
    with _open(index_cls, path, 240) as index:
        _fill(index, 3)
        index.trim()
        index.reset()
        assert index.entries == 0
        assert index.file_size_bytes == 240
        assert path.read_bytes() == bytes(240)
        _fill(index, 2)
        assert index.entries == 2


def test_flush(index_cls: type[IndexFile], tmp_path: Path) -> None:
    path = tmp_path / "x"
    with _open(index_cls, path) as index:
        _fill(index, 2)
        index.flush()
        index.trim()
        index.flush()
        assert len(path.read_bytes()) == 2 * index.entry_size
    with _open(index_cls, path, 0) as empty_map:
        empty_map.truncate_to_entries(0)
        empty_map.trim()
        empty_map.flush()  # no map at all: just fsync


def test_delete(index_cls: type[IndexFile], tmp_path: Path) -> None:
    path = tmp_path / "x"
    index = _open(index_cls, path)
    _fill(index, 2)
    assert index.delete()
    assert not path.exists()
    assert index.closed
    assert not index.delete()
    index.close()  # harmless after delete


def test_rename_then_append_lookup_and_close(tmp_path: Path) -> None:
    old, new = tmp_path / "x.index", tmp_path / "x.index.deleted"
    index = OffsetIndex(old, BASE, 1024)
    index.append(BASE, 0)
    index.rename_to(new)
    assert index.path == str(new)
    assert not old.exists()
    index.append(BASE + 5, 500)
    assert index.lookup(BASE + 6) == IndexEntry(BASE + 5, 500)
    index.close()
    assert os.path.getsize(new) == 16
    with OffsetIndex(new, BASE, 1024) as reopened:
        assert reopened.last_entry() == IndexEntry(BASE + 5, 500)
    index.rename_to(str(old))  # works closed too
    assert old.exists()
    assert index.delete()


def test_rename_failure_keeps_the_path(tmp_path: Path) -> None:
    with OffsetIndex(tmp_path / "x", BASE, 1024) as index:
        with pytest.raises(FileNotFoundError):
            index.rename_to(tmp_path / "missing-dir" / "x")
        assert index.path == str(tmp_path / "x")


def test_repr(tmp_path: Path) -> None:
    with OffsetIndex(tmp_path / "x", BASE, 80) as index:
        assert repr(index) == (
            f"OffsetIndex(path={str(tmp_path / 'x')!r}, base_offset={BASE}, entries=0, "
            "max_entries=10, closed=False)"
        )


def test_lookups_use_the_c_bisect() -> None:
    # The hot path must not fall back to the pure-Python bisect.
    assert inspect.isbuiltin(vars(offset_index)["bisect_right"])
    assert inspect.isbuiltin(vars(offset_index)["bisect_left"])
    assert inspect.isbuiltin(vars(time_index)["bisect_left"])


def test_a_subclass_codec_must_match_its_columns() -> None:
    with pytest.raises(AssertionError):

        class _Mismatched(IndexFile):  # 8-byte key column, 12-byte codec
            entry_size = 8
            _ENTRY = struct.Struct(">qi")
            _KEY_TYPECODE = "q"
            _VALUE_TYPECODE = "i"


def test_first_out_of_order() -> None:
    assert first_out_of_order(array("i"), operator.lt) is None
    assert first_out_of_order(array("i", [1]), operator.lt) is None
    assert first_out_of_order(array("i", [1, 2, 3]), operator.lt) is None
    assert first_out_of_order(array("i", [1, 2, 2, 3]), operator.lt) == 2
    assert first_out_of_order(array("i", [1, 2, 2, 3]), operator.le) is None
    assert first_out_of_order(array("i", [3, 2]), operator.le) == 1


def test_lookups_during_appends_see_a_prefix(tmp_path: Path) -> None:
    """One thread appends; readers on other threads only ever see entries that were appended."""
    total = 20_000
    index = OffsetIndex(tmp_path / "x", BASE, total * 8)
    done = threading.Event()
    errors: list[str] = []

    def read() -> None:
        seen = 0
        while not done.is_set() or seen < total:
            count = index.entries
            if count < seen:
                errors.append(f"entries went back from {seen} to {count}")
                return
            seen = count
            if count:
                last = index.lookup(BASE + 2 * total)
                # Entry i is (BASE + 2 i, 3 i): a lookup sees a whole entry of the prefix.
                i = (last.offset - BASE) // 2
                if last != IndexEntry(BASE + 2 * i, 3 * i) or i < count - 1:
                    errors.append(f"bad lookup {last} with {count} entries")
                    return
                probe = index.lookup(BASE + 2 * (count // 2) + 1)
                if probe != IndexEntry(BASE + 2 * (count // 2), 3 * (count // 2)):
                    errors.append(f"bad probe {probe} with {count} entries")
                    return

    readers = [threading.Thread(target=read) for _ in range(3)]
    for reader in readers:
        reader.start()
    try:
        for i in range(total):
            index.append(BASE + 2 * i, 3 * i)
    finally:
        done.set()
        for reader in readers:
            reader.join(timeout=60)
    assert not errors
    assert index.entries == total
    index.close()


def test_flush_from_another_thread_while_appending(tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "x", BASE, 12 * 5000)
    stop = threading.Event()

    def flush() -> None:
        while not stop.is_set():
            index.flush()

    flusher = threading.Thread(target=flush)
    flusher.start()
    try:
        for i in range(2000):
            index.maybe_append(i, BASE + i)
    finally:
        stop.set()
        flusher.join(timeout=60)
    assert index.entries == 2000
    index.close()
    with TimeIndex(tmp_path / "x", BASE, 0) as reopened:
        reopened.sanity_check()
        assert reopened.entries == 2000


def test_the_zero_tail_of_a_preallocated_file_is_not_read(
    index_cls: type[IndexFile], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x"
    crashed = tmp_path / "crashed"
    with _open(index_cls, path, 1 << 20) as index:
        _fill(index, 3)
        index.flush()
        # What a crash leaves: the entries, then a sparse preallocated tail.
        crashed.write_bytes(path.read_bytes()[: index.size_bytes])
        os.truncate(crashed, index.file_size_bytes)
    read: list[int] = []
    real_pread = os.pread

    def counting_pread(fd: int, length: int, offset: int) -> bytes:
        read.append(length)
        return real_pread(fd, length, offset)

    monkeypatch.setattr(os, "pread", counting_pread)
    with _open(index_cls, crashed, 1 << 20) as reopened:
        assert reopened.entries == 3
        assert reopened.file_size_bytes >= (1 << 20) - 12
        # Only the data before the first hole (one file-system block here) was read.
        assert sum(read) < reopened.file_size_bytes // 4
