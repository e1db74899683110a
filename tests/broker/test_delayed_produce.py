"""The delayed-produce purgatory over real partitions (a Log in a temporary directory) whose
high watermark the test moves with ``advance_high_watermark``, and timers fired by hand:
completion once the HW reaches each partition's required offset, REQUEST_TIMED_OUT for the
partitions still waiting at the timeout, NOT_ENOUGH_REPLICAS_AFTER_APPEND after an ISR
shrink, NOT_LEADER_OR_FOLLOWER when leadership moves (through the replica manager's
listener), waiters answered in offset order, and the coroutine form cleaning up after a
cancelled waiter."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.broker.test_replica_manager import FakeLogManager

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.purgatory import FetchPurgatory
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.replication.delayed_produce import DelayedProducePurgatory, all_committed
from odradek.broker.replication.partition import Partition
from odradek.errors import ErrorCode
from odradek.records.codec import SimpleRecord, build_batch
from odradek.storage.config import LogConfig
from odradek.storage.log import Log

A = TopicPartition("a", 0)
B = TopicPartition("b", 0)


@dataclass
class ManualTimer:
    delay_s: float
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualTimers:
    """The purgatory's ``schedule``: timers that fire only when the test says so."""

    def __init__(self) -> None:
        self.timers: list[ManualTimer] = []

    def __call__(self, delay_s: float, callback: Callable[[], None]) -> ManualTimer:
        timer = ManualTimer(delay_s, callback)
        self.timers.append(timer)
        return timer

    def fire(self) -> None:
        for timer in list(self.timers):
            if not timer.cancelled:
                timer.callback()
        self.timers.clear()


class Outcomes:
    """An ``on_complete`` that records each call."""

    def __init__(self) -> None:
        self.calls: list[list[ErrorCode]] = []

    def __call__(self, errors: list[ErrorCode]) -> None:
        self.calls.append(errors)


def batch(count: int) -> bytes:
    return build_batch([SimpleRecord(1_000 + i, None, b"v") for i in range(count)])


@pytest.fixture
def open_log(tmp_path: Path) -> Iterator[Callable[..., Log]]:
    logs: list[Log] = []

    def make(tp: TopicPartition, min_insync_replicas: int = 1) -> Log:
        config = LogConfig(min_insync_replicas=min_insync_replicas)
        log = Log.open(str(tmp_path / f"{tp.topic}-{tp.partition}"), tp, config, clock=MockClock())
        logs.append(log)
        return log

    yield make
    for log in logs:
        log.close()


def lagging(
    log: Log, purgatory: DelayedProducePurgatory, isr: tuple[int, ...] = (1, 2)
) -> Partition:
    """A leader whose ISR has a follower, so an append leaves the high watermark behind;
    its listener is the purgatory's check, as the replica manager installs it."""
    partition = Partition(
        log.topic_partition, log, broker_id=1, replicas=[1, 2], on_high_watermark=purgatory.check
    )
    partition.isr = list(isr)
    return partition


def test_answers_once_the_high_watermark_reaches_the_last_offset_plus_one(
    open_log: Callable[..., Log],
) -> None:
    timers = ManualTimers()
    purgatory = DelayedProducePurgatory(timers)
    partition = lagging(open_log(A), purgatory)
    partition.append_as_leader(batch(3))
    outcomes = Outcomes()

    purgatory.watch([(partition, partition.log_end_offset)], 30_000, outcomes)
    partition.advance_high_watermark(2)
    waiting_after_two = list(outcomes.calls)
    partition.advance_high_watermark(3)

    assert waiting_after_two == []
    assert outcomes.calls == [[ErrorCode.NONE]]
    assert timers.timers[0].delay_s == 30.0
    assert timers.timers[0].cancelled
    assert purgatory.statistics() == {"waiting": 0, "completed": 1, "expired": 0, "partitions": 0}


def test_the_timeout_answers_request_timed_out_for_the_partitions_still_waiting(
    open_log: Callable[..., Log],
) -> None:
    timers = ManualTimers()
    purgatory = DelayedProducePurgatory(timers)
    a = lagging(open_log(A), purgatory)
    b = lagging(open_log(B), purgatory)
    a.append_as_leader(batch(2))
    b.append_as_leader(batch(2))
    outcomes = Outcomes()

    purgatory.watch([(a, 2), (b, 2)], 1_000, outcomes)
    a.advance_high_watermark(2)
    before_timeout = list(outcomes.calls)
    timers.fire()
    b.advance_high_watermark(2)  # too late: already answered

    assert before_timeout == []
    assert outcomes.calls == [[ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT]]
    assert purgatory.statistics() == {"waiting": 0, "completed": 0, "expired": 1, "partitions": 0}


