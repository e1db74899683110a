"""``Consumer`` with ``group.protocol=consumer`` (KIP-848) against a live embedded broker:
two and three members share the partitions without overlap and take over from one that
closes; a member whose heartbeats stop is fenced, loses its partitions and rejoins at epoch 0;
``max.poll.interval.ms``; commits and ``committed`` at the member epoch; static members; a
regex subscription matched by the broker; members polled from one thread; bad settings and an
unknown server assignor fail clearly. (A SIGKILLed member, and a group shared with
confluent-kafka: tests/interop/test_groups_kip848_odradek.py.)"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from tests.client.conftest import Produce
from tests.client.consumer.conftest import MakeConsumer, Member, eventually, poll_until
from tests.client.consumer.test_group import all_partitions, fill

from odradek import Broker, Consumer, OffsetAndMetadata, TopicPartition
from odradek.client.consumer.group_membership import ConsumerMembership
from odradek.errors import ConfigError, ErrorCode, KafkaError

KIP848 = {"group_protocol": "consumer", "auto_offset_reset": "earliest"}
SESSION_TIMEOUT_MS = 3_000


@pytest.fixture
def broker() -> Iterator[Broker]:
    """Groups form at once; KIP-848 members heartbeat every 200 ms, expire after 3 s."""
    config = {
        "group.initial.rebalance.delay.ms": 0,
        "offsets.topic.num.partitions": 3,
        "group.consumer.heartbeat.interval.ms": 200,
        "group.consumer.session.timeout.ms": SESSION_TIMEOUT_MS,
    }
    with Broker(config=config) as started:
        yield started


class History:
    """Per-member ownership intervals from the listener calls, to check for overlap."""

    def __init__(self, members: list[Member]) -> None:
        self.members = members

    def owners(self) -> dict[TopicPartition, list[int]]:
        """Who owns each partition now, by the listener calls seen so far."""
        owned: dict[TopicPartition, list[int]] = {}
        for index, member in enumerate(self.members):
            mine: set[TopicPartition] = set()
            for kind, tps in list(member.events):
                if kind == "assigned":
                    mine |= set(tps)
                else:
                    mine -= set(tps)
            for tp in mine:
                owned.setdefault(tp, []).append(index)
        return owned


def _records_by_partition(member: Member) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for record in member.seen():
        out.setdefault(record.partition, []).append(record.offset)
    return out


@pytest.mark.parametrize("count", [2, 3])
def test_members_share_partitions_and_take_over_from_one_that_closes(
    make_consumer: MakeConsumer, create_topic: Any, produce: Produce, count: int
) -> None:
    create_topic("k", 6)
    fill(produce, "k", 6, 10)
    members = [
        Member(make_consumer(group_id=f"kip848-{count}", **KIP848), ["k"]) for _ in range(count)
    ]
    history = History(members)
    share = 6 // count

    def split_evenly() -> bool:
        return all(len(m.current()) == share for m in members)

    eventually(split_evenly, what=f"{count} members with {share} partitions each")
    union = set().union(*(m.current() for m in members))
    assert union == all_partitions("k", 6)
    assert sum(len(m.current()) for m in members) == 6  # no partition twice
    assert all(len(owners) == 1 for owners in history.owners().values())
    eventually(lambda: sum(len(m.seen()) for m in members) >= 60, what="every record")
    # Each record was read by exactly one member.
    seen = [(r.partition, r.offset) for m in members for r in m.seen()]
    assert len(seen) == len(set(seen)) == 60
    leaving = members.pop()
    leaving.stop()  # commits (auto commit) and leaves with epoch -1
    remaining_share = 6 // len(members)
    eventually(
        lambda: all(len(m.current()) == remaining_share for m in members),
        what="the survivors take the leaver's partitions",
    )
    assert set().union(*(m.current() for m in members)) == all_partitions("k", 6)
    fill(produce, "k", 6, 5, start=10)
    eventually(
        lambda: (
            {(r.partition, r.offset) for m in members for r in m.seen()}
            >= {(p, o) for p in range(6) for o in range(10, 15)}
        ),
        what="the new records of every partition",
    )
    # The leaver committed what it had read: nobody re-read its records.
    before = {(r.partition, r.offset) for r in leaving.seen()}
    after = {(r.partition, r.offset) for m in members for r in m.seen()}
    assert not before & after
    for member in members:
        member.stop()


def test_a_member_whose_heartbeats_stop_is_fenced_loses_its_partitions_and_rejoins(
    make_consumer: MakeConsumer, create_topic: Any, produce: Produce
) -> None:
    create_topic("f", 4)
    fill(produce, "f", 4, 5)
    a = Member(make_consumer(group_id="fence", **KIP848), ["f"])
    b = Member(make_consumer(group_id="fence", **KIP848), ["f"])
    eventually(lambda: len(a.current()) == 2 and len(b.current()) == 2, what="2 + 2")
    # Hold b's member state: its heartbeat thread (and poll) block, the broker expires it.
    membership = b.consumer._coordinator
    assert membership is not None
    with membership._lock:
        eventually(lambda: a.current() == all_partitions("f", 4), what="a takes b's partitions")
    # b's next heartbeat is refused (the member is gone): it loses its partitions, then
    # rejoins at epoch 0 and gets a share again.
    eventually(lambda: any(kind == "lost" for kind, _ in b.events), what="b's partitions lost")
    eventually(lambda: len(a.current()) == 2 and len(b.current()) == 2, what="2 + 2 again")
    assert not a.current() & b.current()
    lost_at = next(i for i, (kind, _) in enumerate(b.events) if kind == "lost")
    assert any(kind == "assigned" and tps for kind, tps in b.events[lost_at:])
    a.stop()
    b.stop()


def test_poll_interval_exceeded_leaves_and_the_member_rejoins(
    make_consumer: MakeConsumer, create_topic: Any
) -> None:
    create_topic("pi", 2)
    settings = {"group_id": "poll-interval", "max_poll_interval_ms": 1_000, **KIP848}
    a = Member(make_consumer(**settings), ["pi"])
    b = Member(make_consumer(**settings), ["pi"])
    eventually(lambda: len(a.current()) == 1 and len(b.current()) == 1, what="1 + 1")
    b.paused.set()  # b stops calling poll(): after max.poll.interval.ms it leaves
    eventually(lambda: a.current() == all_partitions("pi", 2), what="a takes both")
    b.paused.clear()
    eventually(lambda: any(kind == "lost" for kind, _ in b.events), what="b's loss reported")
    eventually(lambda: len(a.current()) == 1 and len(b.current()) == 1, what="b back")
    a.stop()
    b.stop()


def test_commits_and_committed_at_the_member_epoch_and_a_restart_resumes(
    make_consumer: MakeConsumer, create_topic: Any, produce: Produce
) -> None:
    create_topic("cm", 2)
    fill(produce, "cm", 2, 10)
    settings = {"group_id": "commits", "enable_auto_commit": False, **KIP848}
    consumer = make_consumer(**settings)
    consumer.subscribe(["cm"])
    records = poll_until(consumer, 20)
    assert len({(r.partition, r.offset) for r in records}) == 20
    consumer.commit_sync({TopicPartition("cm", 0): OffsetAndMetadata(7, "meta")})
    consumer.commit_sync({TopicPartition("cm", 1): 4})
    committed = consumer.committed([TopicPartition("cm", 0), TopicPartition("cm", 1)])
    assert committed[TopicPartition("cm", 0)] == OffsetAndMetadata(7, "meta", -1) or (
        committed[TopicPartition("cm", 0)] is not None
        and committed[TopicPartition("cm", 0)].offset == 7
        and committed[TopicPartition("cm", 0)].metadata == "meta"
    )
    assert committed[TopicPartition("cm", 1)] is not None
    assert committed[TopicPartition("cm", 1)].offset == 4
    consumer.close()
    again = make_consumer(**settings)
    again.subscribe(["cm"])
    resumed = poll_until(again, 3 + 6)
    assert sorted((r.partition, r.offset) for r in resumed) == sorted(
        [(0, o) for o in range(7, 10)] + [(1, o) for o in range(4, 10)]
    )


def test_close_commits_and_the_next_member_starts_there(
    make_consumer: MakeConsumer, create_topic: Any, produce: Produce
) -> None:
    create_topic("ac", 1)
    fill(produce, "ac", 1, 10)
    first = make_consumer(group_id="autocommit", **KIP848)
    first.subscribe(["ac"])
    assert len(poll_until(first, 10)) == 10
    first.close()  # auto commit on close, then the leave heartbeat
    fill(produce, "ac", 1, 3, start=10)
    second = make_consumer(group_id="autocommit", **KIP848)
    second.subscribe(["ac"])
    assert [r.offset for r in poll_until(second, 3)] == [10, 11, 12]


def test_a_static_member_gets_its_partitions_back_and_the_other_keeps_its_own(
    make_consumer: MakeConsumer, create_topic: Any
) -> None:
    create_topic("st", 4)
    settings = {"group_id": "static", **KIP848}
    a = Member(make_consumer(group_instance_id="a", **settings), ["st"])
    b = Member(make_consumer(group_instance_id="b", **settings), ["st"])
    eventually(lambda: len(a.current()) == 2 and len(b.current()) == 2, what="2 + 2")
    held_by_a, held_by_b = a.current(), b.current()
    events_of_b = len(b.events)
    a.stop()  # leaves with epoch -2: its partitions wait for it (session timeout)
    back = Member(make_consumer(group_instance_id="a", **settings), ["st"])
    eventually(lambda: back.current() == held_by_a, what="a's partitions back to a")
    assert b.current() == held_by_b
    assert len(b.events) == events_of_b  # b was never asked to revoke or take anything
    back.stop()
    b.stop()


def test_a_second_live_member_with_the_same_instance_id_fails_clearly(
    make_consumer: MakeConsumer, create_topic: Any
) -> None:
    create_topic("dup", 1)
    first = Member(make_consumer(group_id="dup", group_instance_id="i", **KIP848), ["dup"])
    eventually(lambda: len(first.current()) == 1, what="the first member")
    second = make_consumer(group_id="dup", group_instance_id="i", **KIP848)
    second.subscribe(["dup"])
    failure: list[KafkaError] = []

    def fails() -> bool:
        try:
            second.poll(100)
        except KafkaError as error:
            failure.append(error)
            return True
        return False

    eventually(fails, what="the duplicate static member's error")
    assert failure[0].error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    assert first.current() == all_partitions("dup", 1)
    first.stop()


def test_a_regex_subscription_is_matched_by_the_broker(
    make_consumer: MakeConsumer, create_topic: Any
) -> None:
    for name in ("rx-a", "rx-b", "other"):
        create_topic(name, 1)
    consumer = make_consumer(group_id="regex", **KIP848)
    consumer.subscribe(regex="rx-.*")

    def assigned() -> bool:
        consumer.poll(100)
        return consumer.assignment() == {TopicPartition("rx-a", 0), TopicPartition("rx-b", 0)}

    eventually(assigned, what="the topics the regex matches")
    create_topic("rx-c", 1)  # a new matching topic joins the subscription

    def grown() -> bool:
        consumer.poll(100)
        return TopicPartition("rx-c", 0) in consumer.assignment()

    eventually(grown, what="the new matching topic")
    assert TopicPartition("other", 0) not in consumer.assignment()


def test_two_members_polled_from_one_thread_both_get_partitions(
    make_consumer: MakeConsumer, create_topic: Any
) -> None:
    create_topic("one", 2)
    a = make_consumer(group_id="one-thread", **KIP848)
    b = make_consumer(group_id="one-thread", **KIP848)
    a.subscribe(["one"])
    b.subscribe(["one"])

    def both() -> bool:
        a.poll(50)
        b.poll(50)
        return len(a.assignment()) == 1 and len(b.assignment()) == 1

    eventually(both, what="a partition each, polled alternately from one thread")
    assert a.assignment() | b.assignment() == all_partitions("one", 2)


def test_an_unknown_server_assignor_fails_poll_with_the_broker_error(
    make_consumer: MakeConsumer, create_topic: Any
) -> None:
    create_topic("ua", 1)
    consumer = make_consumer(group_id="ua", group_remote_assignor="no-such", **KIP848)
    consumer.subscribe(["ua"])
    errors: list[KafkaError] = []

    def failed() -> bool:
        try:
            consumer.poll(100)
        except KafkaError as error:
            errors.append(error)
            return True
        return False

    eventually(failed, what="the assignor error")
    assert errors[0].error_code == ErrorCode.UNSUPPORTED_ASSIGNOR


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"group_protocol": "cooperative"}, "group.protocol: invalid value 'cooperative'"),
        (
            {"group_protocol": "consumer", "partition_assignment_strategy": ["range"]},
            "partition.assignment.strategy: not used with group.protocol=consumer",
        ),
        (
            {"group_protocol": "consumer", "session_timeout_ms": 10_000},
            "session.timeout.ms: not used with group.protocol=consumer",
        ),
        ({"group_remote_assignor": "range"}, "group.remote.assignor: needs group.protocol"),
    ],
)
def test_bad_group_protocol_settings_are_refused(
    broker: Broker, settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        Consumer(bootstrap_servers=broker.bootstrap_servers, group_id="g", **settings)


def test_regex_needs_the_consumer_protocol(make_consumer: MakeConsumer) -> None:
    consumer = make_consumer(group_id="classic")
    with pytest.raises(ConfigError, match=re.escape("needs group.protocol=consumer")):
        consumer.subscribe(regex="x.*")


def test_the_default_is_still_the_classic_protocol(make_consumer: MakeConsumer) -> None:
    consumer = make_consumer(group_id="default")
    assert consumer._settings.group_protocol == "classic"
    assert type(consumer._coordinator).__name__ == "ConsumerCoordinator"


def test_revoked_partitions_are_committed_before_the_new_owner_reads_them(
    make_consumer: MakeConsumer, create_topic: Any, produce: Produce
) -> None:
    create_topic("rv", 4)
    fill(produce, "rv", 4, 10)
    # Auto commit on, but its timer far away: only the commit before a revocation can save
    # what a has read.
    settings = {"group_id": "revoke-commit", "auto_commit_interval_ms": 600_000, **KIP848}
    a = Member(make_consumer(**settings), ["rv"])
    eventually(lambda: len(a.seen()) == 40, what="a reads every record alone")
    b = Member(make_consumer(**settings), ["rv"])
    eventually(lambda: len(a.current()) == 2 and len(b.current()) == 2, what="2 + 2")
    fill(produce, "rv", 4, 2, start=10)
    eventually(
        lambda: (
            {(r.partition, r.offset) for m in (a, b) for r in m.seen()}
            >= {(p, o) for p in range(4) for o in (10, 11)}
        ),
        what="the new records",
    )
    # b started its partitions where a had committed them on revocation: nothing re-read.
    assert sorted(r.offset for r in b.seen()) == [10, 10, 11, 11]
    revoked = [tps for kind, tps in a.events if kind == "revoked"]
    assert sorted(tp for tps in revoked for tp in tps) == sorted(b.current())
    a.stop()
    b.stop()


def test_heartbeats_report_the_partitions_owned_by_topic_id(
    make_consumer: MakeConsumer, create_topic: Any
) -> None:
    """The acknowledgement KIP-848 reconciliation waits for: what the member owns, which the
    broker must not hand to another member before the member stops reporting it."""
    create_topic("hb", 3)
    consumer = make_consumer(group_id="heartbeat-fields", **KIP848)
    consumer.subscribe(["hb"])

    def assigned() -> bool:
        consumer.poll(100)
        return consumer.assignment() == all_partitions("hb", 3)

    eventually(assigned, what="every partition")
    membership = consumer._coordinator
    assert isinstance(membership, ConsumerMembership)
    topic_id = consumer._metadata.cluster.topics["hb"].topic_id
    assert topic_id is not None
    fields = membership._heartbeat_fields(membership.member_epoch)
    assert fields["topic_partitions"] == [{"topic_id": topic_id, "partitions": [0, 1, 2]}]
    assert fields["subscribed_topic_names"] == ["hb"]
    assert fields["member_epoch"] > 0


def test_a_client_side_pattern_is_sent_as_topic_names(
    make_consumer: MakeConsumer, create_topic: Any
) -> None:
    create_topic("pat-x", 1)
    create_topic("pat-y", 1)
    consumer = make_consumer(group_id="pattern", metadata_max_age_ms=200, **KIP848)
    consumer.subscribe(pattern="^pat-", exclude_pattern="y$")

    def assigned() -> bool:
        consumer.poll(100)
        return consumer.assignment() == {TopicPartition("pat-x", 0)}

    eventually(assigned, what="the matching, not excluded topic")
    create_topic("pat-z", 1)

    def grown() -> bool:
        consumer.poll(100)
        return consumer.assignment() == {TopicPartition("pat-x", 0), TopicPartition("pat-z", 0)}

    eventually(grown, what="the new matching topic, after a metadata refresh")
