"""A restart keeps a replicated partition's high watermark: a leader whose follower fetched
part of the log stops cleanly (``replication-offset-checkpoint`` written), starts again on the
same directory, and serves consumers only what was committed before — not its whole log —
while a single-replica partition commits its whole log at once."""

from __future__ import annotations

from pathlib import Path

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.replica_manager import ReplicaManager
from odradek.records.batch import iter_batches
from odradek.records.codec import SimpleRecord, build_batch
from odradek.storage.config import LogConfig
from odradek.storage.manager import LogManager
from odradek.storage.scheduler import ManualScheduler

REPLICATED = TopicPartition("replicated", 0)
SINGLE = TopicPartition("single", 0)


def _start(directory: Path, clock: MockClock) -> ReplicaManager:
    logs = LogManager([str(directory)], LogConfig(), clock=clock, scheduler=ManualScheduler(clock))
    logs.startup()
    return ReplicaManager(1, logs, lambda _topic: LogConfig(), clock=clock)


def _batch() -> bytearray:
    return bytearray(build_batch([SimpleRecord(1_000, None, b"v")]))


def _visible(replicas: ReplicaManager, tp: TopicPartition) -> list[int]:
    partition = replicas.get(tp)
    assert partition is not None
    read = partition.read(0, 1 << 20)
    if read.records is None:
        return []
    return [header.base_offset for _, header in iter_batches(read.records.read())]


def test_a_restart_keeps_the_committed_offset_of_a_replicated_partition(tmp_path: Path) -> None:
    clock = MockClock()
    first = _start(tmp_path, clock)
    leader = first.become_leader(REPLICATED, [1, 2], 3, isr=[1, 2], partition_epoch=4)
    single = first.become_leader(SINGLE, [1], 0)
    for _ in range(5):
        leader.append_as_leader(_batch())
        single.append_as_leader(_batch())
    leader.update_follower_fetch(2, 3, clock.monotonic_ms())
    assert leader.high_watermark == 3
    first.log_manager.shutdown()

    second = _start(tmp_path, clock)
    again = second.become_leader(REPLICATED, [1, 2], 4, isr=[1, 2], partition_epoch=5)
    second.become_leader(SINGLE, [1], 0)

    assert again.log_end_offset == 5
    assert again.high_watermark == 3
    assert _visible(second, REPLICATED) == [0, 1, 2]
    assert _visible(second, SINGLE) == [0, 1, 2, 3, 4]
    second.log_manager.shutdown()
