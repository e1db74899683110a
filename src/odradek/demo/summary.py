"""What the demo did, found in its outputs, and how it is printed.

The figures do not come from the pipeline's own counters alone: the windows are read back from
the Parquet files (``parquet_totals``, with pyarrow, not Spark) and from the output topic
(``topic_totals``, with our consumer), and the pipeline's lag comes from the consumer group's
committed offsets against the log end offsets (``group_lag``, with our admin client), and in
seconds from the age of each partition's next unconsumed record (``console.lag``). The
end-to-end check compares them: every event produced was read by Spark and counted in exactly
one written window (``Summary.problems`` lists what does not add up).

``format_summary`` and ``format_progress`` are pure: values in, text out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq

from odradek.client import AdminClient, OffsetSpec, SimpleConsumer, TopicPartition
from odradek.client.consumer import Consumer
from odradek.console.lag import read_group_lag
from odradek.console.render import format_duration_ms
from odradek.demo.generator import GeneratorStatistics
from odradek.demo.pipeline import SinkStatistics
from odradek.errors import OdradekError

__all__ = [
    "GroupLag",
    "ParquetTotals",
    "PartitionLag",
    "Progress",
    "Summary",
    "TopicTotals",
    "format_progress",
    "format_summary",
    "group_lag",
    "parquet_totals",
    "topic_totals",
]

#: How many pages the summary ranks.
TOP_PAGES: Final = 5
#: How long reading the output topic back may take.
READ_BACK_TIMEOUT_S: Final = 30.0


# ------------------------------------------------------------------------------ values


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One partition of the pipeline's consumer group (``committed`` -1: nothing committed;
    ``lag_ms``: the age of its next unconsumed record, 0 when caught up, None when unknown)."""

    partition: int
    committed: int
    log_end_offset: int
    lag_ms: int | None = None

    @property
    def lag(self) -> int:
        return self.log_end_offset - max(self.committed, 0)


@dataclass(frozen=True, slots=True)
class GroupLag:
    """The consumer group's committed offsets on the input topic, per partition."""

    group_id: str
    topic: str
    partitions: tuple[PartitionLag, ...]

    @property
    def committed(self) -> int:
        return sum(max(p.committed, 0) for p in self.partitions)

    @property
    def log_end_offset(self) -> int:
        return sum(p.log_end_offset for p in self.partitions)

    @property
    def lag(self) -> int:
        return sum(p.lag for p in self.partitions)

    @property
    def lag_ms(self) -> int | None:
        """How far behind in time the group is: its slowest partition's lag (None: unknown)."""
        known = [p.lag_ms for p in self.partitions if p.lag_ms is not None]
        return max(known) if known else None


@dataclass(frozen=True, slots=True)
class ParquetTotals:
    """The Parquet output: files, rows (windows), page views, the most viewed pages."""

    path: str
    files: int
    windows: int
    views: int
    top_pages: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class TopicTotals:
    """The output topic read back: records and the page views their values add up to."""

    topic: str
    records: int
    views: int


@dataclass(frozen=True, slots=True)
class Progress:
    """One progress line's figures (``lag`` None: not known yet)."""

    elapsed_s: float
    produced: int
    batches: int
    rows_read: int
    input_rows_per_s: float
    processed_rows_per_s: float
    windows_written: int
    lag: int | None
    watermark: str | None
    batch_running: bool = False
    #: The group's lag in time (``GroupLag.lag_ms``); None: not known yet.
    lag_ms: int | None = None


@dataclass(frozen=True, slots=True)
class PipelineFigures:
    """What the pipeline phase measured.

    ``interrupted``: stopped by Ctrl-C (or SIGTERM) before its duration was over; ``drained``:
    the pipeline caught up with every event and closed every window before it stopped.
    """

    run_s: float
    interrupted: bool
    drained: bool
    events: GeneratorStatistics
    markers: int
    batches: int
    rows_read: int
    sink: SinkStatistics


