"""ZooKeeperMetadataStore's own behaviour on a real ZooKeeper: zookeeper.connect parsing, the
chroot (created when missing, and the only place written), an unreachable server, session
expiry, and watches surviving a ZooKeeper restart. The port's contract is in
test_store_contract.py."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from kazoo.client import KazooClient  # tests only: expire a session the way ZooKeeper's do
from tests.controller.test_store_contract import wait_for

from odradek.controller.store import CreateOp
from odradek.controller.zookeeper import ConnectString, ZooKeeperMetadataStore
from odradek.errors import InvalidPathError, SessionClosedError, StoreConnectionError
from odradek.testing.zookeeper import ZooKeeperEnsemble, free_ports

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize(
    ("text", "hosts", "chroot"),
    [
        ("127.0.0.1:2181", "127.0.0.1:2181", ""),
        ("a:1,b:2/kafka", "a:1,b:2", "/kafka"),
        (" a:1 , b:2/x/y ", "a:1,b:2", "/x/y"),
        ("a:1/", "a:1", ""),
    ],
)
def test_connect_string(text: str, hosts: str, chroot: str) -> None:
    assert ConnectString.parse(text) == ConnectString(hosts, chroot)


@pytest.mark.parametrize("text", ["", "/kafka", "a", "a:", "a:0", "a:x", "a:1,,b:2", "a:1/x/"])
def test_bad_connect_string(text: str) -> None:
    with pytest.raises(InvalidPathError):
        ConnectString.parse(text)


def test_the_chroot_is_created_and_holds_everything(zookeeper: ZooKeeperEnsemble) -> None:
    chroot = f"/odradek-{uuid.uuid4().hex[:8]}/kafka"
    with ZooKeeperMetadataStore(zookeeper.connect_string + chroot) as store:
        store.create("/brokers/ids/0", b"x", make_parents=True)
        assert store.children("/") == ["brokers"]
    with ZooKeeperMetadataStore(zookeeper.connect_string) as unrooted:
        assert unrooted.get(chroot + "/brokers/ids/0") == (b"x", 0)
        assert not unrooted.exists("/brokers/ids/0")


def test_an_unreachable_server_fails_after_the_connection_timeout() -> None:
    (port,) = free_ports(1)  # nobody listens there
    started = time.monotonic()
    with pytest.raises(StoreConnectionError, match=r"127\.0\.0\.1:\d+.*within 500 ms"):
        ZooKeeperMetadataStore(f"127.0.0.1:{port}", connection_timeout_ms=500)
    assert time.monotonic() - started >= 0.5
    # kazoo leaves no thread behind
    wait_for(lambda: not [t for t in threading.enumerate() if "kazoo" in t.name.lower()])


def test_session_expiry_closes_the_store_and_tells_listeners(
    zookeeper_chroot: str,
) -> None:
    store = ZooKeeperMetadataStore(zookeeper_chroot, session_timeout_ms=2_000)
    observer = ZooKeeperMetadataStore(zookeeper_chroot)
    try:
        store.create("/brokers/ids/0", b"me", ephemeral=True, make_parents=True)
        lost = threading.Event()
        store.add_session_lost_listener(lost.set)
        _expire(zookeeper_chroot.partition("/")[0], store)
        assert lost.wait(10)
        assert store.closed
        with pytest.raises(SessionClosedError):
            store.get("/brokers")
        wait_for(lambda: not observer.exists("/brokers/ids/0"))
    finally:
        store.close()
        observer.close()


def test_watches_come_back_after_zookeeper_restarts(
    zookeeper: ZooKeeperEnsemble, zookeeper_chroot: str
) -> None:
    with ZooKeeperMetadataStore(zookeeper_chroot, session_timeout_ms=20_000) as store:
        seen: list[list[str]] = []
        store.create("/brokers/ids", make_parents=True)
        store.watch_children("/brokers/ids", lambda path: seen.append(store.children(path)))
        zookeeper.stop_node(0)
        zookeeper.start_node(0)
        # The session survives a restart shorter than its timeout; the watch is set again.
        wait_for(lambda: _create_when_connected(store, "/brokers/ids/7"), 20)
        wait_for(lambda: ["7"] in seen, 20)
        assert not store.closed


def _create_when_connected(store: ZooKeeperMetadataStore, path: str) -> bool:
    try:
        store.multi([CreateOp(path, ephemeral=True)])
    except StoreConnectionError:
        return False
    return True


def _expire(hosts: str, store: ZooKeeperMetadataStore) -> None:
    """Expires ``store``'s session: another client joins it with its id and password and
    closes it (ZooKeeper then ends the session for both)."""
    client_id = store._client.client_id
    assert client_id is not None
    twin = KazooClient(hosts=hosts, client_id=client_id)
    twin.start(timeout=10)
    twin.stop()
    twin.close()
