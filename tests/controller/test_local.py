"""LocalMetadataStore: ZooKeeper's node semantics (versions, compare-and-set, ephemerals,
recursive delete), persistence across reopen, watches, and thread safety."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.controller.local import FILE_NAME, LocalMetadataStore
from odradek.controller.store import MetadataStore, join_path, node_name, parent_path
from odradek.errors import (
    BadVersionError,
    CorruptMetadataError,
    InvalidPathError,
    MetadataStoreError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionClosedError,
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


def test_create_get_set_versions(store: LocalMetadataStore) -> None:
    store.create("/a", b"one")
    assert store.get("/a") == (b"one", 0)
    assert store.set("/a", b"two") == 1
    assert store.set("/a", b"three", version=1) == 2
    assert store.get("/a") == (b"three", 2)


def test_create_existing_fails(store: LocalMetadataStore) -> None:
    store.create("/a")
    with pytest.raises(NodeExistsError):
        store.create("/a", b"x")
    with pytest.raises(NodeExistsError):
        store.create("/")


def test_create_needs_the_parent_unless_asked(store: LocalMetadataStore) -> None:
    with pytest.raises(NoNodeError):
        store.create("/brokers/ids/0")
    store.create("/brokers/ids/0", b"b", make_parents=True)
    assert store.get("/brokers") == (b"", 0)
    assert store.children("/brokers") == ["ids"]
    assert store.get("/brokers/ids/0") == (b"b", 0)


def test_missing_nodes(store: LocalMetadataStore) -> None:
    assert not store.exists("/nope")
    with pytest.raises(NoNodeError):
        store.get("/nope")
    with pytest.raises(NoNodeError):
        store.set("/nope", b"")
    with pytest.raises(NoNodeError):
        store.delete("/nope")
    with pytest.raises(NoNodeError):
        store.children("/nope")


def test_compare_and_set_failures(store: LocalMetadataStore) -> None:
    store.create("/a", b"0")
    store.set("/a", b"1")
    with pytest.raises(BadVersionError):
        store.set("/a", b"x", version=0)
    with pytest.raises(BadVersionError):
        store.delete("/a", version=5)
    assert store.get("/a") == (b"1", 1)
    store.delete("/a", version=1)
    assert not store.exists("/a")


def test_children_are_sorted_names(store: LocalMetadataStore) -> None:
    for name in ["b", "a", "c10", "c2"]:
        store.create(f"/t/{name}", make_parents=True)
    assert store.children("/t") == ["a", "b", "c10", "c2"]
    assert store.children("/") == ["t"]


def test_delete_non_empty_needs_recursive(store: LocalMetadataStore) -> None:
    store.create("/t/x/y", make_parents=True)
    store.create("/t/z", make_parents=True)
    with pytest.raises(NotEmptyError):
        store.delete("/t")
    store.delete("/t", recursive=True)
    assert not store.exists("/t")
    assert not store.exists("/t/x/y")
    assert store.children("/") == []


def test_root_cannot_be_deleted(store: LocalMetadataStore) -> None:
    with pytest.raises(InvalidPathError):
        store.delete("/")


@pytest.mark.parametrize("path", ["", "a", "/a/", "//a", "/a//b", "/a/./b", "/a/..", "/a\x00"])
def test_invalid_paths(store: LocalMetadataStore, path: str) -> None:
    with pytest.raises(InvalidPathError):
        store.create(path)
    with pytest.raises(InvalidPathError):
        store.exists(path)


def test_path_helpers() -> None:
    assert parent_path("/a/b") == "/a"
    assert parent_path("/a") == "/"
    assert node_name("/a/b") == "b"
    assert join_path("/", "a", "b") == "/a/b"
    assert join_path("/a", "b") == "/a/b"


def test_data_is_copied(store: LocalMetadataStore) -> None:
    buffer = bytearray(b"abc")
    store.create("/a", buffer)  # type: ignore[arg-type]
    buffer[0] = ord("z")
    assert store.get("/a") == (b"abc", 0)


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


def test_ephemerals_cannot_have_children(store: LocalMetadataStore) -> None:
    store.create("/e", ephemeral=True)
    with pytest.raises(NoChildrenForEphemeralsError):
        store.create("/e/child")
    with pytest.raises(NoChildrenForEphemeralsError):
        store.create("/e/child/grandchild", make_parents=True)


def test_closed_store_refuses_everything(tmp_path: Path) -> None:
    store = LocalMetadataStore(tmp_path)
    store.create("/a")
    store.close()
    store.close()  # idempotent
    assert store.closed
    for call in (
        lambda: store.get("/a"),
        lambda: store.exists("/a"),
        lambda: store.create("/b"),
        lambda: store.set("/a", b""),
        lambda: store.delete("/a"),
        lambda: store.children("/"),
        lambda: store.watch_data("/a", lambda path: None),
    ):
        with pytest.raises(SessionClosedError):
            call()


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


def test_a_failing_watch_does_not_stop_others(
    store: LocalMetadataStore, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[str] = []

    def broken(path: str) -> None:
        raise RuntimeError("boom")

    store.watch_data("/a", broken)
    store.watch_data("/a", seen.append)
    store.create("/a")
    assert seen == ["/a"]
    assert store.exists("/a")
    assert "watch callback for /a failed" in caplog.text


def test_watch_callback_may_write(store: LocalMetadataStore) -> None:
    def mirror(path: str) -> None:
        data, _ = store.get(path)
        store.set("/copy", data)

    store.create("/copy")
    store.create("/src")
    store.watch_data("/src", mirror)
    store.set("/src", b"hello")
    assert store.get("/copy") == (b"hello", 1)


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
