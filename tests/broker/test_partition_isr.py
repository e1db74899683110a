"""A leader partition over a real log with followers: their fetches move the high watermark
(the smallest LEO over the ISR), a caught-up follower is proposed for the ISR and counts once
the controller's answer commits it, a lagging one is proposed out after
``replica.lag.time.max.ms``, one change is in flight at a time, refused or stale answers
change nothing, and a replicated partition starts from its log's checkpointed HW."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.replication.isr import UNKNOWN_OFFSET, IsrChange
from odradek.broker.replication.partition import Partition
from odradek.errors import ErrorCode, KafkaError, OffsetOutOfRangeError
from odradek.records.codec import SimpleRecord, build_batch
from odradek.storage.config import LogConfig
from odradek.storage.log import Log

TP = TopicPartition("t", 0)
LAG_MS = 30_000


def batch(count: int = 1) -> bytearray:
    return bytearray(build_batch([SimpleRecord(1_000 + i, None, b"v") for i in range(count)]))


@pytest.fixture
def log(tmp_path: Path) -> Iterator[Log]:
    opened = Log.open(str(tmp_path / "t-0"), TP, LogConfig(), clock=MockClock())
    yield opened
    opened.close()


class Controller:
    """Collects proposed ISR changes; ``commit`` answers the latest as the controller would."""

    def __init__(self) -> None:
        self.proposed: list[IsrChange] = []

    def __call__(self, change: IsrChange) -> None:
        self.proposed.append(change)

    def commit(self, partition: Partition) -> bool:
        change = self.proposed[-1]
        return partition.on_alter_partition_result(
            change, ErrorCode.NONE, change.leader_epoch, change.new_isr, change.partition_epoch + 1
        )

    def refuse(self, partition: Partition, error: ErrorCode) -> bool:
        return partition.on_alter_partition_result(self.proposed[-1], error, -1, (), -1)


def leader(
    log: Log, controller: Controller, *, isr: list[int], now_ms: int = 0, replicas: int = 3
) -> Partition:
    partition = Partition(
        TP,
        log,
        broker_id=1,
        replicas=list(range(1, replicas + 1)),
        leader_epoch=0,
        on_isr_change=controller,
    )
    partition.make_leader(5, list(range(1, replicas + 1)), isr, 10, now_ms)
    return partition


def test_the_high_watermark_waits_for_every_isr_follower(log: Log) -> None:
    controller = Controller()
    partition = leader(log, controller, isr=[1, 2, 3])
    partition.append_as_leader(batch(5))

    assert partition.high_watermark == 0  # nobody fetched yet
    partition.update_follower_fetch(2, 5, now_ms=10)
    assert partition.high_watermark == 0  # 3 has not
    partition.update_follower_fetch(3, 3, now_ms=10)
    assert partition.high_watermark == 3
    partition.update_follower_fetch(3, 5, now_ms=20)
    assert partition.high_watermark == 5
    assert log.high_watermark == 5
    assert controller.proposed == []  # every follower was in the ISR already


def test_a_leader_alone_in_its_isr_commits_each_append(log: Log) -> None:
    partition = leader(log, Controller(), isr=[1])

    partition.append_as_leader(batch(4))

    assert partition.high_watermark == 4


def test_a_consumer_reads_only_below_the_high_watermark(log: Log) -> None:
    partition = leader(log, Controller(), isr=[1, 2], replicas=2)
    partition.append_as_leader(batch(3))
    partition.append_as_leader(batch(2))
    partition.update_follower_fetch(2, 3, now_ms=1)

    visible = partition.read(0, 1 << 20)
    everything = partition.read(0, 1 << 20, committed_only=False)

    assert partition.high_watermark == 3
    assert visible.records is not None
    assert everything.records is not None
    assert visible.records.length < everything.records.length


def test_a_caught_up_follower_is_proposed_and_counts_after_the_commit(log: Log) -> None:
    controller = Controller()
    partition = leader(log, controller, isr=[1, 2])
    partition.append_as_leader(batch(4))
    partition.update_follower_fetch(2, 4, now_ms=1)
    assert partition.high_watermark == 4

    partition.append_as_leader(batch(2))
    partition.update_follower_fetch(3, 4, now_ms=2)  # reached the HW: may join

    assert [c.new_isr for c in controller.proposed] == [(1, 2, 3)]
    assert controller.proposed[0].partition_epoch == 10
    assert controller.proposed[0].leader_epoch == 5
    assert partition.isr == [1, 2]  # not committed yet
    assert partition.maximal_isr == (1, 2, 3)
    partition.update_follower_fetch(2, 6, now_ms=3)
    assert partition.high_watermark == 4  # the pending member (at 4) holds it back
    assert controller.commit(partition)
    assert partition.isr == [1, 2, 3]
    assert partition.partition_epoch == 11
    assert partition.pending_isr is None
    partition.update_follower_fetch(3, 6, now_ms=4)
    assert partition.high_watermark == 6


def test_a_follower_below_the_high_watermark_is_not_proposed(log: Log) -> None:
    controller = Controller()
    partition = leader(log, controller, isr=[1, 2])
    partition.append_as_leader(batch(4))
    partition.update_follower_fetch(2, 4, now_ms=1)

    partition.update_follower_fetch(3, 3, now_ms=2)

    assert controller.proposed == []


def test_a_follower_below_the_epoch_start_is_not_proposed(log: Log) -> None:
    controller = Controller()
    log.append(batch(6), leader_epoch=0)  # written in an earlier epoch
    log.update_high_watermark(2)  # committed before the restart: 2
    partition = leader(log, controller, isr=[1, 2])  # epoch 5 starts at offset 6
    assert partition.high_watermark == 2  # 2 has not fetched

    partition.update_follower_fetch(3, 4, now_ms=1)  # past the HW, not the epoch start

    assert controller.proposed == []
    partition.update_follower_fetch(3, 6, now_ms=2)
    assert [c.new_isr for c in controller.proposed] == [(1, 2, 3)]


def test_a_lagging_follower_is_proposed_out_after_the_lag_time(log: Log) -> None:
    controller = Controller()
    partition = leader(log, controller, isr=[1, 2, 3], now_ms=0)
    partition.append_as_leader(batch(3))
    partition.update_follower_fetch(2, 3, now_ms=1_000)
    partition.update_follower_fetch(3, 1, now_ms=1_000)
    assert partition.high_watermark == 1

    assert partition.maybe_shrink_isr(LAG_MS, LAG_MS) == ()  # 3 caught up at 0 (reset)
    assert partition.maybe_shrink_isr(LAG_MS + 1, LAG_MS) == (3,)
    assert [c.new_isr for c in controller.proposed] == [(1, 2)]
    assert partition.high_watermark == 1  # the shrink counts only once committed
    assert partition.maybe_shrink_isr(LAG_MS + 2, LAG_MS) == ()  # one change in flight
    assert controller.commit(partition)
    assert partition.isr == [1, 2]
    assert partition.high_watermark == 3


def test_a_refusal_that_may_pass_drops_the_change(log: Log) -> None:
    controller = Controller()
    partition = leader(log, controller, isr=[1, 2, 3])
    partition.append_as_leader(batch(1))
    partition.maybe_shrink_isr(LAG_MS + 1, LAG_MS)

    changed = controller.refuse(partition, ErrorCode.INELIGIBLE_REPLICA)

    assert not changed
    assert partition.isr == [1, 2, 3]
    assert partition.pending_isr is None
    assert partition.maybe_shrink_isr(LAG_MS + 2, LAG_MS) == (2, 3)
    assert len(controller.proposed) == 2


@pytest.mark.parametrize(
    "error",
    [
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ],
)
def test_a_refusal_for_a_stale_state_waits_for_the_next_leader_and_isr(
    log: Log, error: ErrorCode
) -> None:
    controller = Controller()
    partition = leader(log, controller, isr=[1, 2, 3])
    partition.append_as_leader(batch(1))
    partition.maybe_shrink_isr(LAG_MS + 1, LAG_MS)

    controller.refuse(partition, error)

    assert partition.isr == [1, 2, 3]
    assert partition.maybe_shrink_isr(LAG_MS + 2, LAG_MS) == ()  # nothing new proposed
    assert len(controller.proposed) == 1
    partition.make_leader(6, [1, 2, 3], [1, 2, 3], 12, LAG_MS + 3)  # the current state
    assert partition.maybe_shrink_isr(2 * LAG_MS + 4, LAG_MS) == (2, 3)
    assert controller.proposed[-1].partition_epoch == 12


def test_an_answer_about_another_leader_epoch_is_ignored(log: Log) -> None:
    controller = Controller()
    partition = leader(log, controller, isr=[1, 2, 3])
    partition.append_as_leader(batch(1))
    partition.maybe_shrink_isr(LAG_MS + 1, LAG_MS)

    change = controller.proposed[-1]
    assert not partition.on_alter_partition_result(change, ErrorCode.NONE, 4, (1,), 11)
    assert not partition.on_alter_partition_result(change, ErrorCode.NONE, 5, (1,), 10)
    assert partition.isr == [1, 2, 3]
    assert partition.pending_isr == (1,)


def test_a_new_leader_and_isr_drops_the_change_in_flight(log: Log) -> None:
    controller = Controller()
    partition = leader(log, controller, isr=[1, 2, 3])
    partition.append_as_leader(batch(1))
    partition.maybe_shrink_isr(LAG_MS + 1, LAG_MS)

    partition.make_leader(6, [1, 2, 3], [1, 2], 12, LAG_MS + 2)

    assert partition.pending_isr is None
    assert not controller.commit(partition)  # the old answer (epoch 5) changes nothing
    assert partition.isr == [1, 2]


def test_a_fetch_from_a_broker_that_is_not_a_replica_is_refused(log: Log) -> None:
    partition = leader(log, Controller(), isr=[1, 2, 3])

    with pytest.raises(KafkaError) as refused:
        partition.update_follower_fetch(7, 0, now_ms=1)

    assert refused.value.error_code is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_follower_partition_refuses_follower_fetches(log: Log) -> None:
    partition = leader(log, Controller(), isr=[1, 2, 3])
    partition.leader_id = 2

    with pytest.raises(KafkaError) as refused:
        partition.update_follower_fetch(3, 0, now_ms=1)

    assert refused.value.error_code is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_without_a_controller_a_proposal_commits_at_once(log: Log) -> None:
    partition = Partition(TP, log, broker_id=1, replicas=[1, 2])
    partition.make_leader(0, [1, 2], [1], 0, 0)
    partition.update_follower_fetch(2, 0, now_ms=1)

    assert partition.isr == [1, 2]
    assert partition.partition_epoch == 1


def test_a_replicated_partition_starts_at_its_logs_high_watermark(log: Log) -> None:
    log.append(batch(8), leader_epoch=0)
    log.update_high_watermark(5)  # as the log manager does from the checkpoint

    replicated = Partition(TP, log, broker_id=1, replicas=[1, 2])
    single = Partition(TP, log, broker_id=1, replicas=[1])

    assert replicated.high_watermark == 5
    assert single.high_watermark == 8


def test_a_fetch_past_the_leaders_end_is_refused_and_not_recorded(log: Log) -> None:
    controller = Controller()
    partition = leader(log, controller, isr=[1, 2])
    partition.append_as_leader(batch(2))

    with pytest.raises(OffsetOutOfRangeError):
        partition.update_follower_fetch(3, 9, now_ms=1)

    state = partition.follower_state(3)
    assert state is not None
    assert state.log_end_offset == UNKNOWN_OFFSET
    assert controller.proposed == []


def test_the_same_leader_epoch_again_keeps_the_followers_positions(log: Log) -> None:
    partition = leader(log, Controller(), isr=[1, 2], replicas=2)
    partition.append_as_leader(batch(3))
    partition.update_follower_fetch(2, 3, now_ms=1)

    partition.make_leader(5, [1, 2], [1, 2], 10, now_ms=2)  # the controller repeats itself
    same = partition.follower_state(2)
    partition.make_leader(6, [1, 2], [1, 2], 11, now_ms=3)  # a new epoch starts over
    new = partition.follower_state(2)

    assert same is not None
    assert same.log_end_offset == 3
    assert new is not None
    assert new.log_end_offset == UNKNOWN_OFFSET
    assert new.last_caught_up_ms == 3


def test_a_restored_high_watermark_is_never_below_the_log_start(log: Log) -> None:
    log.append(batch(8), leader_epoch=0)
    log.maybe_increment_log_start_offset(6)
    log.update_high_watermark(2)  # checkpointed before retention moved the start

    partition = Partition(TP, log, broker_id=1, replicas=[1, 2])

    assert partition.high_watermark == 6
