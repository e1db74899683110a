"""The ZooKeeper-coordinated ``ConsumerConnector`` against a real ZooKeeper and a broker
registered in it (one embedded broker for the module; each test has its own group and topic):
the owner registry shows the range assignment through joins and leaves, offsets committed to
ZooKeeper are resumed by a new connector, dual commit writes both stores and reads the
greater, and a claim another member holds is retried with backoff, then refused."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient  # tests only: expire a session the way ZooKeeper does
from tests._zookeeper import zookeeper

from odradek import Broker, ConsumerConnector, MessageAndMetadata, TopicPartition, Whitelist
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic
from odradek.client.consumer import Consumer
from odradek.client.producer import Producer
from odradek.client.streams import ConsumerIdInUseError, ConsumerRebalanceFailedError
from odradek.controller.zookeeper import ZooKeeperMetadataStore
from odradek.errors import NoNodeError, StoreConnectionError
from odradek.testing.zookeeper import ZooKeeperEnsemble

pytestmark = pytest.mark.cluster

__all__ = ["zookeeper"]

TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def chroot(zookeeper: ZooKeeperEnsemble) -> str:
    return f"{zookeeper.connect_string}/streams-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def broker(chroot: str) -> Iterator[Broker]:
    """One broker registered in ZooKeeper (it is the controller) for the module."""
    config = {
        "zookeeper.connect": chroot,
        "zookeeper.session.timeout.ms": 4_000,
        "group.initial.rebalance.delay.ms": 0,
        "offsets.topic.num.partitions": 1,
    }
    with Broker(config=config) as started:
        yield started


@pytest.fixture
def store(chroot: str, broker: Broker) -> Iterator[ZooKeeperMetadataStore]:
    """The test's own session, to read (and meddle with) the group's nodes."""
    with ZooKeeperMetadataStore(chroot) as session:
        yield session


@pytest.fixture
def names() -> tuple[str, str]:
    """A fresh (group, topic) pair."""
    suffix = uuid.uuid4().hex[:8]
    return f"g-{suffix}", f"t-{suffix}"


MakeConnector = Callable[..., ConsumerConnector]


@pytest.fixture
def make_connector(chroot: str, names: tuple[str, str]) -> Iterator[MakeConnector]:
    made: list[ConsumerConnector] = []

    def make(**settings: Any) -> ConsumerConnector:
        settings.setdefault("group.id", names[0])
        settings.setdefault("auto.offset.reset", "smallest")
        settings.setdefault("fetch.max.wait.ms", 100)
        settings.setdefault("rebalance.backoff.ms", 100)
        settings.setdefault("rebalance.max.retries", 50)
        settings.setdefault("zookeeper.session.timeout.ms", 4_000)
        connector = ConsumerConnector({"zookeeper.connect": chroot, **settings})
        made.append(connector)
        return connector

    yield make
    for connector in made:
        connector.shutdown(10_000)


def create_topic(broker: Broker, topic: str, partitions: int) -> None:
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(topic, partitions, 1)]).all()


def produce(broker: Broker, topic: str, partitions: int, per_partition: int) -> None:
    with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0) as producer:
        for partition in range(partitions):
            for index in range(per_partition):
                value = b"%d-%d" % (partition, index)
                producer.send(topic, value, partition=partition)
        producer.flush()


def eventually(condition: Callable[[], bool], what: str, timeout_s: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    tick = threading.Event()
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        tick.wait(0.02)


def owners(store: ZooKeeperMetadataStore, group: str, topic: str) -> dict[int, str]:
    path = f"/consumers/{group}/owners/{topic}"
    try:
        names = store.children(path)
    except NoNodeError:
        return {}
    out: dict[int, str] = {}
    for name in names:
        try:
            out[int(name)] = store.get(f"{path}/{name}")[0].decode()
        except NoNodeError:
            continue
    return out


def member(connector: ConsumerConnector) -> str:
    name = connector.statistics()["zookeeper"]["member"]
    assert isinstance(name, str)
    return name


def failed_attempts(connector: ConsumerConnector) -> int:
    count = connector.statistics()["zookeeper"]["failed_attempts"]
    assert isinstance(count, int)
    return count


def split(store: ZooKeeperMetadataStore, group: str, topic: str) -> dict[str, list[int]]:
    """owning member (thread id without its index) → partitions."""
    out: dict[str, list[int]] = {}
    for partition, thread in sorted(owners(store, group, topic).items()):
        out.setdefault(thread.rpartition("-")[0], []).append(partition)
    return out


def take(stream: Any, count: int) -> list[MessageAndMetadata]:
    iterator = iter(stream)
    return [next(iterator) for _ in range(count)]


def test_members_split_a_topic_by_range_through_joins_and_leaves(
    broker: Broker,
    store: ZooKeeperMetadataStore,
    names: tuple[str, str],
    make_connector: MakeConnector,
) -> None:
    group, topic = names
    create_topic(broker, topic, 4)
    first, second = make_connector(), make_connector()
    first.create_message_streams({topic: 1})
    second.create_message_streams({topic: 1})
    a, b = sorted([member(first), member(second)])

    def settled(expected: dict[str, list[int]]) -> Callable[[], bool]:
        return lambda: split(store, group, topic) == expected

    eventually(settled({a: [0, 1], b: [2, 3]}), "a 2/2 split")
    # Each member registered its subscription, Kafka's JSON, ephemeral.
    registration = json.loads(store.get(f"/consumers/{group}/ids/{a}")[0])
    assert registration["subscription"] == {topic: 1}
    assert registration["pattern"] == "static"
    assert registration["version"] == 1
    assert int(registration["timestamp"]) > 0

    third = make_connector()
    third.create_message_streams({topic: 1})
    a, b, c = sorted([member(first), member(second), member(third)])
    eventually(settled({a: [0, 1], b: [2], c: [3]}), "a 2/1/1 split")

    leaving = b
    by_member = {member(x): x for x in (first, second, third)}
    by_member[leaving].shutdown(10_000)
    assert not store.exists(f"/consumers/{group}/ids/{leaving}")
    rest = sorted(set(by_member) - {leaving})
    eventually(settled({rest[0]: [0, 1], rest[1]: [2, 3]}), "back to 2/2")
    # The connectors' own placement agrees with the owner nodes.
    for name in rest:
        placed = by_member[name].partitions_by_stream()[f"{topic}-0"]
        assert placed == [TopicPartition(topic, p) for p in split(store, group, topic)[name]]


def test_new_partitions_of_a_subscribed_topic_are_split_too(
    broker: Broker,
    store: ZooKeeperMetadataStore,
    names: tuple[str, str],
    make_connector: MakeConnector,
) -> None:
    group, topic = names
    create_topic(broker, topic, 2)
    first, second = make_connector(), make_connector()
    first.create_message_streams({topic: 1})
    second.create_message_streams({topic: 1})
    a, b = sorted([member(first), member(second)])
    eventually(lambda: split(store, group, topic) == {a: [0], b: [1]}, "a 1/1 split")
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_partitions({topic: 5}).all()
    # The watch on /brokers/topics/<topic> moves the ranges: 5 over 2 is 3/2.
    eventually(lambda: split(store, group, topic) == {a: [0, 1, 2], b: [3, 4]}, "a 3/2 split")


def test_records_flow_and_zookeeper_offsets_are_resumed_by_a_new_connector(
    broker: Broker,
    store: ZooKeeperMetadataStore,
    names: tuple[str, str],
    make_connector: MakeConnector,
) -> None:
    group, topic = names
    create_topic(broker, topic, 2)
    produce(broker, topic, 2, 10)
    connector = make_connector(**{"auto.commit.enable": False})
    [stream] = connector.create_message_streams({topic: 1})[topic]
    # Partition order within the one stream is not fixed: read everything, commit.
    seen = take(stream, 20)
    assert sorted((m.partition, m.offset) for m in seen) == [
        (p, o) for p in range(2) for o in range(10)
    ]
    connector.commit_offsets()
    for partition in range(2):
        data, _ = store.get(f"/consumers/{group}/offsets/{topic}/{partition}")
        assert data == b"10"
    connector.shutdown(10_000)
    assert owners(store, group, topic) == {}

    produce(broker, topic, 2, 3)
    later = make_connector(**{"auto.commit.enable": False})
    [again] = later.create_message_streams({topic: 1})[topic]
    resumed = take(again, 6)
    assert sorted((m.partition, m.offset) for m in resumed) == [
        (p, o) for p in range(2) for o in range(10, 13)
    ]
    assert all(m.message == b"%d-%d" % (m.partition, m.offset - 10) for m in resumed)


def test_a_moving_partition_is_committed_by_its_old_owner_so_nothing_repeats(
    broker: Broker,
    store: ZooKeeperMetadataStore,
    names: tuple[str, str],
    make_connector: MakeConnector,
) -> None:
    group, topic = names
    create_topic(broker, topic, 2)
    produce(broker, topic, 2, 5)
    # Auto commit on, but its period far away: only the rebalance's release commits.
    first = make_connector(**{"auto.commit.interval.ms": 600_000})
    [stream] = first.create_message_streams({topic: 1})[topic]
    assert len(take(stream, 10)) == 10
    second = make_connector(**{"auto.commit.interval.ms": 600_000})
    [other] = second.create_message_streams({topic: 1})[topic]
    eventually(lambda: len(split(store, group, topic)) == 2, "a 1/1 split")
    for partition in range(2):
        assert store.get(f"/consumers/{group}/offsets/{topic}/{partition}")[0] == b"5"
    produce(broker, topic, 2, 1)
    [mine] = take(stream, 1)
    [theirs] = take(other, 1)
    assert (mine.offset, theirs.offset) == (5, 5)
    assert {mine.partition, theirs.partition} == {0, 1}


def test_auto_commit_writes_zookeeper_every_interval(
    broker: Broker,
    store: ZooKeeperMetadataStore,
    names: tuple[str, str],
    make_connector: MakeConnector,
) -> None:
    group, topic = names
    create_topic(broker, topic, 1)
    produce(broker, topic, 1, 3)
    connector = make_connector(**{"auto.commit.interval.ms": 50})
    [stream] = connector.create_message_streams({topic: 1})[topic]
    assert [m.offset for m in take(stream, 2)] == [0, 1]
    path = f"/consumers/{group}/offsets/{topic}/0"
    eventually(lambda: store.exists(path) and store.get(path)[0] == b"2", "offset 2 committed")


def test_dual_commit_writes_both_stores_and_reads_the_greater(
    broker: Broker,
    store: ZooKeeperMetadataStore,
    names: tuple[str, str],
    make_connector: MakeConnector,
) -> None:
    group, topic = names
    create_topic(broker, topic, 1)
    produce(broker, topic, 1, 10)
    settings = {"offsets.storage": "kafka", "dual.commit.enabled": True}
    connector = make_connector(**settings, **{"auto.commit.enable": False})
    [stream] = connector.create_message_streams({topic: 1})[topic]
    assert [m.offset for m in take(stream, 4)] == [0, 1, 2, 3]
    connector.commit_offsets()
    tp = TopicPartition(topic, 0)
    assert store.get(f"/consumers/{group}/offsets/{topic}/0")[0] == b"4"
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id=group) as reader:
        committed = reader.committed([tp])[tp]
    assert committed is not None
    assert committed.offset == 4
    connector.shutdown(10_000)

    # ZooKeeper ahead of Kafka (a member that committed there only): the greater wins.
    store.set(f"/consumers/{group}/offsets/{topic}/0", b"7")
    later = make_connector(**settings)
    [again] = later.create_message_streams({topic: 1})[topic]
    assert [m.offset for m in take(again, 3)] == [7, 8, 9]


def test_kafka_offsets_without_dual_commit_leave_zookeeper_alone(
    broker: Broker,
    store: ZooKeeperMetadataStore,
    names: tuple[str, str],
    make_connector: MakeConnector,
) -> None:
    group, topic = names
    create_topic(broker, topic, 1)
    produce(broker, topic, 1, 3)
    settings = {"offsets.storage": "kafka", "dual.commit.enabled": False}
    connector = make_connector(**settings, **{"auto.commit.enable": False})
    [stream] = connector.create_message_streams({topic: 1})[topic]
    assert [m.offset for m in take(stream, 2)] == [0, 1]
    connector.commit_offsets()
    tp = TopicPartition(topic, 0)
    with Consumer(bootstrap_servers=broker.bootstrap_servers, group_id=group) as reader:
        committed = reader.committed([tp])[tp]
    assert committed is not None
    assert committed.offset == 2
    assert not store.exists(f"/consumers/{group}/offsets")
    # The group is still coordinated through ZooKeeper.
    assert owners(store, group, topic) == {0: member(connector) + "-0"}


def test_a_partition_another_thread_owns_is_claimed_once_released(
    broker: Broker,
    store: ZooKeeperMetadataStore,
    names: tuple[str, str],
    make_connector: MakeConnector,
) -> None:
    group, topic = names
    create_topic(broker, topic, 2)
    produce(broker, topic, 2, 1)
    # A stale owner (a member that has not released yet) holds partition 1.
    stale = f"/consumers/{group}/owners/{topic}/1"
    store.create(stale, b"someone-else-0", ephemeral=True, make_parents=True)
    # A backoff of ten minutes: only the end of the blocking owner node can end it in time.
    connector = make_connector(**{"rebalance.backoff.ms": 600_000})
    [stream] = connector.create_message_streams({topic: 1})[topic]
    eventually(lambda: failed_attempts(connector) == 1, "a failed attempt")
    # A failed attempt releases what it claimed (partition 0): during the backoff this
    # member owns nothing, so it cannot block another member's claim in turn.
    assert owners(store, group, topic) == {1: "someone-else-0"}
    assert connector.partitions_by_stream() == {f"{topic}-0": []}
    store.delete(stale)
    thread = member(connector) + "-0"
    eventually(lambda: owners(store, group, topic) == {0: thread, 1: thread}, "both claimed")
    assert sorted(m.partition for m in take(stream, 2)) == [0, 1]


def test_a_claim_held_through_every_retry_fails_the_streams(
    broker: Broker,
    store: ZooKeeperMetadataStore,
    names: tuple[str, str],
    make_connector: MakeConnector,
) -> None:
    group, topic = names
    create_topic(broker, topic, 1)
    store.create(
        f"/consumers/{group}/owners/{topic}/0", b"someone-else-0", ephemeral=True, make_parents=True
    )
    connector = make_connector(**{"rebalance.max.retries": 3, "rebalance.backoff.ms": 10})
    [stream] = connector.create_message_streams({topic: 1})[topic]
    with pytest.raises(ConsumerRebalanceFailedError, match=r"after 3 attempts"):
        next(iter(stream))
    # The failed member left: its registration went with its session.
    eventually(lambda: store.children(f"/consumers/{group}/ids") == [], "the registration gone")


def test_a_consumer_id_registered_by_a_live_session_is_waited_for_then_refused(
    broker: Broker,
    store: ZooKeeperMetadataStore,
    names: tuple[str, str],
    make_connector: MakeConnector,
) -> None:
    group, topic = names
    create_topic(broker, topic, 1)
    path = f"/consumers/{group}/ids/{group}_fixed"
    store.create(path, b'{"version":1,"subscription":{"x":1}}', ephemeral=True, make_parents=True)
    settings = {
        "consumer.id": "fixed",
        "zookeeper.session.timeout.ms": 400,
        "zookeeper.connection.timeout.ms": 400,
    }
    refused = make_connector(**settings)
    [stream] = refused.create_message_streams({topic: 1})[topic]
    with pytest.raises(ConsumerIdInUseError, match=r"consumer id .*_fixed stays registered"):
        next(iter(stream))
    # Once the old registration goes (its session ended), the same id registers.
    waiting = make_connector(**{**settings, "zookeeper.session.timeout.ms": 60_000})
    [again] = waiting.create_message_streams({topic: 1})[topic]
    store.delete(path)
    eventually(lambda: owners(store, group, topic) == {0: f"{group}_fixed-0"}, "registered")
    produce(broker, topic, 1, 1)
    assert [m.offset for m in take(again, 1)] == [0]


def test_without_bootstrap_servers_the_brokers_come_from_zookeeper(
    broker: Broker, names: tuple[str, str], make_connector: MakeConnector
) -> None:
    _, topic = names
    create_topic(broker, topic, 1)
    produce(broker, topic, 1, 2)
    # No bootstrap.servers: the connector reads /brokers/ids.
    connector = make_connector()
    [stream] = connector.create_message_streams({topic: 1})[topic]
    assert [m.message for m in take(stream, 2)] == [b"0-0", b"0-1"]


def test_filter_members_split_every_selected_topic_including_new_ones(
    broker: Broker,
    store: ZooKeeperMetadataStore,
    names: tuple[str, str],
    make_connector: MakeConnector,
) -> None:
    group, topic = names
    first_topic, later_topic = f"{topic}-a", f"{topic}-b"
    create_topic(broker, first_topic, 2)
    create_topic(broker, f"other-{topic}", 2)  # not selected
    one, two = make_connector(), make_connector()
    selected = Whitelist(f"{topic}-.*")
    one_streams = one.create_message_streams_by_filter(selected, 2)
    two.create_message_streams_by_filter(selected, 1)
    path = f"/consumers/{group}/ids/{member(one)}"
    eventually(lambda: store.exists(path), "the registration")
    registration = json.loads(store.get(path)[0])
    assert registration["pattern"] == "white_list"
    assert registration["subscription"] == {f"{topic}-.*": 2}
    # Three threads (one's 0 and 1, two's 0) over two partitions: sorted, the last gets none.
    threads = sorted([f"{member(one)}-0", f"{member(one)}-1", f"{member(two)}-0"])
    eventually(
        lambda: owners(store, group, first_topic) == {0: threads[0], 1: threads[1]},
        "the first topic split",
    )
    assert owners(store, group, f"other-{topic}") == {}
    create_topic(broker, later_topic, 3)
    eventually(
        lambda: owners(store, group, later_topic) == {0: threads[0], 1: threads[1], 2: threads[2]},
        "the new topic split",
    )
    produce(broker, later_topic, 3, 1)
    # Thread i of a member feeds its stream i (the first topic has no records).
    owned = owners(store, group, later_topic)
    for index, stream in enumerate(one_streams):
        expected = sorted(p for p, t in owned.items() if t == f"{member(one)}-{index}")
        assert expected
        got = take(stream, len(expected))
        assert sorted((m.topic, m.partition) for m in got) == [(later_topic, p) for p in expected]


def test_an_expired_session_registers_again_and_owns_its_partitions_again(
    broker: Broker,
    store: ZooKeeperMetadataStore,
    names: tuple[str, str],
    make_connector: MakeConnector,
) -> None:
    group, topic = names
    create_topic(broker, topic, 2)
    produce(broker, topic, 2, 1)
    connector = make_connector(
        **{"zookeeper.session.timeout.ms": 2_000, "auto.commit.enable": False}
    )
    [stream] = connector.create_message_streams({topic: 1})[topic]
    iterator = iter(stream)
    assert sorted(next(iterator).partition for _ in range(2)) == [0, 1]
    connector.commit_offsets()
    thread = member(connector) + "-0"
    eventually(lambda: owners(store, group, topic) == {0: thread, 1: thread}, "both owned")
    coordinator = connector._zookeeper  # the fault: its session expires under it
    assert coordinator is not None
    lost = coordinator.group.session
    expire(store.connect.partition("/")[0], lost)
    eventually(lambda: lost.closed, "the session closed")
    eventually(
        lambda: (
            coordinator.group.session is not lost
            and owners(store, group, topic) == {0: thread, 1: thread}
        ),
        "owned again through a new session",
    )
    assert store.children(f"/consumers/{group}/ids") == [member(connector)]
    # The lost partitions start again at the committed offsets: the new records, no repeats.
    produce(broker, topic, 2, 1)
    assert sorted((m.partition, m.offset) for m in (next(iterator), next(iterator))) == [
        (0, 1),
        (1, 1),
    ]


def expire(hosts: str, session: ZooKeeperMetadataStore) -> None:
    """Expires ``session``: another client joins it with its id and password and closes it."""
    client_id = session._client.client_id
    assert client_id is not None
    twin = KazooClient(hosts=hosts, client_id=client_id)
    twin.start(timeout=10)
    twin.stop()
    twin.close()


def test_an_unreachable_zookeeper_fails_the_constructor_with_one_clear_error() -> None:
    with socket.socket() as probe:  # a free loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(StoreConnectionError, match=r"cannot connect to ZooKeeper .* within 300 ms"):
        ConsumerConnector(
            {
                "group.id": "g",
                "zookeeper.connect": f"127.0.0.1:{port}/x",
                "zookeeper.connection.timeout.ms": 300,
            }
        )
