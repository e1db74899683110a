"""Metadata v0-v13 against a live broker: each version answers the topics with the fields it
has — leader epochs (v7+), topic ids (v10+, the store's, stable, new for a re-created topic),
topics asked by id (v10+; an unknown id answers UNKNOWN_TOPIC_ID, with a null name from v12)
and the authorized operations when asked — and the three client libraries list the topics."""

from __future__ import annotations

import base64
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from tests.broker._wire import Wire

from odradek import Broker
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaAdminClient

ZERO = uuid.UUID(int=0)
#: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config={"auto.create.topics.enable": "false"}) as running:
        yield running


@pytest.fixture
def wire(broker: Broker) -> Iterator[Wire]:
    connection = Wire(broker.port)
    yield connection
    connection.close()


def _metadata(wire: Wire, version: int, topics: list[dict[str, Any]] | None, **extra: Any) -> Any:
    fields: dict[str, Any] = {
        "topics": topics,
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
        **extra,
    }
    return wire.request(ApiKey.METADATA, version, fields)


def _stored_id(broker: Broker, topic: str) -> uuid.UUID:
    text = broker.app.topics.metadata.topic_id(topic)
    assert text is not None
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


@pytest.mark.parametrize("version", range(14))
def test_every_version_describes_the_topic(broker: Broker, wire: Wire, version: int) -> None:
    name = f"described-v{version}"
    assert wire.create_topics({name: 3}) == {name: 0}
    topics = None if version else []  # v0 says "every topic" with an empty list
    body = _metadata(wire, version, [{"name": name, "topic_id": None}])
    [topic] = body["topics"]
    assert topic["name"] == name
    assert topic["error_code"] == 0
    assert [p["partition_index"] for p in topic["partitions"]] == [0, 1, 2]
    for partition in topic["partitions"]:
        assert partition["leader_id"] == broker.app.ctx.broker_id
        assert list(partition["replica_nodes"]) == [partition["leader_id"]]
        if version >= 5:
            assert list(partition["offline_replicas"]) == []
        if version >= 7:
            assert partition["leader_epoch"] == 0
    if version >= 10:
        assert topic["topic_id"] == _stored_id(broker, name)
    everything = _metadata(wire, version, topics)
    assert name in {t["name"] for t in everything["topics"]}


def test_topic_ids_are_stable_and_a_recreated_topic_gets_a_new_one(
    broker: Broker, wire: Wire
) -> None:
    assert wire.create_topics({"reborn": 1}) == {"reborn": 0}
    first = _metadata(wire, 12, [{"name": "reborn", "topic_id": None}])["topics"][0]["topic_id"]
    assert first not in (None, ZERO)
    again = _metadata(wire, 10, [{"name": "reborn", "topic_id": None}])["topics"][0]["topic_id"]
    assert again == first
    deleted = wire.request(ApiKey.DELETE_TOPICS, 1, {"topic_names": ["reborn"], "timeout": 30_000})
    assert deleted["responses"][0]["error_code"] == 0
    assert wire.create_topics({"reborn": 1}) == {"reborn": 0}
    second = _metadata(wire, 12, [{"name": "reborn", "topic_id": None}])["topics"][0]["topic_id"]
    assert second not in (None, ZERO, first)
    assert second == _stored_id(broker, "reborn")


def test_a_topic_asked_by_id(broker: Broker, wire: Wire) -> None:
    assert wire.create_topics({"by-id": 2}) == {"by-id": 0}
    topic_id = _stored_id(broker, "by-id")
    [found] = _metadata(wire, 12, [{"name": None, "topic_id": topic_id}])["topics"]
    assert found["name"] == "by-id"
    assert found["topic_id"] == topic_id
    assert len(found["partitions"]) == 2

    stranger = uuid.uuid4()
    [unknown] = _metadata(wire, 12, [{"name": None, "topic_id": stranger}])["topics"]
    assert unknown["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
    assert unknown["name"] is None
    assert unknown["topic_id"] == stranger
    # v10-v11 cannot carry a null name: an empty one.
    [old] = _metadata(wire, 10, [{"name": None, "topic_id": stranger}])["topics"]
    assert old["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
    assert old["name"] == ""


def test_unknown_names_and_authorized_operations(wire: Wire) -> None:
    assert wire.create_topics({"operated": 1}) == {"operated": 0}
    body = _metadata(
        wire,
        13,
        [{"name": "operated", "topic_id": None}, {"name": "absent", "topic_id": None}],
        include_topic_authorized_operations=True,
    )
    operated, absent = body["topics"]
    assert operated["topic_authorized_operations"] == TOPIC_OPERATIONS
    assert absent["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert absent["topic_id"] in (None, ZERO)  # the zero UUID (kio reads it as None)
    assert body["error_code"] == 0
    plain = _metadata(wire, 9, [{"name": "operated"}])  # operations not asked for
    assert plain["topics"][0]["topic_authorized_operations"] == -(2**31)


def test_confluent_kafka_and_kafka_python_list_the_topics(broker: Broker, wire: Wire) -> None:
    assert wire.create_topics({"listed": 4}) == {"listed": 0}
    confluent = ConfluentAdmin({"bootstrap.servers": broker.bootstrap_servers})
    listed = confluent.list_topics(timeout=30).topics["listed"]
    assert sorted(listed.partitions) == [0, 1, 2, 3]
    assert all(p.leader == broker.app.ctx.broker_id for p in listed.partitions.values())
    [description] = confluent.describe_topics(TopicCollection(["listed"])).values()
    described = description.result(30)
    # librdkafka prints a topic id in standard base64, Kafka's tools in the URL-safe
    # alphabet: compare the 16 bytes.
    shown = str(described.topic_id).replace("-", "+").replace("_", "/")
    assert base64.b64decode(shown + "=" * (-len(shown) % 4)) == _stored_id(broker, "listed").bytes
    assert len(described.partitions) == 4

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        [topic] = admin.describe_topics(["listed"])
    finally:
        admin.close()
    assert topic["error_code"] == 0
    assert sorted(p["partition_index"] for p in topic["partitions"]) == [0, 1, 2, 3]
