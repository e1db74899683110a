"""One protocol fuzz run against an ``odradek serve`` child process, with the broker's figures.

``fuzz_broker(FuzzRun(...))`` starts the broker on a fresh data directory with its log in a
file, runs ``protocol_fuzz.run_fuzz`` against it, samples its resident memory (growth counts
from after ``warmup_frames``: the first thousands of frames load code and tables lazily, some
20 MiB, which is no leak), stops it with SIGTERM, and reads the log: every ERROR line and
traceback (a handler that raised, a "Fatal error on transport") is counted. A crash is the
broker exiting before it was asked to, or not exiting cleanly when it was.

Used by the test suite (a short seeded slice) and by ``scripts/fuzz-broker`` (a long run:
``python -m odradek.testing.fuzz_broker --seed 1 --frames 1000000``), which prints the figures
and exits non-zero when the broker crashed, hung, logged an error, answered out of order,
lost acknowledged data or grew its resident memory by more than ``--max-rss-growth-mib``
(20 MiB unless told: ``failures`` is the verdict).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from odradek.protocol.api_keys import ApiKey
from odradek.testing.protocol_fuzz import (
    FuzzConfig,
    FuzzReport,
    advertised_versions,
    read_rss_bytes,
    run_fuzz,
)
from odradek.testing.serve import start_serve, stop_serve

__all__ = ["MAX_RSS_GROWTH_BYTES", "BrokerFigures", "FuzzRun", "failures", "fuzz_broker"]

#: APIs a run may leave out (``--exclude-unbounded``): CreateTopics and CreatePartitions are
#: bounded by the broker's partition limits, which the fuzzed broker sets low (see
#: ``BROKER_OVERRIDES``) so that fuzzed counts cannot fill the disk or the run's memory bound.
UNBOUNDED_APIS = frozenset({ApiKey.CREATE_TOPICS, ApiKey.CREATE_PARTITIONS})
#: The fuzzed broker's settings: no auto-creation, and partition limits low enough that a run
#: of fuzzed CreateTopics / CreatePartitions stays small (each is refused with
#: POLICY_VIOLATION past them, as any broker's would be past its own).
BROKER_OVERRIDES = {
    "auto.create.topics.enable": "false",
    "num.partitions": "2",
    "max.partitions.per.request": "32",
    "max.broker.partitions": "400",
}

#: The most a long run may grow the broker's resident memory (start to end) and still pass.
MAX_RSS_GROWTH_BYTES = 20 << 20

#: Added to the run's seed for its warm-up (another stream of frames than the run's).
_WARMUP_SEED = 1_000_003
#: The warm-up's acknowledged produces go to a topic of their own (each run expects its empty).
_WARMUP_INTEGRITY_TOPIC = "fuzz-acked-warmup"
#: ``scripts/fuzz-broker``'s warm-up: enough for every template to be sent several times.
DEFAULT_WARMUP_FRAMES = 5_000

_ERROR_LINE = re.compile(r"^\S+ \S+ (ERROR|CRITICAL) (\S+): (.*)$")


@dataclass(frozen=True, slots=True)
class FuzzRun:
    """What to run: the seed, the frame count and the broker's data directory."""

    data_dir: Path
    seed: int
    frames: int
    max_pipeline: int = 8
    log_level: str = "info"
    excluded: frozenset[ApiKey] = frozenset()
    rss_sample_interval_s: float = 0.5
    #: Fuzzed frames sent (another seed's) before the start RSS is read; what they find
    #: counts as the run's (their frames too).
    warmup_frames: int = 0


@dataclass(slots=True)
class BrokerFigures:
    """The broker's side of a run."""

    exit_code: int | None = None
    died_during_run: bool = False
    rss_start_bytes: int = 0
    rss_end_bytes: int = 0
    rss_max_bytes: int = 0
    error_lines: list[str] = field(default_factory=list)
    tracebacks: int = 0
    errors_by_logger: Counter[str] = field(default_factory=Counter)
    log_path: Path | None = None

    @property
    def rss_growth_bytes(self) -> int:
        return self.rss_end_bytes - self.rss_start_bytes

    @property
    def crashed(self) -> bool:
        return self.died_during_run or self.exit_code != 0


