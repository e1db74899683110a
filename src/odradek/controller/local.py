"""``LocalMetadataStore``: the embedded single-node ``MetadataStore``, persisted to one file.

Used when ``zookeeper.connect`` is not set. The tree lives in memory; every change to a
persistent node rewrites ``<directory>/metadata.json`` atomically (temporary file, fsync,
rename, fsync of the directory) before the change becomes visible, so a crash leaves either
the tree before the change or the tree after it. Ephemeral nodes are never written: they belong
to this process's session and are gone after ``close()`` or a crash, as with ZooKeeper.

File layout (UTF-8 JSON, nodes sorted by path, data base64-encoded)::

    {"version": 1,
     "nodes": {"/": {"data": "", "version": 0},
               "/cluster": {"data": "", "version": 0},
               "/cluster/id": {"data": "eyJ2ZXJzaW9uIjoi...", "version": 0}}}

A ``metadata.lock`` file beside it is held with an exclusive ``flock`` while the store is open,
so two stores (in one process or two) never share a directory.

Thread safety: one lock guards the tree, the file and the watches. The tree is copy-on-write:
a change builds a new map of immutable nodes, persists it, then publishes it. Watch callbacks
run on the changing thread after the lock is released and before the changing call returns; a
callback that raises is logged and does not affect the change or the other callbacks.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import json
import logging
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from odradek.controller.store import (
    ROOT,
    CheckOp,
    CreateOp,
    Op,
    SetOp,
    WatchCallback,
    join_path,
    node_name,
    parent_path,
    validate_path,
)
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
from odradek.storage.checkpoints import atomic_write

if sys.platform != "win32":
    import fcntl

logger = logging.getLogger(__name__)

FILE_NAME = "metadata.json"
LOCK_FILE_NAME = "metadata.lock"
_FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class _Node:
    data: bytes
    version: int
    ephemeral: bool
    children: frozenset[str]


@dataclass(frozen=True, slots=True)
class LocalStoreStatistics:
    """A snapshot of a ``LocalMetadataStore``."""

    nodes: int
    ephemeral_nodes: int
    watches: int
    file_writes: int


_EMPTY_ROOT = _Node(b"", 0, False, frozenset())


class LocalMetadataStore:
    """An in-memory ``MetadataStore`` persisted to ``<directory>/metadata.json``.

    Args:
        directory: where the file lives; created when missing. Opening loads the persistent
            nodes written by an earlier store.

    Raises:
        CorruptMetadataError: the file exists but cannot be parsed.
        MetadataStoreError: another open store holds the directory.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = os.fspath(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.path = os.path.join(self.directory, FILE_NAME)
        self._lock = threading.Lock()
        self._lock_fd = _lock_directory(os.path.join(self.directory, LOCK_FILE_NAME))
        try:
            self._nodes = _load(self.path)
        except BaseException:
            _unlock(self._lock_fd)
            raise
        self._data_watches: dict[str, list[WatchCallback]] = {}
        self._child_watches: dict[str, list[WatchCallback]] = {}
        self._closed = False
        self._file_writes = 0
        self._batch_depth = 0
        self._batch_dirty = False
        logger.info("opened metadata store %s (%d nodes)", self.path, len(self._nodes))

    # --- reads -----------------------------------------------------------------------------

    def get(self, path: str) -> tuple[bytes, int]:
        validate_path(path)
        with self._lock:
            node = self._existing(self._nodes, path)
            return node.data, node.version

    def exists(self, path: str) -> bool:
        validate_path(path)
        with self._lock:
            self._check_open()
            return path in self._nodes

    def children(self, path: str) -> list[str]:
        validate_path(path)
        with self._lock:
            return sorted(self._existing(self._nodes, path).children)

    # --- writes ----------------------------------------------------------------------------

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        make_parents: bool = False,
    ) -> None:
        validate_path(path)
        if path == ROOT:
            raise NodeExistsError("the root node always exists")
        data = bytes(data)
        with self._lock:
            self._check_open()
            nodes = self._nodes
            if path in nodes:
                raise NodeExistsError(f"node {path} already exists")
            missing: list[str] = []
            parent = parent_path(path)
            while parent not in nodes:
                missing.append(parent)
                parent = parent_path(parent)
            if nodes[parent].ephemeral:
                raise NoChildrenForEphemeralsError(
                    f"cannot create {path}: {parent} is ephemeral and cannot have children"
                )
            if missing and not make_parents:
                raise NoNodeError(f"cannot create {path}: parent {missing[0]} does not exist")
            new_nodes = dict(nodes)
            events = _Events()
            for ancestor in reversed(missing):
                _insert(new_nodes, ancestor, _Node(b"", 0, False, frozenset()), events)
            _insert(new_nodes, path, _Node(data, 0, ephemeral, frozenset()), events)
            self._publish(new_nodes, persist=bool(missing) or not ephemeral)
            callbacks = self._callbacks(events)
        _fire(callbacks)

    def set(self, path: str, data: bytes, version: int = -1) -> int:
        validate_path(path)
        data = bytes(data)
        with self._lock:
            node = self._existing(self._nodes, path)
            _check_version(path, node, version)
            new_nodes = dict(self._nodes)
            new_nodes[path] = dataclasses.replace(node, data=data, version=node.version + 1)
            self._publish(new_nodes, persist=not node.ephemeral)
            events = _Events()
            events.data(path)
            callbacks = self._callbacks(events)
        _fire(callbacks)
        return node.version + 1

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        validate_path(path)
        if path == ROOT:
            raise InvalidPathError("the root node cannot be deleted")
        with self._lock:
            node = self._existing(self._nodes, path)
            _check_version(path, node, version)
            if node.children and not recursive:
                raise NotEmptyError(f"node {path} has children: {sorted(node.children)}")
            doomed = _subtree_post_order(self._nodes, path)
            new_nodes = dict(self._nodes)
            events = _Events()
            for victim in doomed:
                _remove(new_nodes, victim, events)
            persist = any(not self._nodes[victim].ephemeral for victim in doomed)
            self._publish(new_nodes, persist=persist)
            callbacks = self._callbacks(events)
        _fire(callbacks)

    def multi(self, ops: Sequence[Op]) -> list[int]:
        """See ``MetadataStore.multi``: the operations run on a copy of the tree, which becomes
        the tree (in one file write) only if every one succeeds."""
        for op in ops:
            validate_path(op.path)
        with self._lock:
            self._check_open()
            nodes = dict(self._nodes)
            events = _Events()
            results = [_apply(nodes, op, events) for op in ops]
            persist = any(
                not (isinstance(op, CheckOp) or (isinstance(op, CreateOp) and op.ephemeral))
                for op in ops
            )
            self._publish(nodes, persist=persist)
            callbacks = self._callbacks(events)
        _fire(callbacks)
        return results

    # --- watches and session ---------------------------------------------------------------

    def watch_data(self, path: str, callback: WatchCallback) -> None:
        validate_path(path)
        with self._lock:
            self._check_open()
            self._data_watches.setdefault(path, []).append(callback)

    def watch_children(self, path: str, callback: WatchCallback) -> None:
        validate_path(path)
        with self._lock:
            self._check_open()
            self._child_watches.setdefault(path, []).append(callback)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            ephemerals = [path for path, node in self._nodes.items() if node.ephemeral]
            new_nodes = dict(self._nodes)
            events = _Events()
            for path in ephemerals:
                _remove(new_nodes, path, events)
            self._nodes = new_nodes
            callbacks = self._callbacks(events)
            self._closed = True
            self._data_watches.clear()
            self._child_watches.clear()
            _unlock(self._lock_fd)
        logger.info(
            "closed metadata store %s (%d ephemeral nodes removed)", self.path, len(ephemerals)
        )
        _fire(callbacks)

    @property
    def closed(self) -> bool:
        return self._closed

    def statistics(self) -> LocalStoreStatistics:
        with self._lock:
            watches = sum(map(len, self._data_watches.values()))
            watches += sum(map(len, self._child_watches.values()))
            return LocalStoreStatistics(
                nodes=len(self._nodes),
                ephemeral_nodes=sum(node.ephemeral for node in self._nodes.values()),
                watches=watches,
                file_writes=self._file_writes,
            )

    def __enter__(self) -> LocalMetadataStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- internals (called with the lock held) ---------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(f"metadata store {self.path} is closed")

    def _existing(self, nodes: dict[str, _Node], path: str) -> _Node:
        self._check_open()
        node = nodes.get(path)
        if node is None:
            raise NoNodeError(f"node {path} does not exist")
        return node

    @contextlib.contextmanager
    def batched(self) -> Iterator[None]:
        """Within the block, changes are visible at once but reach the file together, in one
        atomic write when the outermost block ends (a crash inside loses all of them, never
        some): creating a topic with many partitions costs one fsync, not one per node."""
        with self._lock:
            self._batch_depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._batch_depth -= 1
                if self._batch_depth == 0 and self._batch_dirty and not self._closed:
                    atomic_write(self.path, _dump(self._nodes))
                    self._file_writes += 1
                    self._batch_dirty = False

    def _publish(self, new_nodes: dict[str, _Node], *, persist: bool) -> None:
        """Writes the persistent part of ``new_nodes`` (when ``persist``; deferred inside
        ``batched``), then makes it the tree: if the write fails, the tree is unchanged."""
        if persist and self._batch_depth:
            self._batch_dirty = True
        elif persist:
            atomic_write(self.path, _dump(new_nodes))
            self._file_writes += 1
        self._nodes = new_nodes

    def _callbacks(self, events: _Events) -> list[tuple[WatchCallback, str]]:
        callbacks: list[tuple[WatchCallback, str]] = []
        for kind, path in events.items:
            watches = self._data_watches if kind == "data" else self._child_watches
            callbacks.extend((callback, path) for callback in watches.get(path, ()))
        return callbacks


