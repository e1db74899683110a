"""The demo's Spark Structured Streaming job: page views per page per event-time window.

    page-views ──readStream.format("odradek")──► parse JSON ──► watermark ──► count per
    (window, page) ──foreachBatch──► page-view-counts (write.format("odradek")) and Parquet

- Source: ``format("odradek")`` subscribed to the input topic from the earliest offsets, with
  ``groupId``: each finished micro-batch's end offsets are committed to that consumer group, so
  the pipeline's lag can be seen with ``odradek groups describe`` (and in the demo's output).
- Transformation (``page_view_counts``): ``from_json`` of the value; a watermark on the event
  time (``watermark_seconds`` behind the latest event time seen); then per ``window_seconds``
  tumbling window and page: ``views`` (count of page views) and ``users`` (approximate count of
  distinct users). Nothing is filtered before the aggregation on purpose: Spark pushes a filter
  on non-event-time columns below the watermark, and the end-of-stream marker (``generator``),
  which has no page and is counted by nothing, must still reach the watermark to close the
  last windows.
- Output mode append: a window is written once, when the watermark passes its end, and never
  changes afterwards — which is what Parquet files need. ``WindowSink`` writes each
  micro-batch's closed windows to the output topic (key = page, value = the row as JSON) and
  appends them to Parquet; rows with no page (the marker's own window) are dropped.
- Guarantee: at-least-once into both sinks across a crash and restart from the checkpoint
  (``foreachBatch``, like Spark's Kafka sink); the demo starts from empty directories.

``start_session`` builds the local-mode session (driver on 127.0.0.1, no UI, the Spark JVM's
output and log going to a file, the JVM and its Python workers in a process group of their own)
and ``stop_session`` stops it *and* its JVM, so no process is left behind.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812  (Spark's own convention)
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from odradek.spark import register

__all__ = [
    "EVENT_SCHEMA",
    "PipelineSettings",
    "SinkStatistics",
    "WindowSink",
    "page_view_counts",
    "start_query",
    "start_session",
    "stop_session",
]

logger = logging.getLogger(__name__)

#: The JSON fields of a page view (and of the end-of-stream marker: timestamp only).
EVENT_SCHEMA: Final = StructType(
    [
        StructField("timestamp", TimestampType()),
        StructField("user", StringType()),
        StructField("page", StringType()),
        StructField("referrer", StringType()),
    ]
)
#: Kept by Spark per query, so every micro-batch's progress can be summed at the end.
RECENT_PROGRESS_UPDATES: Final = 100_000
#: How long a stopped Spark JVM may take to exit before it is terminated.
JVM_EXIT_TIMEOUT_S: Final = 15.0


@dataclass(frozen=True, slots=True)
class PipelineSettings:
    """What the streaming job reads, writes and how it windows."""

    bootstrap_servers: str
    input_topic: str
    output_topic: str
    group_id: str
    checkpoint_dir: Path
    parquet_dir: Path
    window_seconds: int = 10
    watermark_seconds: int = 5
    trigger_seconds: float = 2.0


# ------------------------------------------------------------------------------ session


def start_session(log_path: Path, *, master: str = "local[2]") -> SparkSession:
    """A new Spark session for the demo, its JVM's stdout and stderr appended to ``log_path``.

    Workers run this interpreter (``PYSPARK_PYTHON``), the driver listens on 127.0.0.1 only,
    the web UI and the console progress bar are off, and shuffles use two partitions (the
    default 200 would make every micro-batch of a stateful aggregation crawl).

    Raises:
        RuntimeError: Spark could not start (no Java, a port problem: see ``log_path``).
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName("odradek-demo")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.sql.shuffle.partitions", "2")
        .set("spark.sql.session.timeZone", "UTC")
        .set("spark.sql.streaming.numRecentProgressUpdates", str(RECENT_PROGRESS_UPDATES))
    )
    log = log_path.open("ab")
    # Its own session (process group): a signal to the demo's process group — Ctrl-C in a
    # terminal, a parent stopping the group — reaches the demo alone, which then stops the
    # query between micro-batches; the JVM's Python workers (they restore the default SIGINT
    # handler) would otherwise die mid-task and fail the micro-batch. The JVM still ends with
    # the demo: it exits when its stdin (a pipe from this process) closes.
    popen_kwargs = {"stdout": log, "stderr": subprocess.STDOUT, "start_new_session": True}
    try:
        gateway = launch_gateway(conf, popen_kwargs=popen_kwargs)  # type: ignore[no-untyped-call]
    except Exception as error:
        raise RuntimeError(
            f"Spark did not start ({_first_line(error)}); is Java 17 installed? See {log_path}"
        ) from None
    finally:
        log.close()
    context = SparkContext(conf=conf, gateway=gateway)
    context.setLogLevel("WARN")
    session = SparkSession.builder.getOrCreate()
    register(session)
    return session


