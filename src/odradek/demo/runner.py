"""``run_demo``: the whole demo, from an empty data directory to the summary.

In order (each step undone in reverse on the way out, whatever happens):

1. the data directory: ``broker/`` (the embedded broker's logs), ``checkpoint/`` (the streaming
   query's), ``parquet/`` (the windows), ``spark.log`` (the Spark JVM's output) and
   ``summary.json``; the first three are emptied first, so every run starts from nothing;
2. an embedded broker on 127.0.0.1 (a free port) and the two topics; with ``console_port``,
   the web console (``odradek.console``, the ``console`` extra) on 127.0.0.1 beside it, its
   address printed first and in every progress line and the summary;
3. a local Spark session and the streaming query (``pipeline``);
4. the generator (``generator``) for ``duration_s`` seconds, with a progress line every
   ``progress_interval_s`` from the query's progress and the group's lag (in records and in
   seconds: the age of the next unconsumed record);
5. the drain: the end-of-stream marker moves the watermark past every event, and the demo waits
   until the query has run the micro-batch that closes the last windows — for as long as Spark
   keeps finishing micro-batches, giving up only after ``drain_timeout_s`` without one (a slow,
   loaded machine drains late, but does drain);
6. the query stopped between micro-batches, Spark and its JVM stopped, the outputs read back and
   the summary printed (``summary``), also written to ``summary.json``.

Signals: the first SIGINT (Ctrl-C) or SIGTERM ends the run early — no drain; the running
micro-batch is waited for however long it takes (a batch cut short would leave its windows half
written), then everything is stopped in the same order and the summary printed; a second one
interrupts at once (``KeyboardInterrupt``). Spark's own SIGINT handler (cancel every job) is
replaced while the demo runs. Must be called from the main thread for that (elsewhere signals
are left alone). A signal sent to the demo's whole process group — by a terminal or by a
non-interactive parent — reaches the demo only: the Spark JVM and its Python workers run in a
process group of their own (``pipeline.start_session``).
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any, Final, TextIO

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from odradek._clock import SYSTEM_CLOCK
from odradek.broker.embedded import Broker
from odradek.client import AdminClient, NewTopic, SimpleConsumer
from odradek.client.producer import Producer
from odradek.demo.generator import (
    EventGenerator,
    GeneratorStatistics,
    PageViewFactory,
    end_of_stream_marker,
)
from odradek.demo.pipeline import (
    PipelineSettings,
    SinkStatistics,
    WindowSink,
    start_query,
    start_session,
    stop_session,
)
from odradek.demo.summary import (
    PipelineFigures,
    Progress,
    Summary,
    format_progress,
    format_summary,
    group_lag,
    parquet_totals,
    topic_totals,
    write_json,
)
from odradek.errors import OdradekError

__all__ = ["DemoError", "DemoSettings", "run_demo"]

#: The generator's largest event-time lag behind the clock (must stay under the watermark).
MAX_LATENESS_MS: Final = 1_000
_OWN_SUBDIRS: Final = ("broker", "checkpoint", "parquet")


class DemoError(Exception):
    """A problem the user can act on; its message is one line."""


@dataclass(frozen=True, slots=True)
class DemoSettings:
    """The demo's settings (``odradek demo --help`` describes each)."""

    duration_s: float = 40.0
    rate: float = 200.0
    data_dir: Path = Path("data/demo")
    partitions: int = 3
    seed: int = 0
    group_id: str = "odradek-demo"
    input_topic: str = "page-views"
    output_topic: str = "page-view-counts"
    window_seconds: int = 10
    watermark_seconds: int = 5
    trigger_seconds: float = 2.0
    progress_interval_s: float = 5.0
    drain_timeout_s: float = 60.0
    #: Serve the web console on this port while the demo runs (0: a free one; None: no console).
    console_port: int | None = None

    def check(self) -> None:
        """Raises DemoError for settings that cannot work together."""
        if self.watermark_seconds * 1000 <= MAX_LATENESS_MS:
            raise DemoError(
                f"the watermark must exceed the events' lateness ({MAX_LATENESS_MS} ms): "
                f"got {self.watermark_seconds} s"
            )


