"""broker.metadata_cache: controller epoch fencing, partition states, deletions."""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.broker.metadata_cache import (
    LEADER_DURING_DELETE,
    LiveBroker,
    MetadataCache,
    PartitionMetadata,
)


def _state(topic: str, partition: int, leader: int) -> PartitionMetadata:
    return PartitionMetadata(topic, partition, leader, 0, (0, 1), (0, 1))


def test_an_older_controller_epoch_is_stale_and_changes_nothing() -> None:
    cache = MetadataCache(0)
    assert cache.accept_controller(2, 5)
    assert not cache.accept_controller(1, 4)
    assert (cache.controller_id, cache.controller_epoch) == (2, 5)
    assert cache.accept_controller(2, 5)  # the same controller again
    assert cache.accept_controller(1, 6)  # a newer one takes over
    assert cache.controller_id == 1


def test_partitions_brokers_and_the_controllers_address() -> None:
    cache = MetadataCache(0)
    cache.accept_controller(1, 1)
    cache.set_brokers([LiveBroker(1, "h1", 9001), LiveBroker(0, "h0", 9000, "r")])
    assert [b.broker_id for b in cache.brokers()] == [0, 1]
    assert cache.controller() == LiveBroker(1, "h1", 9001)
    cache.update_partitions([_state("t", 1, 1), _state("t", 0, 0), _state("u", 0, -1)])
    assert cache.topic_names() == ["t", "u"]
    assert [p.partition for p in cache.partitions("t")] == [0, 1]
    assert cache.leader(TopicPartition("t", 1)) == LiveBroker(1, "h1", 9001)
    assert cache.leader(TopicPartition("u", 0)) is None  # offline
    assert cache.leader(TopicPartition("x", 0)) is None
    assert cache.partition_total() == 3


def test_a_deleted_topic_leaves_the_cache_when_its_last_partition_goes() -> None:
    cache = MetadataCache(0)
    cache.update_partitions([_state("t", 0, 0), _state("t", 1, 1)])
    assert cache.update_partitions([_state("t", 0, LEADER_DURING_DELETE)]) == []
    assert cache.partition_count("t") == 1
    assert cache.update_partitions([_state("t", 1, LEADER_DURING_DELETE)]) == ["t"]
    assert not cache.has_topic("t")


def test_each_listener_sees_the_brokers_that_have_it_at_its_endpoints() -> None:
    cache = MetadataCache(0, "BROKER")
    cache.accept_controller(1, 1)
    cache.set_brokers(
        [
            LiveBroker(0, "h0", 9000, None, "PLAINTEXT"),
            LiveBroker(0, "h0", 9001, None, "SSL"),
            LiveBroker(0, "h0", 9002, None, "BROKER"),
            LiveBroker(1, "h1", 9100, None, "PLAINTEXT"),
            LiveBroker(1, "h1", 9102, None, "BROKER"),
        ]
    )
    cache.update_partitions([_state("t", 0, 1)])
    # No listener named: the inter-broker listener's endpoints (what fetchers connect to).
    assert [(b.broker_id, b.port) for b in cache.brokers()] == [(0, 9002), (1, 9102)]
    assert [(b.broker_id, b.port) for b in cache.brokers("PLAINTEXT")] == [(0, 9000), (1, 9100)]
    # Broker 1 has no SSL listener: SSL clients are not told about it (Kafka's behaviour).
    assert [(b.broker_id, b.port) for b in cache.brokers("SSL")] == [(0, 9001)]
    assert cache.leader(TopicPartition("t", 0), "SSL") is None
    assert cache.leader(TopicPartition("t", 0), "PLAINTEXT") == LiveBroker(
        1, "h1", 9100, None, "PLAINTEXT"
    )
    assert cache.controller("BROKER") == LiveBroker(1, "h1", 9102, None, "BROKER")
    assert cache.broker(0, "NOPE") is None


def test_a_broker_without_the_inter_broker_listener_is_at_its_first_endpoint() -> None:
    cache = MetadataCache(0, "BROKER")
    cache.set_brokers([LiveBroker(2, "h2", 9200, None, "A"), LiveBroker(2, "h2", 9201, None, "B")])
    broker = cache.broker(2)
    assert broker is not None
    assert broker.port == 9200
