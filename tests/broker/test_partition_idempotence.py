"""Idempotence on a partition over a real log (no sockets): a retried batch is answered with
its original offsets and not appended again, refused batches leave the log alone, a follower
rebuilds its leader's producer state from the batches it appends (and dedups once leader),
the state survives a reopen through the ``.snapshot`` file and through a scan without one, and
a truncation rebuilds it below the truncation point."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.replication.partition import Partition
from odradek.errors import ErrorCode, KafkaError, KafkaStorageError
from odradek.records.batch import iter_batches
from odradek.records.codec import SimpleRecord, build_batch
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.producer_snapshots import snapshot_offsets

TP = TopicPartition("t", 0)
PID = 42


def batch(sequence: int, count: int = 2, *, epoch: int = 0, pid: int = PID) -> bytes:
    return build_batch(
        [SimpleRecord(1_000 + i, None, b"v%d" % (sequence + i)) for i in range(count)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
    )


def open_log(path: Path, config: LogConfig | None = None) -> Log:
    return Log.open(str(path / "t-0"), TP, config or LogConfig(), clock=MockClock())


def partition_over(log: Log, clock: MockClock | None = None, **kwargs: int) -> Partition:
    return Partition(
        TP, log, broker_id=1, replicas=[1], leader_epoch=1, clock=clock or MockClock(), **kwargs
    )


def sequences_in(log: Log) -> list[int]:
    data = log.read(log.log_start_offset, 1 << 24).read_bytes()
    return [header.base_sequence for _, header in iter_batches(data)]


def refused(partition: Partition, data: bytes) -> ErrorCode:
    with pytest.raises(KafkaError) as raised:
        partition.append_as_leader(data)
    return raised.value.error_code


def test_a_retried_batch_is_answered_with_its_offsets_and_not_appended(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    partition = partition_over(log)
    first = partition.append_as_leader(batch(0))
    second = partition.append_as_leader(batch(2))
    again = partition.append_as_leader(batch(0))
    assert (first.first_offset, second.first_offset) == (0, 2)
    assert (again.first_offset, again.last_offset) == (0, 1)
    assert partition.log_end_offset == 4
    assert sequences_in(log) == [0, 2]
    log.close()


def test_gaps_fenced_epochs_and_unknown_producers_append_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    partition = partition_over(log)
    partition.append_as_leader(batch(0, epoch=2))
    assert refused(partition, batch(5, epoch=2)) is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert refused(partition, batch(2, epoch=1)) is ErrorCode.INVALID_PRODUCER_EPOCH
    assert refused(partition, batch(3, pid=43)) is ErrorCode.UNKNOWN_PRODUCER_ID
    assert partition.log_end_offset == 2
    # A non-idempotent batch goes its usual way.
    plain = partition.append_as_leader(build_batch([SimpleRecord(1, None, b"x")]))
    assert plain.first_offset == 2
    log.close()


@pytest.mark.parametrize("sequence", [0, 6], ids=["duplicate", "gap"])
def test_a_damaged_batch_is_corrupt_whatever_its_sequence(tmp_path: Path, sequence: int) -> None:
    log = open_log(tmp_path)
    partition = partition_over(log)
    partition.append_as_leader(batch(0))
    damaged = bytearray(batch(sequence))
    damaged[-1] ^= 0xFF  # a record byte: the CRC no longer matches
    assert refused(partition, bytes(damaged)) is ErrorCode.CORRUPT_MESSAGE
    assert partition.log_end_offset == 2
    log.close()


def test_a_follower_rebuilds_the_state_and_dedups_once_leader(tmp_path: Path) -> None:
    leader_log = open_log(tmp_path / "leader")
    leader = partition_over(leader_log)
    leader.append_as_leader(batch(0))
    leader.append_as_leader(batch(2))
    fetched = leader.read(0, 1 << 20, committed_only=False).read_bytes()

    follower_log = open_log(tmp_path / "follower")
    follower = partition_over(follower_log)
    follower.leader_id = 2  # following broker 2
    follower.append_as_follower(fetched)
    follower.leader_id = 1  # a leader change: this replica leads now

    assert follower.append_as_leader(batch(2)).first_offset == 2  # a retry: not appended
    assert follower.append_as_leader(batch(4)).first_offset == 4
    assert sequences_in(follower_log) == [0, 2, 4]
    leader_log.close()
    follower_log.close()


def test_the_state_survives_a_clean_restart_through_its_snapshot(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    partition = partition_over(log)
    for sequence in (0, 2, 4):
        partition.append_as_leader(batch(sequence))
    partition.write_producer_snapshot()
    log.close()
    assert snapshot_offsets(log.directory) == [6]

    reopened = open_log(tmp_path)
    again = partition_over(reopened)
    assert again.append_as_leader(batch(2)).first_offset == 2
    assert again.append_as_leader(batch(6)).first_offset == 6
    reopened.close()


def test_without_a_snapshot_the_state_is_rebuilt_from_the_log(tmp_path: Path) -> None:
    # Small segments: the log rolls, and each roll writes a snapshot; then all are lost.
    config = LogConfig(segment_bytes=200)
    log = open_log(tmp_path, config)
    partition = partition_over(log)
    for sequence in range(0, 12, 2):
        partition.append_as_leader(batch(sequence))
    assert snapshot_offsets(log.directory), "a roll writes a snapshot"
    log.close()
    for offset in snapshot_offsets(log.directory):
        os.remove(os.path.join(log.directory, f"{offset:020d}.snapshot"))

    reopened = open_log(tmp_path, config)
    again = partition_over(reopened)
    assert again.append_as_leader(batch(10)).first_offset == 10
    assert refused(again, batch(14)) is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    reopened.close()


def test_a_truncation_rebuilds_the_state_below_the_truncation_point(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=200)
    log = open_log(tmp_path, config)
    partition = partition_over(log)
    for sequence in range(0, 12, 2):
        partition.append_as_leader(batch(sequence))  # offsets 0..11, several segments
    partition.write_producer_snapshot()  # at 12: must not survive the truncation
    partition.truncate_to(6)

    assert all(offset <= 6 for offset in snapshot_offsets(log.directory))
    entry = partition.producer_state.get(PID)
    assert entry is not None
    assert entry.last_sequence == 5
    assert entry.last_offset == 5
    # The batch at sequence 6 is gone: appended again (not a duplicate), at offset 6.
    assert partition.append_as_leader(batch(6)).first_offset == 6
    assert partition.append_as_leader(batch(4)).first_offset == 4  # still a duplicate
    log.close()


def test_a_full_truncation_forgets_every_producer(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    partition = partition_over(log)
    partition.append_as_leader(batch(0))
    partition.write_producer_snapshot()
    partition.truncate_fully_and_start_at(100)
    assert len(partition.producer_state) == 0
    assert snapshot_offsets(log.directory) == []
    assert refused(partition, batch(2)) is ErrorCode.UNKNOWN_PRODUCER_ID
    log.close()


def test_delete_records_keeps_the_producer_state(tmp_path: Path) -> None:
    # KIP-360: the producer's records are gone, its state is not.
    log = open_log(tmp_path)
    partition = partition_over(log)
    partition.append_as_leader(batch(0))
    partition.append_as_leader(batch(2))
    partition.delete_records_before(4)
    assert partition.append_as_leader(batch(2)).first_offset == 2
    assert partition.append_as_leader(batch(4)).first_offset == 4
    log.close()


def test_idle_producers_expire_by_the_brokers_clock(tmp_path: Path) -> None:
    clock = MockClock()
    log = open_log(tmp_path)
    partition = partition_over(log, clock, producer_id_expiration_ms=1_000)
    partition.append_as_leader(batch(0))  # CreateTime 1_000: decades old, which changes nothing
    clock.advance(600)
    partition.append_as_leader(batch(2))
    clock.advance(600)
    partition.append_as_leader(batch(0, pid=43))  # the check runs: PID appended 600 ms ago
    assert partition.producer_state.get(PID) is not None
    clock.advance(10_000)
    partition.append_as_leader(batch(2, pid=43))  # the check runs again
    assert partition.producer_state.get(PID) is None
    assert refused(partition, batch(4)) is ErrorCode.UNKNOWN_PRODUCER_ID
    log.close()


def test_a_full_disk_at_a_new_epochs_checkpoint_keeps_the_append_and_dedups_its_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by the fault suite (full-disk on a leader): the batch was written, then the
    # leader-epoch checkpoint of the new epoch failed with ENOSPC; the error reached the
    # producer, whose retry was appended a second time (the state never saw the first).
    log = open_log(tmp_path)
    partition = partition_over(log)
    partition.append_as_leader(batch(0))
    partition.make_leader(2, [1], None, 0, 0)

    def disk_full(path: str, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("odradek.storage.leader_epoch_cache.atomic_write", disk_full)
    first = partition.append_as_leader(batch(2))
    again = partition.append_as_leader(batch(2))
    assert (first.first_offset, again.first_offset) == (2, 2)
    assert sequences_in(log) == [0, 2]
    monkeypatch.undo()
    partition.append_as_leader(batch(4))  # the epoch's entry is written at its next append
    epochs = (tmp_path / "t-0" / "leader-epoch-checkpoint").read_text().split("\n")
    assert "2 2" in epochs
    log.close()


def test_a_batch_pipelined_after_one_the_disk_refused_is_a_storage_error_not_out_of_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by the fault suite (full disk on a leader): the disk refused batch 2; batch 4,
    # already in flight, was answered OUT_OF_ORDER_SEQUENCE_NUMBER, which makes librdkafka
    # bump its epoch and resend its queue under new sequences — duplicating records an
    # earlier, unanswered request had written. Kafka answers it KAFKA_STORAGE_ERROR.
    log = open_log(tmp_path)
    partition = partition_over(log)
    partition.append_as_leader(batch(0))

    def disk_full(*_args: object, **_kwargs: object) -> None:
        raise KafkaStorageError("append failed: [Errno 28] No space left on device")

    monkeypatch.setattr(log, "append", disk_full)
    assert refused(partition, batch(2)) is ErrorCode.KAFKA_STORAGE_ERROR
    assert refused(partition, batch(4)) is ErrorCode.KAFKA_STORAGE_ERROR
    monkeypatch.undo()
    # The client retries in order once the disk has room: both go in, then a real gap is
    # OUT_OF_ORDER_SEQUENCE_NUMBER again.
    assert partition.append_as_leader(batch(2)).first_offset == 2
    assert partition.append_as_leader(batch(4)).first_offset == 4
    assert refused(partition, batch(9)) is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert sequences_in(log) == [0, 2, 4]
    log.close()
