"""Fixtures of the fault tests: the sockets third-party clients abandon are collected after
each test (as in tests/cluster)."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _collect_abandoned_sockets() -> Iterator[None]:
    """Clients leave sockets refused by a killed broker for the garbage collector; collect
    them here, where they were made, so their ResourceWarning fails no later test."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
