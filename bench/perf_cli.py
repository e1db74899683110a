"""``odradek perf produce`` next to ``bench/broker_perf.py``'s producer, against one
``odradek serve`` in the same run: both drive librdkafka with the same settings, so the ratio
shows what the CLI tool itself costs (its per-record latency bookkeeping, its progress thread).

Each round produces ``--records`` × ``--value-bytes`` to a fresh one-partition topic, once with
``broker_perf.produce`` (in this process) and once with ``odradek perf produce`` (a child
process, timed by itself from its first send to its flush, as broker_perf times itself), in
alternating order. Printed: each one's best and median records/s over ``--rounds`` and their
ratios (contention only ever slows a round, and on a shared machine single rounds swing by
more than 40 %: compare the best, with the median as a check). The acceptance bar is a ratio
of at least 90 %.

    .venv/bin/python bench/perf_cli.py [--records 300000] [--value-bytes 100] [--rounds 7]
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

import broker_perf
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic

SERVING = re.compile(r"odradek: broker \d+ serving on (127\.0\.0\.1:\d+)")


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


def cli_produce(bootstrap: str, topic: str, records: int, value_bytes: int) -> float:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    data_dir = tempfile.mkdtemp(prefix="odradek-perf-cli-")
    process, bootstrap = start_serve(data_dir)
    rates: dict[str, list[float]] = {"broker_perf": [], "odradek perf": []}
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for round_ in range(args.rounds):
            order = ["broker_perf", "odradek perf"]
            for name in order if round_ % 2 == 0 else order[::-1]:
                topic = f"{broker_perf.TOPIC}-{round_}-{name.replace(' ', '-')}"
                admin.create_topics([NewTopic(topic, 1, 1)]).all()
                if name == "broker_perf":
                    broker_perf.TOPIC, saved = topic, broker_perf.TOPIC
                    try:
                        rate, _ = broker_perf.produce(bootstrap, args.records, args.value_bytes)
                    finally:
                        broker_perf.TOPIC = saved
                else:
                    rate = cli_produce(bootstrap, topic, args.records, args.value_bytes)
                rates[name].append(rate)
                print(f"  round {round_ + 1}: {name:<12} {rate:>10,.0f} records/s", flush=True)
        admin.close()
    finally:
        process.terminate()
        process.wait(30)
        shutil.rmtree(data_dir, ignore_errors=True)
    print(f"{args.rounds} rounds of {args.records:,} x {args.value_bytes} B against odradek serve")
    for label, pick in (("best", max), ("median", statistics.median)):
        ours, theirs = pick(rates["odradek perf"]), pick(rates["broker_perf"])
        print(
            f"  {label:<6}: broker_perf {theirs:>10,.0f} records/s, odradek perf produce "
            f"{ours:>10,.0f} records/s, ratio {ours / theirs:.0%}"
        )


if __name__ == "__main__":
    main()
