"""A follower long-polling its leader learns of an append at once, whatever path wrote it and
however soon after the fetch's read it came, and an acks=all waiter is answered as soon as the
follower's next fetch moves the high watermark.

Real parts on both sides — the leader's ``ReplicaManager`` over a ``LogManager`` (tmp dir),
its ``FetchPurgatory``, the real Fetch handler and codec; the follower's ``Partition`` and
``ReplicaFetcher`` — with only the socket left out. ``replica.fetch.wait.max.ms`` is 30 s and
each wait is bounded by 10 s: a follower woken only by its long poll's timeout fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.broker.real_leader import leader_context, real_leader

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.config import FetcherSettings
from odradek.broker.context import BrokerContext
from odradek.broker.handlers import fetch
from odradek.broker.purgatory import FetchPurgatory
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.replication.fetcher import ReplicaFetcher
from odradek.broker.replication.partition import Partition
from odradek.errors import ErrorCode
from odradek.protocol import FetchResponseFrame, RecordsSlot, decode_request
from odradek.protocol.replica_fetch import (
    ReplicaFetchPartition,
    decode_replica_fetch_response,
    encode_replica_fetch_request,
)
from odradek.records.codec import SimpleRecord, build_batch
from odradek.storage.config import LogConfig
from odradek.storage.log import Log

TP = TopicPartition("t", 0)
LEADER, FOLLOWER = 1, 2
#: The follower's long poll: far longer than any wait below.
SETTINGS = FetcherSettings(replica_fetch_wait_max_ms=30_000, replica_fetch_backoff_ms=100)
DEADLINE_S = 10.0


def _wire(result: Any) -> bytes:
    """A Fetch answer frame's bytes, records read from their file slices."""
    assert isinstance(result, FetchResponseFrame)
    return b"".join(
        part.records.read() if isinstance(part, RecordsSlot) else part for part in result.parts
    )


class LeaderOverLoopback:
    """A ``BrokerConnection`` whose broker is the leader's Fetch handler, called in process
    (its long poll waits in the leader's real purgatory)."""

    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    async def exchange(
        self, host: str, port: int, frame_for: Callable[[int], bytes], *, wait_ms: int = 0
    ) -> bytes:
        request = decode_request(frame_for(7)[4:])
        result: Any = fetch.handle(self.ctx, request)
        if asyncio.iscoroutine(result):
            result = await result
        return _wire(result)[4:]

    def close(self) -> None:
        pass


@pytest.fixture
def leader_replicas(tmp_path: Path) -> Iterator[tuple[ReplicaManager, FetchPurgatory]]:
    with real_leader(tmp_path / "leader", LEADER) as started:
        yield started


def _context(replicas: ReplicaManager, purgatory: FetchPurgatory) -> BrokerContext:
    return leader_context(replicas, purgatory, {TP.topic})


def _follower(tmp_path: Path) -> Partition:
    log = Log.open(str(tmp_path / "follower"), TP, LogConfig())
    partition = Partition(TP, log, broker_id=FOLLOWER, replicas=[LEADER, FOLLOWER])
    partition.leader_id = LEADER
    return partition


def _batch(value: bytes) -> bytearray:
    return bytearray(build_batch([SimpleRecord(1_000, None, value)]))


async def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + DEADLINE_S
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {DEADLINE_S} s: {what}")
        await asyncio.sleep(0.01)


def _coordinator_append(partition: Partition) -> None:
    """A group or transaction coordinator's write: ``append_as_leader`` with no Produce."""
    partition.append_as_leader(_batch(b"group state"))


def _marker_append(partition: Partition) -> None:
    """A transaction marker (WriteTxnMarkers), after the producer's transactional batch."""
    data = build_batch(
        [SimpleRecord(1_000, None, b"in a transaction")],
        producer_id=5,
        producer_epoch=0,
        transactional=True,
    )
    partition.append_transactional_as_coordinator(data)
    partition.append_marker(5, 0, commit=True, coordinator_epoch=0)


