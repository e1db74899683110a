"""Transactions on a partition over a real log (no sockets): the last stable offset stops at
the oldest open transaction and moves with its marker, aborted transactions are indexed (and
listed only for reads that overlap them), markers of fenced epochs are refused, a follower
rebuilds the same state from the leader's batches, a reopen rebuilds it (and the
``.txnindex`` files) from the log, and a truncation forgets what it cut."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.replication.partition import Partition
from odradek.errors import ErrorCode, KafkaError
from odradek.records.batch import iter_batches
from odradek.records.codec import SimpleRecord, build_batch
from odradek.records.control import ControlType, control_type
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.txn_index import AbortedTxn, read_txn_index_file

TP = TopicPartition("t", 0)


def txn_batch(pid: int, sequence: int, count: int = 2, *, epoch: int = 0) -> bytes:
    return build_batch(
        [SimpleRecord(1_000 + i, None, b"p%d-%d" % (pid, sequence + i)) for i in range(count)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        transactional=True,
    )


def plain(count: int = 1) -> bytes:
    return build_batch([SimpleRecord(1, None, b"x") for _ in range(count)])


def open_log(path: Path, config: LogConfig | None = None) -> Log:
    return Log.open(str(path / "t-0"), TP, config or LogConfig(), clock=MockClock())


def leader(log: Log) -> Partition:
    return Partition(TP, log, broker_id=1, replicas=[1], leader_epoch=1, clock=MockClock())


def base_offsets(partition: Partition, *, read_committed: bool = False) -> list[int]:
    """The base offsets of every batch a consumer reads (one segment per read)."""
    found: list[int] = []
    offset = 0
    while True:
        data = partition.read(offset, 1 << 20, read_committed=read_committed).read_bytes()
        batches = [header for _, header in iter_batches(data)]
        if not batches:
            return found
        found.extend(header.base_offset for header in batches)
        offset = batches[-1].next_offset


def test_the_lso_stops_at_the_oldest_open_transaction(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    partition = leader(log)
    partition.append_as_leader(plain())  # 0
    partition.append_as_leader(txn_batch(7, 0))  # 1-2
    partition.append_as_leader(txn_batch(8, 0))  # 3-4
    partition.append_as_leader(plain())  # 5
    assert partition.high_watermark == 6
    assert partition.last_stable_offset == 1
    partition.append_marker(8, 0, True, coordinator_epoch=0)  # 6: 8 commits; 7 still open
    assert partition.last_stable_offset == 1
    partition.append_marker(7, 0, False, coordinator_epoch=0)  # 7: 7 aborts
    assert partition.last_stable_offset == partition.high_watermark == 8
    assert partition.aborted_transactions(0, 8) == [AbortedTxn(7, 1, 7, 8)]
    # A read that starts after the abort marker needs no aborted list.
    assert partition.aborted_transactions(8, 8) == []
    # read_committed reads stop at the LSO; a plain read at the HW.
    partition.append_as_leader(txn_batch(9, 0))  # 8-9, open
    assert base_offsets(partition, read_committed=True) == [0, 1, 3, 5, 6, 7]
    assert base_offsets(partition) == [0, 1, 3, 5, 6, 7, 8]
    log.close()


def test_markers_are_control_batches_with_the_producer_and_type(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    partition = leader(log)
    partition.append_as_leader(txn_batch(7, 0, epoch=3))
    partition.append_marker(7, 3, True, coordinator_epoch=5)
    data = log.read(2, 1 << 20).read_bytes()
    ((position, header),) = list(iter_batches(data))
    assert header.is_control
    assert header.is_transactional
    assert (header.producer_id, header.producer_epoch) == (7, 3)
    assert control_type(data, header, position) == ControlType.COMMIT
    log.close()


def test_a_marker_of_an_older_epoch_is_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    partition = leader(log)
    partition.append_as_leader(txn_batch(7, 0, epoch=2))
    with pytest.raises(KafkaError) as refused:
        partition.append_marker(7, 1, False, coordinator_epoch=0)
    assert refused.value.error_code is ErrorCode.INVALID_PRODUCER_EPOCH
    assert partition.log_end_offset == 2
    assert partition.last_stable_offset == 0
    log.close()


def test_a_follower_and_a_reopened_log_rebuild_the_same_state(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    partition = leader(log)
    partition.append_as_leader(txn_batch(7, 0))
    partition.append_marker(7, 0, False, coordinator_epoch=0)
    partition.append_as_leader(txn_batch(8, 0))
    partition.append_as_leader(txn_batch(7, 2, epoch=0))
    expected_aborted = partition.aborted_transactions(0, 100)
    assert partition.last_stable_offset == 3
    files = [name for name in os.listdir(log.directory) if name.endswith(".txnindex")]
    assert len(files) == 1  # the segment holding the abort marker
    everything = b""
    while len(everything) < sum(segment.size for segment in log.segments()):
        offset = 0 if not everything else list(iter_batches(everything))[-1][1].next_offset
        everything += log.read(offset, 1 << 20).read_bytes()

    follower_log = Log.open(str(tmp_path / "f" / "t-0"), TP, LogConfig(), clock=MockClock())
    follower = Partition(TP, follower_log, broker_id=2, replicas=[1, 2], clock=MockClock())
    follower.append_as_follower(everything)
    follower.update_follower_high_watermark(partition.high_watermark)
    assert follower.aborted_transactions(0, 100) == expected_aborted
    assert follower.last_stable_offset == 3
    follower_log.close()

    log.close()
    os.remove(os.path.join(str(tmp_path / "t-0"), files[0]))  # lost: rebuilt from the log
    reopened = leader(open_log(tmp_path))
    assert reopened.aborted_transactions(0, 100) == expected_aborted
    assert reopened.last_stable_offset == 3
    path = os.path.join(str(tmp_path / "t-0"), files[0])
    assert read_txn_index_file(path) == expected_aborted
    reopened.log.close()


def test_truncation_forgets_the_markers_it_cut(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    partition = leader(log)
    partition.append_as_leader(txn_batch(7, 0))  # 0-1
    partition.append_marker(7, 0, False, coordinator_epoch=0)  # 2
    assert partition.last_stable_offset == 3
    partition.truncate_to(2)
    assert partition.aborted_transactions(0, 100) == []
    assert partition.last_stable_offset == 0  # open again: its marker is gone
    log.close()


def test_a_producer_fenced_by_an_abort_marker_is_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    partition = leader(log)
    partition.append_as_leader(txn_batch(7, 0, epoch=0))
    # The coordinator aborted the transaction under a bumped epoch (a new producer took over).
    partition.append_marker(7, 1, False, coordinator_epoch=0)
    with pytest.raises(KafkaError) as refused:
        partition.append_as_leader(txn_batch(7, 2, epoch=0))  # the zombie's next batch
    assert refused.value.error_code is ErrorCode.INVALID_PRODUCER_EPOCH
    # The new producer's epoch starts at sequence 0 and goes on.
    partition.append_as_leader(txn_batch(7, 0, epoch=2))
    partition.append_as_leader(txn_batch(7, 2, epoch=2))
    assert partition.log_end_offset == 7
    log.close()


def test_a_marker_from_an_older_coordinator_epoch_is_fenced(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    partition = leader(log)
    partition.append_as_leader(txn_batch(7, 0))
    partition.append_marker(7, 0, True, coordinator_epoch=3)
    partition.append_as_leader(txn_batch(7, 2))
    with pytest.raises(KafkaError) as refused:
        partition.append_marker(7, 0, False, coordinator_epoch=2)  # a deposed coordinator
    assert refused.value.error_code is ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert partition.last_stable_offset == 3  # still open
    # The epoch survives a rebuild from the log.
    log.close()
    reopened = leader(open_log(tmp_path))
    with pytest.raises(KafkaError):
        reopened.append_marker(7, 0, False, coordinator_epoch=2)
    reopened.append_marker(7, 0, False, coordinator_epoch=3)
    assert reopened.last_stable_offset == reopened.high_watermark
    reopened.log.close()


def test_the_scan_reads_batches_across_chunk_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(tmp_path)
    partition = leader(log)
    partition.append_as_leader(plain(5))
    partition.append_as_leader(txn_batch(7, 0, count=40))  # larger than a chunk below
    partition.append_as_leader(txn_batch(8, 0))
    partition.append_marker(7, 0, False, coordinator_epoch=0)
    expected = partition.aborted_transactions(0, 1 << 40)
    assert expected
    log.close()
    monkeypatch.setattr("odradek.storage.txn_index._CHUNK_BYTES", 100)
    reopened = leader(open_log(tmp_path))
    assert reopened.aborted_transactions(0, 1 << 40) == expected
    assert reopened.last_stable_offset == 45  # producer 8's transaction is open
    reopened.log.close()


def test_a_marker_between_verification_and_append_voids_the_guard(tmp_path: Path) -> None:
    """KIP-890 part 1: a producer with no open transaction gets a guard; a marker for it (its
    transaction aborted while the coordinator was asked) voids it, so the verified batch is
    refused; once a transaction is open no verification is needed."""
    partition = leader(open_log(tmp_path))
    guard = partition.verification_guard(7)
    assert guard is not None
    assert partition.verification_guard(7) is guard  # one guard per producer at a time
    assert partition.verification_holds(7, guard)
    partition.append_marker(7, 0, False, 0)
    assert not partition.verification_holds(7, guard)

    fresh = partition.verification_guard(7)
    assert fresh is not None
    assert fresh is not guard
    partition.append_as_leader(txn_batch(7, 0))
    assert partition.verification_guard(7) is None  # its transaction is open here
    assert partition.verification_holds(7, fresh)
    partition.append_marker(7, 0, True, 0)
    assert not partition.verification_holds(7, fresh)
