"""Fixtures of the cluster tests: a real ZooKeeper per module (tests/_zookeeper.py), and a
collection after each test of the sockets third-party clients leave behind."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import pytest
from tests._zookeeper import zookeeper, zookeeper_chroot

__all__ = ["zookeeper", "zookeeper_chroot"]


@pytest.fixture(autouse=True)
def _collect_abandoned_sockets() -> Iterator[None]:
    """kafka-python leaves the socket of a connection refused by a stopped (or phantom)
    broker for the garbage collector; collected later, its ResourceWarning would fail
    whichever test happened to run then. Collect them here, where they were made."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
