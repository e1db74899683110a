"""The ``MetadataStore`` port: a ZooKeeper-shaped tree of versioned nodes.

The controller and the broker keep cluster metadata (broker registrations, topic assignments,
partition states, configs) in a tree shaped like ZooKeeper's, so that the same code runs on the
embedded single-node store (``controller/local.py``) and on ZooKeeper (``controller/zookeeper.py``,
later). This module owns the port and the path rules; it holds no state.

Model (ZooKeeper's):

- A node lives at an absolute path (``/brokers/ids/0``); the root ``/`` always exists. A path
  starts with ``/``, does not end with ``/`` (except the root) and has no empty, ``.`` or ``..``
  component.
- Each node has ``bytes`` data and an ``int`` data version: 0 when created, +1 on every ``set``.
  ``version=-1`` in ``set`` and ``delete`` means "whatever the current version is"; any other
  value makes the operation conditional (compare-and-set).
- An ephemeral node belongs to the store's session: it vanishes when the session ends
  (``close()``, or session expiry with ZooKeeper) and cannot have children.
- Watches are persistent: a callback registered on a path is called with that path after every
  matching change until the store is closed, whether or not the node exists yet. Callbacks are
  level-triggered: they read the state they care about. ZooKeeper's watches fire once and are
  set again, so there several changes in quick succession may be reported by one call (after
  the last of them); the local store calls once per change.
- ``multi`` applies a list of operations atomically (ZooKeeper's ``multi``): all or none. A
  ``CheckOp`` makes the whole list conditional on a node's version — how a controller fences
  its writes with ``/controller_epoch`` (Kafka 2.x's ``checkControllerAndRetry``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from odradek.errors import InvalidPathError

#: A watch callback; it receives the watched path. It must not block for long: the local store
#: calls it on the thread that made the change.
WatchCallback = Callable[[str], None]

ROOT = "/"


@dataclass(frozen=True, slots=True)
class CheckOp:
    """In ``multi``: the node at ``path`` must have data version ``version``."""

    path: str
    version: int


@dataclass(frozen=True, slots=True)
class CreateOp:
    """In ``multi``: create a node (its parent must exist or be created earlier in the list)."""

    path: str
    data: bytes = b""
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class SetOp:
    """In ``multi``: replace a node's data (``version`` -1: any version)."""

    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class DeleteOp:
    """In ``multi``: delete a childless node (``version`` -1: any version)."""

    path: str
    version: int = -1


#: One operation of a ``multi``.
Op = CheckOp | CreateOp | SetOp | DeleteOp


class MetadataStore(Protocol):
    """A hierarchical store of versioned nodes with ephemerals, compare-and-set and watches.

    Thread safety: implementations are safe to call from any thread. Watch callbacks may run on
    any thread (the local store: the thread that made the change, after the change is visible
    and before the changing call returns; ZooKeeper: the client's event thread) and may call
    the store again.

    Every method raises ``SessionClosedError`` after ``close()``, ``InvalidPathError`` for a
    malformed path, and ``MetadataStoreError`` subclasses only.
    """

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        make_parents: bool = False,
    ) -> None:
        """Creates a node with version 0.

        Args:
            path: the new node's path (not the root).
            data: its data.
            ephemeral: whether the node ends with the session.
            make_parents: create missing ancestors as empty persistent nodes.

        Raises:
            NodeExistsError: a node exists at ``path``.
            NoNodeError: the parent is missing and ``make_parents`` is false.
            NoChildrenForEphemeralsError: the parent (or an ancestor) is ephemeral.
        """
        ...

    def get(self, path: str) -> tuple[bytes, int]:
        """Returns the node's ``(data, version)``.

        Raises:
            NoNodeError: no node at ``path``.
        """
        ...

    def exists(self, path: str) -> bool:
        """Whether a node exists at ``path``."""
        ...

    def set(self, path: str, data: bytes, version: int = -1) -> int:
        """Replaces the node's data; returns its new version.

        Args:
            version: the version the node must have now, or -1 for any.

        Raises:
            NoNodeError: no node at ``path``.
            BadVersionError: ``version`` is not -1 and not the node's current version.
        """
        ...

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        """Deletes the node (and, with ``recursive``, everything under it first).

        ``version`` applies to the node at ``path`` only.

        Raises:
            NoNodeError: no node at ``path``.
            BadVersionError: ``version`` is not -1 and not the node's current version.
            NotEmptyError: the node has children and ``recursive`` is false.
            InvalidPathError: ``path`` is the root.
        """
        ...

    def children(self, path: str) -> list[str]:
        """The names (not paths) of the node's children, sorted.

        Raises:
            NoNodeError: no node at ``path``.
        """
        ...

    def multi(self, ops: Sequence[Op]) -> list[int]:
        """Applies ``ops`` in order, atomically: every one or none.

        Returns:
            per op: the node's new version for ``SetOp``, 0 for ``CreateOp``, the checked
            version for ``CheckOp``, -1 for ``DeleteOp``.

        Raises:
            the error of the first operation that fails (``NoNodeError``, ``BadVersionError``,
            ``NodeExistsError``, ``NotEmptyError``, ``NoChildrenForEphemeralsError``,
            ``InvalidPathError``); nothing was changed.
        """
        ...

    def watch_data(self, path: str, callback: WatchCallback) -> None:
        """Calls ``callback(path)`` after each creation, data change or deletion of ``path``."""
        ...

    def watch_children(self, path: str, callback: WatchCallback) -> None:
        """Calls ``callback(path)`` after each creation or deletion of a child of ``path``, and
        after the creation or deletion of ``path`` itself."""
        ...

    def batched(self) -> AbstractContextManager[None]:
        """A block whose changes are made durable together at its end (one write for many
        nodes). Stores that persist each change anyway (ZooKeeper) may make this a no-op."""
        ...

    def close(self) -> None:
        """Ends the session: ephemeral nodes vanish (their watches fire), watches are dropped,
        and further calls raise ``SessionClosedError``. Idempotent."""
        ...


def validate_path(path: str) -> str:
    """Returns ``path`` if it is a legal node path.

    Raises:
        InvalidPathError: not absolute, a trailing ``/``, or an empty, ``.`` or ``..``
            component, or a NUL character.
    """
    if not path.startswith("/"):
        raise InvalidPathError(f"metadata path {path!r} is not absolute")
    if path == ROOT:
        return path
    if "\x00" in path:
        raise InvalidPathError(f"metadata path {path!r} contains a NUL character")
    for part in path[1:].split("/"):
        if part in ("", ".", ".."):
            raise InvalidPathError(f"metadata path {path!r} has an empty, '.' or '..' component")
    return path


def parent_path(path: str) -> str:
    """The parent of a valid non-root path (``/a/b`` → ``/a``, ``/a`` → ``/``)."""
    parent = path.rpartition("/")[0]
    return parent or ROOT


def node_name(path: str) -> str:
    """The last component of a valid non-root path (``/a/b`` → ``b``)."""
    return path.rpartition("/")[2]


def join_path(parent: str, *names: str) -> str:
    """Joins child names under ``parent`` (``join_path("/a", "b", "c")`` → ``/a/b/c``)."""
    base = "" if parent == ROOT else parent
    return base + "".join("/" + name for name in names)