class _Events:
    """The watch events of one change, in order, without duplicates."""

    __slots__ = ("_seen", "items")

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []
        self._seen: set[tuple[str, str]] = set()

    def _add(self, kind: str, path: str) -> None:
        if (kind, path) not in self._seen:
            self._seen.add((kind, path))
            self.items.append((kind, path))

    def data(self, path: str) -> None:
        self._add("data", path)

    def children(self, path: str) -> None:
        self._add("children", path)


def _apply(nodes: dict[str, _Node], op: Op, events: _Events) -> int:
    """Applies one ``multi`` operation to the working copy ``nodes``; see ``multi``."""
    node = nodes.get(op.path)
    if isinstance(op, CreateOp):
        if op.path == ROOT or node is not None:
            raise NodeExistsError(f"node {op.path} already exists")
        parent = nodes.get(parent_path(op.path))
        if parent is None:
            raise NoNodeError(f"cannot create {op.path}: its parent does not exist")
        if parent.ephemeral:
            raise NoChildrenForEphemeralsError(f"cannot create {op.path} under an ephemeral")
        _insert(nodes, op.path, _Node(bytes(op.data), 0, op.ephemeral, frozenset()), events)
        return 0
    if node is None:
        raise NoNodeError(f"node {op.path} does not exist")
    _check_version(op.path, node, op.version)
    if isinstance(op, CheckOp):
        return node.version
    if isinstance(op, SetOp):
        nodes[op.path] = dataclasses.replace(node, data=bytes(op.data), version=node.version + 1)
        events.data(op.path)
        return node.version + 1
    if op.path == ROOT:
        raise InvalidPathError("the root node cannot be deleted")
    if node.children:
        raise NotEmptyError(f"node {op.path} has children: {sorted(node.children)}")
    _remove(nodes, op.path, events)
    return -1


