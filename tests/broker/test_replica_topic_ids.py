"""KIP-516 in the replica manager: a log made a replica with its topic's id gets
``partition.metadata``; after a restart, a log whose file names another id is refused with
INCONSISTENT_TOPIC_ID (its state untouched; LeaderAndIsr answers so for that partition), and a
topic id read late is written then."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.cluster_member import ClusterMember
from odradek.broker.replica_manager import ReplicaManager
from odradek.errors import ErrorCode, KafkaError
from odradek.storage.config import LogConfig
from odradek.storage.manager import LogManager
from odradek.storage.partition_metadata import FILE_NAME, read_partition_metadata
from odradek.storage.scheduler import ManualScheduler

TP = TopicPartition("orders", 0)
OLD_ID = "AAAAAAAAAAAAAAAAAAAAAA"
NEW_ID = "BBBBBBBBBBBBBBBBBBBBBB"


def _start(directory: Path, clock: MockClock) -> ReplicaManager:
    logs = LogManager([str(directory)], LogConfig(), clock=clock, scheduler=ManualScheduler(clock))
    logs.startup()
    return ReplicaManager(1, logs, lambda _topic: LogConfig(), clock=clock)


def _log_dir(replicas: ReplicaManager, tp: TopicPartition) -> str:
    partition = replicas.get(tp)
    assert partition is not None
    return partition.log.directory


def test_a_new_replica_gets_partition_metadata(tmp_path: Path) -> None:
    replicas = _start(tmp_path, MockClock())
    replicas.become_follower(TP, [2, 1], 0, 2, topic_id=OLD_ID)
    assert read_partition_metadata(_log_dir(replicas, TP)) == OLD_ID
    without = TopicPartition("no-id-yet", 0)
    replicas.become_leader(without, [1], 0)
    assert not (Path(_log_dir(replicas, without)) / FILE_NAME).exists()
    replicas.note_topic_id("no-id-yet", NEW_ID)  # the store's read finished
    assert read_partition_metadata(_log_dir(replicas, without)) == NEW_ID
    replicas.log_manager.shutdown()


def test_a_log_of_another_topic_id_is_inconsistent(tmp_path: Path) -> None:
    clock = MockClock()
    first = _start(tmp_path, clock)
    first.become_leader(TP, [1], 0, topic_id=OLD_ID)
    first.log_manager.shutdown()

    # The topic was deleted and created again while this broker was down.
    second = _start(tmp_path, clock)
    with pytest.raises(KafkaError) as refused:
        second.become_leader(TP, [1, 2], 3, isr=[1, 2], topic_id=NEW_ID)
    assert refused.value.error_code is ErrorCode.INCONSISTENT_TOPIC_ID
    assert second.get(TP) is None  # not served under the new topic
    with pytest.raises(KafkaError) as again:
        second.become_follower(TP, [2, 1], 4, 2, topic_id=NEW_ID)
    assert again.value.error_code is ErrorCode.INCONSISTENT_TOPIC_ID
    assert second.get(TP) is None
    # the id the log was written with is consistent; the file was left as it was
    led = second.become_leader(TP, [1], 5, topic_id=OLD_ID)
    assert led.leader_epoch == 5
    assert read_partition_metadata(_log_dir(second, TP)) == OLD_ID
    # a partition already served keeps its state when a request names another id
    with pytest.raises(KafkaError):
        second.become_follower(TP, [2, 1], 6, 2, topic_id=NEW_ID)
    assert (led.leader_epoch, led.leader_id) == (5, 1)
    second.log_manager.shutdown()


def test_a_removed_replica_is_checked_afresh(tmp_path: Path) -> None:
    replicas = _start(tmp_path, MockClock())
    replicas.become_leader(TP, [1], 0, topic_id=OLD_ID)
    replicas.remove_partition(TP, delete=True)
    replicas.become_leader(TP, [1], 0, topic_id=NEW_ID)  # a new topic of the same name
    assert read_partition_metadata(_log_dir(replicas, TP)) == NEW_ID
    replicas.log_manager.shutdown()


_T = TypeVar("_T")


class _Topics:
    """The part of the topic manager ``ClusterMember.leader_and_isr`` uses."""

    def __init__(self, ids: dict[str, str]) -> None:
        self.ids = ids

    def note_topic(self, topic: str, assignment: object) -> None:
        pass

    def forget_topic(self, topic: str) -> None:
        pass

    def topic_id(self, topic: str) -> str | None:
        return self.ids.get(topic)

    async def run_on_worker(self, work: Callable[..., _T], *args: Any) -> _T:
        return work(*args)  # the logs are made inline: this test is about their ids


def _leader_and_isr(*partitions: tuple[str, int]) -> SimpleNamespace:
    return SimpleNamespace(
        controller_id=2,
        controller_epoch=1,
        ungrouped_partition_states=[
            SimpleNamespace(
                topic_name=topic,
                partition_index=index,
                controller_epoch=1,
                leader=1,
                leader_epoch=1,
                isr=[1],
                zk_version=0,
                replicas=[1],
            )
            for topic, index in partitions
        ],
    )


def test_leader_and_isr_answers_inconsistent_topic_id_for_that_partition(tmp_path: Path) -> None:
    clock = MockClock()
    first = _start(tmp_path, clock)
    first.become_leader(TP, [1], 0, topic_id=OLD_ID)
    first.log_manager.shutdown()

    replicas = _start(tmp_path, clock)
    topics = _Topics({"orders": NEW_ID, "other": OLD_ID})
    member = ClusterMember(1, replicas, topics, object(), "cluster")  # type: ignore[arg-type]
    answer = asyncio.run(member.leader_and_isr(_leader_and_isr(("orders", 0), ("other", 0))))
    assert answer["error_code"] is ErrorCode.NONE
    codes = {e["topic_name"]: e["error_code"] for e in answer["partition_errors"]}
    assert codes == {"orders": ErrorCode.INCONSISTENT_TOPIC_ID, "other": ErrorCode.NONE}
    assert replicas.get(TP) is None
    assert not member.cache.has_topic("orders")  # a refused state is not cached
    assert read_partition_metadata(_log_dir(replicas, TopicPartition("other", 0))) == OLD_ID
    replicas.log_manager.shutdown()
