"""A seeded fault run, end to end: cluster, workload, faults, final reads, check, report.

``run_chaos(options)``:

1. starts a ``FaultCluster`` (ZooKeeper ensemble + brokers) under ``options.base_dir`` and
   creates the topic (``partitions``, replication factor 3 — or the broker count when
   smaller — ``min.insync.replicas=2``);
2. starts the ``Workload`` (producers acks=all with and without idempotence, a consumer
   group committing offsets) and the ``TxnWorkload`` (transactional producers committing and
   aborting) and waits for their first acknowledgements and commits;
3. ``faults`` times: draws a fault with ``choose_fault`` from ``random.Random(seed)``,
   applies it, holds it a time drawn from ``hold_s``, heals it and waits until the cluster
   is healthy again (every broker serving, every partition led with its full ISR);
4. heals everything, waits healthy, checks the workload acknowledges again, stops it, reads
   every replica of every partition up to the high watermark, reads every partition with
   read_committed and runs the checker.

The same seed draws the same fault kinds, targets and hold times (targets depend on who
leads, which the seed does not fix, so a replay repeats the schedule, not every byte).
Progress goes to ``out`` one line a step; ``render_result`` is the timeline and the final
table, ending with how to replay. ``ChaosResult.exit_status`` is 1 on any violation.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import click

from odradek.testing.faults.checker import Report, check
from odradek.testing.faults.cluster import FaultCluster
from odradek.testing.faults.history import Event, FaultWindow, History
from odradek.testing.faults.replica_read import partition_layouts, read_replicas
from odradek.testing.faults.schedule import FaultEvent, Timeline, choose_fault
from odradek.testing.faults.txn_workload import TxnWorkload, TxnWorkloadConfig, read_committed
from odradek.testing.faults.workload import Workload, WorkloadConfig, client_logger, wait_for

TOPIC = "chaos"


@dataclass(frozen=True, slots=True)
class ChaosOptions:
    """One run's parameters (``scripts/chaos`` flags)."""

    base_dir: Path
    seed: int
    faults: int
    brokers: int = 3
    zookeepers: int = 3
    partitions: int = 3
    hold_s: tuple[float, float] = (2.0, 8.0)
    kinds: tuple[str, ...] | None = None
    producers: int = 4
    consumers: int = 2
    rate_per_producer: float = 50.0
    transactional_producers: int = 1
    healthy_timeout_s: float = 180.0
    use_namespaces: bool | None = None

    def replay_command(self) -> str:
        words = [
            "scripts/chaos",
            f"--seed {self.seed}",
            f"--faults {self.faults}",
            f"--brokers {self.brokers}",
            f"--hold-s {self.hold_s[0]:g},{self.hold_s[1]:g}",
        ]
        if self.kinds:
            words.append(f"--kinds {','.join(self.kinds)}")
        if self.transactional_producers != 1:
            words.append(f"--transactional {self.transactional_producers}")
        return " ".join(words)


@dataclass(frozen=True, slots=True)
class ChaosResult:
    options: ChaosOptions
    isolation: str
    timeline: tuple[FaultEvent, ...]
    report: Report
    #: Problems that are not the checker's: the cluster did not heal, the workload stalled.
    problems: tuple[str, ...] = ()
    faults_by_kind: dict[str, int] = field(default_factory=dict)
    duration_s: float = 0.0
    #: Producer clients that failed fatally and were replaced (not a violation by itself).
    producer_fatal_errors: int = 0

    @property
    def exit_status(self) -> int:
        return 0 if self.report.clean and not self.problems else 1


