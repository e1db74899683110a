"""Producer-state snapshots across crash recovery (found by the crash fuzz, seed 173 of
``scripts/crash-fuzz``): a snapshot past the log end offset that recovery left is deleted when
the log is opened, not when the producer state is first loaded — by then plain appends may
have taken the log past it, and it would be read as the state of records it never saw."""

from __future__ import annotations

import os
from pathlib import Path

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.records.codec import SimpleRecord, build_batch
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.naming import LOG_SUFFIX, segment_path
from odradek.storage.producer_snapshots import (
    load_producer_state,
    snapshot_offsets,
    write_snapshot,
)

TP = TopicPartition("snap", 0)


def open_log(directory: str) -> Log:
    return Log.open(directory, TP, LogConfig(), clock=MockClock(), had_clean_shutdown=False)


def test_a_snapshot_past_a_torn_log_end_is_not_read_after_plain_appends(tmp_path: Path) -> None:
    directory = str(tmp_path / "snap-0")
    log = open_log(directory)
    log.append(
        bytearray(
            build_batch(
                [SimpleRecord(1, None, b"idempotent")], producer_id=7, producer_epoch=0,
                base_sequence=0,
            )
        )
    )  # fmt: skip
    state = load_producer_state(log, 0)
    assert state.get(7) is not None
    write_snapshot(directory, state, 0)  # "00000000000000000001.snapshot", as at shutdown
    log.flush()
    log.close()
    # The tail of the log is torn (garbage from its first byte): recovery cuts it to 0.
    path = segment_path(directory, 0, LOG_SUFFIX)
    with open(path, "r+b") as handle:
        handle.write(os.urandom(os.path.getsize(path)))

    log = open_log(directory)
    assert log.log_end_offset == 0
    assert snapshot_offsets(directory) == []  # gone at the open, not at the first load
    log.append(bytearray(build_batch([SimpleRecord(2, None, b"plain")])))
    log.flush()
    log.close()

    log = open_log(directory)
    assert log.log_end_offset == 1
    assert load_producer_state(log, 0).get(7) is None  # offset 0 is the plain batch now
    log.close()
