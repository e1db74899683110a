"""The ISR change manager on an event loop, without sockets: a shrink proposed by the periodic
check reaches the controller (a fake ``send``) as AlterPartition updates, is sent again after
NOT_CONTROLLER, and the controller's answer becomes the partition's committed ISR and
partition epoch; an answer refusing the change leaves the committed ISR; without a sender (a
single broker) the replica manager commits a change at once."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.replication.isr_changes import IsrChangeManager
from odradek.broker.replication.partition import Partition
from odradek.controller.cluster import IsrUpdate, IsrUpdateResult
from odradek.errors import ErrorCode, NotControllerError
from odradek.storage.config import LogConfig

TP = TopicPartition("t", 0)
LAG_MS = 10_000
#: The periodic check never runs by itself in these tests: they call it.
NEVER_MS = 600_000_000
DEADLINE_S = 10.0


@dataclass
class FakeLog:
    config: LogConfig
    log_end_offset: int = 0
    log_start_offset: int = 0
    high_watermark: int | None = None

    def update_high_watermark(self, offset: int) -> None:
        self.high_watermark = offset

    def assign_epoch_start(self, leader_epoch: int) -> bool:
        return False  # the leader-epoch cache is not what these tests are about


class FakeLogManager:
    def get_or_create_log(self, topic_partition: TopicPartition, config: LogConfig) -> FakeLog:
        return FakeLog(config)


class Controller:
    """Answers AlterPartition: first ``failures`` requests fail with NOT_CONTROLLER, then
    every change is accepted (or refused with ``refuse``)."""

    def __init__(self, failures: int = 0, refuse: ErrorCode | None = None) -> None:
        self.failures = failures
        self.refuse = refuse
        self.requests: list[list[IsrUpdate]] = []

    async def send(self, updates: Sequence[IsrUpdate]) -> list[IsrUpdateResult]:
        self.requests.append(list(updates))
        if len(self.requests) <= self.failures:
            raise NotControllerError("the controller moved")
        if self.refuse is not None:
            return [IsrUpdateResult(u.topic_partition, self.refuse) for u in updates]
        return [
            IsrUpdateResult(
                u.topic_partition,
                ErrorCode.NONE,
                1,
                u.leader_epoch,
                u.new_isr,
                u.partition_epoch + 1,
            )
            for u in updates
        ]


async def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + DEADLINE_S
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.001)


async def _shrink(controller: Controller) -> tuple[Partition, IsrChangeManager]:
    clock = MockClock()
    replicas = ReplicaManager(1, FakeLogManager(), lambda _: LogConfig(), clock=clock)  # type: ignore[arg-type]
    manager = IsrChangeManager(
        replicas, controller.send, replica_lag_time_max_ms=NEVER_MS, retry_backoff_ms=1
    )
    replicas.on_isr_change = manager.submit
    manager.start()
    partition = replicas.become_leader(TP, [1, 2, 3], 5, isr=[1, 2, 3], partition_epoch=10)
    partition.log.log_end_offset = 4  # type: ignore[misc]
    clock.advance(LAG_MS + 1)
    assert replicas.shrink_isrs(LAG_MS) == 1
    return partition, manager


def test_a_shrink_is_sent_again_after_not_controller_and_committed() -> None:
    async def scenario() -> tuple[Partition, Controller]:
        controller = Controller(failures=1)
        partition, manager = await _shrink(controller)
        try:
            await _until(lambda: partition.isr == [1], "the committed shrink")
        finally:
            await manager.stop()
        return partition, controller

    partition, controller = asyncio.run(scenario())

    assert controller.requests == [[IsrUpdate(TP, 5, (1,), 10)]] * 2
    assert partition.partition_epoch == 11
    assert partition.pending_isr is None
    assert partition.high_watermark == 4  # alone in the ISR now


def test_a_refused_shrink_leaves_the_committed_isr() -> None:
    async def scenario() -> tuple[Partition, Controller]:
        controller = Controller(refuse=ErrorCode.INELIGIBLE_REPLICA)
        partition, manager = await _shrink(controller)
        try:
            await _until(lambda: partition.pending_isr is None, "the refusal")
        finally:
            await manager.stop()
        return partition, controller

    partition, controller = asyncio.run(scenario())

    assert len(controller.requests) == 1
    assert partition.isr == [1, 2, 3]
    assert partition.partition_epoch == 10
    assert partition.high_watermark == 0


def test_without_a_sender_the_replica_manager_commits_a_change_at_once() -> None:
    replicas = ReplicaManager(1, FakeLogManager(), lambda _: LogConfig(), clock=MockClock())  # type: ignore[arg-type]
    partition = replicas.become_leader(TP, [1, 2], 0, isr=[1], partition_epoch=0)

    partition.update_follower_fetch(2, 0, now_ms=1)

    assert partition.isr == [1, 2]
    assert partition.partition_epoch == 1
    assert partition.pending_isr is None


class SwallowingController(Controller):
    """A controller whose AlterPartition never answers; the first send loses the
    cancellation it gets, as Python 3.11's ``asyncio.wait_for`` may (gh-86296)."""

    def __init__(self) -> None:
        super().__init__()
        self.sending = asyncio.Event()
        self.swallowed = 0

    async def send(self, updates: Sequence[IsrUpdate]) -> list[IsrUpdateResult]:
        self.requests.append(list(updates))
        self.sending.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            if self.swallowed:
                raise
            self.swallowed += 1  # lost: the caller goes on as if the request had failed
        return [IsrUpdateResult(u.topic_partition, ErrorCode.NOT_CONTROLLER) for u in updates]


def test_a_broker_whose_session_expired_stops_its_isr_sender_despite_a_swallowed_cancel() -> None:
    """Found by the fault suite (pause-past-session): a resumed broker logged that its
    ZooKeeper session expired and that it stops, but its stop waited forever for the
    AlterPartition loop, so the zombie kept serving as group coordinator for minutes."""

    async def scenario() -> tuple[bool, int]:
        controller = SwallowingController()
        _, manager = await _shrink(controller)
        await asyncio.wait_for(controller.sending.wait(), DEADLINE_S)
        stopping = asyncio.ensure_future(manager.stop())
        done, _ = await asyncio.wait({stopping}, timeout=DEADLINE_S)
        while not stopping.done():  # a stop that hung: end it for the next tests
            stopping.cancel()
            await asyncio.wait({stopping}, timeout=0.1)
        return stopping in done, controller.swallowed

    stopped, swallowed = asyncio.run(scenario())
    assert swallowed == 1
    assert stopped, "IsrChangeManager.stop did not return"
