"""Partition reassignment at 1,000 partitions on ``Cluster(3)`` (real ZooKeeper).

Prints, measured in the same run:

- the baseline: creating a topic of ``--partitions`` partitions (RF 3) until every broker's
  Metadata lists them;
- a reassignment that completes at once (every partition drops its last replica: RF 3 → 2;
  start and completion written, LeaderAndIsr, StopReplica with delete, UpdateMetadata) from
  the AlterPartitionReassignments call until every broker's Metadata shows the targets;
- a reassignment that starts only (an RF-1 topic of as many partitions gains a replica on
  the next broker: it stays in progress until replication lets the new replicas catch up)
  until every broker's Metadata shows the replica sets RS;
- each as a ratio to the baseline, and per partition.

    .venv/bin/python bench/reassignment.py [--partitions 1000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from odradek.client import AdminClient, NewTopic, TopicPartition
from odradek.controller.channel import BrokerRequest, ControllerChannel
from odradek.protocol import ApiKey
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble


def replicas(channel: ControllerChannel, port: int, topic: str) -> dict[int, list[int]]:
    request = BrokerRequest(
        "127.0.0.1",
        port,
        ApiKey.METADATA,
        4,
        {"topics": [{"name": topic}], "allow_auto_topic_creation": False},
    )
    answer = channel.send({0: request})[0]
    assert answer is not None, f"no Metadata answer from port {port}"
    return {p["partition_index"]: p["replica_nodes"] for p in answer["topics"][0]["partitions"]}


def wait(condition: Callable[[], bool], timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the cluster did not reach the state waited for")
        time.sleep(0.005)


def everywhere(
    cluster: Cluster, channel: ControllerChannel, topic: str, wanted: dict[int, list[int]]
) -> None:
    for broker in cluster.brokers.values():
        wait(lambda port=broker.port: replicas(channel, port, topic) == wanted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    args = parser.parse_args()
    count = args.partitions
    channel = ControllerChannel(-1, timeout_s=60)
    with tempfile.TemporaryDirectory(prefix="bench-reassign-") as base:
        root = Path(base)
        with (
            ZooKeeperEnsemble(root / "zk", 1) as zookeeper,
            Cluster(3, zookeeper.connect_string + "/bench", root / "cluster") as cluster,
        ):
            cluster.wait_until(lambda: cluster.controller_id() is not None)
            config = {"bootstrap.servers": cluster.bootstrap_servers}
            with AdminClient(config, default_api_timeout_ms=600_000) as admin:
                started = time.perf_counter()
                admin.create_topics([NewTopic("wide", count, 3)]).all()
                port = cluster.brokers[0].port
                wait(lambda: len(replicas(channel, port, "wide")) == count)
                wide = replicas(channel, port, "wide")
                everywhere(cluster, channel, "wide", wide)
                create_s = time.perf_counter() - started

                targets = {p: r[:2] for p, r in wide.items()}
                started = time.perf_counter()
                admin.alter_partition_reassignments(
                    {TopicPartition("wide", p): r for p, r in targets.items()}
                ).all()
                answered_s = time.perf_counter() - started
                everywhere(cluster, channel, "wide", targets)
                complete_s = time.perf_counter() - started
                assert admin.list_partition_reassignments() == {}

                admin.create_topics(
                    [NewTopic("narrow", replica_assignment={p: [p % 3] for p in range(count)})]
                ).all()
                everywhere(cluster, channel, "narrow", {p: [p % 3] for p in range(count)})
                grown = {p: [p % 3, (p + 1) % 3] for p in range(count)}
                started = time.perf_counter()
                admin.alter_partition_reassignments(
                    {TopicPartition("narrow", p): r for p, r in grown.items()}
                ).all()
                start_answer_s = time.perf_counter() - started
                everywhere(cluster, channel, "narrow", grown)  # RS = target here (OR ⊂ TR)
                start_s = time.perf_counter() - started
                assert len(admin.list_partition_reassignments()) == count
    channel.close()
    print(f"{count} partitions on 3 brokers; shared 2-core machine (ratios are the figure)")
    print(f"baseline: create RF 3 until every broker lists them {create_s * 1000:.0f} ms")
    print(
        f"reassign RF 3 -> 2 (completes at once): answer {answered_s * 1000:.0f} ms, every "
        f"broker shows the targets {complete_s * 1000:.0f} ms "
        f"({complete_s * 1000 / count:.2f} ms per partition; ratio {complete_s / create_s:.2f})"
    )
    print(
        f"reassign RF 1 -> 2 (starts, stays in progress): answer {start_answer_s * 1000:.0f} ms, "
        f"every broker shows RS {start_s * 1000:.0f} ms "
        f"({start_s * 1000 / count:.2f} ms per partition; ratio {start_s / create_s:.2f})"
    )


if __name__ == "__main__":
    main()