class StopSignal:
    """SIGINT and SIGTERM as a stop request (see the module docstring)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._installed: dict[int, Any] = {}

    def install(self) -> None:
        """(Re)installs the handlers; a no-op outside the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous = signal.signal(signum, self._handle)
            self._installed.setdefault(signum, previous)

    def restore(self) -> None:
        for signum, previous in self._installed.items():
            signal.signal(signum, previous)
        self._installed.clear()

    def _handle(self, _signum: int, _frame: FrameType | None) -> None:
        if self.event.is_set():
            raise KeyboardInterrupt
        self.event.set()


def run_demo(settings: DemoSettings, out: TextIO = sys.stdout) -> Summary:
    """Runs the demo (module docstring) and returns its summary, also printed to ``out``.

    Raises:
        DemoError: the broker, Spark or the query failed (one line; details in spark.log).
    """
    settings.check()
    stop = StopSignal()
    stop.install()
    try:
        return _Run(settings, stop, out).run()
    except OdradekError as error:  # the embedded broker or a client
        raise DemoError(f"{type(error).__name__}: {error}") from None
    finally:
        stop.restore()


class _Run:
    """One run's state; ``run`` is called once."""

    def __init__(self, settings: DemoSettings, stop: StopSignal, out: TextIO) -> None:
        self.settings = settings
        self.stop = stop
        self.out = out
        self.data_dir = settings.data_dir
        self.notes: list[str] = []
        self.started = time.monotonic()
        self.console_url: str | None = None
        self.lag_reader: SimpleConsumer | None = None

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def run(self) -> Summary:
        s = self.settings
        _prepare(self.data_dir)
        with contextlib.ExitStack() as outer:
            broker = Broker(str(self.data_dir / "broker"), config={"num.partitions": "1"})
            try:
                broker.start()
            except (OSError, OdradekError) as error:
                raise DemoError(f"the embedded broker did not start: {error}") from None
            outer.callback(broker.stop)
            bootstrap = broker.bootstrap_servers
            self.say(f"odradek demo: broker on {bootstrap} (data under {self.data_dir})")
            if s.console_port is not None:
                self._start_console(outer, bootstrap, s.console_port)
            # Spark and the clients are stopped before the outputs are read back.
            with contextlib.ExitStack() as inner:
                admin = inner.enter_context(AdminClient({"bootstrap.servers": bootstrap}))
                self.lag_reader = inner.enter_context(
                    SimpleConsumer(bootstrap, client_id="odradek-demo-lag")
                )
                admin.create_topics(
                    [
                        NewTopic(s.input_topic, s.partitions, 1),
                        NewTopic(s.output_topic, s.partitions, 1),
                    ]
                ).all()
                producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
                inner.callback(producer.close)
                figures = self._pipeline(inner, bootstrap, admin, producer)
            summary = self._summary(bootstrap, figures)
        self.say(format_summary(summary))
        write_json(summary, self.data_dir / "summary.json")
        return summary

    def _pipeline(
        self, stack: contextlib.ExitStack, bootstrap: str, admin: AdminClient, producer: Producer
    ) -> PipelineFigures:
        """Spark, the query and the generator, run and stopped: the figures for the summary."""
        s = self.settings
        log_path = self.data_dir / "spark.log"
        self.say(f"starting Spark (local[2]; its log: {log_path}) ...")
        try:
            session = start_session(log_path)
        except RuntimeError as error:
            raise DemoError(str(error)) from None
        stack.callback(self._stop_spark, session)
        self.stop.install()  # after Spark's: its SIGINT handler cancels every job
        if self.stop.event.is_set():
            self.say("stopping early: before the streaming began")
            nothing = GeneratorStatistics(0, 0, 0, -1, None)
            return PipelineFigures(0.0, True, False, nothing, 0, 0, 0, SinkStatistics(0, 0, 0))
        pipeline = PipelineSettings(
            bootstrap_servers=bootstrap,
            input_topic=s.input_topic,
            output_topic=s.output_topic,
            group_id=s.group_id,
            checkpoint_dir=(self.data_dir / "checkpoint").resolve(),
            parquet_dir=(self.data_dir / "parquet").resolve(),
            window_seconds=s.window_seconds,
            watermark_seconds=s.watermark_seconds,
            trigger_seconds=s.trigger_seconds,
        )
        sink = WindowSink(pipeline)
        query = start_query(session, pipeline, sink)
        factory = PageViewFactory(s.seed, max_lateness_ms=MAX_LATENESS_MS)
        generator = EventGenerator(producer, s.input_topic, s.rate, factory)
        self.say(
            f"streaming: {s.rate:g} page views/s into {s.input_topic} for {s.duration_s:g} s; "
            f"Spark counts them per page per {s.window_seconds} s window into "
            f"{s.output_topic} and Parquet (Ctrl-C stops early)"
        )
        generator.start()
        self.started = time.monotonic()
        try:
            self._stream(query, generator, sink, admin)
        finally:
            generator.stop()
        run_s = time.monotonic() - self.started
        events = generator.statistics()
        interrupted = self.stop.event.is_set()
        markers, drained = 0, False
        if not interrupted:
            markers = 1
            drained = self._drain(query, producer, events, sink, admin)
            interrupted = self.stop.event.is_set()
        else:
            self.say("stopping early: no drain, so the windows still open are not written")
        self._stop_query(query)
        batches, rows_read = _progress_totals(query)
        return PipelineFigures(
            run_s, interrupted, drained, events, markers, batches, rows_read, sink.statistics()
        )

    # -- phases

    def _stream(
        self, query: StreamingQuery, generator: EventGenerator, sink: WindowSink, admin: AdminClient
    ) -> None:
        s = self.settings
        deadline = time.monotonic() + s.duration_s
        next_line = time.monotonic() + s.progress_interval_s
        while not self.stop.event.is_set():
            now = time.monotonic()
            if now >= deadline:
                return
            if self.stop.event.wait(min(deadline, next_line) - now):
                return
            _check_query(query)
            if time.monotonic() >= next_line:
                next_line += s.progress_interval_s
                progress = self._progress(query, generator.statistics(), sink, admin)
                self.say(format_progress(progress, self.console_url))

    def _drain(
        self,
        query: StreamingQuery,
        producer: Producer,
        events: GeneratorStatistics,
        sink: WindowSink,
        admin: AdminClient,
    ) -> bool:
        """Sends the end-of-stream marker and waits for the micro-batch that closes the last
        windows, while micro-batches keep finishing (``drain_timeout_s`` without one gives
        up). Returns whether it came (False: timed out or interrupted)."""
        s = self.settings
        latest_ms = max(events.max_timestamp_ms, SYSTEM_CLOCK.now_ms())
        marker_ms = latest_ms + (s.window_seconds + s.watermark_seconds + 1) * 1000
        producer.send(s.input_topic, end_of_stream_marker(marker_ms), partition=0).result(30)
        target_ms = marker_ms - s.watermark_seconds * 1000
        self.say("draining: the end-of-stream marker closes the last windows ...")
        deadline = time.monotonic() + s.drain_timeout_s
        next_line = time.monotonic() + s.progress_interval_s
        last_batch = None
        while not self.stop.event.wait(0.25):
            _check_query(query)
            last = query.lastProgress
            if last is not None and _watermark_ms(last) >= target_ms:
                return True
            if last is not None and last.batchId != last_batch:  # Spark is making progress
                last_batch = last.batchId
                deadline = time.monotonic() + s.drain_timeout_s
            if time.monotonic() >= deadline:
                self.notes.append(
                    f"the drain stopped: no micro-batch finished in {s.drain_timeout_s:g} s; the "
                    "last windows may not be written"
                )
                return False
            if time.monotonic() >= next_line:
                next_line += s.progress_interval_s
                progress = self._progress(query, events, sink, admin)
                self.say(format_progress(progress, self.console_url))
        self.say("stopping early: the drain was interrupted")
        return False

    def _stop_query(self, query: StreamingQuery) -> None:
        """Stops the query between micro-batches: waits for the running one however long it
        takes (a batch cut short mid-write would leave its windows half written); a second
        signal interrupts the wait (``KeyboardInterrupt`` from ``StopSignal``)."""
        told = False
        while _trigger_active(query):
            if not told:
                self.say(
                    "stopping the query once its running micro-batch is done "
                    "(Ctrl-C again to stop at once) ..."
                )
                told = True
            time.sleep(0.05)
        query.stop()

    def _stop_spark(self, session: SparkSession) -> None:
        self.say("stopping Spark ...")
        stop_session(session)

    def _progress(
        self,
        query: StreamingQuery,
        events: GeneratorStatistics,
        sink: WindowSink,
        admin: AdminClient,
    ) -> Progress:
        last = query.lastProgress
        batches, rows_read = _progress_totals(query)
        lag: int | None
        lag_ms: int | None
        try:
            assert self.lag_reader is not None
            found = group_lag(
                admin,
                self.lag_reader,
                self.settings.group_id,
                *self._input(),
                SYSTEM_CLOCK.now_ms(),
            )
            lag, lag_ms = found.lag, found.lag_ms
        except Exception:  # a progress line does without it
            lag = lag_ms = None
        watermark = None if last is None else last.eventTime.get("watermark")
        return Progress(
            elapsed_s=time.monotonic() - self.started,
            produced=events.sent,
            batches=batches,
            rows_read=rows_read,
            input_rows_per_s=0.0 if last is None else float(last.inputRowsPerSecond or 0),
            processed_rows_per_s=0.0 if last is None else float(last.processedRowsPerSecond or 0),
            windows_written=sink.statistics().windows,
            batch_running=_trigger_active(query),
            lag=lag,
            lag_ms=lag_ms,
            watermark=watermark if watermark and not watermark.startswith("1970") else None,
        )

    def _start_console(self, stack: contextlib.ExitStack, bootstrap: str, port: int) -> None:
        """The web console beside the embedded broker, stopped with the demo."""
        try:
            # Imported here: the web stack is the optional ``console`` extra.
            from odradek.console.server import ConsoleServer  # noqa: PLC0415
            from odradek.console.service import ConsoleService  # noqa: PLC0415
        except ImportError as error:
            raise DemoError(
                f"--console-port needs the console extra (pip install 'odradek[console]'): {error}"
            ) from None
        service = ConsoleService(bootstrap)
        stack.callback(service.close)
        try:
            server = ConsoleServer(service, "127.0.0.1", port)
        except OSError as error:
            raise DemoError(f"the console cannot listen on 127.0.0.1:{port}: {error}") from None
        server.start()
        stack.callback(server.stop)
        self.console_url = server.url
        self.say(f"odradek demo: console on {server.url}")

    def _input(self) -> tuple[str, int]:
        return self.settings.input_topic, self.settings.partitions

    def _summary(self, bootstrap: str, figures: PipelineFigures) -> Summary:
        s = self.settings
        try:
            with (
                AdminClient({"bootstrap.servers": bootstrap}) as admin,
                SimpleConsumer(bootstrap, client_id="odradek-demo-lag") as reader,
            ):
                lag = group_lag(admin, reader, s.group_id, *self._input(), SYSTEM_CLOCK.now_ms())
            output = topic_totals(bootstrap, s.output_topic, s.partitions)
            parquet = parquet_totals(self.data_dir / "parquet")
        except (OdradekError, TimeoutError, OSError) as error:
            raise DemoError(f"could not read the outputs back: {error}") from None
        return Summary(
            **{spec.name: getattr(figures, spec.name) for spec in fields(PipelineFigures)},
            input_topic=s.input_topic,
            partitions=s.partitions,
            rate=s.rate,
            window_seconds=s.window_seconds,
            parquet=parquet,
            output=output,
            lag=lag,
            notes=tuple(self.notes),
            console_url=self.console_url,
        )