def fuzz_broker(run: FuzzRun) -> tuple[FuzzReport, BrokerFigures]:
    """Starts a broker, fuzzes it, stops it; returns both sides' figures."""
    data_dir = run.data_dir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = run.data_dir / "broker.log"
    figures = BrokerFigures(log_path=log_path)
    overrides = dict(BROKER_OVERRIDES)
    with log_path.open("w") as log:
        process, address = start_serve(
            str(data_dir), overrides, log_level=run.log_level, stderr=log
        )
    host, port = address.rsplit(":", 1)
    stop_sampling = threading.Event()

    def sample_rss() -> None:
        while not stop_sampling.wait(run.rss_sample_interval_s):
            try:
                figures.rss_max_bytes = max(figures.rss_max_bytes, read_rss_bytes(process.pid))
            except (OSError, LookupError):
                return

    sampler = threading.Thread(target=sample_rss, name="fuzz-rss", daemon=True)
    try:
        config = FuzzConfig(
            host=host,
            port=int(port),
            seed=run.seed,
            frames=run.frames,
            supported=advertised_versions(host, int(port)),
            max_pipeline=run.max_pipeline,
            excluded=run.excluded,
        )
        warmup = None
        if run.warmup_frames:
            warmup = run_fuzz(
                dataclasses.replace(
                    config,
                    seed=run.seed + _WARMUP_SEED,
                    frames=run.warmup_frames,
                    integrity_topic=_WARMUP_INTEGRITY_TOPIC,
                )
            )
        figures.rss_start_bytes = read_rss_bytes(process.pid)
        sampler.start()
        report = run_fuzz(config)
        if warmup is not None:
            _fold(report, warmup)
        figures.died_during_run = process.poll() is not None
        if not figures.died_during_run:
            figures.rss_end_bytes = read_rss_bytes(process.pid)
    finally:
        stop_sampling.set()
        if sampler.is_alive():
            sampler.join()
        figures.exit_code = stop_serve(process)
        if process.stdout is not None:
            process.stdout.close()
    _read_log(log_path, figures)
    return report, figures


def _fold(report: FuzzReport, warmup: FuzzReport) -> None:
    """Adds the warm-up's counts and findings to the run's ``report``."""
    report.frames += warmup.frames
    report.episodes += warmup.episodes
    report.closed_by_broker += warmup.closed_by_broker
    report.episode_timeouts += warmup.episode_timeouts
    report.order_violations.extend(warmup.order_violations)
    report.probes += warmup.probes
    report.hangs += warmup.hangs
    report.probe_max_latency_s = max(report.probe_max_latency_s, warmup.probe_max_latency_s)
    report.acked_records += warmup.acked_records
    report.lost_records.extend(warmup.lost_records)
    for name, count in warmup.mutations.items():
        report.mutations[name] = report.mutations.get(name, 0) + count
    report.elapsed_s += warmup.elapsed_s


def failures(
    report: FuzzReport, figures: BrokerFigures, max_rss_growth_bytes: int = MAX_RSS_GROWTH_BYTES
) -> list[str]:
    """Why the run failed, one short reason each; empty when it passed.

    A run fails when the broker crashed, a probe hung, the broker logged a traceback or an
    ERROR line, answered out of order, lost an acknowledged record, or its resident memory
    grew (end against start, after the warm-up) by more than ``max_rss_growth_bytes``.
    """
    reasons = []
    if figures.crashed:
        reasons.append(f"the broker crashed (exit code {figures.exit_code})")
    if report.hangs:
        reasons.append(f"{report.hangs} probes hung")
    if figures.tracebacks:
        reasons.append(f"{figures.tracebacks} tracebacks")
    if figures.error_lines:
        reasons.append(f"{len(figures.error_lines)} ERROR lines")
    if report.order_violations:
        reasons.append(f"{len(report.order_violations)} answers out of order")
    if report.lost_records:
        reasons.append(f"{len(report.lost_records)} acknowledged records lost")
    if figures.rss_growth_bytes > max_rss_growth_bytes:
        mib = 1 << 20
        reasons.append(
            f"RSS grew {figures.rss_growth_bytes / mib:.1f} MiB "
            f"(more than {max_rss_growth_bytes / mib:g} MiB)"
        )
    return reasons


