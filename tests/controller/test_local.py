"""LocalMetadataStore's own behaviour: persistence across reopen, the file, the directory lock,
batching, one watch call per change (exact sequences), and thread safety. The port's contract,
shared with ZooKeeperMetadataStore, is in test_store_contract.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.controller.local import FILE_NAME, LocalMetadataStore
from odradek.controller.store import MetadataStore
from odradek.errors import (
    BadVersionError,
    CorruptMetadataError,
    MetadataStoreError,
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LocalMetadataStore]:
    opened = LocalMetadataStore(tmp_path / "meta")
    yield opened
    opened.close()


def test_is_a_metadata_store(store: LocalMetadataStore) -> None:
    port: MetadataStore = store
    assert port.exists("/")


# --- nodes and versions ----------------------------------------------------------------------


# --- ephemerals and sessions -----------------------------------------------------------------


def test_ephemeral_nodes_vanish_on_close(tmp_path: Path) -> None:
    store = LocalMetadataStore(tmp_path)
    store.create("/brokers/ids/0", b"me", ephemeral=True, make_parents=True)
    assert store.get("/brokers/ids/0") == (b"me", 0)
    store.set("/brokers/ids/0", b"me again")
    assert store.statistics().ephemeral_nodes == 1
    store.close()
    with LocalMetadataStore(tmp_path) as reopened:
        assert not reopened.exists("/brokers/ids/0")
        assert reopened.exists("/brokers/ids")  # parents made for it are persistent


def test_a_directory_has_one_open_store(tmp_path: Path) -> None:
    with LocalMetadataStore(tmp_path), pytest.raises(MetadataStoreError, match="in use"):
        LocalMetadataStore(tmp_path)
    LocalMetadataStore(tmp_path).close()  # free again once closed


# --- persistence -----------------------------------------------------------------------------


def test_persistent_nodes_survive_reopen(tmp_path: Path) -> None:
    with LocalMetadataStore(tmp_path) as store:
        store.create("/cluster/id", b'{"id":"x"}', make_parents=True)
        store.create("/binary", bytes(range(256)))
        store.set("/binary", bytes(range(255, -1, -1)))
        store.create("/gone")
        store.delete("/gone")
        store.create("/eph", b"e", ephemeral=True)
    with LocalMetadataStore(tmp_path) as store:
        assert store.get("/cluster/id") == (b'{"id":"x"}', 0)
        assert store.get("/binary") == (bytes(range(255, -1, -1)), 1)
        assert not store.exists("/gone")
        assert not store.exists("/eph")
        assert store.children("/") == ["binary", "cluster"]
        store.set("/cluster/id", b"y", version=0)  # versions survive too


def test_file_is_json_with_base64_data(tmp_path: Path) -> None:
    with LocalMetadataStore(tmp_path) as store:
        store.create("/a", b"\x00\xff")
        store.create("/e", b"secret", ephemeral=True)
        document = json.loads((tmp_path / FILE_NAME).read_text(encoding="utf-8"))
    assert document["version"] == 1
    assert document["nodes"]["/a"] == {"data": "AP8=", "version": 0}
    assert "/e" not in document["nodes"]
    assert not (tmp_path / (FILE_NAME + ".tmp")).exists()


def test_ephemeral_only_changes_do_not_write(store: LocalMetadataStore) -> None:
    store.create("/p")
    writes = store.statistics().file_writes
    store.create("/p/e", ephemeral=True)
    store.set("/p/e", b"x")
    store.delete("/p/e")
    assert store.statistics().file_writes == writes


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b"[]",
        b'{"version": 9, "nodes": {}}',
        b'{"version": 1, "nodes": {"/a/b": {"data": "", "version": 0}}}',
        b'{"version": 1, "nodes": {"/a": {"data": "!!", "version": 0}}}',
        b'{"version": 1, "nodes": {"/a": {"data": "", "version": -2}}}',
        b'{"version": 1, "nodes": {"a": {"data": "", "version": 0}}}',
    ],
)
def test_corrupt_file_is_refused(tmp_path: Path, content: bytes) -> None:
    (tmp_path / FILE_NAME).write_bytes(content)
    with pytest.raises(CorruptMetadataError):
        LocalMetadataStore(tmp_path)
    LocalMetadataStore(tmp_path / "other").close()
    (tmp_path / FILE_NAME).unlink()
    LocalMetadataStore(tmp_path).close()  # the failed open released the directory


def test_failed_write_leaves_the_tree_unchanged(
    store: LocalMetadataStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.create("/a", b"old")

    def broken_write(path: str, data: bytes) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("odradek.controller.local.atomic_write", broken_write)
    with pytest.raises(OSError, match="disk full"):
        store.set("/a", b"new")
    with pytest.raises(OSError, match="disk full"):
        store.create("/b/c", make_parents=True)
    with pytest.raises(OSError, match="disk full"):
        store.delete("/a")
    assert store.get("/a") == (b"old", 0)
    assert not store.exists("/b")


# --- watches ---------------------------------------------------------------------------------


def test_data_watch_fires_on_create_set_delete(store: LocalMetadataStore) -> None:
    seen: list[tuple[str, bytes | None]] = []

    def on_change(path: str) -> None:
        seen.append((path, store.get(path)[0] if store.exists(path) else None))

    store.watch_data("/a", on_change)
    store.create("/a", b"1")
    store.set("/a", b"2")
    store.create("/other")
    store.delete("/a")
    assert seen == [("/a", b"1"), ("/a", b"2"), ("/a", None)]


def test_children_watch_fires_on_child_changes(store: LocalMetadataStore) -> None:
    seen: list[list[str]] = []
    store.create("/brokers/ids", make_parents=True)

    def on_children(path: str) -> None:
        seen.append(store.children(path))

    store.watch_children("/brokers/ids", on_children)
    store.create("/brokers/ids/1", ephemeral=True)
    store.create("/brokers/ids/0", ephemeral=True)
    store.set("/brokers/ids/0", b"data changes do not count")
    store.delete("/brokers/ids/1")
    assert seen == [["1"], ["0", "1"], ["0"]]


def test_watches_on_recursive_delete(store: LocalMetadataStore) -> None:
    events: list[tuple[str, str]] = []
    store.create("/t/p/0/state", make_parents=True)
    store.watch_data("/t/p/0/state", lambda path: events.append(("data", path)))
    store.watch_children("/t/p", lambda path: events.append(("children", path)))
    store.watch_children("/", lambda path: events.append(("children", path)))
    store.delete("/t", recursive=True)
    assert events == [("data", "/t/p/0/state"), ("children", "/t/p"), ("children", "/")]


def test_watches_fire_when_ephemerals_vanish(tmp_path: Path) -> None:
    events: list[str] = []
    store = LocalMetadataStore(tmp_path)
    store.create("/brokers/ids/0", ephemeral=True, make_parents=True)
    store.watch_children("/brokers/ids", events.append)
    store.close()
    assert events == ["/brokers/ids"]


# --- concurrency -----------------------------------------------------------------------------


def test_concurrent_compare_and_set_loses_no_update(store: LocalMetadataStore) -> None:
    store.create("/counter", b"0")
    threads_count, increments = 8, 25
    start = threading.Barrier(threads_count)
    conflicts = [0] * threads_count

    def worker(index: int) -> None:
        start.wait()
        for _ in range(increments):
            while True:
                data, version = store.get("/counter")
                try:
                    store.set("/counter", str(int(data) + 1).encode(), version)
                    break
                except BadVersionError:
                    conflicts[index] += 1
            store.create(f"/w{index}-{_}", ephemeral=True)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    data, version = store.get("/counter")
    assert int(data) == threads_count * increments
    assert version == threads_count * increments
    assert len(store.children("/")) == 1 + threads_count * increments


def test_batched_changes_are_visible_at_once_and_written_together(tmp_path: Path) -> None:
    store = LocalMetadataStore(tmp_path)
    before = store.statistics().file_writes
    with store.batched():
        store.create("/a", b"1")
        with store.batched():
            store.create("/b", b"2")
        store.set("/a", b"3")
        assert store.get("/a")[0] == b"3"  # visible inside the batch
        assert store.statistics().file_writes == before  # nothing written yet
    assert store.statistics().file_writes == before + 1
    store.close()
    reopened = LocalMetadataStore(tmp_path)
    assert (reopened.get("/a")[0], reopened.get("/b")[0]) == (b"3", b"2")
    reopened.close()
