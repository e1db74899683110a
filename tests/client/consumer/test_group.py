"""``Consumer`` in a group against a live embedded broker: members split partitions (range,
roundrobin, cooperative-sticky), a leaving member's partitions move, commits (sync, async,
explicit offsets) and ``committed``, a restarted member resumes from its commits, auto commit on
close, max.poll.interval.ms makes a member leave and lose its partitions, listener order, pattern
subscriptions picking up new topics, and static membership."""

from __future__ import annotations

import re

import pytest
from tests.client.conftest import Produce
from tests.client.consumer.conftest import MakeConsumer, Member, eventually, poll_until, wait_for

from odradek import Consumer, OffsetAndMetadata, TopicPartition
from odradek.client.consumer import CommitFailedError
from odradek.records.record import SimpleRecord

BASE_MS = 1_700_000_000_000


def fill(produce: Produce, topic: str, partitions: int, per_partition: int, start: int = 0) -> None:
    for p in range(partitions):
        produce(
            topic,
            p,
            [
                SimpleRecord(BASE_MS + i, b"%d" % p, b"%s-%d-%d" % (topic.encode(), p, i))
                for i in range(start, start + per_partition)
            ],
        )


def all_partitions(topic: str, count: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(count)}


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_two_members_split_then_one_takes_all(
    make_consumer: MakeConsumer, create_topic, produce: Produce, strategy: str
) -> None:  # type: ignore[no-untyped-def]
    create_topic("g", 4)
    fill(produce, "g", 4, 10)
    settings = {
        "group_id": f"split-{strategy}",
        "auto_offset_reset": "earliest",
        "partition_assignment_strategy": [strategy],
        "heartbeat_interval_ms": 100,
    }
    a = Member(make_consumer(**settings), ["g"])
    b = Member(make_consumer(**settings), ["g"])
    eventually(
        lambda: len(a.current()) == 2 and len(b.current()) == 2,
        what="two members with two partitions each",
    )
    assert a.current() | b.current() == all_partitions("g", 4)
    assert not a.current() & b.current()
    moved_to_b = b.current()
    eventually(lambda: len(a.seen()) + len(b.seen()) >= 40, what="every record")
    b.stop()
    eventually(lambda: a.current() == all_partitions("g", 4), what="the survivor takes all")
    fill(produce, "g", 4, 5, start=10)
    eventually(
        lambda: (
            {(r.partition, r.offset) for r in a.seen()}
            >= {(p, o) for p in range(4) for o in range(10, 15)}
        ),
        what="the new records of every partition",
    )
    if strategy == "cooperative-sticky":
        # Incremental: the survivor only ever gave up what moved to the other member.
        revoked = {tp for kind, tps in a.events if kind == "revoked" for tp in tps}
        assert revoked <= moved_to_b
    a.stop()


def test_commit_sync_async_and_committed(
    make_consumer: MakeConsumer, create_topic, produce: Produce
) -> None:  # type: ignore[no-untyped-def]
    create_topic("c", 2)
    fill(produce, "c", 2, 5)
    consumer = make_consumer(
        group_id="commits", auto_offset_reset="earliest", enable_auto_commit=False
    )
    consumer.subscribe(["c"])
    poll_until(consumer, 10)
    c0, c1 = TopicPartition("c", 0), TopicPartition("c", 1)
    assert consumer.committed([c0, c1]) == {c0: None, c1: None}
    consumer.commit_sync()
    assert consumer.committed([c0, c1]) == {c0: OffsetAndMetadata(5), c1: OffsetAndMetadata(5)}
    consumer.commit_sync({c0: OffsetAndMetadata(2, "two")})
    assert consumer.committed([c0])[c0] == OffsetAndMetadata(2, "two")
    results: list[object] = []
    consumer.commit_async(
        {c1: 3}, callback=lambda offsets, error: results.append((dict(offsets), error))
    )
    eventually(lambda: bool(consumer.poll(50) or results), what="the commit callback")
    assert results == [({c1: OffsetAndMetadata(3)}, None)]
    assert consumer.committed([c1])[c1] == OffsetAndMetadata(3)