@pytest.mark.parametrize("append", [_coordinator_append, _marker_append])
def test_a_follower_in_a_long_poll_gets_a_leader_append_long_before_its_wait_ends(
    tmp_path: Path,
    leader_replicas: tuple[ReplicaManager, FetchPurgatory],
    append: Callable[[Partition], None],
) -> None:
    replicas, purgatory = leader_replicas
    leader = replicas.become_leader(TP, [LEADER, FOLLOWER], 0, isr=[LEADER, FOLLOWER])
    ctx = _context(replicas, purgatory)
    follower = _follower(tmp_path)

    async def scenario() -> list[ErrorCode]:
        fetcher = ReplicaFetcher(
            FOLLOWER,
            LEADER,
            0,
            SETTINGS,
            lambda _broker: ("127.0.0.1", 1),
            MockClock(),
            connection=LeaderOverLoopback(ctx),  # type: ignore[arg-type]
        )
        fetcher.add_partition(follower)
        fetcher.start()
        try:
            await _until(lambda: purgatory.watched() == 1, "the follower waits in a long poll")
            append(leader)
            appended_to = leader.log_end_offset
            assert appended_to > 0
            assert leader.high_watermark < appended_to
            # An acks=all waiter for what was appended: answered once the follower's next
            # fetch tells the leader its log end offset.
            waiter = asyncio.ensure_future(
                replicas.delayed_produce.wait([(leader, appended_to)], 30_000)
            )
            await _until(
                lambda: follower.log_end_offset == appended_to, "the follower holds the append"
            )
            return await asyncio.wait_for(waiter, DEADLINE_S)
        finally:
            await fetcher.stop()

    assert asyncio.run(scenario()) == [ErrorCode.NONE]
    assert leader.high_watermark == leader.log_end_offset
    assert follower.log.read(0, 1 << 20).records is not None


def test_an_append_between_the_fetchs_read_and_its_long_poll_still_wakes_it(
    leader_replicas: tuple[ReplicaManager, FetchPurgatory],
) -> None:
    # The handler reads, finds nothing and hands the server its long poll, which runs on a
    # later turn of the loop; whatever runs in between (another connection's Produce here)
    # may append. That append must answer the fetch, not its 30 s wait.
    replicas, purgatory = leader_replicas
    leader = replicas.become_leader(TP, [LEADER, FOLLOWER], 0, isr=[LEADER, FOLLOWER])
    ctx = _context(replicas, purgatory)
    frame = encode_replica_fetch_request(
        7,
        "replica-fetcher-2-1-0",
        replica_id=FOLLOWER,
        max_wait_ms=30_000,
        min_bytes=1,
        max_bytes=1 << 20,
        partitions=[ReplicaFetchPartition(TP.topic, TP.partition, 0, 0, 1 << 20)],
    )
    batch = _batch(b"appended before the long poll ran")
    size = len(batch)

    async def scenario() -> int:
        long_poll = fetch.handle(ctx, decode_request(frame[4:]))
        assert asyncio.iscoroutine(long_poll)  # nothing to read yet: it will wait
        leader.append_as_leader(batch)
        answer = _wire(await asyncio.wait_for(long_poll, DEADLINE_S))
        _, error_code, fetched = decode_replica_fetch_response(answer[4:])
        assert error_code == 0
        return sum(len(data.records) for data in fetched)

    assert asyncio.run(scenario()) == size
    assert purgatory.watched() == 0


def test_a_watch_never_waited_on_leaves_nothing_once_its_time_is_up() -> None:
    purgatory = FetchPurgatory()

    async def scenario() -> None:
        watch = purgatory.watch([TP], 1, replica=True)
        assert purgatory.watched() == 1
        await _until(lambda: purgatory.watched() == 0, "the watch expired")
        assert watch.future.result() is False

    asyncio.run(scenario())
