"""``controller.layout`` without a store: the paths refuse illegal topic names before they
become paths, the node codecs round-trip Kafka's JSON, and every malformed node is a
``CorruptMetadataError`` that names its path (never a ``KeyError`` or ``TypeError``)."""

from __future__ import annotations

import json

import pytest

from odradek.controller.layout import (
    BrokerRegistration,
    Endpoint,
    PartitionState,
    assignment_document,
    broker_document,
    decode_cluster_id,
    decode_object,
    decode_partition_state,
    encode_cluster_id,
    encode_partition_state,
    parse_broker,
    parse_partitions,
    parse_replica_map,
    partition_path,
    partition_state_path,
    topic_config_path,
    topic_partitions_path,
    topic_path,
)
from odradek.errors import CorruptMetadataError, InvalidTopicError


def test_paths_are_kafkas() -> None:
    assert topic_path("t") == "/brokers/topics/t"
    assert topic_partitions_path("t") == "/brokers/topics/t/partitions"
    assert partition_path("t", 3) == "/brokers/topics/t/partitions/3"
    assert partition_state_path("t", 3) == "/brokers/topics/t/partitions/3/state"
    assert topic_config_path("t") == "/config/topics/t"


@pytest.mark.parametrize("name", ["", "..", "a/b", "x" * 250])
def test_an_illegal_topic_name_never_becomes_a_path(name: str) -> None:
    for path_of in (topic_path, topic_config_path, topic_partitions_path):
        with pytest.raises(InvalidTopicError):
            path_of(name)
    with pytest.raises(InvalidTopicError):
        partition_state_path(name, 0)


def test_a_broker_registration_round_trips() -> None:
    registration = BrokerRegistration(
        broker_id=4,
        endpoints=(
            Endpoint("PLAINTEXT", "::1", 9092),
            Endpoint("INTERNAL", "10.0.0.4", 9093, "SSL"),
        ),
        timestamp_ms=1_700_000_000_000,
        rack="r1",
    )
    document = json.loads(json.dumps(broker_document(registration)))
    assert document["endpoints"] == ["PLAINTEXT://[::1]:9092", "INTERNAL://10.0.0.4:9093"]
    assert (document["host"], document["port"], document["rack"]) == ("::1", 9092, "r1")
    assert parse_broker("/brokers/ids/4", 4, document) == registration


def test_a_partition_state_round_trips_with_its_node_version() -> None:
    data = encode_partition_state(2, 7, [2, 0], 5)
    assert json.loads(data) == {
        "controller_epoch": 5,
        "leader": 2,
        "version": 1,
        "leader_epoch": 7,
        "isr": [2, 0],
    }
    path = partition_state_path("t", 0)
    assert decode_partition_state(path, decode_object(path, data), 9) == PartitionState(
        2, 7, (2, 0), 5, 9
    )


def test_an_assignment_document_round_trips_in_partition_order() -> None:
    document = assignment_document("id", {10: [1, 2], 2: [2, 1]})
    assert list(document["partitions"]) == ["2", "10"]
    assert parse_partitions(document, "t") == {2: [2, 1], 10: [1, 2]}
    assert parse_replica_map(document, "adding_replicas", "t") == {}


def test_the_cluster_id_round_trips() -> None:
    path = "/cluster/id"
    assert decode_cluster_id(decode_object(path, encode_cluster_id("abc"))) == "abc"


@pytest.mark.parametrize(
    ("decode", "message"),
    [
        (lambda: decode_object("/p", b"{"), "malformed JSON at /p"),
        (lambda: decode_object("/p", b"[1]"), "/p does not hold a JSON object"),
        (lambda: decode_cluster_id({"id": 5}), "/cluster/id has no string 'id'"),
        (lambda: decode_partition_state("/s", {"leader": 1}, 0), "malformed partition state at /s"),
        (
            lambda: decode_partition_state(
                "/s", {"leader": "x", "leader_epoch": 0, "isr": [], "controller_epoch": 1}, 0
            ),
            "at /s",
        ),
        (lambda: parse_partitions({"partitions": {"a": [1]}}, "t"), "assignment of topic 't'"),
        (lambda: parse_partitions({}, "t"), "assignment of topic 't'"),
        (
            lambda: parse_replica_map({"adding_replicas": [1]}, "adding_replicas", "t"),
            "malformed adding_replicas of topic 't'",
        ),
        (
            lambda: parse_broker("/b", 1, {"endpoints": ["PLAINTEXT://h:port"]}),
            "malformed broker registration at /b",
        ),
    ],
)
def test_malformed_nodes_are_corrupt_metadata_naming_the_path(decode: object, message: str) -> None:
    assert callable(decode)
    with pytest.raises(CorruptMetadataError, match=message):
        decode()
