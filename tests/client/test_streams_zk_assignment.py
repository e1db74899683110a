"""The ZooKeeper-coordinated consumer's pure rules with plain values: the range assignment
(sorting, contiguous ranges, remainders), the group-wide assignment, ids, registrations and
the connector's ZooKeeper settings."""

from __future__ import annotations

import json

import pytest

from odradek import Blacklist, TopicPartition, Whitelist
from odradek.client.config import ClientConfig
from odradek.client.streams.config import CONSUMER_CONNECTOR, ConnectorSettings
from odradek.client.streams.zk_assignment import (
    Registration,
    consumer_id,
    group_assignment,
    range_assignment,
    thread_ids,
)
from odradek.errors import ConfigError


def test_four_partitions_over_two_threads_are_two_contiguous_halves() -> None:
    assert range_assignment([3, 1, 0, 2], ["b-0", "a-0"]) == {"a-0": [0, 1], "b-0": [2, 3]}


def test_the_first_remainder_threads_get_one_more() -> None:
    # 4 over 3: n = 1, remainder 1 → 2/1/1; 10 over 4: n = 2, remainder 2 → 3/3/2/2.
    assert range_assignment(range(4), ["c", "a", "b"]) == {"a": [0, 1], "b": [2], "c": [3]}
    assert range_assignment(range(10), ["d", "c", "b", "a"]) == {
        "a": [0, 1, 2],
        "b": [3, 4, 5],
        "c": [6, 7],
        "d": [8, 9],
    }


def test_more_threads_than_partitions_leaves_the_last_threads_empty() -> None:
    assert range_assignment([0, 1], ["x", "y", "z"]) == {"x": [0], "y": [1], "z": []}


def test_thread_ids_sort_as_strings_as_kafka_did() -> None:
    threads = thread_ids("g_m", 11)
    assert threads[10] == "g_m-10"
    owners = range_assignment(range(11), threads)
    # "g_m-10" sorts right after "g_m-1": it takes the third partition.
    assert owners["g_m-10"] == [2]
    assert owners["g_m-2"] == [3]


def test_no_threads_or_no_partitions() -> None:
    assert range_assignment([0, 1], []) == {}
    assert range_assignment([], ["a"]) == {"a": []}
    assert range_assignment([1, 1, 0], ["a", "a"]) == {"a": [0, 1]}


def test_group_assignment_counts_each_members_threads_per_topic() -> None:
    owners = group_assignment(
        {"t": [0, 1, 2, 3], "u": [0, 1], "v": [0]},
        {"g_a": {"t": 2, "u": 1}, "g_b": {"t": 1}},
    )
    assert owners == {
        TopicPartition("t", 0): "g_a-0",
        TopicPartition("t", 1): "g_a-0",
        TopicPartition("t", 2): "g_a-1",
        TopicPartition("t", 3): "g_b-0",
        TopicPartition("u", 0): "g_a-0",
        TopicPartition("u", 1): "g_a-0",
    }


def test_consumer_ids() -> None:
    assert consumer_id("g", "worker1", "host", 5) == "g_worker1"
    generated = consumer_id("g", None, "host", 1234)
    assert generated.startswith("g_host-1234-")
    assert len(generated.rpartition("-")[2]) == 8
    assert generated != consumer_id("g", None, "host", 1234)


def test_a_registration_is_kafkas_json_and_reads_back() -> None:
    data = Registration({"t": 2, "a": 1}).encode(1_700_000_000_000)
    assert json.loads(data) == {
        "version": 1,
        "subscription": {"a": 1, "t": 2},
        "pattern": "static",
        "timestamp": "1700000000000",
    }
    assert Registration.decode(data) == Registration({"a": 1, "t": 2})


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[1]",
        b'{"version":1}',
        b'{"subscription":{"t":0}}',
        b'{"subscription":{"t":true}}',
    ],
)
def test_a_bad_registration_is_a_value_error(data: bytes) -> None:
    with pytest.raises(ValueError, match="consumer registration"):
        Registration.decode(data)


