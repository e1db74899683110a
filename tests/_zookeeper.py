"""The ZooKeeper fixtures shared by tests/controller and tests/cluster: one standalone server
per test module (each test gets its own chroot through ``zookeeper_chroot``), started and
stopped by the fixture."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from odradek.testing.zookeeper import ZooKeeperEnsemble


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperEnsemble]:
    """A standalone ZooKeeper for the module (tickTime 500 ms: 1 s sessions allowed)."""
    with ZooKeeperEnsemble(tmp_path_factory.mktemp("zookeeper"), 1) as ensemble:
        yield ensemble


@pytest.fixture
def zookeeper_chroot(zookeeper: ZooKeeperEnsemble) -> str:
    """``zookeeper.connect`` with a chroot of this test's own (``host:port/t-<uuid>``)."""
    return f"{zookeeper.connect_string}/t-{uuid.uuid4().hex[:12]}"
