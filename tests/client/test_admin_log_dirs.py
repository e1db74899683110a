"""``AdminClient.describe_log_dirs`` against a live embedded broker: sizes are the bytes of the
segment files on disk, ``topics`` narrows the logs described, and a broker that cannot be
asked fails alone in the result."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek import Broker
from odradek._types import TopicPartition
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic, ReplicaInfo
from odradek.errors import KafkaError
from odradek.records.record import SimpleRecord

from .conftest import Produce


@pytest.fixture
def admin(broker: Broker) -> Iterator[AdminClient]:
    client = AdminClient({"bootstrap.servers": broker.bootstrap_servers}, client_id="t")
    yield client
    client.close()


def segment_bytes(log_dir: str, tp: TopicPartition) -> int:
    path = Path(log_dir, f"{tp.topic}-{tp.partition}")
    return sum(f.stat().st_size for f in path.glob("*.log"))


def test_sizes_are_the_bytes_on_disk(admin: AdminClient, broker: Broker, produce: Produce) -> None:
    admin.create_topics([NewTopic("dirs", 2, 1), NewTopic("else", 1, 1)]).all()
    for i in range(5):
        produce("dirs", 0, [SimpleRecord(1_000 + i, None, b"v" * 200)])
    produce("else", 0, [SimpleRecord(1_000, None, b"w")])

    everything = admin.describe_log_dirs()

    log_dir = os.path.abspath(broker.data_dir)
    assert list(everything) == [0]
    (described,) = everything[0].values()
    assert described.path == log_dir
    assert described.error is None
    assert described.total_bytes is not None
    assert described.usable_bytes is not None
    assert 0 < described.usable_bytes <= described.total_bytes
    expected = {
        tp: ReplicaInfo(segment_bytes(log_dir, tp), 0, False)
        for tp in (TopicPartition("dirs", 0), TopicPartition("dirs", 1), TopicPartition("else", 0))
    }
    assert described.replicas == expected
    assert expected[TopicPartition("dirs", 0)].size > 5 * 200
    assert expected[TopicPartition("dirs", 1)].size == 0

    only = admin.describe_log_dirs(broker_ids=[0], topics=["dirs", "missing"])[0][log_dir]
    assert set(only.replicas) == {TopicPartition("dirs", 0), TopicPartition("dirs", 1)}


def test_a_broker_that_cannot_be_asked_fails_alone(admin: AdminClient) -> None:
    result = admin.describe_log_dirs(broker_ids=[0, 7], timeout_ms=1_500)

    assert list(result) == [0, 7]
    assert 0 in result.values_by_item
    assert isinstance(result.errors[7], KafkaError)
    with pytest.raises(KafkaError):
        result[7]
