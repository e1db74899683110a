"""A Produce request wakes the fetches long-polling on its partition through the partition's
own listeners, not through the handler: a follower's fetch on every leader append, whatever
the acks and the replication factor and whether the batch is idempotent; a consumer's fetch
only when the high watermark moved (at once with the leader alone in the ISR, not before a
follower caught up otherwise).

Real parts: the Produce handler over a ``ReplicaManager`` (logs in a tmp dir) and its
``FetchPurgatory``; the fetches are the purgatory's watches, registered before the request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.broker.handlers.test_produce import answers, produce_request
from tests.broker.real_leader import leader_context, real_leader

from odradek._types import TopicPartition
from odradek.broker.context import BrokerContext
from odradek.broker.handlers import produce
from odradek.broker.purgatory import FetchPurgatory
from odradek.broker.replica_manager import ReplicaManager
from odradek.errors import ErrorCode
from odradek.records.codec import SimpleRecord, build_batch

TP = TopicPartition("t", 0)
LEADER, FOLLOWER = 1, 2
#: Far longer than the test: a watch that is done was woken, not timed out.
LONG_POLL_MS = 60_000


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[tuple[ReplicaManager, FetchPurgatory]]:
    with real_leader(tmp_path / "leader", LEADER) as started:
        yield started


def _context(replicas: ReplicaManager, purgatory: FetchPurgatory) -> BrokerContext:
    return leader_context(replicas, purgatory, {TP.topic})


def _batch(idempotent: bool) -> bytes:
    records = [SimpleRecord(1_000, None, b"woken")]
    if idempotent:
        return build_batch(records, producer_id=9, producer_epoch=0, base_sequence=0)
    return build_batch(records)


@pytest.mark.parametrize("idempotent", [False, True], ids=["plain", "idempotent"])
@pytest.mark.parametrize("replicas", [[LEADER], [LEADER, FOLLOWER]], ids=["rf1", "rf2"])
@pytest.mark.parametrize("acks", [0, 1, -1])
def test_a_produce_wakes_the_followers_and_consumers_only_when_the_hw_moved(
    leader: tuple[ReplicaManager, FetchPurgatory],
    acks: int,
    replicas: list[int],
    idempotent: bool,
) -> None:
    replica_manager, purgatory = leader
    partition = replica_manager.become_leader(TP, replicas, 0, isr=replicas)
    ctx = _context(replica_manager, purgatory)

    async def scenario() -> tuple[bool, bool]:
        follower = purgatory.watch([TP], LONG_POLL_MS, replica=True)
        consumer = purgatory.watch([TP], LONG_POLL_MS)
        result = produce.handle(ctx, produce_request(acks, {(TP.topic, 0): _batch(idempotent)}))
        # Woken in the request's own synchronous step, before any other callback runs.
        woken = (
            follower.future.done() and follower.future.result(),
            consumer.future.done() and consumer.future.result(),
        )
        if asyncio.iscoroutine(result):  # acks=all waiting for the follower: not the test's
            result.close()
        elif acks != 0:
            assert answers(result) == {(TP.topic, 0): (ErrorCode.NONE, 0)}
        for watch in (follower, consumer):
            watch.expire()
        return woken

    follower_woken, consumer_woken = asyncio.run(scenario())

    assert partition.log_end_offset == 1
    assert follower_woken
    committed = replicas == [LEADER]
    assert partition.high_watermark == (1 if committed else 0)
    assert consumer_woken is committed
    assert purgatory.watched() == 0
