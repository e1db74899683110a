"""``odradek perf produce`` next to ``bench/broker_perf.py``'s producer, against one
``odradek serve`` in the same run: both drive librdkafka with the same settings, so the ratio
shows what the CLI tool itself costs (its per-record latency sampling, its progress thread).

A fair, interleaved comparison. Each round runs both twice, mirrored — A B B A in odd rounds,
B A A B in even ones — so a load that rises or falls steadily through a round weighs on both
sides alike, and neither always runs first onto a warm broker. Every run is a child process
of its own, this file with ``--child``, which imports the CLI in both cases (the same
interpreter start, the same heap) and runs one of:

- A, ``broker_perf.produce`` (timed by itself, from its first send to its flush);
- B, ``odradek perf produce`` through the CLI's ``main`` (timed by itself, from its first send
  to its flush; its topic check and its reporter thread's start come before the clock).

Each run produces ``--records`` × ``--value-bytes`` to a fresh one-partition topic and reports
its own records/s and the child's CPU time over the call per record (librdkafka's threads
included). A round's ratios are B's mean over A's: the four runs are seconds apart, so a load
spike from the other work on a shared machine lands on one round rather than on one side.
Printed: every round, then the medians of the per-round ratios with their spread (lowest–
highest and the interquartile range). The acceptance bar is a median throughput ratio of at
least 90 %. Under heavy contention throughput rounds swing by ±40 % whatever runs; the CPU per
record barely moves with the load, so its ratio is what tells the tool's own cost.

    .venv/bin/python bench/perf_cli.py [--records 500000] [--value-bytes 100] [--rounds 8]

A run of 500,000 × 100 B lasts about half a second on an idle machine (a few on a loaded one).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import broker_perf
from odradek.cli.main import main as cli_main
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic

SERVING = re.compile(r"odradek: broker \d+ serving on (127\.0\.0\.1:\d+)")
BENCH, CLI = "broker_perf", "odradek perf"
BENCH_CHILD, CLI_CHILD = "bench", "cli"


@dataclass(frozen=True, slots=True)
class Run:
    rate: float  # records/s, the tool's own figure
    cpu_us: float  # the child's CPU µs per record over the call


def start_serve(data_dir: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "odradek.cli.main",
            "serve",
            "-o",
            "listeners=PLAINTEXT://127.0.0.1:0",
            "-o",
            f"log.dirs={data_dir}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = SERVING.search(line)
    if match is None:
        process.kill()
        raise RuntimeError(f"odradek serve did not start: {line!r}")
    return process, match[1]


def run_child(kind: str, bootstrap: str, topic: str, records: int, value_bytes: int) -> Run:
    """One run in a child process of its own (this file with ``--child``)."""
    answer = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            kind,
            bootstrap,
            topic,
            "--records",
            str(records),
            "--value-bytes",
            str(value_bytes),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    rate, cpu = answer.stdout.split()[-2:]
    return Run(float(rate), float(cpu) / records * 1e6)


def child(kind: str, bootstrap: str, topic: str, records: int, value_bytes: int) -> None:
    """Runs A or B and prints its records/s (its own figure) and the process's CPU seconds
    over the call (librdkafka's threads included)."""
    if kind == BENCH_CHILD:
        broker_perf.TOPIC = topic
        started = time.process_time()
        rate, _ = broker_perf.produce(bootstrap, records, value_bytes)
        cpu = time.process_time() - started
    else:
        arguments = [
            "perf",
            "produce",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--num-records",
            str(records),
            "--record-size",
            str(value_bytes),
            "--partition",
            "0",
            "--output",
            "json",
        ]
        output = io.StringIO()
        started = time.process_time()
        with contextlib.redirect_stdout(output):
            status = cli_main(arguments)
        cpu = time.process_time() - started
        if status != 0:
            raise SystemExit(f"odradek perf produce exited with {status}")
        rate = float(json.loads(output.getvalue())["records_per_second"])
    print(f"{rate:.1f} {cpu:.6f}", flush=True)


def quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 4:
        return min(values), max(values)
    first, _, third = statistics.quantiles(values, n=4)
    return first, third


def spread(label: str, ratios: list[float]) -> str:
    low, high = quartiles(ratios)
    return (
        f"  {label}: median {statistics.median(ratios):.0%}, interquartile {low:.0%}–{high:.0%}, "
        f"range {min(ratios):.0%}–{max(ratios):.0%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument(
        "--child", nargs=3, metavar=("KIND", "BOOTSTRAP", "TOPIC"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.records, args.value_bytes)
        return
    data_dir = tempfile.mkdtemp(prefix="odradek-perf-cli-")
    process, bootstrap = start_serve(data_dir)
    kinds = {BENCH: BENCH_CHILD, CLI: CLI_CHILD}
    runs: dict[str, list[Run]] = {BENCH: [], CLI: []}
    rate_ratios: list[float] = []
    cpu_ratios: list[float] = []
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for round_ in range(args.rounds):
            order = [BENCH, CLI, CLI, BENCH] if round_ % 2 == 0 else [CLI, BENCH, BENCH, CLI]
            these: dict[str, list[Run]] = {BENCH: [], CLI: []}
            for run, name in enumerate(order):
                topic = f"{broker_perf.TOPIC}-{round_}-{run}"
                admin.create_topics([NewTopic(topic, 1, 1)]).all()
                these[name].append(
                    run_child(kinds[name], bootstrap, topic, args.records, args.value_bytes)
                )
            for name, done in these.items():
                runs[name].extend(done)
            a, b = these[BENCH], these[CLI]
            rate_ratios.append(
                statistics.mean(r.rate for r in b) / statistics.mean(r.rate for r in a)
            )
            cpu_ratios.append(
                statistics.mean(r.cpu_us for r in b) / statistics.mean(r.cpu_us for r in a)
            )
            print(
                f"  round {round_ + 1} ({' '.join('A' if n == BENCH else 'B' for n in order)}): "
                f"A {' '.join(f'{r.rate:>9,.0f}' for r in a)}, "
                f"B {' '.join(f'{r.rate:>9,.0f}' for r in b)} records/s, "
                f"ratio {rate_ratios[-1]:.0%}; CPU µs/record "
                f"A {' '.join(f'{r.cpu_us:.2f}' for r in a)}, "
                f"B {' '.join(f'{r.cpu_us:.2f}' for r in b)}",
                flush=True,
            )
        admin.close()
    finally:
        process.terminate()
        process.wait(30)
        shutil.rmtree(data_dir, ignore_errors=True)
    print(
        f"{args.rounds} rounds of {args.records:,} x {args.value_bytes} B against odradek serve; "
        f"A = {BENCH}, B = {CLI} produce"
    )
    print(
        f"  median rate: A {statistics.median(r.rate for r in runs[BENCH]):>10,.0f}, "
        f"B {statistics.median(r.rate for r in runs[CLI]):>10,.0f} records/s; median CPU: "
        f"A {statistics.median(r.cpu_us for r in runs[BENCH]):.2f}, "
        f"B {statistics.median(r.cpu_us for r in runs[CLI]):.2f} µs/record"
    )
    print(spread("throughput B/A per round (the acceptance figure, >= 90 %)", rate_ratios))
    print(spread("client CPU per record B/A per round (what the tool costs)", cpu_ratios))


if __name__ == "__main__":
    main()
