"""``ClusterMember.leader_and_isr`` over a real replica manager and logs: the logs of new
partitions are made on the worker (not the event loop thread), a partition is served only once
its log exists, the loop serves others meanwhile, a StopReplica waits for the LeaderAndIsr
before it and deletes its logs on the worker too, and a log that cannot be made answers
KAFKA_STORAGE_ERROR for its partition."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest
from tests.broker.real_leader import real_leader

from odradek._types import TopicPartition
from odradek.broker.cluster_member import ClusterMember
from odradek.broker.replica_manager import ReplicaManager
from odradek.errors import ErrorCode, KafkaStorageError

T = TypeVar("T")
TOPIC = "t"


class GatedTopics:
    """The topic manager's part: ``run_on_worker`` runs the work on a thread once ``gate``
    opens (the first call only: later ones run at once), recording the thread."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.calls = 0
        self.threads: list[int] = []

    def note_topic(self, topic: str, assignment: Mapping[int, Sequence[int]]) -> None:
        pass

    def forget_topic(self, topic: str) -> None:
        pass

    def topic_id(self, topic: str) -> str | None:
        return None  # not read yet: no partition.metadata check

    async def run_on_worker(self, work: Callable[..., T], *args: Any) -> T:
        self.calls += 1
        if self.calls == 1:
            await self.gate.wait()

        def recorded() -> T:
            self.threads.append(threading.get_ident())
            return work(*args)

        return await asyncio.to_thread(recorded)


def _member(replicas: ReplicaManager, topics: GatedTopics) -> ClusterMember:
    return ClusterMember(1, replicas, topics, None, "fake")  # type: ignore[arg-type]


def _leader_and_isr(partitions: range, *, leader: int = 1, epoch: int = 0) -> Any:
    states = [
        SimpleNamespace(
            topic_name=TOPIC,
            partition_index=index,
            controller_epoch=1,
            leader=leader,
            leader_epoch=epoch,
            isr=[1],
            zk_version=0,
            replicas=[1],
            is_new=True,
        )
        for index in partitions
    ]
    return SimpleNamespace(controller_id=0, controller_epoch=1, ungrouped_partition_states=states)


def _stop_replica(partitions: range) -> Any:
    return SimpleNamespace(
        controller_id=0,
        controller_epoch=1,
        delete_partitions=True,
        ungrouped_partitions=[
            SimpleNamespace(topic_name=TOPIC, partition_index=index) for index in partitions
        ],
    )


def test_new_logs_are_made_off_the_loop_and_served_only_once_made(tmp_path: Path) -> None:
    async def scenario() -> None:
        with real_leader(tmp_path, 1) as (replicas, _):
            topics = GatedTopics()
            member = _member(replicas, topics)
            applying = asyncio.ensure_future(member.leader_and_isr(_leader_and_isr(range(300))))
            for _ in range(5):
                await asyncio.sleep(0)  # the loop runs other work while the logs wait
            assert not applying.done()
            assert replicas.get(TopicPartition(TOPIC, 0)) is None  # no log: not served
            assert replicas.log_manager.get_log(TopicPartition(TOPIC, 0)) is None
            topics.gate.set()
            answer = await applying
            assert {e["error_code"] for e in answer["partition_errors"]} == {ErrorCode.NONE}
            assert len(replicas.partitions()) == 300
            partition = replicas.get(TopicPartition(TOPIC, 299))
            assert partition is not None
            assert partition.is_leader
            assert topics.threads
            assert threading.get_ident() not in topics.threads

    asyncio.run(scenario())


def test_a_stop_replica_waits_for_the_leader_and_isr_before_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        with real_leader(tmp_path, 1) as (replicas, _):
            topics = GatedTopics()
            member = _member(replicas, topics)
            applying = asyncio.ensure_future(member.leader_and_isr(_leader_and_isr(range(3))))
            await asyncio.sleep(0)
            stopping = asyncio.ensure_future(member.stop_replica(_stop_replica(range(3))))
            for _ in range(5):
                await asyncio.sleep(0)
            assert not stopping.done()  # behind the LeaderAndIsr still making its logs
            topics.gate.set()
            await asyncio.gather(applying, stopping)
            # Applied in arrival order: served, then stopped and deleted.
            assert replicas.partitions() == {}
            assert replicas.log_manager.get_log(TopicPartition(TOPIC, 0)) is None

    asyncio.run(scenario())


def test_a_stop_replica_deletes_the_logs_off_the_loop_then_answers(tmp_path: Path) -> None:
    async def scenario() -> None:
        with real_leader(tmp_path, 1) as (replicas, _):
            topics = GatedTopics()
            topics.calls = 1  # the gate is for the first call only: no wait here
            member = _member(replicas, topics)
            await member.leader_and_isr(_leader_and_isr(range(200)))
            made = len(topics.threads)
            directory = Path(replicas.log_manager.log_dirs[0])
            assert len(list(directory.glob(f"{TOPIC}-*"))) == 200
            answer = await member.stop_replica(_stop_replica(range(200)))
            assert {e["error_code"] for e in answer["partition_errors"]} == {ErrorCode.NONE}
            # The renames (and directory fsyncs) ran on the worker, before the answer.
            assert len(topics.threads) == made + 1
            assert threading.get_ident() not in topics.threads
            assert replicas.partitions() == {}
            assert replicas.log_manager.all_logs() == {}
            assert not [p for p in directory.glob(f"{TOPIC}-*") if not p.name.endswith("-delete")]

    asyncio.run(scenario())


def test_a_log_that_cannot_be_made_answers_kafka_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        with real_leader(tmp_path, 1) as (replicas, _):
            topics = GatedTopics()
            topics.gate.set()

            def full_disk(*_args: Any, **_kwargs: Any) -> None:
                raise KafkaStorageError("no space left on device")

            monkeypatch.setattr(replicas.log_manager, "get_or_create_logs", full_disk)
            answer = await _member(replicas, topics).leader_and_isr(_leader_and_isr(range(2)))
            codes = [e["error_code"] for e in answer["partition_errors"]]
            assert codes == [ErrorCode.KAFKA_STORAGE_ERROR] * 2
            assert replicas.partitions() == {}

    asyncio.run(scenario())
