"""Replaying ``__consumer_offsets`` with transactional offsets (TxnOffsetCommit): a
transaction's records count at its COMMIT marker, are dropped at its ABORT marker, and those
of a transaction still open go to the pending map (the new coordinator applies or drops them
when the marker comes)."""

from __future__ import annotations

from pathlib import Path

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.group.runtime import read_coordinator_records
from odradek.records.codec import SimpleRecord, build_batch
from odradek.records.control import build_marker_batch
from odradek.storage.config import LogConfig
from odradek.storage.log import Log

TP = TopicPartition("__consumer_offsets", 0)


def kv(name: str) -> SimpleRecord:
    return SimpleRecord(1, name.encode(), b"value-" + name.encode())


def txn(pid: int, *names: str) -> bytes:
    return build_batch(
        [kv(n) for n in names], producer_id=pid, producer_epoch=0, transactional=True
    )


def marker(pid: int, commit: bool) -> bytes:
    return build_marker_batch(pid, 0, commit, coordinator_epoch=0, timestamp_ms=1)


def test_replay_honours_markers_and_keeps_open_transactions_pending(tmp_path: Path) -> None:
    log = Log.open(str(tmp_path / "co-0"), TP, LogConfig(), clock=MockClock())
    try:
        for batch in (
            build_batch([kv("plain-1")]),
            txn(5, "committed-a", "committed-b"),
            txn(6, "aborted"),
            build_batch([kv("plain-2")]),
            marker(6, False),
            txn(7, "open"),
            marker(5, True),
        ):
            log.append(batch)
        pending: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
        records = read_coordinator_records(log, log.log_end_offset, pending)
    finally:
        log.close()
    assert [key for key, _ in records] == [b"plain-1", b"plain-2", b"committed-a", b"committed-b"]
    assert pending == {7: [(b"open", b"value-open")]}
