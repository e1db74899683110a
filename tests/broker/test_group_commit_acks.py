"""The group coordinator's appends to ``__consumer_offsets`` are acknowledged once replicated
(``offsets.commit.required.acks`` -1): on a broker started in-process, the offsets partition
is given a lagging follower (an ISR of two, so an append leaves the high watermark behind),
and an OffsetCommit waits until the high watermark passes its records, a later read of the
group waits behind it, replication that does not come in ``offsets.commit.timeout.ms``
answers COORDINATOR_NOT_AVAILABLE, and with acks 1 the commit answers after the append."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek._types import TopicPartition
from odradek.broker.app import BrokerApp
from odradek.broker.config import BrokerConfig
from odradek.broker.group.results import (
    OffsetCommitPartition,
    OffsetCommitResult,
    OffsetFetchResult,
)
from odradek.broker.group.runtime import OFFSETS_TOPIC
from odradek.broker.replication.partition import Partition
from odradek.errors import ErrorCode, KafkaError

GROUP = "g"
DEADLINE_S = 10.0


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    running = asyncio.new_event_loop()
    yield running
    running.close()


def start(loop: asyncio.AbstractEventLoop, tmp_path: Path, **settings: str) -> BrokerApp:
    config = BrokerConfig.from_mapping(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path),
            "offsets.topic.num.partitions": "1",
            **settings,
        }
    )
    app = BrokerApp(config)
    loop.run_until_complete(app.start())
    return app


def lagging_offsets_partition(app: BrokerApp) -> Partition:
    """The group's ``__consumer_offsets`` partition, with a follower in its ISR that never
    fetches (as on a branch without follower fetching): appends leave the HW behind."""
    assert app.groups is not None
    assert app.groups.ensure_offsets_topic()
    partition = app.ctx.replicas.get(TopicPartition(OFFSETS_TOPIC, 0))  # type: ignore[union-attr]
    assert isinstance(partition, Partition)
    partition.isr = [partition.broker_id, partition.broker_id + 1]
    return partition


async def commit(app: BrokerApp, offset: int) -> OffsetCommitResult:
    assert app.groups is not None
    return await app.groups.run(
        GROUP,
        lambda coordinator, now_ms: coordinator.commit_offsets(
            now_ms,
            group_id=GROUP,
            partitions=[OffsetCommitPartition("t", 0, offset)],
        ),
    )


async def fetch(app: BrokerApp) -> OffsetFetchResult:
    assert app.groups is not None
    return await app.groups.run(
        GROUP, lambda coordinator, now_ms: coordinator.fetch_offsets(GROUP, None)
    )


async def turns(count: int = 5) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


def test_a_commit_is_answered_once_replicated_and_a_read_waits_behind_it(
    loop: asyncio.AbstractEventLoop, tmp_path: Path
) -> None:
    app = start(loop, tmp_path)

    async def scenario() -> tuple[bool, bool, OffsetCommitResult, OffsetFetchResult]:
        partition = lagging_offsets_partition(app)
        committing = asyncio.ensure_future(commit(app, 42))
        await turns()
        reading = asyncio.ensure_future(fetch(app))
        await turns()
        waited = not committing.done() and not reading.done()
        partition.advance_high_watermark(partition.log_end_offset)  # the follower caught up
        result = await asyncio.wait_for(committing, DEADLINE_S)
        read = await asyncio.wait_for(reading, DEADLINE_S)
        return waited, partition.high_watermark == partition.log_end_offset, result, read

    try:
        waited, caught_up, result, read = loop.run_until_complete(scenario())
    finally:
        loop.run_until_complete(app.stop())

    assert waited
    assert caught_up
    assert result.partitions == {TopicPartition("t", 0): ErrorCode.NONE}
    assert read.partitions[TopicPartition("t", 0)].committed_offset == 42


def test_replication_that_does_not_come_answers_coordinator_not_available(
    loop: asyncio.AbstractEventLoop, tmp_path: Path
) -> None:
    app = start(loop, tmp_path, **{"offsets.commit.timeout.ms": "50"})

    async def scenario() -> ErrorCode:
        lagging_offsets_partition(app)
        with pytest.raises(KafkaError) as raised:
            await asyncio.wait_for(commit(app, 7), DEADLINE_S)
        return raised.value.error_code

    try:
        code = loop.run_until_complete(scenario())
    finally:
        loop.run_until_complete(app.stop())

    assert code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_with_required_acks_1_the_commit_answers_after_the_append(
    loop: asyncio.AbstractEventLoop, tmp_path: Path
) -> None:
    app = start(loop, tmp_path, **{"offsets.commit.required.acks": "1"})

    async def scenario() -> tuple[OffsetCommitResult, bool]:
        partition = lagging_offsets_partition(app)
        result = await asyncio.wait_for(commit(app, 3), DEADLINE_S)
        return result, partition.high_watermark < partition.log_end_offset

    try:
        result, behind = loop.run_until_complete(scenario())
    finally:
        loop.run_until_complete(app.stop())

    assert result.partitions == {TopicPartition("t", 0): ErrorCode.NONE}
    assert behind  # answered although not replicated


def test_a_new_coordinator_replays_to_its_log_end_once_the_high_watermark_gets_there(
    loop: asyncio.AbstractEventLoop, tmp_path: Path
) -> None:
    # Found by the fault suite: a broker that became leader of an offsets partition replayed
    # it only up to its high watermark, which lags behind commits its old leader had
    # acknowledged; OffsetFetch then answered an offset older than an acknowledged commit.
    app = start(loop, tmp_path, **{"offsets.commit.required.acks": "1"})

    async def scenario() -> tuple[ErrorCode, OffsetFetchResult]:
        assert app.groups is not None
        partition = lagging_offsets_partition(app)
        await asyncio.wait_for(commit(app, 3), DEADLINE_S)  # appended above the HW
        app.groups.release_partition(0)
        app.groups.take_partition(0)  # a new leadership of the partition
        await turns()
        with pytest.raises(KafkaError) as loading:
            await fetch(app)
        partition.advance_high_watermark(partition.log_end_offset)
        deadline = loop.time() + DEADLINE_S
        while True:
            try:
                return loading.value.error_code, await fetch(app)
            except KafkaError as error:
                still_loading = error.error_code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
                if not still_loading or loop.time() > deadline:
                    raise
                await asyncio.sleep(0.01)

    try:
        code, read = loop.run_until_complete(scenario())
    finally:
        loop.run_until_complete(app.stop())

    assert code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert read.partitions[TopicPartition("t", 0)].committed_offset == 3