def _trigger_active(query: StreamingQuery) -> bool:
    """Whether a micro-batch is running now (False for a query that ended or cannot tell)."""
    try:
        return bool(query.isActive and query.status["isTriggerActive"])
    except Exception:  # the query failed: _check_query reports it
        return False


def _prepare(data_dir: Path) -> None:
    """Creates the data directory and empties the demo's own parts of it."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        for name in _OWN_SUBDIRS:
            shutil.rmtree(data_dir / name, ignore_errors=True)
        for name in ("spark.log", "summary.json"):
            (data_dir / name).unlink(missing_ok=True)
    except OSError as error:
        raise DemoError(f"cannot use the data directory {data_dir}: {error}") from None


def _check_query(query: StreamingQuery) -> None:
    """Raises DemoError if the query has failed."""
    error = query.exception()
    if error is not None:
        text = str(error).strip().splitlines()
        raise DemoError(f"the streaming query failed: {text[0] if text else error!r}")
    if not query.isActive:
        raise DemoError("the streaming query stopped on its own")


def _progress_totals(query: StreamingQuery) -> tuple[int, int]:
    """Micro-batches finished and the rows they read, from every progress update kept."""
    rows: dict[int, int] = {}
    for progress in query.recentProgress:
        rows[progress.batchId] = progress.numInputRows
    return len(rows), sum(rows.values())


def _watermark_ms(progress: Any) -> int:
    text = progress.eventTime.get("watermark")
    if not text:
        return -1
    return int(datetime.fromisoformat(text).timestamp() * 1000)