def test_restart_resumes_from_committed(
    make_consumer: MakeConsumer, create_topic, produce: Produce
) -> None:  # type: ignore[no-untyped-def]
    create_topic("r", 1)
    fill(produce, "r", 1, 10)
    first = make_consumer(
        group_id="resume",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_records=4,
    )
    first.subscribe(["r"])
    got = first.poll(5_000)
    assert [r.offset for r in got] == [0, 1, 2, 3]
    first.commit_sync()
    first.close()
    second = make_consumer(group_id="resume", auto_offset_reset="earliest")
    second.subscribe(["r"])
    assert [r.offset for r in poll_until(second, 6)] == [4, 5, 6, 7, 8, 9]
    assert second.position(TopicPartition("r", 0)) == 10
    second.close()  # auto commit on close
    third = make_consumer(group_id="resume", auto_offset_reset="earliest")
    assert third.committed([TopicPartition("r", 0)])[TopicPartition("r", 0)] == OffsetAndMetadata(
        10
    )


def test_poll_interval_exceeded_loses_partitions(
    make_consumer: MakeConsumer, create_topic, produce: Produce
) -> None:  # type: ignore[no-untyped-def]
    create_topic("slow", 2)
    fill(produce, "slow", 2, 3)
    settings = {"group_id": "slow", "auto_offset_reset": "earliest", "heartbeat_interval_ms": 100}
    slow = Member(make_consumer(max_poll_interval_ms=1_500, **settings), ["slow"])
    eventually(lambda: len(slow.current()) == 2, what="the first member owns everything")
    other = Member(make_consumer(**settings), ["slow"])
    eventually(lambda: len(slow.current()) == 1 and len(other.current()) == 1, what="a split")
    slow.paused.set()  # stops calling poll(): it must leave the group
    eventually(lambda: len(other.current()) == 2, what="the poller takes everything")
    slow.paused.clear()
    eventually(
        lambda: (
            ("lost", sorted(slow.current() or [])) in slow.events
            or any(k == "lost" for k, _ in slow.events)
        ),
        what="on_partitions_lost",
    )
    other.stop()
    slow.stop()


def test_listener_order_eager(make_consumer: MakeConsumer, create_topic) -> None:  # type: ignore[no-untyped-def]
    create_topic("l", 2)
    settings = {
        "group_id": "listen",
        "heartbeat_interval_ms": 100,
        "partition_assignment_strategy": "range",
    }
    a = Member(make_consumer(**settings), ["l"])
    eventually(lambda: len(a.current()) == 2)
    b = Member(make_consumer(**settings), ["l"])
    eventually(lambda: len(a.current()) == 1 and len(b.current()) == 1)
    both = sorted(all_partitions("l", 2))
    assert a.events[0] == ("assigned", both)
    assert a.events[1] == ("revoked", both)
    assert a.events[2][0] == "assigned"
    assert len(a.events[2][1]) == 1
    b.stop()
    a.stop()
    assert a.events[-1][0] == "revoked"


def test_pattern_subscription_picks_up_new_topics(
    make_consumer: MakeConsumer, create_topic, produce: Produce
) -> None:  # type: ignore[no-untyped-def]
    create_topic("pat-a", 1)
    consumer = make_consumer(
        group_id="pattern", auto_offset_reset="earliest", metadata_max_age_ms=200
    )
    consumer.subscribe(re.compile(r"^pat-"))
    eventually(
        lambda: not consumer.poll(50) and consumer.assignment() == {TopicPartition("pat-a", 0)}
    )
    create_topic("pat-b", 1)
    fill(produce, "pat-b", 1, 2)
    # the poll that completes the join may already return pat-b's records: keep them
    records = []
    eventually(
        lambda: (
            bool(records.extend(consumer.poll(50)))
            or TopicPartition("pat-b", 0) in consumer.assignment()
        ),
        what="pat-b assigned",
    )
    assert consumer.subscription() == {"pat-a", "pat-b"}
    records += poll_until(consumer, 2 - len(records)) if len(records) < 2 else []
    assert [r.topic for r in records] == ["pat-b", "pat-b"]