@dataclass(frozen=True, slots=True)
class Summary(PipelineFigures):
    """Everything the demo reports at the end (see the module docstring): the pipeline's
    figures, the run's settings and what was read back from its outputs."""

    input_topic: str
    partitions: int
    rate: float
    window_seconds: int
    parquet: ParquetTotals
    output: TopicTotals
    lag: GroupLag
    notes: tuple[str, ...] = field(default=())
    #: The web console's address while the demo ran (``--console-port``), else None.
    console_url: str | None = None

    @property
    def page_views_read(self) -> int:
        return self.rows_read - self.markers

    def problems(self) -> list[str]:
        """What does not add up (empty when the end-to-end check passes)."""
        found: list[str] = []
        if self.events.failed:
            found.append(f"{self.events.failed:,} events were not delivered")
        if self.parquet.views != self.sink.views or self.parquet.windows != self.sink.windows:
            found.append(
                f"Parquet holds {self.parquet.windows:,} windows / {self.parquet.views:,} views, "
                f"the pipeline wrote {self.sink.windows:,} / {self.sink.views:,}"
            )
        if self.output.views != self.sink.views or self.output.records != self.sink.windows:
            found.append(
                f"{self.output.topic} holds {self.output.records:,} records / "
                f"{self.output.views:,} views, the pipeline wrote {self.sink.windows:,} / "
                f"{self.sink.views:,}"
            )
        if self.rows_read > self.lag.log_end_offset:
            found.append(
                f"Spark read {self.rows_read:,} rows but {self.input_topic} holds only "
                f"{self.lag.log_end_offset:,}"
            )
        if self.drained:
            if self.rows_read != self.events.delivered + self.markers:
                found.append(
                    f"Spark read {self.rows_read:,} rows, {self.events.delivered:,} events "
                    f"and {self.markers} marker(s) were produced"
                )
            if self.parquet.views != self.events.delivered:
                found.append(
                    f"the written windows count {self.parquet.views:,} page views, "
                    f"{self.events.delivered:,} events were produced"
                )
            if self.lag.lag != 0:
                found.append(f"the consumer group still lags by {self.lag.lag:,}")
        return found

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (``summary.json`` in the data directory)."""
        data = asdict(self)
        data["page_views_read"] = self.page_views_read
        data["lag"]["total_lag"] = self.lag.lag
        data["lag"]["total_committed"] = self.lag.committed
        data["lag"]["total_log_end_offset"] = self.lag.log_end_offset
        for partition, original in zip(data["lag"]["partitions"], self.lag.partitions, strict=True):
            partition["lag"] = original.lag
        data["problems"] = self.problems()
        return data


# ------------------------------------------------------------------------------ collecting


def group_lag(
    admin: AdminClient,
    reader: SimpleConsumer,
    group_id: str,
    topic: str,
    partitions: int,
    now_ms: int,
) -> GroupLag:
    """The group's committed offsets on ``topic`` against its log end offsets, and the age of
    each partition's next unconsumed record at ``now_ms`` (read with ``reader``).

    Raises:
        KafkaError: the broker could not answer; OdradekError: a partition had no log end
            offset.
    """
    wanted = [TopicPartition(topic, p) for p in range(partitions)]
    found = {
        p.partition: p for p in read_group_lag(admin, reader, group_id, now_ms, wanted).partitions
    }
    missing = [p for p in range(partitions) if p not in found]
    if missing:
        raise OdradekError(f"{topic}: no log end offset for partitions {missing}")
    rows = []
    for number in range(partitions):
        p = found[number]
        committed = -1 if p.committed is None else p.committed
        rows.append(PartitionLag(number, committed, p.log_end_offset, p.lag_ms))
    return GroupLag(group_id, topic, tuple(rows))


def parquet_totals(path: Path) -> ParquetTotals:
    """Reads the Parquet output back (no files yet: all zero)."""
    files = sorted(path.glob("*.parquet")) if path.is_dir() else []
    if not files:
        return ParquetTotals(str(path), 0, 0, 0, ())
    table: Any = pq.read_table([str(f) for f in files], columns=["page", "views"])
    by_page = table.group_by("page").aggregate([("views", "sum")]).to_pylist()
    ranked = sorted(((r["page"], int(r["views_sum"])) for r in by_page), key=lambda x: -x[1])
    views = pa.compute.sum(table.column("views")).as_py() or 0
    return ParquetTotals(
        str(path), len(files), table.num_rows, int(views), tuple(ranked[:TOP_PAGES])
    )


def topic_totals(bootstrap_servers: str, topic: str, partitions: int) -> TopicTotals:
    """Reads every record of ``topic`` and adds up the ``views`` of their JSON values.

    Raises:
        KafkaError: the broker could not answer.
        TimeoutError: the records did not all arrive within ``READ_BACK_TIMEOUT_S``.
    """
    wanted = [TopicPartition(topic, p) for p in range(partitions)]
    with AdminClient({"bootstrap.servers": bootstrap_servers}) as admin:
        earliest = _offsets(admin, wanted, OffsetSpec.earliest())
        latest = _offsets(admin, wanted, OffsetSpec.latest())
    remaining = sum(latest[tp] - earliest[tp] for tp in wanted)
    records = views = 0
    if remaining == 0:
        return TopicTotals(topic, 0, 0)
    deadline = time.monotonic() + READ_BACK_TIMEOUT_S
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "client.id": "odradek-demo"})
    try:
        consumer.assign(wanted)
        consumer.seek_to_beginning(wanted)
        while records < remaining:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"read {records:,} of the {remaining:,} records of {topic} in time"
                )
            for record in consumer.poll(500):
                if record.offset < latest[TopicPartition(record.topic, record.partition)]:
                    records += 1
                    value: Any = record.value
                    views += int(json.loads(value)["views"])
    finally:
        consumer.close(autocommit=False)
    return TopicTotals(topic, records, views)


def _offsets(
    admin: AdminClient, partitions: Sequence[TopicPartition], spec: OffsetSpec
) -> Mapping[TopicPartition, int]:
    found = admin.list_offsets(dict.fromkeys(partitions, spec)).all()
    return {tp: info.offset for tp, info in found.items()}


# ------------------------------------------------------------------------------ text


def format_progress(p: Progress, console_url: str | None = None) -> str:
    """One progress line: events produced; Spark's micro-batches, rows read and its last
    batch's input and processing rates; windows written; the group's lag in records and in
    time; the watermark; the console's address when one runs."""
    lag = "-" if p.lag is None else f"{p.lag:,}"
    if p.lag is not None and p.lag_ms is not None:
        lag += f" ({format_duration_ms(p.lag_ms)})"
    watermark = f" | watermark {p.watermark[11:19]}" if p.watermark else ""
    spark = (
        ("first micro-batch running" if p.batch_running else "starting the query")
        if p.batches == 0
        else f"{_plural(p.batches, 'batch')}, {p.rows_read:,} rows read "
        f"(in {p.input_rows_per_s:,.0f}/s, processed {p.processed_rows_per_s:,.0f}/s)"
    )
    console = f" | console {console_url}" if console_url else ""
    return (
        f"[{p.elapsed_s:4.0f}s] events {p.produced:,} | Spark: {spark} | "
        f"windows out {p.windows_written:,} | lag {lag}{watermark}{console}"
    )


