"""``odradek demo``: the end-to-end pipeline demo (``odradek.demo``) in the foreground.

    odradek demo [--duration 40] [--rate 200] [--data-dir data/demo] [--partitions 3] ...
                 [--console-port PORT]

Starts an embedded broker, produces page views for ``--duration`` seconds, counts them per page
per event-time window with a Spark Structured Streaming job (local mode) reading and writing
through the ``odradek`` data source and writing Parquet, prints a progress line every few
seconds (with the group's lag in records and in seconds, and the console's address when
``--console-port`` serves one beside the broker), then a summary read back from the outputs
(the run takes 35–40 s more than ``--duration`` on a 2-core machine: Spark's start, the final
drain and the stops).

Contract:

- Ctrl-C (SIGINT) or SIGTERM, sent to the demo or to its whole process group, stops early and
  cleanly: the running micro-batch finishes however long it takes, then the query, the
  generator, Spark and its JVM, the broker stop — then the summary, exit 0. A second signal
  stops at once (exit 130).
- A bad option is one line on stderr, exit 2; a demo that cannot run (no Java, no pyspark, the
  query failing) one line, exit 1, pointing at ``<data-dir>/spark.log``. An end-to-end check
  that does not add up is reported in the summary, exit 1.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option(
    "--duration",
    type=click.FloatRange(min=1),
    default=40.0,
    show_default=True,
    metavar="SECONDS",
    help="How long page views are produced.",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=1, max=100_000),
    default=200.0,
    show_default=True,
    metavar="EVENTS/S",
    help="Page views produced per second.",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("data/demo"),
    show_default=True,
    help="Broker logs, checkpoint, Parquet output, spark.log, summary.json (emptied first).",
)
@click.option(
    "--partitions",
    type=click.IntRange(min=1, max=64),
    default=3,
    show_default=True,
    help="Partitions of the input and output topics.",
)
@click.option(
    "--window",
    "window_seconds",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    metavar="SECONDS",
    help="Event-time window length.",
)
@click.option(
    "--watermark",
    "watermark_seconds",
    type=click.IntRange(min=2),
    default=5,
    show_default=True,
    metavar="SECONDS",
    help="How late an event may arrive (the watermark's delay).",
)
@click.option(
    "--trigger",
    "trigger_seconds",
    type=click.FloatRange(min=0.5),
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="Micro-batch interval.",
)
@click.option(
    "--group", "group_id", default="odradek-demo", show_default=True, help="The query's group."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed of the events.")
@click.option(
    "--console-port",
    type=click.IntRange(min=0, max=65_535),
    default=None,
    metavar="PORT",
    help="Also serve the web console on 127.0.0.1:PORT while the demo runs (0: a free port).",
)
def demo(
    duration: float,
    rate: float,
    data_dir: Path,
    partitions: int,
    window_seconds: int,
    watermark_seconds: int,
    trigger_seconds: float,
    group_id: str,
    seed: int,
    console_port: int | None,
) -> None:
    """Stream page views through odradek and Spark, then summarize (Ctrl-C stops early)."""
    try:
        # Imported here: pyspark is an optional extra and slow to import; every other command
        # starts without it.
        from odradek.demo.runner import DemoError, DemoSettings, run_demo  # noqa: PLC0415
    except ImportError as error:
        raise click.ClickException(
            f"the demo needs the spark extra (pip install 'odradek[spark]'): {error}"
        ) from None
    settings = DemoSettings(
        duration_s=duration,
        rate=rate,
        data_dir=data_dir,
        partitions=partitions,
        seed=seed,
        group_id=group_id,
        window_seconds=window_seconds,
        watermark_seconds=watermark_seconds,
        trigger_seconds=trigger_seconds,
        console_port=console_port,
    )
    try:
        summary = run_demo(settings)
    except DemoError as error:
        raise click.ClickException(str(error)) from None
    if summary.problems():
        raise click.ClickException("the end-to-end check failed (see the summary)")
