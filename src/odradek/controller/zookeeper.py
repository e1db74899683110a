"""``ZooKeeperMetadataStore``: the ``MetadataStore`` port on Apache ZooKeeper, through kazoo.

The only module that imports kazoo. It maps the port one to one onto ZooKeeper: a port path
``/brokers/ids/0`` is the znode ``<chroot>/brokers/ids/0``; data versions, ephemerals (owned by
this store's session) and ``multi`` are ZooKeeper's own; kazoo's exceptions become the port's
(``odradek.errors``: ``NoNodeError``, ``BadVersionError``, ...; a lost connection or a timeout
``StoreConnectionError``; an expired or closed session ``SessionClosedError``).

``zookeeper.connect`` is Kafka's: ``host:port[,host:port...][/chroot]``. A chroot that does not
exist is created (persistent, with its parents) before the store uses it.

Sessions: the store opens one session in ``__init__`` and waits at most
``connection_timeout_ms`` for it (else ``StoreConnectionError``; nothing is left running). A
dropped connection is retried by kazoo in the background within the session timeout; calls
made meanwhile fail with ``StoreConnectionError`` (reads are retried until the connection is
back or ``connection_timeout_ms`` passes). When the session expires — ZooKeeper dropped this
store's ephemerals — the store closes itself: calls raise ``SessionClosedError`` and the
callbacks given to ``add_session_lost_listener`` run once (the broker must not go on as if it
were still registered; Kafka re-registers, odradek stops the broker).

Watches: the port's watches are persistent; ZooKeeper 3.8's persistent watches are not
reachable through kazoo 2.x, so each port watch is a ZooKeeper one-shot watch set again before
its callback runs (``exists`` for data watches; ``get_children``, or ``exists`` while the node
is missing, for child watches). Changes in quick succession may thus be reported by one call,
after the last of them. A connection drop clears ZooKeeper's watches: they are set again when
the connection is back, and every callback runs once then (a change may have been missed).
Callbacks run on kazoo's callback thread, one at a time, and may call the store.

Thread safety: every method may be called from any thread.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from kazoo import exceptions as kazoo_errors
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from odradek.controller.session_lease import SessionLease
from odradek.controller.store import (
    ROOT,
    CheckOp,
    CreateOp,
    DeleteOp,
    Op,
    SetOp,
    WatchCallback,
    join_path,
    validate_path,
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
    StoreConnectionError,
)

logger = logging.getLogger(__name__)

#: Kafka's defaults for ``zookeeper.session.timeout.ms`` and ``zookeeper.connection.timeout.ms``
#: (the latter defaults to the session timeout).
DEFAULT_SESSION_TIMEOUT_MS = 18_000
_RECURSIVE_DELETE_ATTEMPTS = 10
#: kazoo's messages, under ours. While a store connects, each refused attempt would log a
#: warning: a start that fails should print one line (the error), not one per attempt.
_KAZOO_LOGGER = logging.getLogger(__name__ + ".kazoo")

_ERRORS: dict[type[Exception], type[MetadataStoreError]] = {
    kazoo_errors.NoNodeError: NoNodeError,
    kazoo_errors.NodeExistsError: NodeExistsError,
    kazoo_errors.BadVersionError: BadVersionError,
    kazoo_errors.NotEmptyError: NotEmptyError,
    kazoo_errors.NoChildrenForEphemeralsError: NoChildrenForEphemeralsError,
    kazoo_errors.BadArgumentsError: InvalidPathError,
    kazoo_errors.SessionExpiredError: SessionClosedError,  # and ConnectionClosedError
    kazoo_errors.ConnectionLoss: StoreConnectionError,
    kazoo_errors.OperationTimeoutError: StoreConnectionError,
    kazoo_errors.ConnectionDropped: StoreConnectionError,
    KazooTimeoutError: StoreConnectionError,
}


@dataclass(frozen=True, slots=True)
class ConnectString:
    """``zookeeper.connect`` split: the ``host:port`` list and the chroot (``""``: none)."""

    hosts: str
    chroot: str

    @classmethod
    def parse(cls, text: str) -> ConnectString:
        """Splits ``host:port[,host:port...][/chroot]``.

        Raises:
            InvalidPathError: no host, a host without a port, or a malformed chroot.
        """
        hosts, slash, chroot = text.strip().partition("/")
        entries = [entry.strip() for entry in hosts.split(",")]
        if not hosts or any(not entry for entry in entries):
            raise InvalidPathError(f"zookeeper.connect {text!r} names no host:port")
        for entry in entries:
            host, _, port = entry.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise InvalidPathError(f"zookeeper.connect {text!r}: {entry!r} is not host:port")
        root = ""
        if slash and chroot:
            root = validate_path("/" + chroot)
        elif slash:
            root = ""  # a lone trailing "/" is the root
        return cls(",".join(entries), "" if root == ROOT else root)


class ZooKeeperMetadataStore:
    """A ``MetadataStore`` on ZooKeeper; see the module docstring.

    Args:
        connect: ``zookeeper.connect`` (``host:port,...[/chroot]``).
        session_timeout_ms: ``zookeeper.session.timeout.ms`` (the server bounds it to
            2–20 ticks by default).
        connection_timeout_ms: ``zookeeper.connection.timeout.ms``; ``None``: the session
            timeout, as Kafka.

    Raises:
        StoreConnectionError: no session within ``connection_timeout_ms``.
        InvalidPathError: a malformed ``connect``.
    """

    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        connection_timeout_ms: int | None = None,
    ) -> None:
        self.connect = connect
        target = ConnectString.parse(connect)
        self._chroot = target.chroot
        self.connection_timeout_ms = (
            session_timeout_ms if connection_timeout_ms is None else connection_timeout_ms
        )
        self._lock = threading.Lock()
        self._closed = False
        self._client_stopped = False
        self._connected = threading.Event()  # set while the connection is up
        self._watches: list[_Watch] = []
        self._lost_listeners: list[Callable[[], None]] = []
        self._client = KazooClient(
            hosts=target.hosts,
            timeout=session_timeout_ms / 1000,
            connection_retry={"max_tries": -1, "delay": 0.05, "max_delay": 1.0},
            logger=_KAZOO_LOGGER,
        )
        try:
            with _quiet(_KAZOO_LOGGER):
                self._client.start(timeout=self.connection_timeout_ms / 1000)
        except KazooTimeoutError:
            self._client.close()
            raise StoreConnectionError(
                f"cannot connect to ZooKeeper at {target.hosts} "
                f"(zookeeper.connect) within {self.connection_timeout_ms} ms"
            ) from None
        self._connected.set()
        self._client.add_listener(self._on_state)
        self._lease = SessionLease(session_timeout_ms / 1000, time.monotonic())
        self._ticker_stop = threading.Event()
        threading.Thread(
            target=self._tick, name=f"zookeeper-lease-{id(self):x}", daemon=True
        ).start()
        if self._chroot:
            try:
                self._client.ensure_path(self._chroot)
            except Exception as error:
                self._shutdown()
                _raise(error, self._chroot)
        logger.info(
            "connected to ZooKeeper %s (chroot %s, session 0x%x, timeout %d ms)",
            target.hosts,
            self._chroot or "/",
            self._client.client_id[0] if self._client.client_id else 0,
            session_timeout_ms,
        )

    # --- reads -----------------------------------------------------------------------------

    def get(self, path: str) -> tuple[bytes, int]:
        data, stat = self._read(self._client.get, path)
        return bytes(data), int(stat.version)

    def exists(self, path: str) -> bool:
        return self._read(self._client.exists, path) is not None

    def children(self, path: str) -> list[str]:
        return sorted(self._read(self._client.get_children, path))

    # --- writes ----------------------------------------------------------------------------

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        make_parents: bool = False,
    ) -> None:
        znode = self._znode(path)
        if path == ROOT:
            raise NodeExistsError("the root node always exists")
        try:
            self._client.create(znode, bytes(data), ephemeral=ephemeral, makepath=make_parents)
        except Exception as error:
            _raise(error, path)

    def set(self, path: str, data: bytes, version: int = -1) -> int:
        znode = self._znode(path)
        try:
            stat = self._client.set(znode, bytes(data), version)
        except Exception as error:
            _raise(error, path)
        return int(stat.version)

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        znode = self._znode(path)
        if path == ROOT:
            raise InvalidPathError("the root node cannot be deleted")
        if not recursive:
            try:
                self._client.delete(znode, version)
            except Exception as error:
                _raise(error, path)
            return
        # kazoo's recursive delete ignores the version: delete the subtree, node last, in one
        # transaction conditional on the node's version; a child added meanwhile fails it
        # (NotEmpty) and the subtree is read again.
        for _ in range(_RECURSIVE_DELETE_ATTEMPTS):
            doomed = self._subtree_post_order(path)
            ops: list[Op] = [DeleteOp(node) for node in doomed[:-1]]
            ops.append(DeleteOp(path, version))
            try:
                self.multi(ops)
            except NotEmptyError:
                continue
            except NoNodeError:
                if not self.exists(path):
                    raise
                continue  # a descendant went meanwhile
            return
        raise NotEmptyError(f"node {path} kept gaining children while being deleted")

    def multi(self, ops: Sequence[Op]) -> list[int]:
        transaction = self._client.transaction()
        for op in ops:
            znode = self._znode(op.path)
            if isinstance(op, CheckOp):
                transaction.check(znode, op.version)
            elif isinstance(op, CreateOp):
                if op.path == ROOT:
                    raise NodeExistsError("the root node always exists")
                transaction.create(znode, bytes(op.data), ephemeral=op.ephemeral)
            elif isinstance(op, SetOp):
                transaction.set_data(znode, bytes(op.data), op.version)
            else:
                if op.path == ROOT:
                    raise InvalidPathError("the root node cannot be deleted")
                transaction.delete(znode, op.version)
        try:
            results = transaction.commit()
        except Exception as error:
            _raise(error, "multi")
        answers: list[int] = []
        for op, result in zip(ops, results, strict=True):
            if isinstance(result, Exception) and not isinstance(
                result, kazoo_errors.RolledBackError
            ):
                _raise(result, op.path)
        for op, result in zip(ops, results, strict=True):
            if isinstance(op, SetOp):
                answers.append(int(result.version))
            elif isinstance(op, CheckOp):
                answers.append(op.version)
            elif isinstance(op, CreateOp):
                answers.append(0)
            else:
                answers.append(-1)
        return answers

    @contextlib.contextmanager
    def batched(self) -> Iterator[None]:
        """Every change is durable in ZooKeeper on its own: nothing to gather."""
        yield

    # --- watches and session ---------------------------------------------------------------

    def watch_data(self, path: str, callback: WatchCallback) -> None:
        self._add_watch(_Watch(self, path, callback, children=False))

    def watch_children(self, path: str, callback: WatchCallback) -> None:
        self._add_watch(_Watch(self, path, callback, children=True))

    def add_session_lost_listener(self, callback: Callable[[], None]) -> None:
        """Calls ``callback()`` (once, on a kazoo thread) when the session expires."""
        with self._lock:
            self._check_open()
            self._lost_listeners.append(callback)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def connected(self) -> bool:
        """Whether the session's connection is up now (false while kazoo reconnects, a
        state in which the session may already have expired on the ensemble's side, and
        after the process stalled until ZooKeeper answers again: ``SessionLease``)."""
        return (
            self._connected.is_set() and not self._closed and self._lease.trusted(time.monotonic())
        )

    @property
    def session_id(self) -> int | None:
        """ZooKeeper's id of this store's session (``None`` once closed)."""
        client_id = self._client.client_id
        return None if self._closed or client_id is None else int(client_id[0])

    def close(self) -> None:
        with self._lock:
            if self._client_stopped:
                return
            self._closed = True
            self._client_stopped = True
            self._watches.clear()
            self._lost_listeners.clear()
        # After an expiry too: kazoo would go on connecting in the background.
        self._shutdown()
        logger.info("closed the ZooKeeper session (%s)", self.connect)

    def __enter__(self) -> ZooKeeperMetadataStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- internals -------------------------------------------------------------------------

    def _shutdown(self) -> None:
        with contextlib.suppress(AttributeError):  # a failed start has no ticker yet
            self._ticker_stop.set()
        with contextlib.suppress(Exception):
            self._client.stop()
        with contextlib.suppress(Exception):
            self._client.close()

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(f"the ZooKeeper session ({self.connect}) is closed")

    def _znode(self, path: str) -> str:
        validate_path(path)
        self._check_open()
        if not self._chroot:
            return path
        return self._chroot if path == ROOT else self._chroot + path

    def _read(self, method: Callable[..., Any], path: str, watch: Any = None) -> Any:
        """``method(znode)``, retried while the connection is down, for at most the
        connection timeout."""
        znode = self._znode(path)
        deadline = time.monotonic() + self.connection_timeout_ms / 1000
        while True:
            try:
                return method(znode, watch=watch)
            except (kazoo_errors.ConnectionLoss, kazoo_errors.OperationTimeoutError) as error:
                if time.monotonic() >= deadline or self._closed:
                    _raise(error, path)
                self._connected.wait(0.1)
            except Exception as error:
                _raise(error, path)

    def _subtree_post_order(self, path: str) -> list[str]:
        """``path`` and its descendants, each node after its descendants (a descendant that
        vanishes during the walk is left out; the caller's transaction notices)."""
        order: list[str] = []

        def walk(node: str) -> None:
            try:
                names = self.children(node)
            except NoNodeError:
                if node == path:
                    raise
                return
            for name in names:
                walk(join_path(node, name))
            order.append(node)

        walk(path)
        return order

    def _add_watch(self, watch: _Watch) -> None:
        validate_path(watch.path)
        with self._lock:
            self._check_open()
            self._watches.append(watch)
        watch.arm()

    def _tick(self) -> None:
        """The lease's ticker (its own thread): after a stall, a round trip to ZooKeeper
        (sent again until one succeeds) confirms the session before the store reports itself
        connected again."""
        lease = self._lease
        in_flight = threading.Event()
        while not self._ticker_stop.wait(lease.tick_s):
            if lease.tick(time.monotonic()) is not None:
                logger.warning(
                    "this process stalled for more than %.1f s: the ZooKeeper session is "
                    "suspect until ZooKeeper answers",
                    lease.gap_s,
                )
            gap = lease.unconfirmed()
            if gap is None or self._closed or in_flight.is_set():
                continue
            try:
                pending = self._client.exists_async(self._chroot or ROOT)
            except Exception as error:
                logger.debug("lease round trip not sent (tried again): %r", error)
                continue
            in_flight.set()

            def answered(result: Any, gap: int = gap) -> None:
                if result.successful():
                    lease.confirm(gap)
                in_flight.clear()

            pending.rawlink(answered)

    def _on_state(self, state: str) -> None:
        """kazoo's connection listener (runs on its connection thread: must not block)."""
        if state == KazooState.CONNECTED:
            self._connected.set()
        else:
            self._connected.clear()
        if state == KazooState.LOST and not self._closed:
            logger.error("ZooKeeper session expired (%s): closing the metadata store", self.connect)
            with self._lock:
                self._closed = True
                listeners = list(self._lost_listeners)
                self._watches.clear()
                self._lost_listeners.clear()
            for listener in listeners:
                self._client.handler.spawn(_run_listener, listener)
        elif state == KazooState.CONNECTED and not self._closed:
            with self._lock:
                watches = [watch for watch in self._watches if watch.disarmed]
            if watches:
                self._client.handler.spawn(_rearm, watches)

    def _watch_alive(self, watch: _Watch) -> bool:
        return not self._closed and watch in self._watches


class _Watch:
    """One port watch: a ZooKeeper one-shot watch set again each time it fires."""

    __slots__ = ("callback", "children", "disarmed", "path", "store")

    def __init__(
        self, store: ZooKeeperMetadataStore, path: str, callback: WatchCallback, *, children: bool
    ) -> None:
        self.store = store
        self.path = path
        self.callback = callback
        self.children = children
        self.disarmed = False

    def arm(self) -> None:
        """Sets the ZooKeeper watch (a child watch needs the node: ``exists`` until then)."""
        store = self.store
        while store._watch_alive(self):
            try:
                if not self.children:
                    store._read(store._client.exists, self.path, self._fired)
                    return
                try:
                    store._read(store._client.get_children, self.path, self._fired)
                    return
                except NoNodeError:
                    if store._read(store._client.exists, self.path, self._fired) is None:
                        return
                    # Created between the two calls: the exists watch will fire for it;
                    # the loop sets the child watch too.
            except StoreConnectionError:
                self.disarmed = True  # set again when the connection is back
                return
            except SessionClosedError:
                return

    def _fired(self, event: WatchedEvent) -> None:
        if event.type == EventType.NONE:
            self.disarmed = True  # the connection dropped; _on_state sets it again
            return
        if not self.children and event.type == EventType.CHILD:
            return
        self.arm()
        self.run()

    def run(self) -> None:
        if not self.store._watch_alive(self):
            return
        try:
            self.callback(self.path)
        except Exception:
            logger.exception("metadata watch callback for %s failed", self.path)


@contextlib.contextmanager
def _quiet(target: logging.Logger) -> Iterator[None]:
    """Errors only from ``target`` within the block (process-wide: concurrent connects share
    it, which only ever hides warnings)."""
    previous = target.level
    target.setLevel(logging.ERROR)
    try:
        yield
    finally:
        target.setLevel(previous)


def _rearm(watches: list[_Watch]) -> None:
    for watch in watches:
        watch.disarmed = False
        watch.arm()
        watch.run()


def _run_listener(listener: Callable[[], None]) -> None:
    try:
        listener()
    except Exception:
        logger.exception("ZooKeeper session-lost listener failed")


def _raise(error: Exception, path: str) -> NoReturn:
    for kazoo_type, ours in _ERRORS.items():
        if isinstance(error, kazoo_type):
            raise ours(f"{_describe(ours)} at {path}") from None
    if isinstance(error, kazoo_errors.KazooException | kazoo_errors.ZookeeperError):
        raise MetadataStoreError(f"ZooKeeper error at {path}: {error!r}") from None
    raise error


def _describe(error_type: type[MetadataStoreError]) -> str:
    return {
        NoNodeError: "no node",
        NodeExistsError: "node exists",
        BadVersionError: "bad version",
        NotEmptyError: "node has children",
        NoChildrenForEphemeralsError: "ephemeral nodes cannot have children",
        InvalidPathError: "bad arguments",
        SessionClosedError: "ZooKeeper session closed or expired",
        StoreConnectionError: "ZooKeeper connection lost",
    }.get(error_type, "ZooKeeper error")
