"""Cluster metadata at 1,000 partitions: topic creation, leader failover, Metadata latency.

Prints, measured in the same run:

- creating a topic of ``--partitions`` partitions: on one embedded broker (RF 1, local store:
  the baseline) and on ``Cluster(3)`` (RF 3, real ZooKeeper; CreateTopics sent to a broker that
  is not the controller, so it is forwarded) until the answer — which comes once every broker
  answered the controller's LeaderAndIsr and UpdateMetadata — and until each broker's Metadata
  lists every partition; the cluster/single ratio;
- Metadata (v4, that one topic) round trip, median over ``--requests``: single vs cluster;
- leader failover: from SIGTERM (controlled shutdown) and from SIGKILL (detection bounded by
  ``zookeeper.session.timeout.ms`` 2000) of a broker that is not the controller until a
  surviving broker's Metadata shows none of its partitions led by it; per moved partition.

    .venv/bin/python bench/cluster_metadata.py [--partitions 1000] [--requests 200]
"""

from __future__ import annotations

import argparse
import signal
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from odradek import Broker
from odradek.client import AdminClient, NewTopic
from odradek.controller.channel import BrokerRequest, ControllerChannel
from odradek.protocol import ApiKey
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble

TOPIC = "bench"


def create_s(bootstrap: str, partitions: int, replication_factor: int) -> float:
    admin = AdminClient({"bootstrap.servers": bootstrap, "default.api.timeout.ms": 300_000})
    try:
        started = time.perf_counter()
        admin.create_topics([NewTopic(TOPIC, partitions, replication_factor)]).all()
        return time.perf_counter() - started
    finally:
        admin.close()


def metadata(channel: ControllerChannel, port: int) -> dict[str, Any]:
    request = BrokerRequest(
        "127.0.0.1",
        port,
        ApiKey.METADATA,
        4,
        {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False},
    )
    answer = channel.send({0: request})[0]
    assert answer is not None, f"no Metadata answer from port {port}"
    return answer


def leaders(channel: ControllerChannel, port: int) -> dict[int, int]:
    topic = metadata(channel, port)["topics"][0]
    return {p["partition_index"]: p["leader_id"] for p in topic["partitions"]}


def metadata_ms(channel: ControllerChannel, port: int, requests: int) -> float:
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        metadata(channel, port)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def wait(condition: Callable[[], bool], timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the cluster did not reach the state waited for")
        time.sleep(0.005)


def failover(
    cluster: Cluster, channel: ControllerChannel, sig: signal.Signals
) -> tuple[float, int]:
    """(ms until no partition is led by the victim, partitions it led)."""
    controller = cluster.controller_id()
    assert controller is not None
    current = leaders(channel, cluster.brokers[controller].port)
    # The broker (not the controller) that leads the most partitions.
    victim = max(
        (b for b in cluster.brokers if b != controller),
        key=lambda b: sum(1 for leader in current.values() if leader == b),
    )
    survivor = next(b for b in sorted(cluster.brokers) if b != victim)
    port = cluster.brokers[survivor].port
    led = [p for p, leader in leaders(channel, port).items() if leader == victim]
    started = time.perf_counter()
    cluster.kill(victim, sig)
    wait(lambda: victim not in leaders(channel, port).values())
    elapsed = (time.perf_counter() - started) * 1000
    if sig == signal.SIGTERM:
        cluster.terminate(victim)
    cluster.wait_until(lambda: victim not in cluster.registered(), timeout_s=60)
    cluster.restart(victim)
    total = len(current)
    wait(lambda: len(leaders(channel, cluster.brokers[victim].port)) == total)
    return elapsed, len(led)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    channel = ControllerChannel(-1, timeout_s=60)
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as base:
        root = Path(base)
        with Broker(root / "single") as single:
            single_create = create_s(single.bootstrap_servers, args.partitions, 1)
            single_port = int(single.bootstrap_servers.rsplit(":", 1)[1])
            single_metadata = metadata_ms(channel, single_port, args.requests)
        with ZooKeeperEnsemble(root / "zk", 1) as zookeeper:
            connect = zookeeper.connect_string + "/bench"
            with Cluster(3, connect, root / "cluster") as cluster:
                cluster.wait_until(lambda: cluster.controller_id() is not None)
                via = next(b for b in sorted(cluster.brokers) if b != cluster.controller_id())
                started = time.perf_counter()
                cluster_create = create_s(cluster.brokers[via].address, args.partitions, 3)
                for broker in cluster.brokers.values():
                    wait(lambda port=broker.port: len(leaders(channel, port)) == args.partitions)
                every_broker = time.perf_counter() - started
                cluster_metadata = metadata_ms(channel, cluster.brokers[via].port, args.requests)
                print(f"{args.partitions} partitions; shared 2-core machine")
                print(
                    f"create: single broker RF 1 {single_create * 1000:.0f} ms; cluster RF 3 "
                    f"{cluster_create * 1000:.0f} ms to the answer, {every_broker * 1000:.0f} ms "
                    f"until every broker lists them (ratio {cluster_create / single_create:.2f})"
                )
                print(
                    f"Metadata v4 of the topic: single {single_metadata:.2f} ms, cluster "
                    f"{cluster_metadata:.2f} ms (ratio {cluster_metadata / single_metadata:.2f})"
                )
                for label, sig in (
                    ("SIGTERM (controlled shutdown)", signal.SIGTERM),
                    ("SIGKILL (session 2 s)", signal.SIGKILL),
                ):
                    elapsed, moved = failover(cluster, channel, sig)
                    print(
                        f"leader failover after {label}: {elapsed:.0f} ms for {moved} "
                        f"partitions ({elapsed / max(moved, 1):.2f} ms per partition)"
                    )
    channel.close()


if __name__ == "__main__":
    main()
