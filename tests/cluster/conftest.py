"""Fixtures of the cluster tests: a real ZooKeeper per module (tests/_zookeeper.py)."""

from __future__ import annotations

from tests._zookeeper import zookeeper, zookeeper_chroot

__all__ = ["zookeeper", "zookeeper_chroot"]