def run_chaos(options: ChaosOptions, out: Callable[[str], None] = print) -> ChaosResult:
    """Runs the faults of ``options``; see the module docstring."""
    rng = random.Random(options.seed)
    started = time.monotonic()
    problems: list[str] = []
    out(f"chaos: seed {options.seed}, {options.faults} faults, {options.brokers} brokers")
    with FaultCluster(
        options.base_dir,
        brokers=options.brokers,
        zookeepers=options.zookeepers,
        use_namespaces=options.use_namespaces,
    ) as cluster:
        out(f"chaos: cluster up ({cluster.isolation})")
        replication = min(3, options.brokers)
        cluster.create_topic(
            TOPIC,
            options.partitions,
            replication,
            {"min.insync.replicas": str(min(2, replication))},
        )
        cluster.wait_healthy(options.healthy_timeout_s)
        history = History()
        timeline = Timeline(clock=history.now_s)
        workload = Workload(
            WorkloadConfig(
                TOPIC,
                options.partitions,
                producers=options.producers,
                consumers=options.consumers,
                rate_per_producer=options.rate_per_producer,
            ),
            history,
        )
        txn_workload = TxnWorkload(
            TxnWorkloadConfig(
                TOPIC,
                options.partitions,
                f"chaos-{options.seed}-{os.getpid()}-{time.time_ns()}",
                producers=max(options.transactional_producers, 1),
                seed=options.seed,
            ),
            history,
        )
        workload.start(cluster.bootstrap_servers)
        if options.transactional_producers:
            txn_workload.start(cluster.bootstrap_servers)
        try:
            _wait_for_acks(workload, 50, options.healthy_timeout_s)
            _wait_for_commits(txn_workload, options)
            for number in range(1, options.faults + 1):
                problem = _one_fault(rng, cluster, timeline, options, workload, number, out)
                if problem is None:
                    continue
                problems.append(problem)
                out(f"chaos: {problem}")
                if not _healthy_again(cluster, options):
                    problems.append(f"the cluster did not heal; faults stopped after {number}")
                    out(f"chaos: {problems[-1]}")
                    break
            if _healthy_again(cluster, options):
                try:
                    _wait_for_acks(workload, 50, options.healthy_timeout_s)
                except TimeoutError:
                    problems.append("no acknowledgements after the cluster healed")
                try:
                    _wait_for_commits(txn_workload, options)
                except TimeoutError:
                    problems.append("no transaction committed after the cluster healed")
        finally:
            try:
                txn_workload.stop()
            finally:
                workload.stop()
        stats = workload.statistics()
        if stats.fatal_errors:
            out(f"chaos: {stats.fatal_errors} producer clients failed fatally and were replaced")
        out(f"chaos: workload stopped ({_progress(workload)}); reading every replica")
        if options.transactional_producers:
            txn_stats = txn_workload.statistics()
            out(
                f"chaos: transactions committed {txn_stats.committed} aborted "
                f"{txn_stats.aborted} unknown {txn_stats.unknown} "
                f"(transactional clients replaced {txn_stats.replaced})"
            )
        events = history.events()
        _save(options.base_dir / "history.jsonl", events)
        windows = fault_windows(timeline.events)
        try:
            cluster.wait_healthy(options.healthy_timeout_s)
            layouts = partition_layouts(cluster.bootstrap_servers, TOPIC)
            replicas = read_replicas(layouts, TOPIC, cluster.log_dir, options.healthy_timeout_s)
            committed_logs = read_committed(
                cluster.bootstrap_servers, TOPIC, options.partitions, options.healthy_timeout_s
            )
        except Exception as error:
            problems.append(f"the replicas could not be read: {error}")
            # What the history alone shows (order, offsets); nothing about the logs.
            report = replace(check(events, [], windows), lost=(), unstable_reads=(), divergent=())
        else:
            leaders = {layout.partition: layout.leader for layout in layouts}
            report = check(
                events, replicas, windows, leaders=leaders, committed_logs=committed_logs
            )
        isolation = cluster.isolation
    kinds = Counter(e.kind for e in timeline.events if e.action == "apply")
    return ChaosResult(
        options,
        isolation,
        tuple(timeline.events),
        report,
        tuple(problems),
        dict(sorted(kinds.items())),
        time.monotonic() - started,
        workload.statistics().fatal_errors,
    )


def _one_fault(
    rng: random.Random,
    cluster: FaultCluster,
    timeline: Timeline,
    options: ChaosOptions,
    workload: Workload,
    number: int,
    out: Callable[[str], None],
) -> str | None:
    fault = choose_fault(rng, cluster, options.kinds)
    hold_s = rng.uniform(*options.hold_s)
    try:
        applied = timeline.apply(fault, cluster)
    except Exception as error:
        return f"fault {number} ({fault.kind}) could not be applied: {error}"
    # The schedule holds the fault for a drawn time: this sleep is the fault, not a wait.
    time.sleep(hold_s)
    try:
        timeline.heal(fault, cluster)
        cluster.wait_healthy(options.healthy_timeout_s)
    except Exception as error:
        return f"fault {number} ({fault.kind} {applied.target}) did not heal: {error}"
    out(
        f"[{number}/{options.faults}] {fault.kind:<26} {applied.target:<24} "
        f"held {hold_s:4.1f}s  {_progress(workload)}"
    )
    return None


def _healthy_again(cluster: FaultCluster, options: ChaosOptions) -> bool:
    """Heals whatever is still applied and waits for a healthy cluster once more."""
    try:
        cluster.heal_all()
        cluster.wait_healthy(options.healthy_timeout_s)
    except Exception:
        return False
    return True