def test_static_member_keeps_its_partitions_across_a_restart(
    make_consumer: MakeConsumer, create_topic
) -> None:  # type: ignore[no-untyped-def]
    create_topic("s", 2)
    settings = {"group_id": "static", "heartbeat_interval_ms": 100, "session_timeout_ms": 10_000}
    a = Member(make_consumer(group_instance_id="a", **settings), ["s"])
    b = Member(make_consumer(group_instance_id="b", **settings), ["s"])
    eventually(lambda: len(a.current()) == 1 and len(b.current()) == 1)
    owned = b.current()
    b.stop()  # a static member does not leave: its partitions wait for it
    assert len(a.current()) == 1
    again = Member(make_consumer(group_instance_id="b", **settings), ["s"])
    eventually(lambda: again.current() == owned, what="the restarted static member's partitions")
    assert len(a.current()) == 1
    again.stop()
    a.stop()


def test_commit_after_rebalance_fails(make_consumer: MakeConsumer, create_topic) -> None:  # type: ignore[no-untyped-def]
    create_topic("f", 1)
    consumer = make_consumer(group_id="fenced", enable_auto_commit=False)
    consumer.subscribe(["f"])
    eventually(lambda: not consumer.poll(50) and bool(consumer.assignment()))
    consumer._coordinator._generation += 7  # type: ignore[union-attr]  # a stale generation
    with pytest.raises(CommitFailedError):
        consumer.commit_sync({TopicPartition("f", 0): 0})


def test_subscribe_needs_group_and_excludes_assign(make_consumer: MakeConsumer) -> None:
    consumer = make_consumer(group_id="x")
    consumer.assign([TopicPartition("t", 0)])
    with pytest.raises(RuntimeError):
        consumer.subscribe(["t"])
    assert isinstance(consumer, Consumer)


def test_two_members_polled_from_one_thread_both_join(
    make_consumer: MakeConsumer, create_topic, produce: Produce
) -> None:  # type: ignore[no-untyped-def]
    """poll(timeout) keeps to its timeout while the member joins: a second member polled
    from the same thread as the first joins, because the first gets to rejoin between the
    second's polls (a blocking join waited for max.poll.interval.ms, 30 s here, so this
    single thread never saw both members assigned within the test's deadline)."""
    create_topic("one-thread", 4)
    fill(produce, "one-thread", 4, 5)
    settings = {
        "group_id": "one-thread",
        "auto_offset_reset": "earliest",
        "heartbeat_interval_ms": 100,
        "max_poll_interval_ms": 30_000,
    }
    first = make_consumer(**settings)
    first.subscribe(["one-thread"])
    poll_until(first, 20)
    second = make_consumer(**settings)
    second.subscribe(["one-thread"])

    def both_assigned() -> bool:
        first.poll(200)
        second.poll(200)
        return bool(first.assignment()) and bool(second.assignment())

    wait_for(both_assigned, timeout_s=15, what="both members assigned, from one thread")
    assert first.assignment() | second.assignment() == all_partitions("one-thread", 4)
    assert not first.assignment() & second.assignment()


def test_pattern_subscription_with_an_exclude_pattern(
    make_consumer: MakeConsumer, create_topic, produce: Produce
) -> None:  # type: ignore[no-untyped-def]
    for topic in ("metrics-a", "metrics-b", "metrics-internal", "logs"):
        create_topic(topic, 1)
        fill(produce, topic, 1, 2)
    consumer = make_consumer(group_id="exclude", auto_offset_reset="earliest")
    consumer.subscribe(pattern="^metrics-", exclude_pattern="internal$")
    records = poll_until(consumer, 4)
    assert {r.topic for r in records} == {"metrics-a", "metrics-b"}
    assert consumer.subscription() == {"metrics-a", "metrics-b"}
    everything_but = make_consumer(group_id="exclude-only", auto_offset_reset="earliest")
    everything_but.subscribe(exclude_pattern="^(metrics-|__)")
    assert {r.topic for r in poll_until(everything_but, 2)} == {"logs"}
    with pytest.raises(ValueError, match="exclude_pattern"):
        consumer.subscribe(["logs"], exclude_pattern="x")