def _read_log(path: Path, figures: BrokerFigures) -> None:
    with path.open(errors="replace") as log:
        for line in log:
            if line.startswith("Traceback"):
                figures.tracebacks += 1
                continue
            match = _ERROR_LINE.match(line)
            if match is not None:
                figures.error_lines.append(line.rstrip())
                figures.errors_by_logger[f"{match[2]}: {match[3][:60]}"] += 1


def _print_figures(run: FuzzRun, report: FuzzReport, figures: BrokerFigures) -> None:
    mib = 1 << 20
    lines = [
        f"seed {run.seed}, frames {report.frames} in {report.episodes} connections, "
        f"{report.elapsed_s:.1f} s, {report.frames_per_second:.0f} frames/s",
        f"crashes {int(figures.crashed)} (exit code {figures.exit_code})",
        f"hangs {report.hangs} of {report.probes} Metadata probes "
        f"(slowest answer {report.probe_max_latency_s * 1000:.0f} ms)",
        f"handler tracebacks {figures.tracebacks}, ERROR lines {len(figures.error_lines)}",
        f"answers out of order {len(report.order_violations)}",
        f"acknowledged records {report.acked_records}, lost {len(report.lost_records)}",
        f"broker RSS {figures.rss_start_bytes / mib:.1f} MiB at start "
        f"(after {run.warmup_frames} warm-up frames), "
        f"{figures.rss_end_bytes / mib:.1f} MiB at end, {figures.rss_max_bytes / mib:.1f} MiB "
        f"max: growth {figures.rss_growth_bytes / mib:+.1f} MiB",
        f"connections closed by the broker {report.closed_by_broker}, "
        f"episodes that timed out waiting {report.episode_timeouts}",
        "mutations: " + ", ".join(f"{k} {v}" for k, v in sorted(report.mutations.items())),
    ]
    lines.extend(f"  {count} x {what}" for what, count in figures.errors_by_logger.most_common(20))
    lines.extend(f"  order: {violation}" for violation in report.order_violations[:5])
    lines.extend(f"  lost: {lost}" for lost in report.lost_records[:5])
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fuzz an odradek broker's wire protocol.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--max-pipeline", type=int, default=8)
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    parser.add_argument(
        "--exclude-unbounded",
        action="store_true",
        help="leave CreateTopics and CreatePartitions out (they are fuzzed by default)",
    )
    parser.add_argument("--keep", type=Path, help="run in this directory and keep it")
    parser.add_argument(
        "--warmup-frames",
        type=int,
        default=DEFAULT_WARMUP_FRAMES,
        help="frames sent before the broker's start RSS is read (default 5000; counted in)",
    )
    parser.add_argument(
        "--max-rss-growth-mib",
        type=float,
        default=MAX_RSS_GROWTH_BYTES / (1 << 20),
        help="the broker's resident memory may grow this much from start to end (default 20)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="odradek-fuzz-") as scratch:
        directory = args.keep or Path(scratch)
        run = FuzzRun(
            directory,
            seed=args.seed,
            frames=args.frames,
            max_pipeline=args.max_pipeline,
            log_level=args.log_level,
            excluded=UNBOUNDED_APIS if args.exclude_unbounded else frozenset(),
            warmup_frames=args.warmup_frames,
        )
        report, figures = fuzz_broker(run)
        _print_figures(run, report, figures)
    reasons = failures(report, figures, int(args.max_rss_growth_mib * (1 << 20)))
    if reasons:
        print("FAILED: " + "; ".join(reasons))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
