"""A topic made on a broker has its id (KIP-516) in ``partition.metadata`` in each partition
directory, the same id Metadata and CreateTopics answer, as Kafka writes it."""

from __future__ import annotations

import uuid

from odradek import Broker
from odradek.errors import ErrorCode
from odradek.storage.partition_metadata import read_partition_metadata

from .conftest import RawClient, ms, partition_dirs, schema
from .test_hot_newer_versions import TopicsWithIds


def test_each_partition_directory_holds_the_topic_id(
    broker: Broker, raw: RawClient, topic: str
) -> None:
    m = schema("create_topics", 7)
    answer = raw.send(
        m.CreateTopicsRequest(
            topics=(
                m.CreatableTopic(
                    name=topic,
                    num_partitions=3,
                    replication_factor=1,
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=ms(10_000),
            validate_only=False,
        )
    )
    (created,) = answer.topics
    assert int(created.error_code) == ErrorCode.NONE
    assert created.topic_id != uuid.UUID(int=0)
    directories = partition_dirs(broker, topic)
    assert [d.name for d in directories] == [f"{topic}-{i}" for i in range(3)]
    stored = {read_partition_metadata(str(d)) for d in directories}
    # The file holds the id as the store keeps it: the same encoding the fakes use.
    assert stored == {TopicsWithIds({topic: created.topic_id}).topic_id(topic)}
