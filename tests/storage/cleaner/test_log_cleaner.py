"""LogCleaner and LogCleanerManager with the LogManager: passes driven by hand, the cleaner
threads, checkpoints per log dir, and a log deleted during a pass."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.records.codec import build_batch
from odradek.records.record import SimpleRecord
from odradek.storage.checkpoints import OffsetCheckpointFile
from odradek.storage.cleaner.cleaner_manager import CLEANER_CHECKPOINT
from odradek.storage.cleaner.config import CleanerConfig
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.manager import LogManager
from odradek.storage.scheduler import ManualScheduler

if TYPE_CHECKING:
    from tests.storage.cleaner.conftest import KeyValueTools

TP = TopicPartition("offsets", 0)
COMPACTED = LogConfig(cleanup_policy="compact", segment_bytes=1_000, min_cleanable_dirty_ratio=0.1)


def fill(log: Log, clock: MockClock, rounds: int = 10) -> None:
    for n in range(rounds):
        batch = [SimpleRecord(clock.now_ms(), b"k%d" % (i % 4), b"%d" % n) for i in range(4)]
        log.append(build_batch(batch))
    log.roll()


def checkpoint(directory: Path) -> dict[TopicPartition, int]:
    return OffsetCheckpointFile(str(directory / CLEANER_CHECKPOINT)).read()


def wait_for(condition: object, timeout_s: float = 10.0) -> None:
    """Waits for ``condition()`` with a deadline (a background thread does the work)."""
    deadline = time.monotonic() + timeout_s
    wake = threading.Event()
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        wake.wait(0.01)


def test_the_log_manager_owns_a_cleaner_driven_by_hand(
    tmp_path: Path, clock: MockClock, kv: KeyValueTools
) -> None:
    manager = LogManager(
        [str(tmp_path / "dir0")],
        LogConfig(),
        clock=clock,
        scheduler=ManualScheduler(clock),
        cleaner_config=CleanerConfig(enable=False),
    )
    manager.startup()
    log = manager.get_or_create_log(TP, COMPACTED)
    other = manager.get_or_create_log(TopicPartition("plain", 0))  # delete policy: ignored
    fill(log, clock)
    fill(other, clock)
    result = manager.cleaner.clean_once()
    assert result is not None
    assert result.topic_partition == TP
    assert manager.cleaner.clean_once() is None
    assert sorted(r.value for r in kv.stored(log)) == [b"9"] * 4
    assert checkpoint(tmp_path / "dir0") == {TP: log.segments()[-1].base_offset}
    assert manager.cleaner.statistics()["passes"] == 1
    manager.delete_log(TP)
    assert checkpoint(tmp_path / "dir0") == {}
    manager.shutdown()


def test_the_cleaner_threads_clean_in_the_background_and_stop_at_shutdown(
    tmp_path: Path, clock: MockClock, kv: KeyValueTools
) -> None:
    manager = LogManager(
        [str(tmp_path / "dir0")],
        LogConfig(),
        clock=clock,
        scheduler=ManualScheduler(clock),
        cleaner_config=CleanerConfig(threads=2, backoff_ms=5),
    )
    manager.startup()
    config = dataclasses.replace(COMPACTED, min_cleanable_dirty_ratio=0.0)
    logs = [manager.get_or_create_log(TopicPartition("offsets", p), config) for p in (0, 1)]
    for log in logs:
        fill(log, clock)

    def compacted() -> bool:
        return all(sorted(r.value for r in kv.stored(log)) == [b"9"] * 4 for log in logs)

    wait_for(compacted)
    assert manager.cleaner.statistics()["passes"] >= 2
    assert manager.cleaner.statistics()["threads"] == 2
    manager.shutdown()
    assert manager.cleaner.statistics()["threads"] == 0
    # The checkpoint survives a restart: nothing is dirty after it.
    again = LogManager(
        [str(tmp_path / "dir0")],
        LogConfig(),
        topic_config=lambda _topic: COMPACTED,
        clock=clock,
        scheduler=ManualScheduler(clock),
        cleaner_config=CleanerConfig(enable=False),
    )
    again.startup()
    assert again.cleaner.clean_once() is None
    again.shutdown()


def test_a_pass_on_a_log_forgotten_meanwhile_does_not_checkpoint(
    tmp_path: Path, clock: MockClock
) -> None:
    from odradek.storage.cleaner.cleaner_manager import LogCleanerManager  # noqa: PLC0415

    log = Log.open(str(tmp_path / "offsets-0"), TP, COMPACTED, clock=clock)
    fill(log, clock)
    manager = LogCleanerManager()
    picked = manager.grab_filthiest_log({TP: log}, clock.now_ms())
    assert picked is not None
    assert manager.grab_filthiest_log({TP: log}, clock.now_ms()) is None  # in progress
    manager.abort(TP)
    assert manager.is_aborted(TP)
    manager.forget(TP, str(tmp_path))
    manager.done_cleaning(log, 40, -1)
    assert manager.checkpoint(log) is None
    assert not os.path.exists(tmp_path / CLEANER_CHECKPOINT)
    assert not manager.is_aborted(TP)
    # Released: the next pick may take it again.
    assert manager.grab_filthiest_log({TP: log}, clock.now_ms()) is not None
    log.close()
