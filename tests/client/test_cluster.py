"""``client.cluster``: the immutable Cluster view (leader lookup, partitions by topic and node,
KIP-320 stale epochs), and Metadata kept fresh by MetadataUpdater against a live broker
(bootstrap, refresh on demand, on errors, on ``metadata.max.age.ms``, retries with backoff,
waiting for a topic with a deadline from the owner thread and from another thread)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from odradek import Broker
from odradek._types import TopicPartition
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic
from odradek.client.cluster import (
    BrokerMetadata,
    Cluster,
    Metadata,
    MetadataUpdater,
    PartitionMetadata,
    TopicMetadata,
    cluster_from_response,
    needs_metadata_refresh,
)
from odradek.client.config import ClientConfig
from odradek.client.network import NetworkClient
from odradek.errors import ErrorCode, InvalidTopicError, KafkaError, KafkaTimeoutError

DEADLINE_S = 10.0


def make_cluster() -> Cluster:
    partitions = (
        PartitionMetadata("t", 0, leader=1, leader_epoch=3, replicas=(1, 2), isr=(1, 2)),
        PartitionMetadata("t", 1, leader=2, replicas=(2, 1), isr=(2,)),
        PartitionMetadata("t", 2, leader=-1, replicas=(1,), isr=()),
    )
    return Cluster.build(
        [BrokerMetadata(1, "h1", 9092), BrokerMetadata(2, "h2", 9092)],
        [
            TopicMetadata("t", 0, False, partitions),
            TopicMetadata("gone", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, False, ()),
        ],
        cluster_id="c",
        controller_id=1,
        version=7,
    )


def test_cluster_lookups() -> None:
    cluster = make_cluster()
    assert cluster.leader_for(TopicPartition("t", 0)) == 1
    assert cluster.leader_for(TopicPartition("t", 2)) is None  # leaderless
    assert cluster.leader_for(TopicPartition("t", 9)) is None
    assert cluster.leader_broker(TopicPartition("t", 1)) == BrokerMetadata(2, "h2", 9092)
    assert [p.partition for p in cluster.partitions_for("t") or ()] == [0, 1, 2]
    assert cluster.partitions_for("gone") is None
    assert cluster.partitions_for("never") is None
    assert cluster.partition_count("t") == 3
    assert [p.partition for p in cluster.available_partitions_for("t")] == [0, 1]
    assert [p.partition for p in cluster.partitions_for_node(1)] == [0]
    assert cluster.partitions_for_node(3) == ()
    assert cluster.topic_names == ["t"]


def test_response_with_an_older_leader_epoch_keeps_the_known_leader() -> None:
    previous = make_cluster()
    body: dict[str, Any] = {
        "brokers": [{"node_id": 1, "host": "h1", "port": 9092, "rack": None}],
        "cluster_id": "c",
        "controller_id": 1,
        "topics": [
            {
                "error_code": 0,
                "name": "t",
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": 0,
                        "leader_id": 2,
                        "leader_epoch": 2,  # older than the known 3: a stale broker
                        "replica_nodes": [1, 2],
                        "isr_nodes": [2],
                        "offline_replicas": [],
                    },
                    {
                        "error_code": 0,
                        "partition_index": 1,
                        "leader_id": 1,
                        "leader_epoch": 5,
                        "replica_nodes": [2, 1],
                        "isr_nodes": [1],
                        "offline_replicas": [],
                    },
                ],
            }
        ],
    }
    cluster = cluster_from_response(body, 9, previous)
    assert cluster.leader_for(TopicPartition("t", 0)) == 1
    assert cluster.leader_for(TopicPartition("t", 1)) == 1
    assert cluster.version == previous.version + 1


@pytest.mark.parametrize(
    ("code", "refresh"),
    [
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, True),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True),
        (ErrorCode.LEADER_NOT_AVAILABLE, True),
        (ErrorCode.NETWORK_EXCEPTION, True),
        (ErrorCode.OFFSET_OUT_OF_RANGE, False),
        (ErrorCode.NONE, False),
    ],
)
def test_which_errors_refresh_metadata(code: ErrorCode, refresh: bool) -> None:
    assert needs_metadata_refresh(code) is refresh
    metadata = Metadata(topics=())
    metadata.update({"brokers": [], "topics": []}, 4, now_ms=0)
    assert metadata.time_to_next_update_ms(0) > 0
    metadata.handle_error_code(code)
    assert (metadata.time_to_next_update_ms(0) == 0) is refresh


def test_a_refresh_asked_while_a_request_is_in_flight_is_not_lost() -> None:
    metadata = Metadata(topics=())
    metadata.update({"brokers": [], "topics": []}, 4, now_ms=0)
    metadata.attempted(10)  # a Metadata request goes out...
    metadata.request_update()  # ...then someone needs newer metadata (a new topic, say)
    metadata.update({"brokers": [], "topics": []}, 4, now_ms=20)  # the older answer
    assert metadata.time_to_next_update_ms(20) == 0
    metadata.attempted(30)
    metadata.update({"brokers": [], "topics": []}, 4, now_ms=40)
    assert metadata.time_to_next_update_ms(40) > 0


class Live:
    """A network client with metadata, polled on demand by the test (the owner thread)."""

    def __init__(self, bootstrap: str, **settings: Any) -> None:
        allow = settings.pop("allow_auto_topic_creation", True)
        topics = settings.pop("topics", ())
        config = ClientConfig({"bootstrap.servers": bootstrap}, **settings)
        self.network = NetworkClient(config)
        self.metadata = Metadata(
            topics=topics,
            metadata_max_age_ms=config.get_int("metadata.max.age.ms"),
            retry_backoff_ms=config.get_int("retry.backoff.ms"),
            allow_auto_topic_creation=allow,
        )
        self.updater = MetadataUpdater(self.network, self.metadata)

    def poll_until(self, condition: Any) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not condition():
            assert time.monotonic() < deadline, "condition not reached"
            self.network.poll(50)

    def close(self) -> None:
        self.metadata.close()
        self.network.close()


@pytest.fixture
def topic(broker: Broker) -> str:
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("three", 3, 1)]).all()
    return "three"


@pytest.fixture
def live(broker: Broker) -> Iterator[Live]:
    client = Live(broker.bootstrap_servers, topics=None)
    yield client
    client.close()


def test_bootstrap_then_brokers_and_leaders(live: Live, broker: Broker, topic: str) -> None:
    cluster = live.updater.update_now(5_000)
    assert cluster.brokers == {0: BrokerMetadata(0, "127.0.0.1", broker.port, None)}
    assert cluster.controller_id == 0
    assert cluster.cluster_id
    assert [p.partition for p in cluster.partitions_for(topic) or ()] == [0, 1, 2]
    assert all(cluster.leader_for(TopicPartition(topic, i)) == 0 for i in range(3))
    partition = cluster.partition(TopicPartition(topic, 1))
    assert partition is not None
    assert partition.replicas == (0,)
    assert partition.isr == (0,)
    # The brokers' addresses went to the network client: later requests go to node 0.
    assert live.network.broker_nodes == [0]
    assert live.network.least_loaded_node() == 0


def test_refresh_on_demand(live: Live, broker: Broker) -> None:
    live.updater.update_now(5_000)
    with AdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("later", 2, 1)]).all()
    assert live.metadata.cluster.partitions_for("later") is None
    version = live.metadata.version
    live.network.poll(0)
    assert live.metadata.version == version  # not due: nobody asked, max age far away
    live.metadata.handle_error_code(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    live.poll_until(lambda: live.metadata.version > version)
    assert live.metadata.cluster.partition_count("later") == 2


def test_refresh_on_max_age(broker: Broker) -> None:
    live = Live(broker.bootstrap_servers, metadata_max_age_ms=100)
    try:
        live.updater.update_now(5_000)
        first = live.metadata.version
        live.poll_until(lambda: live.metadata.version >= first + 2)
    finally:
        live.close()


def test_failed_refresh_is_retried_with_backoff() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    live = Live(f"127.0.0.1:{port}", retry_backoff_ms=300, reconnect_backoff_ms=10)
    try:
        live.poll_until(lambda: live.metadata.last_error is not None)
        assert isinstance(live.metadata.last_error, KafkaError)
        now = live.network.clock.monotonic_ms()
        assert 0 < live.metadata.time_to_next_update_ms(now) <= 300 * 1.2
        with pytest.raises(KafkaTimeoutError, match="no metadata within 200 ms"):
            live.updater.update_now(200)
    finally:
        live.close()


def test_refresh_after_the_broker_restarts(tmp_path: Any) -> None:
    first = Broker(str(tmp_path / "data")).start()
    port = first.port
    live = Live(first.bootstrap_servers, reconnect_backoff_ms=20, retry_backoff_ms=20)
    try:
        live.updater.update_now(5_000)
        version = live.metadata.version
        first.stop()
        live.metadata.request_update()
        live.poll_until(lambda: live.metadata.last_error is not None)
        with Broker(str(tmp_path / "data"), port=port) as second:
            with AdminClient(bootstrap_servers=second.bootstrap_servers) as admin:
                admin.create_topics([NewTopic("after", 1, 1)]).all()
            live.metadata.add_topics(["after"])
            live.poll_until(lambda: live.metadata.cluster.partition_count("after") == 1)
            assert live.metadata.version > version
            assert live.metadata.last_error is None
            live.close()
    finally:
        live.close()
        first.stop()


def test_wait_for_topic_on_the_owner_thread(broker: Broker) -> None:
    live = Live(broker.bootstrap_servers)
    try:
        clock = live.network.clock
        entry = live.metadata.wait_for_topic(
            "auto", 5_000, monotonic_ms=clock.monotonic_ms, poll=live.network.poll
        )
        assert entry.name == "auto"
        assert len(entry.partitions) == 1  # auto-created with num.partitions
        assert live.metadata.topics == frozenset({"auto"})
    finally:
        live.close()


def test_wait_for_topic_from_another_thread(broker: Broker) -> None:
    live = Live(broker.bootstrap_servers)
    stop = threading.Event()

    def io_thread() -> None:
        while not stop.is_set():
            live.network.poll(100)

    thread = threading.Thread(target=io_thread, name="io")
    thread.start()
    try:
        clock = live.network.clock
        entry = live.metadata.wait_for_topic("other", 5_000, monotonic_ms=clock.monotonic_ms)
        assert entry.partitions[0].leader == 0
    finally:
        stop.set()
        live.network.wakeup()
        thread.join()
        live.close()


def test_wait_for_topic_times_out(broker: Broker) -> None:
    live = Live(broker.bootstrap_servers, allow_auto_topic_creation=False, retry_backoff_ms=20)
    try:
        clock = live.network.clock
        started = time.monotonic()
        with pytest.raises(
            KafkaTimeoutError, match=r"'missing' not present in metadata after 300 ms"
        ):
            live.metadata.wait_for_topic(
                "missing", 300, monotonic_ms=clock.monotonic_ms, poll=live.network.poll
            )
        assert time.monotonic() - started < 3
    finally:
        live.close()


def test_wait_for_an_invalid_topic_fails_at_once(broker: Broker) -> None:
    live = Live(broker.bootstrap_servers)
    try:
        clock = live.network.clock
        with pytest.raises(InvalidTopicError):
            live.metadata.wait_for_topic(
                "bad/name", 5_000, monotonic_ms=clock.monotonic_ms, poll=live.network.poll
            )
    finally:
        live.close()
