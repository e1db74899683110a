"""The topic manager over a real local metadata store (in a temporary directory) and an
in-memory replica manager and log manager, without sockets: what it writes to the store, which
partitions it asks the replica manager to lead and which logs it makes, the admin errors, and
the rebuild from the store."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from odradek._types import TopicPartition
from odradek.broker.config import BrokerConfig
from odradek.broker.topic_manager import TopicManager
from odradek.controller.local import LocalMetadataStore
from odradek.controller.topics import ClusterMetadata
from odradek.errors import ErrorCode, KafkaError


@dataclass
class Led:
    replicas: list[int]
    leader_epoch: int
    isr: list[int] = field(default_factory=lambda: [1])


@dataclass
class FakeLogs:
    """The log manager's part the topic manager uses: which logs exist."""

    logs: set[TopicPartition] = field(default_factory=set)
    checkpoints: int = 0

    #: Where the logs' ``partition.metadata`` files go (one directory for all: a fake).
    directory: str = ""

    def get_or_create_log(
        self, topic_partition: TopicPartition, config: object = None
    ) -> SimpleNamespace:
        self.logs.add(topic_partition)
        return SimpleNamespace(directory=self.directory)

    def delete_log(self, topic_partition: TopicPartition, *, checkpoint: bool = True) -> bool:
        existed = topic_partition in self.logs
        self.logs.discard(topic_partition)
        return existed

    def checkpoint_logs(self) -> None:
        self.checkpoints += 1


@dataclass
class FakeReplicas:
    led: dict[TopicPartition, Led] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    reconfigured: list[str] = field(default_factory=list)
    log_manager: FakeLogs = field(default_factory=FakeLogs)

    def detach_topic(self, topic: str) -> list[TopicPartition]:
        self.removed.append(topic)
        doomed = [tp for tp in self.led if tp.topic == topic]
        for tp in doomed:
            del self.led[tp]
        return doomed

    def become_leader(
        self, topic_partition: TopicPartition, replicas: list[int], leader_epoch: int = 0
    ) -> Led:
        self.led[topic_partition] = Led(replicas, leader_epoch)
        return self.led[topic_partition]

    def get(self, topic_partition: TopicPartition) -> Led | None:
        return self.led.get(topic_partition)

    def remove_topic(self, topic: str) -> int:
        self.removed.append(topic)
        doomed = [tp for tp in self.led if tp.topic == topic]
        for tp in doomed:
            del self.led[tp]
        return len(doomed)

    def update_topic_config(self, topic: str) -> None:
        self.reconfigured.append(topic)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LocalMetadataStore]:
    opened = LocalMetadataStore(tmp_path)
    yield opened
    opened.close()


def manager(
    store: LocalMetadataStore, tmp_path: Path, **settings: str
) -> tuple[TopicManager, FakeReplicas]:
    config = BrokerConfig.from_mapping(
        {"broker.id": "1", "log.dirs": str(tmp_path), "num.partitions": "3", **settings}
    )
    metadata = ClusterMetadata(store)
    metadata.ensure_top_level_paths()
    replicas = FakeReplicas(log_manager=FakeLogs(directory=str(tmp_path)))
    topics = TopicManager(config, metadata, replicas)  # type: ignore[arg-type]
    topics.startup()
    return topics, replicas


def code_of(error: pytest.ExceptionInfo[KafkaError]) -> ErrorCode:
    return error.value.error_code


def test_create_with_defaults_leads_every_partition_and_is_described(
    store: LocalMetadataStore, tmp_path: Path
) -> None:
    topics, replicas = manager(store, tmp_path)

    topics.create_topic("t", configs={"retention.ms": "1000"})

    assert sorted(replicas.led) == [TopicPartition("t", i) for i in range(3)]
    assert [(p.partition, p.leader, p.replicas) for p in topics.describe("t")] == [
        (0, 1, (1,)),
        (1, 1, (1,)),
        (2, 1, (1,)),
    ]
    assert topics.log_config_for("t").retention_ms == 1000
    assert topics.exists("t")
    assert topics.topic_names() == ["t"]


