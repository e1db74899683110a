"""The fetch purgatory on an event loop, without sockets: an append to a watched partition
wakes every fetch watching it (and only those), a fetch without news times out, and no
watcher outlives its fetch."""

from __future__ import annotations

import asyncio

from odradek._types import TopicPartition
from odradek.broker.purgatory import FetchPurgatory

A = TopicPartition("a", 0)
B = TopicPartition("b", 0)
#: Long enough never to pass while a test runs: the tests end by notification.
NEVER_MS = 600_000
#: How long a test waits for a wake-up before it fails (instead of hanging).
DEADLINE_S = 10.0


async def _until_watched(purgatory: FetchPurgatory, count: int) -> None:
    """Lets the waiting tasks run until ``count`` partitions are watched."""
    for _ in range(100):
        if purgatory.watched() == count:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{purgatory.watched()} partitions watched, expected {count}")


def test_notify_wakes_the_fetches_watching_that_partition_only() -> None:
    async def scenario() -> tuple[bool, bool, bool, int]:
        purgatory = FetchPurgatory()
        on_a = asyncio.ensure_future(purgatory.wait([A], NEVER_MS))
        on_a_or_b = asyncio.ensure_future(purgatory.wait([A, B], NEVER_MS))
        on_b = asyncio.ensure_future(purgatory.wait([B], NEVER_MS))
        await _until_watched(purgatory, 2)

        purgatory.notify(A)
        woken_a, woken_both = await asyncio.wait_for(asyncio.gather(on_a, on_a_or_b), DEADLINE_S)
        still_waiting = not on_b.done()
        watched_after = purgatory.watched()  # B is still watched by on_b
        purgatory.notify(B)
        return (
            woken_a,
            woken_both,
            still_waiting and await asyncio.wait_for(on_b, DEADLINE_S),
            watched_after,
        )

    woken_a, woken_both, b_woken_later, watched_after = asyncio.run(scenario())

    assert (woken_a, woken_both, b_woken_later) == (True, True, True)
    assert watched_after == 1


def test_a_fetch_without_news_times_out_and_leaves_no_watcher() -> None:
    async def scenario() -> tuple[bool, int]:
        purgatory = FetchPurgatory()
        woken = await purgatory.wait([A, B], 1)
        return woken, purgatory.watched()

    assert asyncio.run(scenario()) == (False, 0)


def test_no_time_to_wait_returns_at_once_without_watching() -> None:
    async def scenario() -> tuple[bool, int]:
        purgatory = FetchPurgatory()
        task = asyncio.ensure_future(purgatory.wait([A], 0))
        await asyncio.sleep(0)
        return task.done() and task.result(), purgatory.watched()

    assert asyncio.run(scenario()) == (False, 0)


def test_notify_before_anyone_waits_is_not_remembered() -> None:
    async def scenario() -> bool:
        purgatory = FetchPurgatory()
        purgatory.notify(A)
        return await purgatory.wait([A], 1)

    assert asyncio.run(scenario()) is False


def test_a_cancelled_fetch_stops_watching() -> None:
    async def scenario() -> int:
        purgatory = FetchPurgatory()
        task = asyncio.ensure_future(purgatory.wait([A, B], NEVER_MS))
        await _until_watched(purgatory, 2)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return purgatory.watched()

    assert asyncio.run(scenario()) == 0


def test_a_notify_after_the_timeout_fired_is_harmless() -> None:
    # The wait's future is resolved by its timer; a later notify must not resolve it again.
    async def scenario() -> tuple[bool, int]:
        purgatory = FetchPurgatory()
        waiting = asyncio.ensure_future(purgatory.wait([A], 1))
        woken = await asyncio.wait_for(waiting, DEADLINE_S)
        purgatory.notify(A)
        return woken, purgatory.watched()

    assert asyncio.run(scenario()) == (False, 0)


def test_an_append_wakes_followers_and_a_high_watermark_move_wakes_consumers() -> None:
    async def scenario() -> list[tuple[str, bool, bool]]:
        purgatory = FetchPurgatory()
        seen = []
        for wake, name in (
            (purgatory.notify_appended, "append"),
            (purgatory.notify_high_watermark, "high watermark"),
            (purgatory.notify, "leadership"),
        ):
            consumer = asyncio.ensure_future(purgatory.wait([A], NEVER_MS))
            follower = asyncio.ensure_future(purgatory.wait([A], NEVER_MS, replica=True))
            await _until_watched(purgatory, 1)
            wake(A)
            await asyncio.sleep(0)
            seen.append((name, consumer.done(), follower.done()))
            purgatory.notify(A)  # whoever is left
            await asyncio.wait_for(asyncio.gather(consumer, follower), DEADLINE_S)
        return seen

    assert asyncio.run(scenario()) == [
        ("append", False, True),
        ("high watermark", True, False),
        ("leadership", True, True),
    ]


def test_the_waiting_views_list_a_partition_exactly_while_a_fetch_of_that_kind_watches_it() -> None:
    """The replica manager's listeners skip ``notify_*`` for a partition missing from these
    views: one must be listed from ``watch`` until its fetch is woken, expires or is
    forgotten, and only in its own kind's view."""

    async def scenario() -> list[tuple[bool, bool]]:
        purgatory = FetchPurgatory()
        seen = []

        def views() -> tuple[bool, bool]:
            return A in purgatory.consumers_waiting, A in purgatory.replicas_waiting

        seen.append(views())
        consumer = purgatory.watch([A], NEVER_MS)
        seen.append(views())
        follower = purgatory.watch([A], NEVER_MS, replica=True)
        seen.append(views())
        purgatory.notify_appended(A)  # wakes the follower's fetch only
        assert await asyncio.wait_for(purgatory.wait_watched(follower), DEADLINE_S)
        seen.append(views())
        purgatory.notify_high_watermark(A)
        assert await asyncio.wait_for(purgatory.wait_watched(consumer), DEADLINE_S)
        seen.append(views())
        expiring = purgatory.watch([A], 1, replica=True)
        seen.append(views())
        assert not await asyncio.wait_for(purgatory.wait_watched(expiring), DEADLINE_S)
        seen.append(views())
        return seen

    assert asyncio.run(scenario()) == [
        (False, False),
        (True, False),
        (True, True),
        (True, False),
        (False, False),
        (False, True),
        (False, False),
    ]