def _plural(count: int, noun: str) -> str:
    suffix = "" if count == 1 else ("es" if noun.endswith(("s", "ch")) else "s")
    return f"{count:,} {noun}{suffix}"


#: Where the values of the summary's lines start.
_INDENT: Final = " " * 20


def format_summary(s: Summary) -> str:
    """The summary printed at the end (see the module docstring)."""
    how = "stopped early by Ctrl-C or SIGTERM" if s.interrupted else "the full duration"
    marker = f" + {s.markers} end-of-stream marker" if s.markers else ""
    lines = [
        "",
        f"Summary ({s.run_s:.1f} s of page views; {how})",
        _line(
            "events produced",
            f"{s.events.delivered:,} into {s.input_topic} ({s.partitions} partitions, "
            f"{s.rate:g}/s; {s.events.failed:,} failed)",
        ),
        _line(
            "rows processed",
            f"{s.rows_read:,} read by Spark in {_plural(s.batches, 'micro-batch')} "
            f"({s.page_views_read:,} events{marker})",
        ),
        _line(
            "windows written",
            f"{s.sink.windows:,} ({s.window_seconds} s window x page), counting "
            f"{s.sink.views:,} page views",
        ),
        _line(
            "output topic",
            f"{s.output.records:,} records in {s.output.topic} ({s.output.views:,} page views)",
        ),
        _line(
            "Parquet",
            f"{s.parquet.windows:,} rows ({s.parquet.views:,} page views) in "
            f"{_plural(s.parquet.files, 'file')} under {s.parquet.path}",
        ),
    ]
    if s.parquet.top_pages:
        table = [[page, f"{views:,}"] for page, views in s.parquet.top_pages]
        lines.extend(_table("top pages", table, right=(False, True)))
    lines.append(_line("consumer group", f"{s.lag.group_id} on {s.lag.topic}"))
    rows = [["partition", "committed", "log end offset", "lag", "lag (time)"]]
    for p in s.lag.partitions:
        committed = "-" if p.committed < 0 else f"{p.committed:,}"
        rows.append(
            [
                str(p.partition),
                committed,
                f"{p.log_end_offset:,}",
                f"{p.lag:,}",
                format_duration_ms(p.lag_ms),
            ]
        )
    rows.append(
        [
            "total",
            f"{s.lag.committed:,}",
            f"{s.lag.log_end_offset:,}",
            f"{s.lag.lag:,}",
            format_duration_ms(s.lag.lag_ms),
        ]
    )
    lines.extend(_table("", rows, right=(True, True, True, True, True)))
    if s.console_url:
        lines.append(_line("console", f"{s.console_url} (stopped with the demo)"))
    problems = s.problems()
    if problems:
        lines.extend(_line("CHECK FAILED", problem) for problem in problems)
    elif s.drained:
        lines.append(_line("check", "OK: every event produced was read once and counted in"))
        lines.append(_INDENT + "exactly one written window, in both outputs")
    else:
        unread = s.events.delivered - s.page_views_read
        open_views = s.page_views_read - s.parquet.views
        lines.append(_line("check", "OK so far: both outputs agree; when the demo stopped,"))
        lines.append(_INDENT + f"{open_views:,} page views read were in windows still open")
        lines.append(_INDENT + f"and {unread:,} events produced were not read yet")
    lines.extend(_line("note", note) for note in s.notes)
    return "\n".join(lines)


def _line(label: str, text: str) -> str:
    return f"  {label}".ljust(len(_INDENT)) + text


def _table(label: str, rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    """Rows in columns as wide as their widest cell, two spaces apart, the first row labelled."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(right))]
    out = []
    for number, row in enumerate(rows):
        cells = [
            cell.rjust(width) if r else cell.ljust(width)
            for cell, width, r in zip(row, widths, right, strict=True)
        ]
        out.append(_line(label if number == 0 else "", "  ".join(cells).rstrip()))
    return out


def write_json(summary: Summary, path: Path) -> None:
    """Writes ``summary.to_json()`` to ``path``."""
    path.write_text(json.dumps(summary.to_json(), indent=2) + "\n")