def test_a_zero_timeout_answers_at_once(open_log: Callable[..., Log]) -> None:
    timers = ManualTimers()
    purgatory = DelayedProducePurgatory(timers)
    partition = lagging(open_log(A), purgatory)
    partition.append_as_leader(batch(1))
    outcomes = Outcomes()

    purgatory.watch([(partition, 1)], 0, outcomes)

    assert outcomes.calls == [[ErrorCode.REQUEST_TIMED_OUT]]
    assert timers.timers == []


def test_an_isr_that_shrank_below_min_insync_replicas_answers_not_enough_replicas_after_append(
    open_log: Callable[..., Log],
) -> None:
    purgatory = DelayedProducePurgatory(ManualTimers())
    partition = lagging(open_log(A, min_insync_replicas=2), purgatory)
    partition.append_as_leader(batch(1))
    outcomes = Outcomes()

    purgatory.watch([(partition, 1)], 30_000, outcomes)
    partition.isr = [1]  # the follower fell out; the HW is now the leader's LEO
    partition.advance_high_watermark(partition.log_end_offset)

    assert outcomes.calls == [[ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND]]


def test_waiters_on_one_partition_are_answered_in_offset_order(
    open_log: Callable[..., Log],
) -> None:
    purgatory = DelayedProducePurgatory(ManualTimers())
    partition = lagging(open_log(A), purgatory)
    first, second = Outcomes(), Outcomes()
    partition.append_as_leader(batch(2))
    purgatory.watch([(partition, partition.log_end_offset)], 30_000, first)
    partition.append_as_leader(batch(2))
    purgatory.watch([(partition, partition.log_end_offset)], 30_000, second)

    partition.advance_high_watermark(3)

    assert (first.calls, second.calls) == ([[ErrorCode.NONE]], [])
    assert purgatory.statistics()["waiting"] == 1


def test_partitions_already_committed_need_no_delayed_produce(
    open_log: Callable[..., Log],
) -> None:
    timers = ManualTimers()
    purgatory = DelayedProducePurgatory(timers)
    alone = Partition(A, open_log(A), broker_id=1, replicas=[1], on_high_watermark=purgatory.check)
    alone.append_as_leader(batch(2))  # an ISR of one: the append moved the HW
    outcomes = Outcomes()

    committed = all_committed([(alone, alone.log_end_offset)])
    purgatory.watch([(alone, alone.log_end_offset)], 30_000, outcomes)

    assert committed
    assert outcomes.calls == [[ErrorCode.NONE]]
    assert timers.timers == []


def test_a_failing_callback_does_not_stop_the_others(open_log: Callable[..., Log]) -> None:
    purgatory = DelayedProducePurgatory(ManualTimers())
    partition = lagging(open_log(A), purgatory)
    partition.append_as_leader(batch(1))
    outcomes = Outcomes()

    def explode(errors: list[ErrorCode]) -> None:
        raise RuntimeError("boom")

    purgatory.watch([(partition, 1)], 30_000, explode)
    purgatory.watch([(partition, 1)], 30_000, outcomes)
    partition.advance_high_watermark(1)

    assert outcomes.calls == [[ErrorCode.NONE]]


def test_a_callback_that_appends_again_leaves_the_queue_whole(
    open_log: Callable[..., Log],
) -> None:
    """The group coordinator's completions may append and move the HW inside a check."""
    purgatory = DelayedProducePurgatory(ManualTimers())
    partition = lagging(open_log(A), purgatory)
    partition.append_as_leader(batch(1))
    later = Outcomes()

    def append_more(errors: list[ErrorCode]) -> None:
        partition.append_as_leader(batch(1))
        purgatory.watch([(partition, partition.log_end_offset)], 30_000, later)
        partition.advance_high_watermark(partition.log_end_offset)

    purgatory.watch([(partition, 1)], 30_000, append_more)
    partition.advance_high_watermark(1)

    assert later.calls == [[ErrorCode.NONE]]
    assert purgatory.statistics()["partitions"] == 0


# --- through the replica manager's listener ---------------------------------------------------


def manager(fetches: FetchPurgatory | None = None) -> ReplicaManager:
    """A replica manager over in-memory logs, its timers fired by hand (by ``asyncio`` when
    ``fetches`` is given: the coroutine tests run on a loop)."""
    return ReplicaManager(
        7,
        FakeLogManager(),  # type: ignore[arg-type]
        lambda topic: LogConfig(),
        fetch_purgatory=fetches,
        delayed_produce=DelayedProducePurgatory(None if fetches else ManualTimers()),
    )


def led(replicas: ReplicaManager, tp: TopicPartition) -> Partition:
    partition = replicas.become_leader(tp, [7, 8])
    partition.isr = [7, 8]
    return partition


