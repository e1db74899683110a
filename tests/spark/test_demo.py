"""``odradek demo`` end to end, as a user runs it: a child process with its own broker and Spark.

The outputs are checked independently of the demo's own summary: the Parquet files with
pyarrow, and the output topic and the group's offsets with our clients against a broker
restarted on the demo's log directory. Every process the demo started (the Spark JVM, its
Python workers) carries a marker in its environment, so a leftover is found by that marker.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tests._processes import processes_with_environ

from odradek import AdminClient, Broker, Consumer, TopicPartition
from odradek._clock import MockClock
from odradek.client import OffsetSpec
from odradek.demo.generator import (
    PAGES,
    REFERRERS,
    EventGenerator,
    GeneratorStatistics,
    PageViewFactory,
    end_of_stream_marker,
    format_timestamp,
)
from odradek.demo.pipeline import SinkStatistics
from odradek.demo.summary import (
    GroupLag,
    ParquetTotals,
    PartitionLag,
    Progress,
    Summary,
    TopicTotals,
    format_progress,
    format_summary,
)

pytestmark = [pytest.mark.spark]

PARTITIONS = 3
#: Short windows and triggers, so a short run closes several windows.
FAST = ["--window", "5", "--watermark", "2", "--trigger", "1", "--partitions", str(PARTITIONS)]


def demo_command(data_dir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "odradek.cli.main", "demo", "--data-dir", str(data_dir), *args]


def marked_env(marker: str) -> dict[str, str]:
    return dict(os.environ, ODRADEK_DEMO_TEST_MARKER=marker, PYTHONUNBUFFERED="1")


def marked_processes(marker: str) -> list[int]:
    """PIDs of live processes whose environment carries ``marker``."""
    return processes_with_environ(f"ODRADEK_DEMO_TEST_MARKER={marker}")


def assert_no_processes_left(marker: str, within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while (left := marked_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == [], f"processes left behind: {left}"


@pytest.fixture
def marker() -> Iterator[str]:
    value = uuid.uuid4().hex
    yield value
    for pid in marked_processes(value):  # never leave them to the next test
        os.kill(pid, signal.SIGKILL)


def read_summary(data_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((data_dir / "summary.json").read_text())
    return data


def lag_table(out: str) -> list[list[Any]]:
    """The printed consumer-group table: [partition, committed, log end offset, lag] rows (the
    lag in time, the last column, left out)."""
    rows: list[list[Any]] = []
    for line in out.splitlines():
        match = re.fullmatch(
            r"\s+(\d+|total)\s+([\d,]+|-)\s+([\d,]+)\s+([\d,]+)\s+(?:-|\d[\d. a-z]* s)", line
        )
        if match:
            numbers = [-1 if n == "-" else int(n.replace(",", "")) for n in match.groups()[1:]]
            rows.append([match.group(1), *numbers])
    return rows


def read_topic(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """Every record value of ``topic`` (JSON), read to the end."""
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        ends = {
            tp: i.offset
            for tp, i in admin.list_offsets(dict.fromkeys(partitions, OffsetSpec.latest()))
            .all()
            .items()
        }
    values: list[dict[str, Any]] = []
    consumer = Consumer({"bootstrap.servers": bootstrap})
    try:
        consumer.assign(partitions)
        consumer.seek_to_beginning(partitions)
        deadline = time.monotonic() + 30
        while any(consumer.position(tp) < end for tp, end in ends.items()):
            assert time.monotonic() < deadline, "the output topic could not be read to its end"
            values.extend(json.loads(r.value) for r in consumer.poll(500))
    finally:
        consumer.close(autocommit=False)
    return values


def test_demo_runs_end_to_end(tmp_path: Path, marker: str) -> None:
    data_dir = tmp_path / "demo"
    run = subprocess.run(
        demo_command(data_dir, "--duration", "12", "--rate", "100", "--console-port", "0", *FAST),
        env=marked_env(marker),
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert_no_processes_left(marker)
    out = run.stdout
    assert "page views; the full duration)" in out
    assert "check             OK: every event produced was read once" in out
    assert "events produced" in out
    assert "top pages" in out
    assert "consumer group    odradek-demo on page-views" in out
    table = lag_table(out)
    assert [row[0] for row in table] == ["0", "1", "2", "total"]
    assert run.stderr == ""
    # The console ran beside the broker: its address first, then in every progress line and
    # the summary; the lag in time is in the progress lines and the summary (0 s: drained).
    console = re.search(r"^odradek demo: console on (http://127\.0\.0\.1:\d+/)$", out, re.M)
    assert console is not None, out
    progress = [line for line in out.splitlines() if line.startswith("[")]
    assert progress
    assert all(line.endswith(f" | console {console[1]}") for line in progress)
    # A line from before the group's first commit knows no lag in time yet.
    lag_field = re.compile(r"\| lag (-|[\d,]+( \((\d+\.\d s|0 s|\d+ min \d+ s)\))?) \|")
    assert all(lag_field.search(line) for line in progress), progress
    assert f"console           {console[1]} (stopped with the demo)" in out
    assert re.search(r"^\s+total(\s+[\d,]+){3}\s+0 s$", out, re.M), out

    summary = read_summary(data_dir)
    produced = summary["events"]["delivered"]
    assert produced > 0
    assert summary["events"]["failed"] == 0
    assert summary["drained"]
    assert summary["problems"] == []
    # Rows processed: every event once, plus the end-of-stream marker.
    assert summary["rows_read"] == produced + summary["markers"] == produced + 1
    assert summary["lag"]["total_lag"] == 0
    assert summary["lag"]["total_committed"] == produced + 1
    assert table[-1] == ["total", produced + 1, produced + 1, 0]

    # Parquet, read here: every event counted in exactly one window, each window written once.
    files = sorted((data_dir / "parquet").glob("*.parquet"))
    assert files
    table = pq.read_table([str(f) for f in files])
    rows = table.to_pylist()
    assert sum(r["views"] for r in rows) == produced
    keys = [(r["window_start"], r["page"]) for r in rows]
    assert len(keys) == len(set(keys)) == summary["sink"]["windows"]
    assert all(r["users"] >= 1 and r["views"] >= 1 for r in rows)
    assert all((r["window_end"] - r["window_start"]).total_seconds() == 5 for r in rows)

    # The output topic and the group's offsets, on the demo's broker restarted.
    with Broker(str(data_dir / "broker")) as broker:
        records = read_topic(broker.bootstrap_servers, "page-view-counts")
        with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            committed = admin.list_group_offsets("odradek-demo").all()
    assert len(records) == len(rows)
    assert sorted((r["window_start"], r["page"], r["views"]) for r in records) == sorted(
        (r["window_start"].strftime("%Y-%m-%dT%H:%M:%S.000Z"), r["page"], r["views"]) for r in rows
    )
    assert sum(offset.offset for offset in committed.values() if offset) == produced + 1


def first_progress_past_start(line: str) -> bool:
    """A progress line from after the query started: the first micro-batch runs, or is done."""
    return line.startswith("[") and "Spark: starting the query" not in line


def close_demo(process: subprocess.Popen[str]) -> None:
    """Kills what is left of the demo's process group (a failed test) and closes its pipes."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def run_and_interrupt(data_dir: Path, marker: str, send: Any) -> tuple[int, str, str]:
    """Runs the demo (in a process group of its own) until a progress line shows the query
    started (on this machine its first micro-batch is then usually still running), calls
    ``send(process)``, and returns the exit status, stdout (from the start) and stderr."""
    process = subprocess.Popen(
        demo_command(data_dir, "--duration", "300", "--rate", "100", *FAST),
        env=marked_env(marker),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        head = []
        for line in process.stdout:
            head.append(line)
            if first_progress_past_start(line):
                break
        else:
            pytest.fail("the demo ended before its query started: " + "".join(head))
        send(process)
        out, err = process.communicate(timeout=240)
    finally:
        close_demo(process)
    return process.returncode, "".join(head) + out, err


def assert_stopped_early_with_summary(data_dir: Path, code: int, out: str, err: str) -> None:
    assert code == 0, out + err
    assert "stopping early" in out
    assert "page views; stopped early by Ctrl-C or SIGTERM)" in out
    assert "consumer group    odradek-demo on page-views" in out
    assert "CHECK FAILED" not in out
    assert "check             OK" in out
    summary = read_summary(data_dir)
    assert summary["interrupted"]
    assert not summary["drained"]
    assert summary["events"]["delivered"] > 0
    assert summary["problems"] == []
    assert summary["lag"]["total_log_end_offset"] == summary["events"]["delivered"]
    total = lag_table(out)[-1]
    assert total[2] == summary["events"]["delivered"]
    assert total[3] == total[2] - total[1]


def test_ctrl_c_stops_cleanly_with_summary(tmp_path: Path, marker: str) -> None:
    data_dir = tmp_path / "demo"
    code, out, err = run_and_interrupt(data_dir, marker, lambda p: p.send_signal(signal.SIGINT))
    assert_no_processes_left(marker)
    assert_stopped_early_with_summary(data_dir, code, out, err)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_the_process_group_finishes_the_running_micro_batch(
    tmp_path: Path, marker: str, signum: signal.Signals
) -> None:
    """A non-interactive parent stopping the demo's whole process group (as a terminal's Ctrl-C
    does): only the demo gets the signal — not Spark's JVM (SIGTERM would stop it under the
    query) or its Python workers (SIGINT would kill a running task) — and it waits for the
    running micro-batch however long it takes."""
    data_dir = tmp_path / "demo"
    code, out, err = run_and_interrupt(data_dir, marker, lambda p: os.killpg(p.pid, signum))
    assert_no_processes_left(marker)
    assert_stopped_early_with_summary(data_dir, code, out, err)
    summary = read_summary(data_dir)
    first_progress = next(line for line in out.splitlines() if first_progress_past_start(line))
    if "first micro-batch running" in first_progress:  # the signal came mid-batch
        # That batch finished (Spark records a batch's progress only when it completes).
        assert summary["batches"] >= 1
        assert summary["rows_read"] >= 1
        assert "stopping the query once its running micro-batch is done" in out


def test_a_second_signal_stops_at_once(tmp_path: Path, marker: str) -> None:
    """The first SIGINT to the group while a micro-batch runs starts the wait for it; a second
    one ends the wait: exit 130 at once, and still nothing left running (Spark's JVM is in a
    process group of its own, so the demo must stop it itself)."""
    process = subprocess.Popen(
        demo_command(tmp_path / "demo", "--duration", "300", "--rate", "100", *FAST),
        env=marked_env(marker),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        signalled = False
        for line in process.stdout:
            lines.append(line)
            if not signalled and first_progress_past_start(line):
                if "first micro-batch running" not in line:
                    pytest.skip("the first micro-batch was over before the first progress line")
                os.killpg(process.pid, signal.SIGINT)
                signalled = True
            elif line.startswith("stopping the query once its running micro-batch is done"):
                os.killpg(process.pid, signal.SIGINT)
                break
        else:
            if any(line.startswith("Summary") for line in lines):
                pytest.skip("the micro-batch was over before the first signal was handled")
            pytest.fail("the demo ended without its summary: " + "".join(lines))
        out, err = process.communicate(timeout=120)
    finally:
        close_demo(process)
    assert_no_processes_left(marker, within_s=30)
    assert process.returncode == 130, "".join(lines) + out + err
    assert "Summary" not in out


# ------------------------------------------------------------------------------ the parts


def test_page_views_are_seeded_and_at_most_max_lateness_late() -> None:
    factory, twin = PageViewFactory(7, max_lateness_ms=800), PageViewFactory(7, max_lateness_ms=800)
    first = [factory.event(1_000_000 + n) for n in range(500)]
    again = [twin.event(1_000_000 + n) for n in range(500)]
    assert first == again
    assert all(0 <= 1_000_000 + n - e.timestamp_ms <= 800 for n, e in enumerate(first))
    assert {e.page for e in first} <= {page for page, _ in PAGES}
    assert {e.referrer for e in first} <= {referrer for referrer, _ in REFERRERS}
    pages = [e.page for e in first]
    assert pages.count("/") > pages.count("/contact")  # skewed, as real traffic
    value = json.loads(first[0].to_json())
    assert set(value) == {"timestamp", "user", "page", "referrer"}
    assert value["timestamp"] == format_timestamp(first[0].timestamp_ms)
    assert format_timestamp(1_700_000_000_250) == "2023-11-14T22:13:20.250Z"
    assert json.loads(end_of_stream_marker(1_700_000_000_000)).get("page") is None


class FakeProducer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes, int]] = []

    def send(
        self, topic: str, value: bytes, key: bytes, *, timestamp_ms: int, callback: Any
    ) -> None:
        self.sent.append((topic, value, key, timestamp_ms))
        callback(None, None)

    def flush(self, _timeout: float | None = None) -> None:
        pass


