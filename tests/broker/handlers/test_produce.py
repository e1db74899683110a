"""Produce without sockets: the handler over in-memory partitions (tests/broker/fakes.py).

Each partition's answer: the base offset of its one batch, or the error that refused it
(unknown partition, internal topic, not exactly one batch, the partition's own validation)
(waking fetches is the partition's: test_produce_wakes.py); acks=0 answers nothing, and closes the
connection (by raising) when a partition failed. acks: an invalid value refuses the whole
request; acks=all is refused before the append below min.insync.replicas and answered when
the high watermark passes the append (at once, with no timer, when the append moved it), or
REQUEST_TIMED_OUT after the request's timeout; acks=1 never waits.
"""

from __future__ import annotations

import asyncio
import datetime
import importlib
import inspect
from collections.abc import Callable
from typing import Any

import pytest
from kio.serial import entity_reader
from kio.static.primitive import i32Timedelta
from tests.broker.fakes import FakePartition, FakeTopics, context, request
from tests.broker.test_delayed_produce import ManualTimers

from odradek._types import TopicPartition
from odradek.broker.handlers import produce
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import response_class
from odradek.records.codec import SimpleRecord, build_batch

VERSION = 7
TP = TopicPartition("t", 0)


def batch(count: int = 1) -> bytes:
    return build_batch([SimpleRecord(1_000 + i, None, b"v%d" % i) for i in range(count)])