def grow(partition: Partition, records: int) -> int:
    """The fake log's end offset moves as an append would; returns it."""
    partition.log.log_end_offset += records  # type: ignore[misc]
    return partition.log_end_offset


def test_leadership_moving_answers_not_leader_or_follower() -> None:
    replicas = manager()
    tp = TopicPartition("t", 0)
    partition = led(replicas, tp)
    outcomes = Outcomes()

    replicas.delayed_produce.watch([(partition, grow(partition, 2))], 30_000, outcomes)
    replicas.become_follower(tp, [7, 8], leader_epoch=1, leader=8)

    assert outcomes.calls == [[ErrorCode.NOT_LEADER_OR_FOLLOWER]]


def test_a_removed_partition_answers_not_leader_or_follower() -> None:
    replicas = manager()
    tp = TopicPartition("t", 0)
    partition = led(replicas, tp)
    outcomes = Outcomes()

    replicas.delayed_produce.watch([(partition, grow(partition, 1))], 30_000, outcomes)
    replicas.remove_topic("t")

    assert outcomes.calls == [[ErrorCode.NOT_LEADER_OR_FOLLOWER]]


def test_the_listener_wakes_delayed_produces_and_long_polling_fetches() -> None:
    async def scenario() -> tuple[list[ErrorCode], bool]:
        fetches = FetchPurgatory()
        replicas = manager(fetches)
        tp = TopicPartition("t", 0)
        partition = led(replicas, tp)
        required = grow(partition, 3)
        produce = asyncio.ensure_future(
            replicas.delayed_produce.wait([(partition, required)], 30_000)
        )
        fetch = asyncio.ensure_future(fetches.wait([tp], 30_000))
        await asyncio.sleep(0)  # both waiters parked
        partition.advance_high_watermark(required)  # a follower caught up
        return await produce, await fetch

    errors, woken = asyncio.run(scenario())

    assert errors == [ErrorCode.NONE]
    assert woken


def test_a_cancelled_waiter_leaves_nothing_behind() -> None:
    async def scenario() -> dict[str, int]:
        replicas = manager(FetchPurgatory())
        partition = led(replicas, TopicPartition("t", 0))
        waiter = asyncio.ensure_future(
            replicas.delayed_produce.wait([(partition, grow(partition, 1))], 30_000)
        )
        await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        return replicas.delayed_produce.statistics()

    assert asyncio.run(scenario()) == {"waiting": 0, "completed": 0, "expired": 0, "partitions": 0}


class CountingPurgatory(DelayedProducePurgatory):
    """Counts ``check`` calls (the listener's shortcut must skip them when nobody waits)."""

    def __init__(self) -> None:
        super().__init__(ManualTimers())
        self.checks = 0

    def check(self, partition: Any) -> None:
        self.checks += 1
        super().check(partition)


def test_partitions_waiting_lists_a_partition_exactly_while_a_produce_waits_on_it(
    open_log: Callable[..., Log],
) -> None:
    """The replica manager's listener skips ``check`` for a partition missing from it."""
    purgatory = DelayedProducePurgatory(ManualTimers())
    partition = lagging(open_log(A), purgatory)
    other = lagging(open_log(B), purgatory)
    partition.append_as_leader(batch(2))
    other.append_as_leader(batch(2))
    outcomes = Outcomes()

    before = A in purgatory.partitions_waiting
    purgatory.watch([(partition, 2), (other, 2)], 30_000, outcomes)
    both = (A in purgatory.partitions_waiting, B in purgatory.partitions_waiting)
    partition.advance_high_watermark(2)
    after_a = (A in purgatory.partitions_waiting, B in purgatory.partitions_waiting)
    other.advance_high_watermark(2)

    assert (before, both, after_a) == (False, (True, True), (False, True))
    assert B not in purgatory.partitions_waiting
    assert outcomes.calls == [[ErrorCode.NONE, ErrorCode.NONE]]


def test_the_listener_checks_delayed_produces_only_on_a_partition_someone_waits_on() -> None:
    purgatory = CountingPurgatory()
    replicas = ReplicaManager(
        7,
        FakeLogManager(),  # type: ignore[arg-type]
        lambda topic: LogConfig(),
        delayed_produce=purgatory,
    )
    partition = led(replicas, TopicPartition("t", 0))
    outcomes = Outcomes()

    partition.advance_high_watermark(grow(partition, 1))  # nobody waits: no check
    unwatched = purgatory.checks
    required = grow(partition, 1)
    purgatory.watch([(partition, required)], 30_000, outcomes)
    partition.advance_high_watermark(required)

    assert unwatched == 0
    assert purgatory.checks == 1
    assert outcomes.calls == [[ErrorCode.NONE]]