def test_create_errors_and_validate_only(store: LocalMetadataStore, tmp_path: Path) -> None:
    topics, replicas = manager(store, tmp_path)
    topics.create_topic("t", 1)

    with pytest.raises(KafkaError) as exists:
        topics.create_topic("t", 1)
    with pytest.raises(KafkaError) as bad_config:
        topics.create_topic("u", 1, configs={"retention.ms": "soon"})
    with pytest.raises(KafkaError) as no_partitions:
        topics.create_topic("v", 0)
    topics.create_topic("w", 2, validate_only=True)

    assert code_of(exists) == ErrorCode.TOPIC_ALREADY_EXISTS
    assert code_of(bad_config) == ErrorCode.INVALID_CONFIG
    assert code_of(no_partitions) == ErrorCode.INVALID_PARTITIONS
    assert topics.topic_names() == ["t"]
    assert sorted(replicas.led) == [TopicPartition("t", 0)]


def test_a_restart_rebuilds_the_same_topics_from_the_store(
    store: LocalMetadataStore, tmp_path: Path
) -> None:
    topics, _ = manager(store, tmp_path)
    topics.create_topic("t", 2, configs={"cleanup.policy": "compact"})
    topics.create_partitions("t", 4)

    again, replicas = manager(store, tmp_path)

    assert again.topic_names() == ["t"]
    assert sorted(replicas.led) == [TopicPartition("t", i) for i in range(4)]
    assert again.log_config_for("t").cleanup_policy == "compact"


def test_partitions_only_grow(store: LocalMetadataStore, tmp_path: Path) -> None:
    topics, replicas = manager(store, tmp_path)
    topics.create_topic("t", 2)

    with pytest.raises(KafkaError) as same:
        topics.create_partitions("t", 2)
    with pytest.raises(KafkaError) as missing:
        topics.create_partitions("nope", 5)
    topics.create_partitions("t", 3, validate_only=True)

    assert code_of(same) == ErrorCode.INVALID_PARTITIONS
    assert code_of(missing) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert topics.partition_count("t") == 2
    assert len(replicas.led) == 2


def test_delete_removes_the_topic_and_its_partitions(
    store: LocalMetadataStore, tmp_path: Path
) -> None:
    topics, replicas = manager(store, tmp_path)
    topics.create_topic("t", 2)

    topics.delete_topic("t")
    with pytest.raises(KafkaError) as again:
        topics.delete_topic("t")

    assert code_of(again) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert replicas.removed == ["t"]
    assert not topics.exists("t")
    assert manager(store, tmp_path)[0].topic_names() == []


def test_delete_needs_delete_topic_enable(store: LocalMetadataStore, tmp_path: Path) -> None:
    topics, replicas = manager(store, tmp_path, **{"delete.topic.enable": "false"})
    topics.create_topic("t", 1)

    with pytest.raises(KafkaError) as refused:
        topics.delete_topic("t")

    assert code_of(refused) == ErrorCode.TOPIC_DELETION_DISABLED
    assert topics.exists("t")
    assert replicas.removed == []


def test_altered_configs_reach_the_partitions(store: LocalMetadataStore, tmp_path: Path) -> None:
    topics, replicas = manager(store, tmp_path)
    topics.create_topic("t", 1, configs={"retention.ms": "1000", "segment.ms": "5000"})

    topics.alter_topic_configs("t", {"retention.ms": "2000"}, ["segment.ms"])

    entries = {e.name: (e.value, e.is_default) for e in topics.topic_config_entries("t")}
    assert entries["retention.ms"] == ("2000", False)
    assert entries["segment.ms"][1] is True
    assert topics.log_config_for("t").retention_ms == 2000
    assert replicas.reconfigured == ["t"]


def test_auto_create_follows_the_setting_and_spares_internal_topics(
    store: LocalMetadataStore, tmp_path: Path
) -> None:
    enabled, _ = manager(store, tmp_path)
    assert enabled.maybe_auto_create("auto") is True
    assert enabled.maybe_auto_create("__consumer_offsets") is False
    assert enabled.topic_names() == ["auto"]
