"""Produce without sockets: the handler over in-memory partitions (tests/broker/fakes.py).

Each partition's answer: the base offset of its one batch, or the error that refused it
(unknown partition, internal topic, not exactly one batch, the partition's own validation);
appends wake fetches waiting on that partition; acks=0 answers nothing, and closes the
connection (by raising) when a partition failed.
"""

from __future__ import annotations

import datetime
import importlib
from typing import Any

import pytest
from kio.serial import entity_reader
from kio.static.primitive import i32Timedelta
from tests.broker.fakes import FakePartition, FakePurgatory, FakeTopics, context, request

from odradek._types import TopicPartition
from odradek.broker.handlers import produce
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import response_class
from odradek.records.codec import SimpleRecord, build_batch

VERSION = 7
TP = TopicPartition("t", 0)


def batch(count: int = 1) -> bytes:
    return build_batch([SimpleRecord(1_000 + i, None, b"v%d" % i) for i in range(count)])


def produce_request(acks: int, data: dict[tuple[str, int], bytes | None]) -> Any:
    m = importlib.import_module(f"kio.schema.produce.v{VERSION}.request")
    topics: dict[str, list[Any]] = {}
    for (name, index), records in data.items():
        topics.setdefault(name, []).append(m.PartitionProduceData(index=index, records=records))
    return request(
        m.ProduceRequest(
            acks=acks,
            timeout=_ms(1000),
            topic_data=tuple(
                m.TopicProduceData(name=name, partition_data=tuple(parts))
                for name, parts in topics.items()
            ),
        )
    )


def _ms(value: int) -> Any:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def answers(frame: bytes | None) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) → (error code, base offset) from an encoded response frame."""
    assert frame is not None
    response_type: Any = response_class(0, VERSION)
    _, header_size = entity_reader(response_type.__header_schema__)(frame[4:], 0)
    response, _ = entity_reader(response_type)(frame[4:], header_size)
    return {
        (str(topic.name), int(p.index)): (int(p.error_code), int(p.base_offset))
        for topic in response.responses
        for p in topic.partition_responses
    }


def test_each_batch_gets_the_next_offsets_and_wakes_fetches() -> None:
    partition = FakePartition(TP)
    purgatory = FakePurgatory()
    ctx = context(partition, purgatory=purgatory)

    first = answers(produce.handle(ctx, produce_request(1, {("t", 0): batch(3)})))
    second = answers(produce.handle(ctx, produce_request(-1, {("t", 0): batch(2)})))

    assert first == {("t", 0): (0, 0)}
    assert second == {("t", 0): (0, 3)}
    assert len(partition.appends) == 2
    assert purgatory.notified == [TP, TP]


def test_partitions_fail_alone() -> None:
    good = FakePartition(TP)
    refusing = FakePartition(
        TopicPartition("t", 1),
        fail_with=KafkaError("too big", code=ErrorCode.MESSAGE_TOO_LARGE),
    )
    internal = FakePartition(TopicPartition("__consumer_offsets", 0))
    purgatory = FakePurgatory()
    ctx = context(good, refusing, internal, purgatory=purgatory)

    result = answers(
        produce.handle(
            ctx,
            produce_request(
                1,
                {
                    ("t", 0): batch(),
                    ("t", 1): batch(),
                    ("t", 9): batch(),
                    ("__consumer_offsets", 0): batch(),
                },
            ),
        )
    )

    assert result[("t", 0)] == (ErrorCode.NONE, 0)
    assert result[("t", 1)][0] == ErrorCode.MESSAGE_TOO_LARGE
    assert result[("t", 9)][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert result[("__consumer_offsets", 0)][0] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert internal.appends == []
    assert purgatory.notified == [TP]  # only the append that happened wakes anyone


@pytest.mark.parametrize(
    ("records", "code"),
    [
        (None, ErrorCode.INVALID_RECORD),
        (b"", ErrorCode.INVALID_RECORD),
        (batch() + batch(), ErrorCode.INVALID_RECORD),  # two batches: Kafka wants one
        (batch()[:-3], ErrorCode.CORRUPT_MESSAGE),  # the batch says it is longer
    ],
    ids=["null", "empty", "two-batches", "truncated"],
)
def test_exactly_one_whole_batch_per_partition(records: bytes | None, code: ErrorCode) -> None:
    partition = FakePartition(TP)

    result = answers(produce.handle(context(partition), produce_request(1, {("t", 0): records})))

    assert result[("t", 0)][0] == code
    assert partition.appends == []


def test_acks_zero_answers_nothing_and_closes_on_failure() -> None:
    partition = FakePartition(TP)
    ctx = context(partition)

    assert produce.handle(ctx, produce_request(0, {("t", 0): batch()})) is None
    assert len(partition.batches) == 1
    with pytest.raises(KafkaError) as raised:
        produce.handle(ctx, produce_request(0, {("t", 5): batch()}))
    assert raised.value.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_unknown_topic_is_answered_without_touching_the_topics() -> None:
    topics = FakeTopics({"t"}, auto_create=True)
    ctx = context(FakePartition(TP), topics=topics)

    result = answers(produce.handle(ctx, produce_request(1, {("new", 0): batch()})))

    assert result[("new", 0)][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert topics.created == []  # Produce never auto-creates (Metadata does)


def test_a_follower_answers_not_leader_or_follower_and_appends_nothing() -> None:
    follower = FakePartition(TP, is_leader=False)  # in a cluster, another broker leads it

    result = answers(produce.handle(context(follower), produce_request(1, {("t", 0): batch()})))

    assert result[("t", 0)][0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert follower.appends == []
