"""Fetch without sockets: the handler over in-memory partitions (tests/broker/fakes.py).

Reads from the fetch offset up to the high watermark, within ``partition_max_bytes`` and the
response's ``max_bytes`` (the first partition with data always gets a whole batch, KIP-74);
answers at once when ``min_bytes`` is met or a partition failed, otherwise waits in the
purgatory and reads again when woken; records travel as regions, spliced in by the server.
"""

from __future__ import annotations

import asyncio
import datetime
import importlib
import inspect
from typing import Any

from kio.serial import entity_reader
from kio.static.primitive import i32Timedelta
from tests.broker.fakes import FakePartition, FakePurgatory, context, request

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.handlers import fetch
from odradek.errors import ErrorCode
from odradek.protocol import FetchResponseFrame, RecordsSlot, response_class
from odradek.records.codec import SimpleRecord, build_batch

VERSION = 11
TP = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def batch(base_offset: int, count: int = 1, value_bytes: int = 10) -> bytes:
    return build_batch(
        [SimpleRecord(1_000, None, b"x" * value_bytes) for _ in range(count)],
        base_offset=base_offset,
    )


def filled(tp: TopicPartition, batches: int, **kwargs: Any) -> FakePartition:
    partition = FakePartition(tp, **kwargs)
    for index in range(batches):
        partition.append_as_leader(batch(index))
    partition.appends.clear()
    return partition


def fetch_request(
    offsets: dict[TopicPartition, int],
    *,
    min_bytes: int = 1,
    max_wait_ms: int = 500,
    max_bytes: int = 1 << 20,
    partition_max_bytes: int = 1 << 20,
    replica_id: int = -1,
    version: int = VERSION,
    rack_id: str = "",
) -> Any:
    m = importlib.import_module(f"kio.schema.fetch.v{version}.request")
    topics: dict[str, list[Any]] = {}
    for tp, offset in offsets.items():
        topics.setdefault(tp.topic, []).append(
            m.FetchPartition(
                partition=tp.partition,
                fetch_offset=offset,
                partition_max_bytes=partition_max_bytes,
            )
        )
    return request(
        m.FetchRequest(
            replica_id=replica_id,
            max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=max_wait_ms)),
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            topics=tuple(
                m.FetchTopic(topic=name, partitions=tuple(parts)) for name, parts in topics.items()
            ),
            forgotten_topics_data=(),
            **({"rack_id": rack_id} if version >= VERSION else {}),
        )
    )


def decoded(frame: Any, version: int = VERSION) -> dict[TopicPartition, Any]:
    """The response as a client reads it: framing with each slot's records spliced in."""
    assert isinstance(frame, FetchResponseFrame)
    wire = b"".join(
        part.records.read() if isinstance(part, RecordsSlot) else part for part in frame.parts
    )
    assert len(wire) == frame.size
    response_type: Any = response_class(1, version)
    _, header_size = entity_reader(response_type.__header_schema__)(wire[4:], 0)
    response, _ = entity_reader(response_type)(wire[4:], header_size)
    return {
        TopicPartition(str(topic.topic), int(p.partition_index)): p
        for topic in response.responses
        for p in topic.partitions
    }


def test_data_at_hand_is_answered_at_once_up_to_the_high_watermark() -> None:
    partition = filled(TP, 3)
    partition.committed = False
    partition.append_as_leader(batch(3))  # above the high watermark: not yet visible

    result = fetch.handle(context(partition), fetch_request({TP: 1}))

    answer = decoded(result)[TP]
    assert answer.error_code == ErrorCode.NONE
    assert answer.high_watermark == 3
    assert answer.records == batch(1) + batch(2)