def produce_request(
    acks: int, data: dict[tuple[str, int], bytes | None], timeout_ms: int = 1000
) -> Any:
    m = importlib.import_module(f"kio.schema.produce.v{VERSION}.request")
    topics: dict[str, list[Any]] = {}
    for (name, index), records in data.items():
        topics.setdefault(name, []).append(m.PartitionProduceData(index=index, records=records))
    return request(
        m.ProduceRequest(
            acks=acks,
            timeout=_ms(timeout_ms),
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


def test_each_batch_gets_the_next_offsets() -> None:
    partition = FakePartition(TP)
    ctx = context(partition)

    first = answers(produce.handle(ctx, produce_request(1, {("t", 0): batch(3)})))
    second = answers(produce.handle(ctx, produce_request(-1, {("t", 0): batch(2)})))

    assert first == {("t", 0): (0, 0)}
    assert second == {("t", 0): (0, 3)}
    assert len(partition.appends) == 2


def test_partitions_fail_alone() -> None:
    good = FakePartition(TP)
    refusing = FakePartition(
        TopicPartition("t", 1),
        fail_with=KafkaError("too big", code=ErrorCode.MESSAGE_TOO_LARGE),
    )
    internal = FakePartition(TopicPartition("__consumer_offsets", 0))
    ctx = context(good, refusing, internal)

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
    assert len(good.batches) == 1
    assert refusing.batches == []


def test_a_disk_error_under_the_log_is_a_storage_error_of_that_partition_only() -> None:
    # Found by the fault suite (full disk): an OSError the storage layer did not map reached
    # the server, which closed the connection with every other partition's answer.
    failing = FakePartition(TP, fail_with=OSError(28, "No space left on device"))
    good = FakePartition(TopicPartition("t", 1))
    ctx = context(failing, good)

    result = answers(
        produce.handle(ctx, produce_request(1, {("t", 0): batch(), ("t", 1): batch()}))
    )

    assert result[("t", 0)][0] == ErrorCode.KAFKA_STORAGE_ERROR
    assert result[("t", 1)] == (ErrorCode.NONE, 0)


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


# --- acks --------------------------------------------------------------------------------------


@pytest.mark.parametrize("acks", [2, -2, 5])
def test_an_invalid_acks_refuses_every_partition_and_appends_nothing(acks: int) -> None:
    partition = FakePartition(TP)
    ctx = context(partition)

    result = answers(
        produce.handle(ctx, produce_request(acks, {("t", 0): batch(), ("u", 0): batch()}))
    )

    assert result == {
        ("t", 0): (ErrorCode.INVALID_REQUIRED_ACKS, -1),
        ("u", 0): (ErrorCode.INVALID_REQUIRED_ACKS, -1),
    }
    assert partition.appends == []


def test_acks_all_below_min_insync_replicas_is_refused_before_the_append() -> None:
    partition = FakePartition(TP, isr=[1], min_insync_replicas=2)
    ctx = context(partition)

    refused = answers(produce.handle(ctx, produce_request(-1, {("t", 0): batch()})))
    appended_after_refusal = len(partition.appends)
    leader_only = answers(produce.handle(ctx, produce_request(1, {("t", 0): batch()})))

    assert refused == {("t", 0): (ErrorCode.NOT_ENOUGH_REPLICAS, -1)}
    assert appended_after_refusal == 0
    assert leader_only == {("t", 0): (ErrorCode.NONE, 0)}  # acks=1 still works


@pytest.mark.parametrize(
    ("acks", "partition"),
    [
        (1, FakePartition(TP, committed=False, isr=[1, 2])),  # a lagging follower: no matter
        (-1, FakePartition(TP)),  # an ISR of one: the append moved the high watermark
    ],
    ids=["acks=1-lagging", "acks=all-isr-of-one"],
)
def test_answered_at_once_without_a_timer(acks: int, partition: FakePartition) -> None:
    timers = ManualTimers()
    ctx = context(partition, schedule=timers)

    response = produce.handle(ctx, produce_request(acks, {("t", 0): batch(2)}))

    assert isinstance(response, bytes)
    assert answers(response) == {("t", 0): (ErrorCode.NONE, 0)}
    assert timers.timers == []


def run_delayed(
    ctx: Any, request: Any, meanwhile: Callable[[], None]
) -> tuple[bool, dict[tuple[str, int], tuple[int, int]]]:
    """Runs the handler on a loop; ``meanwhile`` runs once the produce waits. Returns
    whether the handler had to wait, and the answers."""

    async def scenario() -> tuple[bool, bytes]:
        response = produce.handle(ctx, request)
        if not inspect.isawaitable(response):
            assert isinstance(response, bytes)
            return False, response
        waiting = asyncio.ensure_future(response)
        await asyncio.sleep(0)
        meanwhile()
        return True, await waiting

    waited, frame = asyncio.run(scenario())
    return waited, answers(frame)


def test_acks_all_is_answered_once_the_high_watermark_passes_the_append() -> None:
    lagging = FakePartition(TP, committed=False, isr=[1, 2])
    lagging.append_as_leader(batch(3))  # offsets 0-2, committed
    lagging.high_watermark = 3
    ctx = context(lagging, schedule=ManualTimers())

    def follower_catches_up() -> None:
        lagging.high_watermark = lagging.log_end_offset
        ctx.replicas.delayed_produce.check(lagging)  # type: ignore[attr-defined]

    waited, result = run_delayed(
        ctx, produce_request(-1, {("t", 0): batch(2)}), follower_catches_up
    )

    assert waited
    assert result == {("t", 0): (ErrorCode.NONE, 3)}


def test_acks_all_times_out_with_request_timed_out() -> None:
    lagging = FakePartition(TP, committed=False, isr=[1, 2])
    timers = ManualTimers()
    ctx = context(lagging, FakePartition(TopicPartition("t", 1)), schedule=timers)

    delays: list[float] = []

    def time_passes() -> None:
        delays.extend(timer.delay_s for timer in timers.timers)
        timers.fire()

    waited, result = run_delayed(
        ctx,
        produce_request(-1, {("t", 0): batch(), ("t", 1): batch()}, timeout_ms=250),
        time_passes,
    )

    assert waited
    assert delays == [0.25]  # the request's timeout_ms
    assert result == {("t", 0): (ErrorCode.REQUEST_TIMED_OUT, 0), ("t", 1): (ErrorCode.NONE, 0)}


@pytest.mark.parametrize("version", range(3, 13))
def test_an_appended_batch_is_answered_at_every_served_version(version: int) -> None:
    """The success answer is built on the fast path (every field given positionally): it
    must still encode and decode at each version, the flexible and KIP-951 ones included."""
    m = importlib.import_module(f"kio.schema.produce.v{version}.request")
    body = m.ProduceRequest(
        acks=1,
        timeout=_ms(1000),
        topic_data=(
            m.TopicProduceData(
                name="t", partition_data=(m.PartitionProduceData(index=0, records=batch(2)),)
            ),
        ),
        **({"transactional_id": None} if version >= 3 else {}),
    )
    ctx = context(FakePartition(TP))
    produce.handle(ctx, request(body))  # offsets 0-1
    frame = produce.handle(ctx, request(body))
    assert frame is not None
    response_type: Any = response_class(0, version)
    _, header_size = entity_reader(response_type.__header_schema__)(frame[4:], 0)
    response, _ = entity_reader(response_type)(frame[4:], header_size)
    [topic] = response.responses
    [answer] = topic.partition_responses
    assert (int(answer.error_code), int(answer.base_offset)) == (0, 2)