def _wait_for_acks(workload: Workload, count: int, timeout_s: float) -> None:
    base = workload.statistics().acknowledged
    wait_for(
        lambda: workload.statistics().acknowledged >= base + count,
        timeout_s,
        f"{count} acknowledgements",
    )


def _wait_for_commits(txn_workload: TxnWorkload, options: ChaosOptions) -> None:
    """Waits for the transactional producers to commit two more transactions (none to wait
    for without them)."""
    if not options.transactional_producers:
        return
    base = txn_workload.statistics().committed
    wait_for(
        lambda: txn_workload.statistics().committed >= base + 2,
        options.healthy_timeout_s,
        "2 committed transactions",
    )


def _progress(workload: Workload) -> str:
    stats = workload.statistics()
    return (
        f"sent {stats.sent} acked {stats.acknowledged} failed {stats.failed} "
        f"consumed {stats.consumed} commits {stats.commits}"
    )


def fault_windows(events: Sequence[FaultEvent]) -> list[FaultWindow]:
    """Pairs each ``apply`` with the next ``heal`` of the same kind and target (a fault
    never healed ends at its apply time)."""
    windows = []
    open_faults: dict[tuple[str, str], FaultEvent] = {}
    for event in events:
        key = (event.kind, event.target)
        if event.action == "apply":
            open_faults[key] = event
        elif key in open_faults:
            applied = open_faults.pop(key)
            windows.append(FaultWindow(event.kind, event.target, applied.at_s, event.at_s))
    windows += [FaultWindow(e.kind, e.target, e.at_s, e.at_s) for e in open_faults.values()]
    return sorted(windows, key=lambda w: w.applied_at_s)


def _save(path: Path, events: Sequence[Event]) -> None:
    """The history as JSON lines (bytes as text: every value is ASCII), for post-mortems."""
    with open(path, "w", encoding="utf-8") as handle:
        for event in events:
            fields = {k: _plain(v) for k, v in asdict(event).items()}
            handle.write(json.dumps({"event": type(event).__name__, **fields}) + "\n")


def _plain(value: object) -> object:
    """``value`` with its bytes as text, at any depth (a transaction's records)."""
    if isinstance(value, bytes):
        return value.decode("ascii", "replace")
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value


