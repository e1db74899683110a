"""A partition over a real log in a temporary directory (no sockets): offsets assigned from
the log end offset, the leader epoch written into each batch, the high watermark rule with
one replica and with a lagging ISR, the topic's min.insync.replicas, reads capped at the high
watermark, and DeleteRecords bounds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.replication.partition import Partition
from odradek.errors import OffsetOutOfRangeError
from odradek.records.batch import iter_batches
from odradek.records.codec import SimpleRecord, build_batch
from odradek.storage.config import LogConfig
from odradek.storage.log import Log

TP = TopicPartition("t", 0)


def batch(count: int = 1, timestamp_ms: int = 1_000) -> bytearray:
    return bytearray(
        build_batch([SimpleRecord(timestamp_ms + i, None, b"v") for i in range(count)])
    )


@pytest.fixture
def log(tmp_path: Path) -> Iterator[Log]:
    opened = Log.open(str(tmp_path / "t-0"), TP, LogConfig(), clock=MockClock())
    yield opened
    opened.close()


def leader(log: Log, *, leader_epoch: int = 4) -> Partition:
    return Partition(TP, log, broker_id=1, replicas=[1], leader_epoch=leader_epoch)


def test_appends_take_the_next_offsets_carry_the_epoch_and_commit_at_once(log: Log) -> None:
    partition = leader(log)

    first = partition.append_as_leader(batch(3))
    second = partition.append_as_leader(batch(2))

    assert (first.first_offset, second.first_offset) == (0, 3)
    assert partition.log_end_offset == partition.high_watermark == 5
    read = partition.read(0, 1 << 20)
    assert read.records is not None
    headers = [header for _, header in iter_batches(read.records.read())]
    assert [h.base_offset for h in headers] == [0, 3]
    assert {h.partition_leader_epoch for h in headers} == {4}


def test_min_insync_replicas_is_the_topics_and_appends_ignore_it(tmp_path: Path) -> None:
    config = LogConfig(min_insync_replicas=2)
    log = Log.open(str(tmp_path / "t-0"), TP, config, clock=MockClock())
    try:
        partition = leader(log)
        assert partition.min_insync_replicas == 2
        # What acks=all asks of the ISR is broker.acks's; the append itself goes through.
        assert partition.append_as_leader(batch()).first_offset == 0
    finally:
        log.close()


def test_with_a_lagging_isr_the_high_watermark_stays_and_consumers_see_only_below_it(
    log: Log,
) -> None:
    partition = leader(log)
    partition.append_as_leader(batch(2))
    partition.isr = [1, 2]  # a follower joined and has not fetched yet

    partition.append_as_leader(batch(3, timestamp_ms=5_000))

    assert (partition.high_watermark, partition.log_end_offset) == (2, 5)
    committed = partition.read(0, 1 << 20)
    everything = partition.read(0, 1 << 20, committed_only=False)
    assert committed.records is not None
    assert everything.records is not None
    assert [h.base_offset for _, h in iter_batches(committed.records.read())] == [0]
    assert [h.base_offset for _, h in iter_batches(everything.records.read())] == [0, 2]
    assert partition.offset_for_timestamp(1_001).offset == 1
    assert log.offset_for_timestamp(5_000).offset == 2
    assert partition.offset_for_timestamp(5_000) is None  # only in the uncommitted batch


def test_reads_outside_the_log_raise(log: Log) -> None:
    partition = leader(log)
    partition.append_as_leader(batch(2))

    with pytest.raises(OffsetOutOfRangeError):
        partition.read(3, 1 << 20)


def test_delete_records_moves_the_start_up_to_the_high_watermark_only(log: Log) -> None:
    partition = leader(log)
    partition.append_as_leader(batch(2))
    partition.append_as_leader(batch(2))

    assert partition.delete_records_before(1) == 1
    assert partition.log_start_offset == 1
    with pytest.raises(OffsetOutOfRangeError):
        partition.delete_records_before(5)
    assert partition.delete_records_before(-1) == 4  # -1: the high watermark
    assert partition.delete_records_before(2) == 4  # never backwards


def test_the_high_watermark_only_moves_forward_within_the_log_and_tells_the_listener(
    log: Log,
) -> None:
    moved: list[int] = []
    partition = Partition(
        TP,
        log,
        broker_id=1,
        replicas=[1, 2],
        on_high_watermark=lambda p: moved.append(p.high_watermark),
    )
    partition.isr = [1, 2]  # a follower in the ISR: appends alone commit nothing
    partition.append_as_leader(batch(4))
    assert partition.high_watermark == 0
    assert moved == []

    assert partition.advance_high_watermark(2) is True
    assert partition.advance_high_watermark(1) is False  # never back
    assert partition.advance_high_watermark(99) is True  # capped at the log end offset
    assert moved == [2, 4]
    assert partition.high_watermark == log.high_watermark == 4
