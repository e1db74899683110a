"""Fixtures for the client tests: an embedded broker on 127.0.0.1 (ephemeral port, temp dir)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from odradek import Broker


@pytest.fixture
def broker() -> Iterator[Broker]:
    """A started embedded broker, stopped (and its data removed) after the test."""
    with Broker() as started:
        yield started
