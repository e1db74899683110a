"""The MetadataStore port's contract, run against every implementation: the embedded
LocalMetadataStore and ZooKeeperMetadataStore on a real ZooKeeper (each test in its own chroot).

Node semantics (versions, compare-and-set, ephemerals, recursive delete), ``multi``'s
all-or-none, sessions, and level-triggered persistent watches. Watches are waited for with a
deadline: ZooKeeper's arrive on another thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from odradek.controller.store import (
    CheckOp,
    CreateOp,
    DeleteOp,
    MetadataStore,
    SetOp,
    join_path,
    node_name,
    parent_path,
)
from odradek.errors import (
    BadVersionError,
    InvalidPathError,
    MetadataStoreError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionClosedError,
)

StoreFactory = Callable[[], MetadataStore]


def wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        time.sleep(0.01)


# --- nodes and versions ----------------------------------------------------------------------


def test_create_get_set_versions(store: MetadataStore) -> None:
    store.create("/a", b"one")
    assert store.get("/a") == (b"one", 0)
    assert store.set("/a", b"two") == 1
    assert store.set("/a", b"three", version=1) == 2
    assert store.get("/a") == (b"three", 2)
    assert store.exists("/")


def test_create_existing_fails(store: MetadataStore) -> None:
    store.create("/a")
    with pytest.raises(NodeExistsError):
        store.create("/a", b"x")
    with pytest.raises(NodeExistsError):
        store.create("/")
    assert store.get("/a") == (b"", 0)


def test_create_needs_the_parent_unless_asked(store: MetadataStore) -> None:
    with pytest.raises(NoNodeError):
        store.create("/brokers/ids/0")
    store.create("/brokers/ids/0", b"b", make_parents=True)
    assert store.get("/brokers") == (b"", 0)
    assert store.children("/brokers") == ["ids"]
    assert store.get("/brokers/ids/0") == (b"b", 0)


def test_missing_nodes(store: MetadataStore) -> None:
    assert not store.exists("/nope")
    with pytest.raises(NoNodeError):
        store.get("/nope")
    with pytest.raises(NoNodeError):
        store.set("/nope", b"")
    with pytest.raises(NoNodeError):
        store.delete("/nope")
    with pytest.raises(NoNodeError):
        store.children("/nope")


def test_compare_and_set_failures(store: MetadataStore) -> None:
    store.create("/a", b"0")
    store.set("/a", b"1")
    with pytest.raises(BadVersionError):
        store.set("/a", b"x", version=0)
    with pytest.raises(BadVersionError):
        store.delete("/a", version=5)
    assert store.get("/a") == (b"1", 1)
    store.delete("/a", version=1)
    assert not store.exists("/a")


def test_children_are_sorted_names(store: MetadataStore) -> None:
    for name in ["b", "a", "c10", "c2"]:
        store.create(f"/t/{name}", make_parents=True)
    assert store.children("/t") == ["a", "b", "c10", "c2"]
    assert "t" in store.children("/")


def test_delete_non_empty_needs_recursive(store: MetadataStore) -> None:
    store.create("/t/x/y", make_parents=True)
    store.create("/t/z", make_parents=True)
    with pytest.raises(NotEmptyError):
        store.delete("/t")
    assert store.exists("/t/x/y")
    store.delete("/t", recursive=True)
    assert not store.exists("/t")
    assert not store.exists("/t/x/y")
    assert "t" not in store.children("/")


def test_recursive_delete_honours_the_version(store: MetadataStore) -> None:
    store.create("/t/x", make_parents=True)
    store.set("/t", b"changed")
    with pytest.raises(BadVersionError):
        store.delete("/t", version=0, recursive=True)
    assert store.exists("/t/x")
    store.delete("/t", version=1, recursive=True)
    assert not store.exists("/t")


def test_root_cannot_be_deleted(store: MetadataStore) -> None:
    with pytest.raises(InvalidPathError):
        store.delete("/")


@pytest.mark.parametrize("path", ["", "a", "/a/", "//a", "/a//b", "/a/./b", "/a/..", "/a\x00"])
def test_invalid_paths(store: MetadataStore, path: str) -> None:
    with pytest.raises(InvalidPathError):
        store.create(path)
    with pytest.raises(InvalidPathError):
        store.exists(path)
    with pytest.raises(InvalidPathError):
        store.multi([CreateOp(path)])


def test_path_helpers() -> None:
    assert parent_path("/a/b") == "/a"
    assert parent_path("/a") == "/"
    assert node_name("/a/b") == "b"
    assert join_path("/", "a", "b") == "/a/b"
    assert join_path("/a", "b") == "/a/b"


def test_data_is_copied(store: MetadataStore) -> None:
    buffer = bytearray(b"abc")
    store.create("/a", buffer)  # type: ignore[arg-type]
    buffer[0] = ord("z")
    assert store.get("/a") == (b"abc", 0)


def test_binary_data_round_trips(store: MetadataStore) -> None:
    store.create("/binary", bytes(range(256)))
    assert store.get("/binary") == (bytes(range(256)), 0)


# --- multi -----------------------------------------------------------------------------------


def test_multi_applies_everything(store: MetadataStore) -> None:
    store.create("/epoch", b"1")
    store.create("/gone")
    results = store.multi(
        [
            CheckOp("/epoch", 0),
            CreateOp("/p", b"p"),
            CreateOp("/p/c", b"c"),
            SetOp("/epoch", b"2", 0),
            DeleteOp("/gone"),
        ]
    )
    assert results == [0, 0, 0, 1, -1]
    assert store.get("/p/c") == (b"c", 0)
    assert store.get("/epoch") == (b"2", 1)
    assert not store.exists("/gone")


@pytest.mark.parametrize(
    ("failing", "error"),
    [
        (CheckOp("/epoch", 7), BadVersionError),
        (SetOp("/missing", b""), NoNodeError),
        (CreateOp("/epoch"), NodeExistsError),
        (CreateOp("/no/parent"), NoNodeError),
        (DeleteOp("/p"), NotEmptyError),
        (CreateOp("/e/child"), NoChildrenForEphemeralsError),
    ],
)
def test_multi_is_all_or_none(
    store: MetadataStore, failing: CheckOp | CreateOp | SetOp | DeleteOp, error: type[Exception]
) -> None:
    store.create("/epoch", b"1")
    store.create("/p/c", make_parents=True)
    store.create("/e", ephemeral=True)
    with pytest.raises(error):
        store.multi([SetOp("/epoch", b"2"), CreateOp("/new"), failing, SetOp("/p", b"x")])
    assert store.get("/epoch") == (b"1", 0)
    assert not store.exists("/new")
    assert store.get("/p") == (b"", 0)


def test_multi_fences_a_stale_writer(open_store: StoreFactory) -> None:
    """The controller pattern: a write conditional on /controller_epoch's version fails once
    another writer bumped the epoch."""
    first = open_store()
    first.create("/controller_epoch", b"1")
    first.create("/state", b"from 1")
    _, epoch_version = first.get("/controller_epoch")
    first.set("/controller_epoch", b"2", epoch_version)  # a new controller took over
    with pytest.raises(BadVersionError):
        first.multi([CheckOp("/controller_epoch", epoch_version), SetOp("/state", b"stale")])
    assert first.get("/state") == (b"from 1", 0)


# --- ephemerals and sessions -----------------------------------------------------------------


def test_ephemeral_nodes_vanish_with_the_session(open_store: StoreFactory) -> None:
    first = open_store()
    first.create("/brokers/ids/0", b"me", ephemeral=True, make_parents=True)
    assert first.get("/brokers/ids/0") == (b"me", 0)
    first.set("/brokers/ids/0", b"me again")
    first.multi([CreateOp("/brokers/ids/1", b"m", ephemeral=True)])
    first.close()
    second = open_store()
    assert not second.exists("/brokers/ids/0")
    assert not second.exists("/brokers/ids/1")
    assert second.exists("/brokers/ids")  # parents made for it are persistent


def test_ephemerals_cannot_have_children(store: MetadataStore) -> None:
    store.create("/e", ephemeral=True)
    with pytest.raises(NoChildrenForEphemeralsError):
        store.create("/e/child")
    with pytest.raises(NoChildrenForEphemeralsError):
        store.create("/e/child/grandchild", make_parents=True)


def test_closed_store_refuses_everything(open_store: StoreFactory) -> None:
    store = open_store()
    store.create("/a")
    store.close()
    store.close()  # idempotent
    for call in (
        lambda: store.get("/a"),
        lambda: store.exists("/a"),
        lambda: store.create("/b"),
        lambda: store.set("/a", b""),
        lambda: store.delete("/a"),
        lambda: store.children("/"),
        lambda: store.multi([CheckOp("/a", 0)]),
        lambda: store.watch_data("/a", lambda path: None),
        lambda: store.watch_children("/a", lambda path: None),
    ):
        with pytest.raises(SessionClosedError):
            call()


def test_persistent_nodes_and_versions_outlive_the_session(open_store: StoreFactory) -> None:
    first = open_store()
    first.create("/cluster/id", b'{"id":"x"}', make_parents=True)
    first.set("/cluster/id", b'{"id":"y"}')
    first.close()
    second = open_store()
    assert second.get("/cluster/id") == (b'{"id":"y"}', 1)
    second.set("/cluster/id", b"z", version=1)


# --- watches ---------------------------------------------------------------------------------


def test_data_watch_fires_on_create_set_delete(store: MetadataStore) -> None:
    seen: list[bytes | None] = []

    def on_change(path: str) -> None:
        try:
            seen.append(store.get(path)[0])
        except NoNodeError:
            seen.append(None)

    store.watch_data("/a", on_change)
    store.create("/a", b"1")
    wait_for(lambda: seen[-1:] == [b"1"])
    store.set("/a", b"2")
    wait_for(lambda: seen[-1:] == [b"2"])
    store.create("/a/child")  # not a data change of /a
    store.create("/other")
    store.delete("/a", recursive=True)
    wait_for(lambda: seen[-1:] == [None])
    assert seen == [b"1", b"2", None]


def test_children_watch_fires_on_child_changes(store: MetadataStore) -> None:
    seen: list[list[str] | None] = []

    def on_children(path: str) -> None:
        try:
            seen.append(store.children(path))
        except NoNodeError:
            seen.append(None)

    store.watch_children("/brokers/ids", on_children)  # before the node exists
    store.create("/brokers/ids", make_parents=True)
    wait_for(lambda: seen[-1:] == [[]])
    store.create("/brokers/ids/1", ephemeral=True)
    wait_for(lambda: seen[-1:] == [["1"]])
    store.create("/brokers/ids/0", ephemeral=True)
    wait_for(lambda: seen[-1:] == [["0", "1"]])
    count = len(seen)
    store.set("/brokers/ids/0", b"data changes do not count")
    store.delete("/brokers/ids/1")
    wait_for(lambda: seen[-1:] == [["0"]])
    assert len(seen) == count + 1
    store.delete("/brokers/ids", recursive=True)
    wait_for(lambda: seen[-1:] == [None])


def test_watches_fire_when_ephemerals_vanish(open_store: StoreFactory) -> None:
    owner = open_store()
    owner.create("/brokers/ids/0", ephemeral=True, make_parents=True)
    try:
        watcher = open_store()  # ZooKeeper: another session
    except MetadataStoreError:
        watcher = owner  # local: one open store per directory; close fires its own watches
    events: list[str] = []
    watcher.watch_children("/brokers/ids", events.append)
    owner.close()
    wait_for(lambda: events == ["/brokers/ids"])
    if watcher is not owner:
        assert watcher.children("/brokers/ids") == []


def test_a_failing_watch_does_not_stop_others(store: MetadataStore) -> None:
    seen: list[str] = []

    def broken(path: str) -> None:
        raise RuntimeError("boom")

    store.watch_data("/a", broken)
    store.watch_data("/a", seen.append)
    store.create("/a")
    wait_for(lambda: seen == ["/a"])
    store.set("/a", b"again")  # the failing watch is still there and the store still works
    wait_for(lambda: seen == ["/a", "/a"])


def test_watch_callback_may_write(store: MetadataStore) -> None:
    def mirror(path: str) -> None:
        data, _ = store.get(path)
        store.set("/copy", data)

    store.create("/copy")
    store.create("/src")
    store.watch_data("/src", mirror)
    store.set("/src", b"hello")
    wait_for(lambda: store.get("/copy")[0] == b"hello")


def test_watches_see_the_latest_state_after_a_burst(store: MetadataStore) -> None:
    """Level-triggered: however the changes are grouped, the last call sees the last value."""
    seen: list[bytes] = []
    store.create("/n", b"0")
    store.watch_data("/n", lambda path: seen.append(store.get(path)[0]))
    for value in range(1, 21):
        store.set("/n", str(value).encode())
    wait_for(lambda: seen[-1:] == [b"20"])
    assert 1 <= len(seen) <= 20


# --- concurrency -----------------------------------------------------------------------------


def test_concurrent_compare_and_set_loses_no_update(store: MetadataStore) -> None:
    store.create("/counter", b"0")
    threads_count, increments = 4, 10
    start = threading.Barrier(threads_count)

    def worker() -> None:
        start.wait()
        for _ in range(increments):
            while True:
                data, version = store.get("/counter")
                try:
                    store.set("/counter", str(int(data) + 1).encode(), version)
                    break
                except BadVersionError:
                    continue

    threads = [threading.Thread(target=worker) for _ in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    data, version = store.get("/counter")
    assert int(data) == threads_count * increments
    assert version == threads_count * increments