def test_unknown_and_out_of_range_partitions_answer_at_once_with_their_errors() -> None:
    partition = filled(TP, 2, log_start_offset=0)
    ctx = context(partition)

    result = fetch.handle(ctx, fetch_request({TP: 7, TopicPartition("t", 4): 0}, min_bytes=1 << 20))

    answers = decoded(result)  # not awaitable: an error ends the wait
    assert answers[TP].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert (answers[TP].high_watermark, answers[TP].log_start_offset) == (2, 0)
    assert answers[TopicPartition("t", 4)].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_the_response_budget_is_shared_and_only_the_first_partition_may_exceed_it() -> None:
    first = filled(TP, 1)
    second = filled(TP1, 1)
    size = len(batch(0))

    result = fetch.handle(context(first, second), fetch_request({TP: 0, TP1: 0}, max_bytes=10))

    answers = decoded(result)
    assert answers[TP].records == batch(0)  # whole, although larger than max_bytes
    assert answers[TP1].records in (b"", None)
    assert first.reads == [(0, 10, True)]
    assert second.reads == [(0, 0, False)]  # 10 - size < 0: nothing left, no minimum
    assert size > 10


def test_partition_max_bytes_caps_each_read() -> None:
    partition = filled(TP, 1)

    fetch.handle(context(partition), fetch_request({TP: 0}, partition_max_bytes=5))

    assert partition.reads == [(0, 5, True)]


def test_too_little_data_waits_in_the_purgatory_and_reads_again_when_woken() -> None:
    partition = filled(TP, 1)
    purgatory = FakePurgatory()
    clock = MockClock()

    def producer_appends() -> None:
        partition.append_as_leader(batch(1, value_bytes=200))
        purgatory.notify(TP)

    purgatory.on_wait.append(producer_appends)
    ctx = context(partition, purgatory=purgatory, clock=clock)

    pending = fetch.handle(ctx, fetch_request({TP: 1}, min_bytes=100, max_wait_ms=500))

    assert inspect.isawaitable(pending)
    answer = decoded(asyncio.run(_awaited(pending)))[TP]
    assert purgatory.waits == [([TP], 500)]
    assert answer.records == batch(1, value_bytes=200)


def test_a_wait_without_news_answers_what_there_is() -> None:
    partition = filled(TP, 1)
    purgatory = FakePurgatory()
    ctx = context(partition, purgatory=purgatory)

    pending = fetch.handle(ctx, fetch_request({TP: 1}, min_bytes=100, max_wait_ms=300))

    answer = decoded(asyncio.run(_awaited(pending)))[TP]
    assert len(purgatory.waits) == 1
    assert answer.error_code == ErrorCode.NONE
    assert answer.records in (b"", None)


def test_no_wait_when_max_wait_is_zero() -> None:
    partition = filled(TP, 1)

    result = fetch.handle(context(partition), fetch_request({TP: 1}, max_wait_ms=0))

    assert not inspect.isawaitable(result)
    assert decoded(result)[TP].records in (b"", None)


async def _awaited(pending: Any) -> Any:
    return await pending


def test_each_wait_gets_what_is_left_of_max_wait() -> None:
    partition = filled(TP, 1)
    purgatory = FakePurgatory()
    clock = MockClock()

    def small_append() -> None:  # wakes the fetch, but min_bytes is still not met
        clock.advance(200)
        partition.append_as_leader(batch(1))
        purgatory.notify(TP)

    purgatory.on_wait.append(small_append)
    ctx = context(partition, purgatory=purgatory, clock=clock)

    pending = fetch.handle(ctx, fetch_request({TP: 1}, min_bytes=1000, max_wait_ms=500))
    answer = decoded(asyncio.run(_awaited(pending)))[TP]

    assert purgatory.waits == [([TP], 500), ([TP], 300)]
    assert answer.records == batch(1)  # the second wait timed out: what there is


def test_a_follower_answers_a_consumer_before_v11_not_leader_or_follower_at_once() -> None:
    follower = filled(TP, 2, log_start_offset=0)
    follower.is_leader = False  # in a cluster, another broker leads it
    ctx = context(follower)

    result = fetch.handle(ctx, fetch_request({TP: 0}, min_bytes=1 << 20, version=10))

    assert decoded(result, 10)[TP].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert follower.reads == []


def test_a_followers_fetch_offset_is_recorded_and_a_consumers_is_not() -> None:
    partition = filled(TP, 3)
    ctx = context(partition)

    fetch.handle(ctx, fetch_request({TP: 2}, replica_id=3))
    fetch.handle(ctx, fetch_request({TP: 1}))

    assert partition.follower_fetches == [(3, 2)]