def _insert(nodes: dict[str, _Node], path: str, node: _Node, events: _Events) -> None:
    parent = parent_path(path)
    parent_node = nodes[parent]
    nodes[parent] = dataclasses.replace(
        parent_node, children=parent_node.children | {node_name(path)}
    )
    nodes[path] = node
    events.data(path)
    events.children(path)
    events.children(parent)


def _remove(nodes: dict[str, _Node], path: str, events: _Events) -> None:
    parent = parent_path(path)
    parent_node = nodes[parent]
    nodes[parent] = dataclasses.replace(
        parent_node, children=parent_node.children - {node_name(path)}
    )
    del nodes[path]
    events.data(path)
    events.children(path)
    events.children(parent)


def _subtree_post_order(nodes: dict[str, _Node], path: str) -> list[str]:
    """``path`` and its descendants, every node after its descendants."""
    order: list[str] = []
    stack: list[tuple[str, bool]] = [(path, False)]
    while stack:
        current, expanded = stack.pop()
        if expanded:
            order.append(current)
            continue
        stack.append((current, True))
        stack.extend((join_path(current, child), False) for child in nodes[current].children)
    return order


def _check_version(path: str, node: _Node, version: int) -> None:
    if version not in (-1, node.version):
        raise BadVersionError(
            f"node {path} has version {node.version}, the operation expected {version}"
        )


