"""``odradek perf produce`` next to ``bench/broker_perf.py``'s producer, against one
``odradek serve`` in the same run: both drive librdkafka with the same settings, so the ratio
shows what the CLI tool itself costs (its per-record latency sampling, its progress thread).

A fair, interleaved comparison. Each round runs both twice, mirrored — A B B A in odd rounds,
B A A B in even ones — so a load that rises or falls steadily through a round weighs on both
sides alike, and neither always runs first onto a warm broker. Each run is a child process of
its own (the same interpreter start, nothing else in the process):

- A, ``broker_perf``: this file with ``--child``, which calls ``broker_perf.produce`` (timed by
  itself, from its first send to its flush);
- B, ``odradek perf produce``: the CLI (timed by itself, from its first send to its flush; its
  start-up and its topic check come before the clock starts).

Each run produces ``--records`` × ``--value-bytes`` to a fresh one-partition topic. A round's
ratio is B's mean rate over A's: the four runs are seconds apart, so a load spike from the
other work on a shared machine lands on one round rather than on one side. Printed: every
round, then the median of the per-round ratios with their spread (lowest–highest and the
interquartile range), and each side's median rate. The acceptance bar is a median ratio of at
least 90 %; the spread says how far one round can be trusted.

    .venv/bin/python bench/perf_cli.py [--records 500000] [--value-bytes 100] [--rounds 8]

A run of 500,000 × 100 B lasts about half a second on an idle machine (a few on a loaded one).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import broker_perf
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic

SERVING = re.compile(r"odradek: broker \d+ serving on (127\.0\.0\.1:\d+)")
BENCH, CLI = "broker_perf", "odradek perf"


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


def bench_produce(bootstrap: str, topic: str, records: int, value_bytes: int) -> float:
    """A: ``broker_perf.produce`` in a child process (``--child``)."""
    answer = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
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
    return float(answer.stdout.split()[-1])


def cli_produce(bootstrap: str, topic: str, records: int, value_bytes: int) -> float:
    """B: ``odradek perf produce`` (a child process), its own figure from ``--output json``."""
    answer = subprocess.run(
        [
            sys.executable,
            "-m",
            "odradek.cli.main",
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
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(answer.stdout)["records_per_second"])


def child(bootstrap: str, topic: str, records: int, value_bytes: int) -> None:
    broker_perf.TOPIC = topic
    rate, _ = broker_perf.produce(bootstrap, records, value_bytes)
    print(f"{rate:.1f}", flush=True)


def quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 4:
        return min(values), max(values)
    first, _, third = statistics.quantiles(values, n=4)
    return first, third


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--child", nargs=2, metavar=("BOOTSTRAP", "TOPIC"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.records, args.value_bytes)
        return
    data_dir = tempfile.mkdtemp(prefix="odradek-perf-cli-")
    process, bootstrap = start_serve(data_dir)
    runners = {BENCH: bench_produce, CLI: cli_produce}
    rates: dict[str, list[float]] = {BENCH: [], CLI: []}
    ratios: list[float] = []
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for round_ in range(args.rounds):
            order = [BENCH, CLI, CLI, BENCH] if round_ % 2 == 0 else [CLI, BENCH, BENCH, CLI]
            these: dict[str, list[float]] = {BENCH: [], CLI: []}
            for run, name in enumerate(order):
                topic = f"{broker_perf.TOPIC}-{round_}-{run}"
                admin.create_topics([NewTopic(topic, 1, 1)]).all()
                these[name].append(runners[name](bootstrap, topic, args.records, args.value_bytes))
            for name, figures in these.items():
                rates[name].extend(figures)
            ratios.append(statistics.mean(these[CLI]) / statistics.mean(these[BENCH]))
            print(
                f"  round {round_ + 1} ({' '.join('A' if n == BENCH else 'B' for n in order)}): "
                f"A {BENCH} {' '.join(f'{r:>9,.0f}' for r in these[BENCH])}, "
                f"B {CLI} {' '.join(f'{r:>9,.0f}' for r in these[CLI])} records/s, "
                f"ratio {ratios[-1]:.0%}",
                flush=True,
            )
        admin.close()
    finally:
        process.terminate()
        process.wait(30)
        shutil.rmtree(data_dir, ignore_errors=True)
    low, high = quartiles(ratios)
    print(f"{args.rounds} rounds of {args.records:,} x {args.value_bytes} B against odradek serve")
    print(
        f"  median rate: {BENCH} {statistics.median(rates[BENCH]):>10,.0f} records/s, "
        f"{CLI} produce {statistics.median(rates[CLI]):>10,.0f} records/s"
    )
    print(
        f"  ratio {CLI}/{BENCH} per round: median {statistics.median(ratios):.0%}, "
        f"interquartile {low:.0%}–{high:.0%}, range {min(ratios):.0%}–{max(ratios):.0%}"
    )


if __name__ == "__main__":
    main()