def test_generator_keeps_to_its_rate_by_the_clock() -> None:
    clock = MockClock()
    producer = FakeProducer()
    generator = EventGenerator(
        producer,  # type: ignore[arg-type]
        "page-views",
        50,
        PageViewFactory(1, max_lateness_ms=0),
        clock=clock,
    )
    generator.start()
    try:
        clock.advance(1_000)
        wait_for(lambda: generator.statistics().delivered == 50)
        clock.advance(500)
        wait_for(lambda: generator.statistics().delivered == 75)
    finally:
        generator.stop()
    stats = generator.statistics()
    assert (stats.sent, stats.delivered, stats.failed) == (75, 75, 0)
    assert stats.max_timestamp_ms == clock.now_ms()
    topic, value, key, timestamp_ms = producer.sent[0]
    assert topic == "page-views"
    assert key == json.loads(value)["user"].encode()
    assert timestamp_ms == 1_700_000_001_000


def wait_for(condition: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def summary_of(**changes: Any) -> Summary:
    base = Summary(
        input_topic="page-views",
        partitions=1,
        rate=100,
        window_seconds=10,
        run_s=10.0,
        interrupted=False,
        drained=True,
        events=GeneratorStatistics(1000, 1000, 0, 1, None),
        markers=1,
        batches=5,
        rows_read=1001,
        sink=SinkStatistics(2, 20, 1000),
        parquet=ParquetTotals("p", 2, 20, 1000, (("/", 400),)),
        output=TopicTotals("page-view-counts", 20, 1000),
        lag=GroupLag("g", "page-views", (PartitionLag(0, 1001, 1001),)),
    )
    return dataclasses.replace(base, **changes)


def test_the_progress_line_gives_the_lag_in_time_and_the_console() -> None:
    progress = Progress(5.0, 1_000, 2, 900, 1.0, 1.0, 3, 100, None, lag_ms=2_500)
    line = format_progress(progress, "http://127.0.0.1:8080/")
    assert "| lag 100 (2.5 s) | console http://127.0.0.1:8080/" in line
    unknown = dataclasses.replace(progress, lag_ms=None)
    assert format_progress(unknown).endswith("| lag 100")


def test_the_summary_gives_the_lag_in_time_and_the_console() -> None:
    lag = GroupLag(
        "g", "page-views", (PartitionLag(0, 900, 1001, 61_000), PartitionLag(1, 5, 5, 0))
    )
    text = format_summary(summary_of(lag=lag, console_url="http://127.0.0.1:9/"))
    assert re.search(r"^\s+0\s+900\s+1,001\s+101\s+1 min 1 s$", text, re.M), text
    assert re.search(r"^\s+total\s+905\s+1,006\s+101\s+1 min 1 s$", text, re.M), text
    assert "  console           http://127.0.0.1:9/ (stopped with the demo)" in text
    assert "console  " not in format_summary(summary_of())
    assert lag_table(text) == [["0", 900, 1001, 101], ["1", 5, 5, 0], ["total", 905, 1006, 101]]
    caught_up = GroupLag("g", "page-views", (PartitionLag(0, 7, 7, 0), PartitionLag(1, -1, 0)))
    assert lag_table(format_summary(summary_of(lag=caught_up))) == [
        ["0", 7, 7, 0],
        ["1", -1, 0, 0],
        ["total", 7, 7, 0],
    ]


def test_the_progress_line_says_whether_the_first_micro_batch_runs() -> None:
    progress = Progress(5.0, 1_000, 0, 0, 0.0, 0.0, 0, 990, None)
    assert "Spark: starting the query |" in format_progress(progress)
    running = dataclasses.replace(progress, batch_running=True)
    assert "Spark: first micro-batch running |" in format_progress(running)
    done = dataclasses.replace(progress, batches=2, rows_read=1_500, batch_running=True)
    assert "Spark: 2 batches, 1,500 rows read" in format_progress(done)


def test_the_end_to_end_check() -> None:
    assert summary_of().problems() == []
    assert "OK: every event produced" in format_summary(summary_of())
    lost = summary_of(parquet=ParquetTotals("p", 2, 19, 990, ()))
    assert len(lost.problems()) == 2  # Parquet vs the sink, Parquet vs the events
    assert "CHECK FAILED" in format_summary(lost)
    assert summary_of(rows_read=1002).problems()  # a row read twice
    lagging = GroupLag("g", "page-views", (PartitionLag(0, 900, 1001),))
    assert summary_of(lag=lagging).problems() == ["the consumer group still lags by 101"]
    # Interrupted: open windows and unread events are expected, disagreeing outputs are not.
    early = {"interrupted": True, "drained": False, "markers": 0, "rows_read": 1000}
    assert summary_of(lag=lagging, **early).problems() == []
    assert summary_of(output=TopicTotals("page-view-counts", 21, 1010), **early).problems()
