"""``LogCleaner``: compaction off the request path — cleaner threads that repeatedly pick the
filthiest compacted log and clean it, and ``clean_once`` for tests and tools.

Each thread owns a ``Cleaner`` with an ``OffsetMap`` of ``dedupe_buffer_size / threads``
bytes. A thread that finds nothing to clean waits ``log.cleaner.backoff.ms`` (on an event, so
``shutdown`` wakes it at once). A pass that fails is logged and never stops the thread: an
undecodable batch marks the log uncleanable (skipped until restart); a log that changed under
the pass, or file trouble, just releases it for a later pass.

Thread safety: ``clean_once``, ``abort_and_forget`` and ``statistics`` may be called from any
thread; ``startup`` and ``shutdown`` from the log manager's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.errors import KafkaError
from odradek.storage.cleaner.cleaner import Cleaner, CleanResult, LogCleaningAbortedError
from odradek.storage.cleaner.cleaner_manager import LogCleanerManager
from odradek.storage.cleaner.config import CleanerConfig
from odradek.storage.cleaner.offset_map import OffsetMap
from odradek.storage.log import Log

logger = logging.getLogger(__name__)


class LogCleaner:
    """The cleaner of one broker's logs.

    Args:
        logs: returns the logs to consider (the log manager's ``all_logs``).
        config: the ``log.cleaner.*`` settings.
        clock: the time passes run at.
    """

    def __init__(
        self,
        logs: Callable[[], Mapping[TopicPartition, Log]],
        config: CleanerConfig | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.config = config or CleanerConfig()
        self.manager = LogCleanerManager()
        self._logs = logs
        self._clock = clock
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._cleaners = [
            (threading.Lock(), self._new_cleaner()) for _ in range(self.config.threads)
        ]
        self._stats_lock = threading.Lock()
        self._passes = 0
        self._records_removed = 0
        self._failures = 0

    def _new_cleaner(self) -> Cleaner:
        config = self.config
        return Cleaner(
            OffsetMap(config.dedupe_buffer_per_thread, config.io_buffer_load_factor),
            io_buffer_size=config.io_buffer_size,
            is_aborted=self._is_aborted,
        )

    def _is_aborted(self, tp: TopicPartition) -> bool:
        return self._stopping.is_set() or self.manager.is_aborted(tp)

    # ----------------------------------------------------------------- lifecycle

    def startup(self) -> None:
        """Starts the cleaner threads (none when ``log.cleaner.enable`` is false)."""
        if not self.config.enable or self._threads:
            return
        for number, (lock, cleaner) in enumerate(self._cleaners):
            thread = threading.Thread(
                target=self._run,
                args=(lock, cleaner),
                name=f"odradek-log-cleaner-{number}",
                daemon=True,
            )
            self._threads.append(thread)
            thread.start()

    def shutdown(self) -> None:
        """Stops the threads, aborting passes in progress (their logs stay as they were or
        as far as the last committed swap). Idempotent."""
        self._stopping.set()
        for thread in self._threads:
            thread.join()
        self._threads = []

    def _run(self, lock: threading.Lock, cleaner: Cleaner) -> None:
        backoff_s = self.config.backoff_ms / 1000
        while not self._stopping.is_set():
            try:
                with lock:
                    result = self._clean(cleaner, self._clock.now_ms())
            except Exception:  # a thread must survive anything a pass does
                logger.exception("log cleaner pass failed")
                result = None
            if result is None:
                self._stopping.wait(backoff_s)

    # ----------------------------------------------------------------- passes

    def clean_once(self, now_ms: int | None = None) -> CleanResult | None:
        """Cleans the filthiest log once, on the caller's thread; returns what the pass did,
        or None when no log needed cleaning or the pass failed."""
        lock, cleaner = self._cleaners[0]
        with lock:
            return self._clean(cleaner, self._clock.now_ms() if now_ms is None else now_ms)

    def _clean(self, cleaner: Cleaner, now_ms: int) -> CleanResult | None:
        picked = self.manager.grab_filthiest_log(self._logs(), now_ms)
        if picked is None:
            return None
        log = picked.log
        tp = log.topic_partition
        try:
            result = cleaner.clean(log, picked.to_clean, now_ms)
        except LogCleaningAbortedError as error:
            logger.info("%s", error)
            self.manager.release(log)
            return None
        except (KafkaError, ValueError) as error:
            logger.error("%s: cannot clean the log, skipping it until restart: %s", tp, error)
            self.manager.release(log, uncleanable=True)
            self._count_failure()
            return None
        except OSError as error:
            logger.warning("%s: cleaning failed, will retry: %s", tp, error)
            self.manager.release(log)
            self._count_failure()
            return None
        except BaseException:
            self.manager.release(log)
            raise
        self.manager.done_cleaning(log, result.end_offset, result.earliest_tombstone_horizon_ms)
        with self._stats_lock:
            self._passes += 1
            self._records_removed += result.stats.records_removed
        return result

    def _count_failure(self) -> None:
        with self._stats_lock:
            self._failures += 1

    def abort_and_forget(self, tp: TopicPartition, log_dir: str) -> None:
        """The log is being deleted: stop its pass, drop its checkpoint."""
        self.manager.forget(tp, log_dir)

    def statistics(self) -> dict[str, int]:
        with self._stats_lock:
            return {
                "passes": self._passes,
                "records_removed": self._records_removed,
                "failures": self._failures,
                "uncleanable_logs": len(self.manager.uncleanable()),
                "threads": len(self._threads),
            }
