"""Fixtures of the controller tests: the MetadataStore implementations side by side, and a
real ZooKeeper per module for the ZooKeeper one (tests/_zookeeper.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests._zookeeper import zookeeper, zookeeper_chroot

from odradek.controller.local import LocalMetadataStore
from odradek.controller.store import MetadataStore
from odradek.controller.zookeeper import ZooKeeperMetadataStore

__all__ = ["open_store", "store", "zookeeper", "zookeeper_chroot"]

StoreFactory = Callable[[], MetadataStore]


@pytest.fixture(params=["local", pytest.param("zookeeper", marks=pytest.mark.cluster)])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Opens stores on one backing tree: a directory (one open store at a time), or a
    ZooKeeper chroot of the test's own (each store its own session). Closes them all."""
    opened: list[MetadataStore] = []
    if request.param == "local":

        def factory() -> MetadataStore:
            opened.append(LocalMetadataStore(tmp_path / "meta"))
            return opened[-1]

    else:
        connect = request.getfixturevalue("zookeeper_chroot")

        def factory() -> MetadataStore:
            opened.append(ZooKeeperMetadataStore(connect, session_timeout_ms=4_000))
            return opened[-1]

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: StoreFactory) -> MetadataStore:
    return open_store()
