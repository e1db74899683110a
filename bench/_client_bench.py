"""What ``bench/client_perf.py`` (producers) and ``bench/consumer_perf.py`` (consumers) share:
the command line, one child process per measurement (a fresh interpreter: one client's threads
cannot slow another) and the table they print — records/s and MB/s per client and workload,
each client's best of ``--repeat`` runs, then odradek's ratio to each other client — against
one ``odradek serve`` child with 1-partition topics.

A bench calls ``main``; run again as its own child (``--run CLIENT`` and the hidden arguments
``measure`` passes), the bench's ``child`` function times one client and ``main`` prints its
seconds as the child's last line of output.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Final

from odradek.testing.serve import start_serve, stop_serve

CLIENTS: Final = ("odradek", "kafka-python", "aiokafka", "confluent-kafka")

#: Given (bootstrap, records, size), readies one workload and returns how to time one run of it:
#: (client, run number) -> seconds.
StartWorkload = Callable[[str, int, int], Callable[[str, int], float]]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies record counts")
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs per client")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--run", help=argparse.SUPPRESS)  # a key of the script's runners
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--records", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    return parser.parse_args()


def measure(
    script: str,
    client: str,
    bootstrap: str,
    topic: str,
    records: int,
    size: int,
    timeout: float | None = None,
) -> float:
    """Runs ``script`` as the child that times ``client``; returns its seconds."""
    done = subprocess.run(
        [
            sys.executable,
            script,
            "--run",
            client,
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--records",
            str(records),
            "--size",
            str(size),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode:
        raise RuntimeError(f"{client} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


def compare(
    args: argparse.Namespace,
    title: str,
    data_dir_prefix: str,
    workloads: Sequence[tuple[int, int]],
    start_workload: StartWorkload,
) -> None:
    """The parent side: serves, runs every workload (its record count times ``--scale``) for
    every client of ``--clients``, and prints the table."""
    clients = [name.strip() for name in args.clients.split(",") if name.strip()]
    with tempfile.TemporaryDirectory(prefix=data_dir_prefix) as data_dir:
        server, bootstrap = start_serve(data_dir, {"num.partitions": "1"})
        try:
            print(f"{title}, odradek serve on {bootstrap}")
            print(f"{'client':<16} {'records x size':>16} {'records/s':>12} {'MB/s':>8}")
            for base_records, size in workloads:
                records = max(1, int(base_records * args.scale))
                time_run = start_workload(bootstrap, records, size)
                rates: dict[str, float] = {}
                for client in clients:
                    best = min(time_run(client, rep) for rep in range(args.repeat))
                    rates[client] = records / best
                    print(
                        f"{client:<16} {records:>9,} x {size:>4} {records / best:>12,.0f} "
                        f"{records * size / best / 1e6:>8.1f}",
                        flush=True,
                    )
                if "odradek" in rates:
                    ratios = ", ".join(
                        f"{rates['odradek'] / rate:.2f}x {client}"
                        for client, rate in rates.items()
                        if client != "odradek"
                    )
                    print(f"{'':<16} odradek = {ratios}")
        finally:
            stop_serve(server)


def main(
    child: Callable[[argparse.Namespace], float],
    title: str,
    data_dir_prefix: str,
    workloads: Sequence[tuple[int, int]],
    start_workload: StartWorkload,
) -> None:
    """A bench's entry point: the child side (``child`` times the client of ``--run``) or the
    parent side (``compare``)."""
    args = parse_args()
    if args.run:
        print(json.dumps({"seconds": child(args)}))
        return
    compare(args, title, data_dir_prefix, workloads, start_workload)