def stop_session(session: SparkSession) -> None:
    """Stops ``session``, then its JVM (closing its stdin ends it), waiting for it to exit."""
    gateway = SparkContext._gateway  # the only handle on the JVM process
    process: subprocess.Popen[bytes] | None = getattr(gateway, "proc", None)
    try:
        session.stop()
    finally:
        if gateway is not None:
            gateway.shutdown()
        SparkContext._gateway = None
        SparkContext._jvm = None
        if process is not None:
            _end_process(process)


def _end_process(process: subprocess.Popen[bytes]) -> None:
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(JVM_EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        logger.warning("the Spark JVM (pid %d) did not exit: terminating it", process.pid)
        process.terminate()
        try:
            process.wait(JVM_EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ------------------------------------------------------------------------------ the job


def page_view_counts(events: DataFrame, window_seconds: int, watermark_seconds: int) -> DataFrame:
    """Page views per tumbling event-time window and page (see the module docstring).

    Args:
        events: the source's rows (Spark's Kafka schema: a binary ``value``).

    Returns:
        ``window_start``, ``window_end``, ``page``, ``views``, ``users``.
    """
    parsed = events.select(
        F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("event")
    ).select("event.*")
    counts = (
        parsed.withWatermark("timestamp", f"{watermark_seconds} seconds")
        .groupBy(F.window("timestamp", f"{window_seconds} seconds"), F.col("page"))
        .agg(
            F.count("page").alias("views"),
            F.approx_count_distinct("user").alias("users"),
        )
    )
    return counts.select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "page",
        "views",
        "users",
    )


@dataclass(frozen=True, slots=True)
class SinkStatistics:
    """What ``WindowSink`` has written: micro-batches that wrote, windows (rows) and views."""

    batches: int
    windows: int
    views: int


class WindowSink:
    """The ``foreachBatch`` function: one micro-batch's closed windows to both sinks.

    Spark calls it on the driver (a py4j callback thread), one micro-batch at a time;
    ``statistics`` may be read from any thread.
    """

    def __init__(self, settings: PipelineSettings) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._batches = 0
        self._windows = 0
        self._views = 0

    def statistics(self) -> SinkStatistics:
        with self._lock:
            return SinkStatistics(self._batches, self._windows, self._views)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        settings = self._settings
        closed = batch.where(F.col("page").isNotNull()).persist()
        try:
            totals = closed.agg(F.count("*").alias("windows"), F.sum("views").alias("views"))
            row = totals.collect()[0]
            windows, views = int(row["windows"]), int(row["views"] or 0)
            if windows == 0:
                return
            (
                closed.select(
                    F.col("page").alias("key"),
                    F.to_json(F.struct(*closed.columns)).alias("value"),
                )
                .write.format("odradek")
                .option("kafka.bootstrap.servers", settings.bootstrap_servers)
                .option("topic", settings.output_topic)
                .mode("append")
                .save()
            )
            closed.coalesce(1).write.mode("append").parquet(str(settings.parquet_dir))
        finally:
            closed.unpersist()
        logger.info("micro-batch %d: %d windows, %d views written", batch_id, windows, views)
        with self._lock:
            self._batches += 1
            self._windows += windows
            self._views += views


def start_query(
    session: SparkSession, settings: PipelineSettings, sink: WindowSink
) -> StreamingQuery:
    """Starts the streaming query (see the module docstring) and returns it."""
    events = (
        session.readStream.format("odradek")
        .option("kafka.bootstrap.servers", settings.bootstrap_servers)
        .option("subscribe", settings.input_topic)
        .option("startingOffsets", "earliest")
        .option("groupId", settings.group_id)
        .load()
    )
    counts = page_view_counts(events, settings.window_seconds, settings.watermark_seconds)
    query: StreamingQuery = (
        counts.writeStream.queryName("page_view_counts")
        .outputMode("append")
        .foreachBatch(sink)
        .option("checkpointLocation", str(settings.checkpoint_dir))
        .trigger(processingTime=f"{settings.trigger_seconds} seconds")
        .start()
    )
    return query


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
