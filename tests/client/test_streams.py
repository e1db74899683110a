"""Live tests of ``ConsumerConnector`` against an embedded broker on 127.0.0.1: partitions split
over streams and over connectors of one group, topic filters (new topics picked up, blacklist),
commits resumed by a later connector, backpressure, timeout and shutdown."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.client.conftest import Produce

from odradek import (
    Blacklist,
    Broker,
    ConsumerConnector,
    ConsumerTimeoutError,
    MessageAndMetadata,
    MessageStream,
    TopicPartition,
    Whitelist,
)
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic
from odradek.records.record import SimpleRecord

TIMEOUT_S = 20.0

MakeConnector = Callable[..., ConsumerConnector]


@pytest.fixture
def broker() -> Iterator[Broker]:
    """An embedded broker whose groups form at once (no initial rebalance delay)."""
    config = {"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 3}
    with Broker(config=config) as started:
        yield started


@pytest.fixture
def create_topic(broker: Broker) -> Callable[[str, int], None]:
    def create(name: str, partitions: int = 1) -> None:
        with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            admin.create_topics([NewTopic(name, partitions, 1)]).all()

    return create


@pytest.fixture
def make_connector(broker: Broker) -> Iterator[MakeConnector]:
    made: list[ConsumerConnector] = []

    def make(**settings: Any) -> ConsumerConnector:
        settings.setdefault("group_id", "g")
        settings.setdefault("auto_offset_reset", "earliest")
        settings.setdefault("fetch_max_wait_ms", 100)
        connector = ConsumerConnector(bootstrap_servers=broker.bootstrap_servers, **settings)
        made.append(connector)
        return connector

    yield make
    for connector in made:
        connector.shutdown(10_000)


def fill(produce: Produce, topic: str, partitions: int, per_partition: int) -> None:
    for p in range(partitions):
        values = [b"%s-%d-%d" % (topic.encode(), p, i) for i in range(per_partition)]
        produce(topic, p, [SimpleRecord(1_000 + i, b"%d" % p, v) for i, v in enumerate(values)])


def eventually(condition: Callable[[], bool], what: str, timeout_s: float = TIMEOUT_S) -> None:
    """Waits for a condition other threads make true (short Event waits up to a deadline)."""
    deadline = time.monotonic() + timeout_s
    tick = threading.Event()
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        tick.wait(0.02)


class Reader:
    """Iterates one stream on its own thread, collecting messages, until the stream ends."""

    def __init__(self, stream: MessageStream) -> None:
        self.stream = stream
        self._lock = threading.Lock()
        self._messages: list[MessageAndMetadata] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for message in self.stream:
                with self._lock:
                    self._messages.append(message)
        except BaseException as error:
            self.error = error

    def messages(self) -> list[MessageAndMetadata]:
        with self._lock:
            return list(self._messages)

    def partitions(self) -> set[TopicPartition]:
        return {TopicPartition(m.topic, m.partition) for m in self.messages()}

    def finished(self, timeout_s: float = TIMEOUT_S) -> bool:
        self._thread.join(timeout_s)
        return not self._thread.is_alive()


def total(readers: list[Reader]) -> int:
    return sum(len(r.messages()) for r in readers)


def test_two_streams_over_four_partitions_split_them_and_see_every_record(
    make_connector: MakeConnector, create_topic, produce: Produce
) -> None:
    create_topic("t", 4)
    fill(produce, "t", 4, 25)
    connector = make_connector()
    streams = connector.create_message_streams({"t": 2})
    assert list(streams) == ["t"]
    readers = [Reader(s) for s in streams["t"]]
    eventually(lambda: total(readers) == 100, "100 records")
    first, second = (r.partitions() for r in readers)
    assert not first & second
    assert first | second == {TopicPartition("t", p) for p in range(4)}
    assert len(first) == len(second) == 2
    placement = connector.partitions_by_stream()
    assert {name: set(tps) for name, tps in placement.items()} == {"t-0": first, "t-1": second}
    for reader in readers:
        by_partition: dict[int, list[int]] = {}
        for m in reader.messages():
            by_partition.setdefault(m.partition, []).append(m.offset)
            assert m.value == b"t-%d-%d" % (m.partition, m.offset)
            assert m.key == b"%d" % m.partition
        assert all(offsets == list(range(25)) for offsets in by_partition.values())
    connector.shutdown()
    assert all(r.finished() and r.error is None for r in readers)


def test_two_connectors_in_a_group_split_the_partitions(
    make_connector: MakeConnector, create_topic, produce: Produce
) -> None:
    create_topic("shared", 4)
    a = make_connector()
    b = make_connector()
    readers = [Reader(s) for c in (a, b) for s in c.create_message_streams({"shared": 2})["shared"]]

    def split() -> bool:
        owned = [set(tps) for c in (a, b) for tps in c.partitions_by_stream().values()]
        union = set().union(*owned)
        return sum(map(len, owned)) == len(union) == 4 and all(owned)

    eventually(split, "a stable split of 4 partitions over 4 streams")
    fill(produce, "shared", 4, 10)
    eventually(lambda: total(readers) == 40, "40 records")
    seen = [r.partitions() for r in readers]
    assert all(len(s) == 1 for s in seen)  # each stream fed by one partition...
    assert set().union(*seen) == {TopicPartition("shared", p) for p in range(4)}  # ...each once
    assert sorted(m.value for r in readers for m in r.messages()) == sorted(
        b"shared-%d-%d" % (p, i) for p in range(4) for i in range(10)
    )


def test_whitelist_picks_up_a_topic_created_after_the_streams_started(
    make_connector: MakeConnector, create_topic, produce: Produce
) -> None:
    create_topic("wl-a", 2)
    create_topic("other", 1)
    fill(produce, "wl-a", 2, 5)
    fill(produce, "other", 1, 5)
    connector = make_connector(metadata_max_age_ms=200)
    streams = connector.create_message_streams_by_filter(Whitelist("wl-.*"), 2)
    readers = [Reader(s) for s in streams]
    eventually(lambda: total(readers) == 10, "the first topic's records")
    create_topic("wl-b", 1)
    fill(produce, "wl-b", 1, 5)
    eventually(lambda: total(readers) == 15, "the new topic's records")
    topics = {m.topic for r in readers for m in r.messages()}
    assert topics == {"wl-a", "wl-b"}
    placed = [set(tps) for tps in connector.partitions_by_stream().values()]
    assert not placed[0] & placed[1]
    assert placed[0] | placed[1] == {TopicPartition("wl-a", 0), TopicPartition("wl-a", 1)} | {
        TopicPartition("wl-b", 0)
    }


def test_blacklist_excludes_its_topics(
    make_connector: MakeConnector, create_topic, produce: Produce
) -> None:
    for name in ("keep", "skip-1", "skip-2"):
        create_topic(name, 1)
        fill(produce, name, 1, 4)
    connector = make_connector(metadata_max_age_ms=200)
    [stream] = connector.create_message_streams_by_filter(Blacklist("skip-.*"))
    reader = Reader(stream)
    eventually(lambda: len(reader.messages()) == 4, "the kept topic's records")
    assert connector.partitions_by_stream() == {"filter-0": [TopicPartition("keep", 0)]}
    connector.shutdown()
    assert reader.finished()
    assert {m.topic for m in reader.messages()} == {"keep"}
    assert connector.partitions_by_stream() == {"filter-0": []}  # left the group


@pytest.mark.parametrize("auto_commit", [False, True])
def test_a_new_connector_resumes_after_the_committed_records(
    make_connector: MakeConnector, create_topic, produce: Produce, auto_commit: bool
) -> None:
    create_topic("c", 1)
    fill(produce, "c", 1, 10)
    first = make_connector(group_id="resume", enable_auto_commit=auto_commit)
    [stream] = first.create_message_streams({"c": 1})["c"]
    taken = [next(stream) for _ in range(6)]
    assert [m.offset for m in taken] == list(range(6))
    if not auto_commit:
        first.commit_offsets()
    first.shutdown()  # with auto commit, shutdown commits what was handed out
    second = make_connector(group_id="resume", consumer_timeout_ms=TIMEOUT_S * 1000)
    [stream] = second.create_message_streams({"c": 1})["c"]
    rest = [next(stream) for _ in range(4)]
    assert [m.offset for m in rest] == [6, 7, 8, 9]


def test_commit_offsets_commits_only_what_was_handed_out(
    make_connector: MakeConnector, create_topic, produce: Produce, broker: Broker
) -> None:
    create_topic("h", 1)
    fill(produce, "h", 1, 10)
    connector = make_connector(group_id="handed", enable_auto_commit=False)
    [stream] = connector.create_message_streams({"h": 1})["h"]
    next(stream)
    next(stream)
    connector.commit_offsets()
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        offsets = admin.list_group_offsets("handed")
        committed = {tp: offsets[tp] for tp in offsets}
    assert {tp: o.offset if o else None for tp, o in committed.items()} == {
        TopicPartition("h", 0): 2
    }


def test_a_full_stream_pauses_only_its_partitions(
    make_connector: MakeConnector, create_topic, produce: Produce
) -> None:
    create_topic("bp", 2)
    fill(produce, "bp", 2, 60)
    connector = make_connector(queued_max_message_chunks=1, max_poll_records=5)
    slow, fast = connector.create_message_streams({"bp": 2})["bp"]
    fast_reader = Reader(fast)
    eventually(lambda: len(fast_reader.messages()) == 60, "the unblocked stream's records")
    eventually(lambda: connector.statistics()["paused_partitions"] == 1, "the full one paused")
    assert slow.statistics()["queued_chunks"] == 1
    assert slow.statistics()["queued_records"] <= 5
    slow_reader = Reader(slow)
    eventually(lambda: len(slow_reader.messages()) == 60, "the paused stream's records")
    assert [m.offset for m in slow_reader.messages()] == list(range(60))


def test_consumer_timeout_raises_and_shutdown_ends_iterators(
    make_connector: MakeConnector, create_topic
) -> None:
    create_topic("quiet", 2)
    timed = make_connector(group_id="timed", consumer_timeout_ms=100)
    [stream] = timed.create_message_streams({"quiet": 1})["quiet"]
    with pytest.raises(ConsumerTimeoutError):
        next(stream)
    connector = make_connector(group_id="blocked")
    streams = connector.create_message_streams({"quiet": 3})["quiet"]
    readers = [Reader(s) for s in streams]  # all blocked: nothing to read
    connector.shutdown()
    assert all(r.finished() and r.error is None and not r.messages() for r in readers)
    with pytest.raises(RuntimeError, match="shut down"):
        connector.commit_offsets()
    with pytest.raises(RuntimeError):
        connector.create_message_streams({"quiet": 1})
    connector.shutdown()  # idempotent
