"""The replica manager over an in-memory log manager: a partition (and its log) is created
once and then only re-led, topic configs reach every partition of that topic only, and
removing a topic deletes exactly its logs."""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek._types import TopicPartition
from odradek.broker.replica_manager import ReplicaManager
from odradek.storage.config import LogConfig


@dataclass
class FakeLog:
    config: LogConfig
    log_end_offset: int = 0
    log_start_offset: int = 0
    high_watermark: int | None = None
    #: (epoch, start offset) of each leader epoch begun here (``Log.assign_epoch_start``).
    epoch_starts: list[tuple[int, int]] = field(default_factory=list)

    def assign_epoch_start(self, leader_epoch: int) -> bool:
        if self.epoch_starts and self.epoch_starts[-1][0] == leader_epoch:
            return False
        self.epoch_starts.append((leader_epoch, self.log_end_offset))
        return True

    def update_high_watermark(self, offset: int) -> None:
        self.high_watermark = offset

    def update_config(self, config: LogConfig) -> None:
        self.config = config


@dataclass
class FakeLogManager:
    logs: dict[TopicPartition, FakeLog] = field(default_factory=dict)
    created: list[TopicPartition] = field(default_factory=list)
    deleted: list[TopicPartition] = field(default_factory=list)

    def get_or_create_log(self, topic_partition: TopicPartition, config: LogConfig) -> FakeLog:
        if topic_partition not in self.logs:
            self.logs[topic_partition] = FakeLog(config)
            self.created.append(topic_partition)
        return self.logs[topic_partition]

    def delete_log(self, topic_partition: TopicPartition) -> bool:
        self.deleted.append(topic_partition)
        return self.logs.pop(topic_partition, None) is not None


def manager(configs: dict[str, LogConfig]) -> tuple[ReplicaManager, FakeLogManager]:
    logs = FakeLogManager()
    return ReplicaManager(7, logs, lambda topic: configs[topic]), logs  # type: ignore[arg-type]


def test_become_leader_creates_once_then_updates_epoch_and_replicas() -> None:
    configs = {"t": LogConfig(segment_bytes=1 << 20)}
    replicas, logs = manager(configs)
    tp = TopicPartition("t", 0)

    first = replicas.become_leader(tp, [7], leader_epoch=0)
    again = replicas.become_leader(tp, [7, 8], leader_epoch=3)

    assert again is first
    assert logs.created == [tp]
    assert (first.leader_epoch, first.replicas, first.broker_id) == (3, [7, 8], 7)
    assert logs.logs[tp].epoch_starts == [(0, 0), (3, 0)]  # each new epoch begins at the LEO
    assert first.log.config == configs["t"]
    assert replicas.get(tp) is first
    assert replicas.get(TopicPartition("t", 1)) is None


def test_topic_configs_reach_that_topic_only() -> None:
    configs = {"a": LogConfig(), "ab": LogConfig()}
    replicas, logs = manager(configs)
    for tp in (TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("ab", 0)):
        replicas.become_leader(tp, [7])

    configs["a"] = LogConfig(retention_ms=1234)
    replicas.update_topic_config("a")

    assert logs.logs[TopicPartition("a", 0)].config.retention_ms == 1234
    assert logs.logs[TopicPartition("a", 1)].config.retention_ms == 1234
    assert logs.logs[TopicPartition("ab", 0)].config == LogConfig()


def test_remove_topic_deletes_its_logs_only() -> None:
    replicas, logs = manager({"a": LogConfig(), "ab": LogConfig()})
    replicas.become_leader(TopicPartition("a", 0), [7])
    replicas.become_leader(TopicPartition("a", 1), [7])
    replicas.become_leader(TopicPartition("ab", 0), [7])

    assert replicas.remove_topic("a") == 2
    assert sorted(logs.deleted) == [TopicPartition("a", 0), TopicPartition("a", 1)]
    assert list(replicas.partitions()) == [TopicPartition("ab", 0)]
    assert replicas.remove_topic("a") == 0