def render_result(result: ChaosResult) -> str:
    """The timeline, the final table and, on failure, the violations and how to replay."""
    report = result.report
    txns = report.transactions
    lines = [f"chaos: seed {result.options.seed}; isolation: {result.isolation}", "timeline:"]
    lines += [f"  {event}" for event in result.timeline]
    lines.append("")
    lines.append(f"{'fault kind':<28}{'applied':>8}{'unavail p50 s':>15}{'unavail max s':>15}")
    for kind, count in result.faults_by_kind.items():
        window = report.unavailability.get(kind)
        p50 = f"{window.p50_s:.2f}" if window else "-"
        most = f"{window.max_s:.2f}" if window else "-"
        lines.append(f"{kind:<28}{count:>8}{p50:>15}{most:>15}")
    lines.append(f"{'total':<28}{sum(result.faults_by_kind.values()):>8}")
    lines.append("")
    rows = [
        ("records sent", report.sent),
        ("acknowledged", report.acknowledged),
        ("failed (outcome unknown)", report.failed),
        ("consumed", report.consumed),
        ("offset commits", report.commits),
        ("duplicates without idempotence (allowed)", report.duplicates_without_idempotence),
        ("producer clients failed fatally (replaced)", result.producer_fatal_errors),
        ("lost acknowledged records", len(report.lost)),
        ("unstable reads", len(report.unstable_reads)),
        ("duplicates under idempotence", len(report.duplicates)),
        ("reordered (acknowledged order)", len(report.reordered)),
        ("divergent replicas", len(report.divergent)),
        ("committed offsets backwards", len(report.offsets_backwards)),
        ("transactions committed", txns.committed),
        ("transactions aborted", txns.aborted),
        ("transactions of unknown outcome", txns.unknown),
        ("  of which visible (committed whole)", txns.unknown_visible),
        ("transactional records read (read_committed)", txns.records_visible),
        ("txn: committed records lost", len(txns.lost)),
        ("txn: records seen twice", len(txns.duplicated)),
        ("txn: aborted records visible", len(txns.aborted_visible)),
        ("txn: partially visible", len(txns.partial)),
        ("txn: out of produced order", len(txns.reordered)),
    ]
    by_source = Counter(b.later_source for b in report.offsets_backwards)
    if by_source:
        rows.append(("  of which read by OffsetFetch", by_source["fetch"]))
    lines += [f"{name:<44}{value:>10}" for name, value in rows]
    lines.append(f"{'run time s':<44}{result.duration_s:>10.0f}")
    examples: list[object] = [
        *report.lost[:5],
        *report.unstable_reads[:5],
        *report.duplicates[:5],
        *report.reordered[:5],
        *report.divergent[:5],
        *report.offsets_backwards[:5],
        *txns.examples(),
    ]
    if examples:
        lines.append("")
        lines.append("violations (first of each kind):")
        lines += [f"  {example}" for example in examples]
    lines += [f"problem: {problem}" for problem in result.problems]
    lines.append("")
    if result.exit_status:
        lines.append(f"chaos: FAILED — replay with: {result.options.replay_command()}")
    else:
        lines.append(f"chaos: clean (replay with: {result.options.replay_command()})")
    return "\n".join(lines)


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _hold(text: str) -> tuple[float, float]:
    low, _, high = text.partition(",")
    bounds = (float(low), float(high or low))
    if not 0 <= bounds[0] <= bounds[1]:
        raise click.BadParameter(f"want LOW,HIGH seconds with 0 <= LOW <= HIGH, got {text!r}")
    return bounds


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--faults", "faults", type=click.IntRange(0), default=10, show_default=True)
@click.option("--seed", type=int, default=None, help="default: drawn at random (printed)")
@click.option("--brokers", type=click.IntRange(1), default=3, show_default=True)
@click.option("--zookeepers", type=click.IntRange(1), default=3, show_default=True)
@click.option("--partitions", type=click.IntRange(1), default=3, show_default=True)
@click.option(
    "--hold-s", "hold", default="2,8", show_default=True, help="LOW,HIGH seconds a fault is held"
)
@click.option("--kinds", default=None, help="comma-separated fault kinds (default: all here)")
@click.option("--rate", type=float, default=50.0, show_default=True, help="records/s/producer")
@click.option(
    "--transactional",
    type=click.IntRange(0),
    default=1,
    show_default=True,
    help="transactional producers (committing and aborting)",
)
@click.option("--loopback", is_flag=True, help="no network namespaces")
@click.option("--base-dir", type=click.Path(path_type=Path), default=None)
@click.option("--keep", is_flag=True, help="keep the run directory even when clean")
@click.option("-v", "--verbose", is_flag=True, help="log the harness and clients (INFO)")
def main(
    faults: int,
    seed: int | None,
    brokers: int,
    zookeepers: int,
    partitions: int,
    hold: str,
    kinds: str | None,
    rate: float,
    transactional: int,
    loopback: bool,
    base_dir: Path | None,
    keep: bool,
    verbose: bool,
) -> None:
    """Randomized faults against a replicated cluster under load; exit status 1 on any
    violation (lost, duplicated, reordered, divergent, offsets backwards; transactions lost,
    duplicated, aborted yet visible, partially visible, reordered under read_committed)."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if verbose:
        client_logger.setLevel(logging.INFO)
    else:
        # Brokers going away is the point here: kazoo's complaints of it are noise.
        logging.getLogger("odradek.controller.zookeeper").setLevel(logging.ERROR)
    # A SIGTERM (a CI timeout) unwinds like an exception: the cluster's processes,
    # namespaces and mounts are torn down on the way out.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    directory = base_dir or Path(tempfile.mkdtemp(prefix=f"chaos-{seed}-"))
    options = ChaosOptions(
        directory,
        seed,
        faults,
        brokers=brokers,
        zookeepers=zookeepers,
        partitions=partitions,
        hold_s=_hold(hold),
        kinds=tuple(kinds.split(",")) if kinds else None,
        rate_per_producer=rate,
        transactional_producers=transactional,
        use_namespaces=False if loopback else None,
    )

    def say(line: str) -> None:
        click.echo(line)
        sys.stdout.flush()

    try:
        result = run_chaos(options, say)
    except BaseException:
        say(f"chaos: the run broke; its files are in {directory}")
        say(f"chaos: replay with: {options.replay_command()}")
        raise
    say(render_result(result))
    if result.exit_status or keep or base_dir is not None:
        say(f"chaos: run directory kept: {directory}")
    else:
        shutil.rmtree(directory, ignore_errors=True)
    sys.exit(result.exit_status)


if __name__ == "__main__":
    main()