def _fire(callbacks: Iterable[tuple[WatchCallback, str]]) -> None:
    for callback, path in callbacks:
        try:
            callback(path)
        except Exception:
            logger.exception("metadata watch callback for %s failed", path)


def _dump(nodes: dict[str, _Node]) -> bytes:
    persistent = {
        path: {"data": base64.b64encode(node.data).decode("ascii"), "version": node.version}
        for path, node in sorted(nodes.items())
        if not node.ephemeral
    }
    document = {"version": _FORMAT_VERSION, "nodes": persistent}
    return json.dumps(document, indent=1, sort_keys=True).encode("utf-8")


def _load(path: str) -> dict[str, _Node]:
    """The persistent nodes stored at ``path``; just the root when the file is missing."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return {ROOT: _EMPTY_ROOT}
    try:
        document = json.loads(raw)
        return _parse_document(document)
    except (ValueError, TypeError, KeyError, binascii.Error, MetadataStoreError) as error:
        raise CorruptMetadataError(f"cannot read metadata file {path}: {error}") from error


def _parse_document(document: Any) -> dict[str, _Node]:
    if not isinstance(document, dict) or document.get("version") != _FORMAT_VERSION:
        raise ValueError("not a version 1 metadata document")
    entries = document["nodes"]
    if not isinstance(entries, dict):
        raise TypeError("'nodes' is not an object")
    data_and_versions: dict[str, tuple[bytes, int]] = {}
    for node_path, entry in entries.items():
        validate_path(node_path)
        version = entry["version"]
        if not isinstance(version, int) or version < 0:
            raise ValueError(f"node {node_path} has version {version!r}")
        data_and_versions[node_path] = (base64.b64decode(entry["data"], validate=True), version)
    data_and_versions.setdefault(ROOT, (b"", 0))
    children: dict[str, set[str]] = {node_path: set() for node_path in data_and_versions}
    for node_path in data_and_versions:
        if node_path == ROOT:
            continue
        parent = parent_path(node_path)
        if parent not in children:
            raise ValueError(f"node {node_path} has no parent node {parent}")
        children[parent].add(node_name(node_path))
    return {
        node_path: _Node(data, version, False, frozenset(children[node_path]))
        for node_path, (data, version) in data_and_versions.items()
    }


def _lock_directory(lock_path: str) -> int:
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    if sys.platform != "win32":
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise MetadataStoreError(
                f"metadata directory {os.path.dirname(lock_path)} is in use by another store"
            ) from None
    return fd


def _unlock(fd: int) -> None:
    # Closing the descriptor releases the flock.
    os.close(fd)
