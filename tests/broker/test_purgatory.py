"""The fetch purgatory: a wait ends True when one of its partitions is notified, False at its
timeout, and leaves no watcher behind however it ends."""

from __future__ import annotations

import asyncio

import pytest

from odradek._types import TopicPartition
from odradek.broker.purgatory import FetchPurgatory

A = TopicPartition("t", 0)
B = TopicPartition("t", 1)
LONG_MS = 60_000


def test_a_notify_wakes_every_fetch_watching_that_partition_and_no_other() -> None:
    async def scenario() -> None:
        purgatory = FetchPurgatory()
        on_a = asyncio.ensure_future(purgatory.wait([A], LONG_MS))
        on_both = asyncio.ensure_future(purgatory.wait([A, B], LONG_MS))
        on_b = asyncio.ensure_future(purgatory.wait([B], LONG_MS))
        await asyncio.sleep(0)
        assert purgatory.watched() == 2
        purgatory.notify(A)
        assert await on_a is True
        assert await on_both is True
        assert not on_b.done()
        assert purgatory.watched() == 1  # B: the fetch on B alone
        on_b.cancel()
        with pytest.raises(asyncio.CancelledError):
            await on_b
        assert purgatory.watched() == 0

    asyncio.run(scenario())


def test_a_wait_ends_false_at_its_timeout_and_unregisters() -> None:
    async def scenario() -> None:
        purgatory = FetchPurgatory()
        assert await purgatory.wait([A, B], 1) is False
        assert purgatory.watched() == 0
        assert await purgatory.wait([A], 0) is False  # no wait at all
        purgatory.notify(A)  # nobody left to wake: nothing happens

    asyncio.run(scenario())


def test_a_notify_after_the_timeout_fired_is_harmless() -> None:
    async def scenario() -> None:
        purgatory = FetchPurgatory()
        waiting = asyncio.ensure_future(purgatory.wait([A], 1))
        assert await waiting is False
        purgatory.notify(A)
        assert purgatory.watched() == 0

    asyncio.run(scenario())