def test_a_fetch_from_a_broker_that_is_not_a_replica_is_refused_unread() -> None:
    partition = filled(TP, 3)

    result = fetch.handle(context(partition), fetch_request({TP: 0}, replica_id=9))

    assert decoded(result)[TP].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert partition.reads == []


def replica_fetch_request(
    offsets: dict[TopicPartition, int], *, replica_id: int = 2, current_leader_epoch: int = -1
) -> Any:
    m = importlib.import_module(f"kio.schema.fetch.v{VERSION}.request")
    return request(
        m.FetchRequest(
            replica_id=replica_id,
            max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=0)),
            min_bytes=1,
            max_bytes=1 << 20,
            topics=(
                m.FetchTopic(
                    topic=TP.topic,
                    partitions=tuple(
                        m.FetchPartition(
                            partition=tp.partition,
                            current_leader_epoch=current_leader_epoch,
                            fetch_offset=offset,
                            partition_max_bytes=1 << 20,
                        )
                        for tp, offset in offsets.items()
                    ),
                ),
            ),
            forgotten_topics_data=(),
        )
    )


def test_a_follower_fetch_reads_past_the_high_watermark_to_the_log_end() -> None:
    partition = filled(TP, 2)
    partition.committed = False
    partition.append_as_leader(batch(2))  # not committed: consumers do not see it

    consumer = decoded(fetch.handle(context(partition), fetch_request({TP: 1})))[TP]
    follower = decoded(fetch.handle(context(partition), replica_fetch_request({TP: 1})))[TP]

    assert consumer.records == batch(1)
    assert follower.records == batch(1) + batch(2)
    assert follower.high_watermark == 2  # the follower learns the leader's high watermark


def test_a_known_leader_epoch_is_checked_before_leadership() -> None:
    partition = filled(TP, 2, leader_epoch=5)

    def answer(epoch: int) -> Any:
        result = fetch.handle(
            context(partition), replica_fetch_request({TP: 0}, current_leader_epoch=epoch)
        )
        return decoded(result)[TP]

    assert answer(4).error_code == ErrorCode.FENCED_LEADER_EPOCH  # the fetcher is behind
    assert answer(6).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH  # this broker is behind
    assert answer(5).records == batch(0) + batch(1)
    assert answer(-1).records == batch(0) + batch(1)  # not given: not checked
    partition.is_leader = False
    assert answer(4).error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert answer(5).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_consumers_partition_at_the_high_watermark_is_answered_without_a_read() -> None:
    idle = filled(TP, 2)
    idle.log_start_offset = 1
    idle.committed = False
    idle.append_as_leader(batch(2))  # above the high watermark: a consumer cannot see it yet
    busy = filled(TP1, 3)

    result = fetch.handle(context(idle, busy), fetch_request({TP: 2, TP1: 1}))

    answers = decoded(result)
    assert idle.reads == []
    assert busy.reads != []
    assert answers[TP].error_code == ErrorCode.NONE
    assert answers[TP].high_watermark == 2
    assert answers[TP].last_stable_offset == 2
    assert answers[TP].log_start_offset == 1
    assert answers[TP].records in (b"", None)
    assert answers[TP1].records == batch(1) + batch(2)


def test_a_follower_at_the_high_watermark_still_reads_to_the_log_end() -> None:
    partition = filled(TP, 2)
    partition.committed = False
    partition.append_as_leader(batch(2))

    follower = decoded(fetch.handle(context(partition), replica_fetch_request({TP: 2})))[TP]

    assert partition.reads != []
    assert follower.records == batch(2)


def test_a_long_poll_at_the_high_watermark_reads_once_woken_by_news() -> None:
    partition = filled(TP, 1)
    purgatory = FakePurgatory()

    def producer_appends() -> None:
        partition.append_as_leader(batch(1, value_bytes=200))
        purgatory.notify(TP)

    purgatory.on_wait.append(producer_appends)
    ctx = context(partition, purgatory=purgatory)

    pending = fetch.handle(ctx, fetch_request({TP: 1}, max_wait_ms=500))

    assert inspect.isawaitable(pending)
    assert partition.reads == []  # caught up: nothing read before the wait
    answer = decoded(asyncio.run(_awaited(pending)))[TP]
    assert answer.records == batch(1, value_bytes=200)
    assert [offset for offset, _, _ in partition.reads] == [1]
