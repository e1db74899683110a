"""The log manager: every partition log under ``log.dirs``, and the work that keeps them
healthy — flushing by policy, retention, recovery-point checkpoints, clean shutdown.

Each log directory holds, besides the partition directories::

    recovery-point-offset-checkpoint   offsets below which each log was fsynced
    replication-offset-checkpoint      each log's high watermark (``replica.high.watermark.
                                       checkpoint.interval.ms``, and at shutdown)
    log-start-offset-checkpoint        each log's start offset (moved by DeleteRecords)
    cleaner-offset-checkpoint          where each compacted log is clean up to (the cleaner's)
    .odradek_cleanshutdown             present only after a clean shutdown

At start-up a log's checkpointed high watermark (capped at its log end offset) is given back
to it (``Log.update_high_watermark``), where its partition takes it from (a replicated
partition must not expose records it had not committed before the restart). At start-up the
marker decides whether logs are trusted or recovered (see ``loader``); it is
removed once the logs are loaded, and written again by ``shutdown`` after every log is flushed
and closed. A directory with neither the marker, nor a checkpoint, nor a partition directory is
new (a first start), not an unclean shutdown, and is logged so. A partition directory renamed
``<topic>-<partition>.<id>-delete`` is a deletion in progress and is removed. Compacted logs
are cleaned by the ``LogCleaner`` threads, started with the logs and stopped first at shutdown.

Descriptors: every segment file of every log counts against one ``OpenFiles`` bound
(``max_open_files``, by default half the process's descriptor limit), and a periodic sweep
every ``idle_file_close_ms`` closes the files nobody used since the previous sweep, so an idle
partition holds no descriptor and thousands of partitions fit in the default limit (see
``open_files``).

Thread safety: all public methods may be called from any thread.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.errors import KafkaStorageError
from odradek.storage.checkpoints import OffsetCheckpointFile, atomic_write, fsync_directory
from odradek.storage.cleaner.config import CleanerConfig
from odradek.storage.cleaner.log_cleaner import LogCleaner
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.naming import parse_partition_dir_name, partition_dir_name
from odradek.storage.open_files import OpenFiles
from odradek.storage.scheduler import Scheduler, ThreadScheduler

logger = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".odradek_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
_DELETE_DIR_SUFFIX = "-delete"


class LogManager:
    """Owns the logs of one broker.

    Args:
        log_dirs: the ``log.dirs`` directories (created when missing).
        default_config: the broker-level log configuration.
        topic_config: the configuration of a topic's logs (topic overrides applied); defaults
            to ``default_config`` for every topic.
        scheduler: runs flushes, deletions and periodic tasks; a ``ThreadScheduler`` is
            started (and stopped by ``shutdown``) when none is given.
        flush_check_interval_ms: ``log.flush.scheduler.interval.ms``.
        retention_check_interval_ms: ``log.retention.check.interval.ms``.
        checkpoint_interval_ms: ``log.flush.offset.checkpoint.interval.ms``.
        high_watermark_checkpoint_interval_ms: ``replica.high.watermark.checkpoint.interval.ms``.
        cleaner_config: the ``log.cleaner.*`` settings (defaults: Kafka's).
        max_open_files: the most segment files open at once (None: half the soft
            ``RLIMIT_NOFILE``; see ``open_files``).
        idle_file_close_ms: how often files unused since the previous sweep are closed.
        recovery_threads_per_data_dir: threads loading (recovering) the logs of one log
            directory at start-up, and closing them at shutdown (Kafka's
            ``num.recovery.threads.per.data.dir``).
    """

    def __init__(
        self,
        log_dirs: Sequence[str],
        default_config: LogConfig,
        *,
        topic_config: Callable[[str], LogConfig] | None = None,
        clock: Clock = SYSTEM_CLOCK,
        scheduler: Scheduler | None = None,
        flush_check_interval_ms: int = 1000,
        retention_check_interval_ms: int = 300_000,
        checkpoint_interval_ms: int = 60_000,
        high_watermark_checkpoint_interval_ms: int = 5_000,
        cleaner_config: CleanerConfig | None = None,
        max_open_files: int | None = None,
        idle_file_close_ms: int = 30_000,
        recovery_threads_per_data_dir: int = 8,
    ) -> None:
        if not log_dirs:
            raise KafkaStorageError("log.dirs is empty")
        self.log_dirs = [os.path.abspath(directory) for directory in log_dirs]
        self.default_config = default_config
        self._topic_config = topic_config or (lambda _topic: self.default_config)
        self._clock = clock
        self._owns_scheduler = scheduler is None
        self._scheduler: Scheduler = scheduler or ThreadScheduler(clock=clock)
        self._intervals = (
            flush_check_interval_ms,
            retention_check_interval_ms,
            checkpoint_interval_ms,
        )
        self._high_watermark_checkpoint_ms = high_watermark_checkpoint_interval_ms
        self.open_files = OpenFiles(max_open_files)
        self._idle_file_close_ms = idle_file_close_ms
        self._recovery_threads = max(1, recovery_threads_per_data_dir)
        self._logs: dict[TopicPartition, Log] = {}
        self._log_dir_of: dict[TopicPartition, str] = {}
        #: How many logs each log dir holds (where the next log goes), kept with _log_dir_of.
        self._logs_in_dir = dict.fromkeys(self.log_dirs, 0)
        self._lock = threading.RLock()
        self._checkpoint_lock = threading.Lock()
        self._started = False
        self._stopped = False
        self.cleaner = LogCleaner(self.all_logs, cleaner_config, clock=clock)

    # ----------------------------------------------------------------- start-up

    def startup(self) -> None:
        """Loads every log (recovering after an unclean shutdown) and schedules the periodic
        flush, retention and checkpoint tasks."""
        with self._lock:
            if self._started:
                return
            for directory in self.log_dirs:
                self._load_dir(directory)
            self._started = True
        flush_ms, retention_ms, checkpoint_ms = self._intervals
        self._scheduler.schedule("flush dirty logs", self.flush_dirty_logs, flush_ms, flush_ms)
        self._scheduler.schedule("log retention", self.cleanup_logs, retention_ms, retention_ms)
        self._scheduler.schedule(
            "checkpoint recovery points", self.checkpoint_logs, checkpoint_ms, checkpoint_ms
        )
        hw_ms = self._high_watermark_checkpoint_ms
        self._scheduler.schedule(
            "checkpoint high watermarks", self.checkpoint_high_watermarks, hw_ms, hw_ms
        )
        idle_ms = self._idle_file_close_ms
        self._scheduler.schedule("close idle files", self.close_idle_files, idle_ms, idle_ms)
        self.cleaner.startup()

    def _load_dir(self, directory: str) -> None:
        os.makedirs(directory, exist_ok=True)
        marker = os.path.join(directory, CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker)
        previous_run = clean or any(
            name in (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, REPLICATION_CHECKPOINT)
            or parse_partition_dir_name(name) is not None
            for name in os.listdir(directory)
        )
        recovery_points = OffsetCheckpointFile(
            os.path.join(directory, RECOVERY_POINT_CHECKPOINT)
        ).read()
        start_offsets = OffsetCheckpointFile(
            os.path.join(directory, LOG_START_OFFSET_CHECKPOINT)
        ).read()
        high_watermarks = OffsetCheckpointFile(
            os.path.join(directory, REPLICATION_CHECKPOINT)
        ).read()
        logger.info(
            "loading logs in %s (%s)",
            directory,
            "clean shutdown"
            if clean
            else "unclean shutdown"
            if previous_run
            else "new log directory",
        )
        found: dict[TopicPartition, str] = {}
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if not os.path.isdir(path):
                continue
            if name.endswith(_DELETE_DIR_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)
                continue
            topic_partition = parse_partition_dir_name(name)
            if topic_partition is None:
                continue
            known = self._logs.get(topic_partition)
            if known is not None:
                raise KafkaStorageError(
                    f"duplicate log directories for {topic_partition}: {path} and {known.directory}"
                )
            found[topic_partition] = path

        def load(topic_partition: TopicPartition) -> Log:
            return Log.open(
                found[topic_partition],
                topic_partition,
                self._topic_config(topic_partition.topic),
                recovery_point=recovery_points.get(topic_partition, 0),
                log_start_offset=start_offsets.get(topic_partition, 0),
                had_clean_shutdown=clean,
                clock=self._clock,
                scheduler=self._scheduler,
                open_files=self.open_files,
            )

        # Loading is file opens, reads and (after an unclean shutdown) fsyncs, which release
        # the GIL: several threads overlap them, and the file system commits concurrent
        # fsyncs together (Kafka's num.recovery.threads.per.data.dir).
        threads = min(self._recovery_threads, max(1, len(found)))
        with ThreadPoolExecutor(threads, thread_name_prefix="log-recovery") as pool:
            loaded = list(pool.map(load, found))
        for log in loaded:
            log.release_files(self.open_files)
            self._watch_truncations(log)
            high_watermark = high_watermarks.get(log.topic_partition)
            if high_watermark is not None:
                log.update_high_watermark(min(high_watermark, log.log_end_offset))
            self._logs[log.topic_partition] = log
            self._log_dir_of[log.topic_partition] = directory
            self._logs_in_dir[directory] += 1
        if clean:
            os.remove(marker)
            fsync_directory(directory)

    # ----------------------------------------------------------------- logs

    def get_log(self, topic_partition: TopicPartition) -> Log | None:
        return self._logs.get(topic_partition)

    def all_logs(self) -> dict[TopicPartition, Log]:
        with self._lock:
            return dict(self._logs)

    def get_or_create_log(
        self, topic_partition: TopicPartition, config: LogConfig | None = None
    ) -> Log:
        """The partition's log, created (in the log dir holding the fewest logs) if needed."""
        return self.get_or_create_logs([topic_partition], config)[topic_partition]

    def get_or_create_logs(
        self, topic_partitions: Sequence[TopicPartition], config: LogConfig | None = None
    ) -> dict[TopicPartition, Log]:
        """The partitions' logs, each created (in the log dir holding the fewest logs) if
        needed. Creating many at once costs one fsync per log dir instead of one per log —
        the fsync of the directory is most of what creating a log costs.

        Raises:
            KafkaStorageError: the manager is shut down (no log created).
        """
        with self._lock:
            if self._stopped:
                raise KafkaStorageError("the log manager is shut down")
            result: dict[TopicPartition, Log] = {}
            created: list[tuple[Log, str]] = []
            try:
                for topic_partition in topic_partitions:
                    existing = self._logs.get(topic_partition) or result.get(topic_partition)
                    if existing is not None:
                        result[topic_partition] = existing
                        continue
                    directory = self._next_log_dir()
                    log = Log.open(
                        os.path.join(directory, partition_dir_name(topic_partition)),
                        topic_partition,
                        config or self._topic_config(topic_partition.topic),
                        clock=self._clock,
                        scheduler=self._scheduler,
                        open_files=self.open_files,
                    )
                    result[topic_partition] = log
                    created.append((log, directory))
                    self._logs_in_dir[directory] += 1
            finally:
                # The logs made so far are kept (and made durable) even if one failed.
                for directory in {directory for _log, directory in created}:
                    fsync_directory(directory)
                for log, directory in created:
                    log.release_files(self.open_files)
                    self._watch_truncations(log)
                    self._logs[log.topic_partition] = log
                    self._log_dir_of[log.topic_partition] = directory
                    logger.info("created log %s in %s", log.topic_partition, directory)
            return result

    def _next_log_dir(self) -> str:
        counts = self._logs_in_dir
        return min(self.log_dirs, key=lambda directory: counts[directory])

    def delete_log(self, topic_partition: TopicPartition, *, checkpoint: bool = True) -> bool:
        """Removes a partition's log: its directory is renamed ``...-delete`` at once (so a
        crash cannot bring it back) and removed in the background. Returns whether it
        existed. ``checkpoint=False`` leaves the checkpoint files to the caller (deleting a
        topic's N logs would otherwise rewrite them N times: call ``checkpoint_logs`` once)."""
        with self._lock:
            log = self._logs.pop(topic_partition, None)
            directory = self._log_dir_of.pop(topic_partition, None)
            if directory is not None:
                self._logs_in_dir[directory] -= 1
        if log is None or directory is None:
            return False
        self.cleaner.abort_and_forget(topic_partition, directory)
        doomed = f"{log.directory}.{uuid.uuid4().hex}{_DELETE_DIR_SUFFIX}"
        log.move_directory(doomed)
        fsync_directory(directory)
        self._scheduler.schedule(f"delete log {topic_partition}", log.delete)
        if checkpoint:
            self.checkpoint_logs()
            self.checkpoint_high_watermarks()
        return True

    # ----------------------------------------------------------------- periodic work

    def flush_dirty_logs(self) -> None:
        """Flushes every log whose ``flush.ms`` has passed with messages unflushed."""
        for log in self.all_logs().values():
            try:
                if log.flush_due():
                    log.flush()
            except Exception:
                logger.exception("%s: flush failed", log.topic_partition)

    def close_idle_files(self) -> int:
        """Closes the segment files nobody used since the previous call; returns how many."""
        return self.open_files.close_idle()

    def cleanup_logs(self) -> int:
        """Applies retention to every log; returns the number of segments deleted."""
        deleted = 0
        for log in self.all_logs().values():
            try:
                deleted += log.delete_old_segments()
            except Exception:
                logger.exception("%s: retention failed", log.topic_partition)
        return deleted

    def checkpoint_logs(self) -> None:
        """Writes the recovery-point and log-start-offset checkpoints of every log dir."""
        for directory in self.log_dirs:
            self._checkpoint_dir(directory)

    def _checkpoint_dir(self, directory: str) -> None:
        with self._checkpoint_lock:
            with self._lock:
                logs = {
                    topic_partition: log
                    for topic_partition, log in self._logs.items()
                    if self._log_dir_of[topic_partition] == directory
                }
            OffsetCheckpointFile(os.path.join(directory, RECOVERY_POINT_CHECKPOINT)).write(
                {tp: log.recovery_point for tp, log in logs.items()}
            )
            OffsetCheckpointFile(os.path.join(directory, LOG_START_OFFSET_CHECKPOINT)).write(
                {tp: log.log_start_offset for tp, log in logs.items()}
            )

    def _watch_truncations(self, log: Log) -> None:
        """Writes the checkpoints of the log's dir after each of its truncations (Kafka's
        ``LogManager.truncateTo`` does): the recovery point checkpointed before a truncation
        would otherwise cover offsets written again after it, unflushed, and an unclean start
        would trust them without their CRC."""
        topic_partition = log.topic_partition

        def checkpoint() -> None:
            directory = self._log_dir_of.get(topic_partition)
            if directory is not None:
                self._checkpoint_dir(directory)

        log.truncation_listener = checkpoint

    def checkpoint_high_watermarks(self) -> None:
        """Writes the ``replication-offset-checkpoint`` of every log dir: each log's high
        watermark (logs never given one are left out)."""
        with self._checkpoint_lock:
            with self._lock:
                by_dir: dict[str, dict[TopicPartition, int]] = {d: {} for d in self.log_dirs}
                for topic_partition, log in self._logs.items():
                    high_watermark = log.high_watermark
                    if high_watermark is not None:
                        by_dir[self._log_dir_of[topic_partition]][topic_partition] = high_watermark
            for directory, offsets in by_dir.items():
                OffsetCheckpointFile(os.path.join(directory, REPLICATION_CHECKPOINT)).write(offsets)

    # ----------------------------------------------------------------- shutdown

    def shutdown(self) -> None:
        """Flushes and closes every log, writes the checkpoints, then the clean-shutdown
        markers. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            logs = list(self._logs.values())
        self.cleaner.shutdown()
        if self._owns_scheduler:
            self._scheduler.shutdown()
        # Closing flushes (fsyncs) every log: on the recovery threads, as loading.
        with ThreadPoolExecutor(self._recovery_threads, thread_name_prefix="log-close") as pool:
            for _ in pool.map(Log.close, logs):
                pass
        self.checkpoint_logs()
        self.checkpoint_high_watermarks()
        for directory in self.log_dirs:
            atomic_write(os.path.join(directory, CLEAN_SHUTDOWN_FILE), b"")
        logger.info("log manager shut down cleanly")

    def statistics(self) -> dict[str, int]:
        logs = self.all_logs()
        return {
            "logs": len(logs),
            "size_bytes": sum(log.size_bytes for log in logs.values()),
            "segments": sum(len(log.segments()) for log in logs.values()),
            "open_files": self.open_files.count,
        }
