"""Metadata store operations and controller failover, on the local store and on ZooKeeper.

Prints, measured in the same run:

- per-operation time of the ``MetadataStore`` port on ``LocalMetadataStore`` (one fsync'd file
  per persistent change) and ``ZooKeeperMetadataStore`` (a real standalone ZooKeeper 3.8 on
  loopback, started here): create, get, compare-and-set, an epoch-fenced controller write
  (``multi`` with a version check) and ``children`` of 1,000 nodes; the ZooKeeper/local ratio;
- controller failover with ``Cluster(3)`` (three ``odradek serve`` processes): from SIGTERM
  of the controller's broker (its session closes) and from SIGKILL (its session must time out:
  ``zookeeper.session.timeout.ms`` 2000) until another broker holds ``/controller``.

    .venv/bin/python bench/metadata_store.py [--ops 500] [--failovers 3]
"""

from __future__ import annotations

import argparse
import signal
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from odradek.controller.local import LocalMetadataStore
from odradek.controller.store import CheckOp, MetadataStore, SetOp
from odradek.controller.zookeeper import ZooKeeperMetadataStore
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble


def per_op_us(ops: int, action: Callable[[int], object]) -> float:
    started = time.perf_counter()
    for index in range(ops):
        action(index)
    return (time.perf_counter() - started) / ops * 1e6


def store_figures(store: MetadataStore, ops: int) -> dict[str, float]:
    store.create("/bench", make_parents=True)
    store.create("/bench/epoch", b"1")
    store.create("/bench/state", b"")
    figures = {
        "create": per_op_us(ops, lambda i: store.create(f"/bench/n{i}", b"x" * 100)),
        "get": per_op_us(ops, lambda i: store.get(f"/bench/n{i}")),
    }

    def cas(index: int) -> None:
        _, version = store.get("/bench/state")
        store.set("/bench/state", str(index).encode(), version)

    figures["get+set (CAS)"] = per_op_us(ops, cas)
    figures["fenced multi"] = per_op_us(
        ops, lambda i: store.multi([CheckOp("/bench/epoch", 0), SetOp("/bench/state", b"s")])
    )
    for index in range(ops, 1000):
        store.create(f"/bench/n{index}")
    figures["children(1000)"] = per_op_us(20, lambda i: store.children("/bench"))
    return figures


def failover_ms(cluster: Cluster, sig: signal.Signals) -> float:
    cluster.wait_until(lambda: cluster.controller_id() is not None, what="a controller")
    old = cluster.controller_id()
    assert old is not None
    started = time.monotonic()
    cluster.kill(old, sig)
    cluster.wait_until(lambda: cluster.controller_id() not in (None, old), timeout_s=60)
    elapsed = (time.monotonic() - started) * 1000
    if sig == signal.SIGTERM:
        cluster.terminate(old)
    cluster.wait_until(lambda: old not in cluster.registered(), timeout_s=60)
    cluster.restart(old)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=500)
    parser.add_argument("--failovers", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-metadata-") as base:
        root = Path(base)
        with ZooKeeperEnsemble(root / "zk", 1) as zookeeper:
            with LocalMetadataStore(root / "local") as local:
                local_figures = store_figures(local, args.ops)
            with ZooKeeperMetadataStore(zookeeper.connect_string + "/bench") as remote:
                zk_figures = store_figures(remote, args.ops)
            print(f"{'operation':<16} {'local µs':>10} {'ZooKeeper µs':>13} {'ratio':>7}")
            for name, local_us in local_figures.items():
                zk_us = zk_figures[name]
                print(f"{name:<16} {local_us:>10.1f} {zk_us:>13.1f} {zk_us / local_us:>7.2f}")
            kinds = {
                "SIGTERM (clean stop)": signal.SIGTERM,
                "SIGKILL (session 2 s)": signal.SIGKILL,
            }
            with Cluster(3, zookeeper.connect_string + "/failover", root / "cluster") as cluster:
                for label, sig in kinds.items():
                    times = [failover_ms(cluster, sig) for _ in range(args.failovers)]
                    print(
                        f"controller failover after {label}: median "
                        f"{statistics.median(times):.0f} ms "
                        f"(runs: {', '.join(f'{t:.0f}' for t in times)})"
                    )


if __name__ == "__main__":
    main()