def test_a_filter_registers_its_expression_and_counts_every_topic_it_selects() -> None:
    whitelist = Registration.for_filter(Whitelist("logs-.*, audit"), 2)
    assert json.loads(whitelist.encode(1))["subscription"] == {"logs-.*|audit": 2}
    assert json.loads(whitelist.encode(1))["pattern"] == "white_list"
    cluster = ["audit", "audit2", "logs-a", "logs-b", "metrics", "__consumer_offsets"]
    assert whitelist.topic_counts(cluster) == {"audit": 2, "logs-a": 2, "logs-b": 2}
    blacklist = Registration.for_filter(Blacklist("logs-.*"), 1)
    assert Registration.decode(blacklist.encode(1)) == blacklist
    assert blacklist.topic_counts(cluster) == {"audit": 1, "audit2": 1, "metrics": 1}
    assert blacklist.topic_counts(cluster, exclude_internal=False)["__consumer_offsets"] == 1
    # A static registration ignores the cluster's topics: it names its own.
    assert Registration({"x": 3}).topic_counts(cluster) == {"x": 3}


@pytest.mark.parametrize(
    "document",
    [
        {"subscription": {"a": 1}, "pattern": "grey_list"},
        {"subscription": {"a": 1, "b": 1}, "pattern": "white_list"},
        {"subscription": {"(": 1}, "pattern": "black_list"},
    ],
)
def test_a_bad_filter_registration_is_a_value_error(document: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="consumer registration"):
        Registration.decode(json.dumps(document).encode())


def settings(**given: object) -> ConnectorSettings:
    return ConnectorSettings.from_config(
        ClientConfig({"group.id": "g", **given}, client_type=CONSUMER_CONNECTOR)
    )


def test_zookeeper_connect_defaults_to_zookeeper_offsets_and_no_kafka_group() -> None:
    chosen = settings(**{"zookeeper.connect": "127.0.0.1:2181/x", "auto.offset.reset": "smallest"})
    assert chosen.zookeeper is not None
    assert chosen.zookeeper.offsets_storage == "zookeeper"
    assert chosen.zookeeper.commits_to_zookeeper
    assert not chosen.zookeeper.commits_to_kafka
    assert chosen.zookeeper.auto_offset_reset == "earliest"
    assert (chosen.zookeeper.rebalance_max_retries, chosen.zookeeper.rebalance_backoff_ms) == (
        4,
        2_000,
    )
    assert chosen.consumer_config["group.id"] is None
    assert chosen.consumer_config["auto.offset.reset"] == "earliest"


def test_kafka_offsets_with_dual_commit_keep_the_kafka_group() -> None:
    chosen = settings(
        **{
            "zookeeper.connect": "127.0.0.1:2181",
            "offsets.storage": "kafka",
            "auto.offset.reset": "largest",
        }
    )
    assert chosen.zookeeper is not None
    assert chosen.zookeeper.commits_to_kafka
    assert chosen.zookeeper.commits_to_zookeeper  # dual.commit.enabled defaults to true
    assert chosen.consumer_config["group.id"] == "g"
    assert chosen.consumer_config["auto.offset.reset"] == "latest"
    single = settings(
        **{
            "zookeeper.connect": "127.0.0.1:2181",
            "offsets.storage": "kafka",
            "dual.commit.enabled": False,
        }
    )
    assert single.zookeeper is not None
    assert not single.zookeeper.commits_to_zookeeper


def test_without_zookeeper_connect_nothing_changes() -> None:
    assert settings().zookeeper is None
    with pytest.raises(ConfigError, match=r"offsets.storage=zookeeper needs zookeeper.connect"):
        settings(**{"offsets.storage": "zookeeper"})
    with pytest.raises(ConfigError, match=r"offsets\.storage"):
        settings(**{"offsets.storage": "elsewhere"})
