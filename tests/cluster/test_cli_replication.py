"""``odradek topics describe --under-replicated-partitions / --unavailable-partitions`` on a
3-broker cluster over a real ZooKeeper, after one broker is killed (kill -9): the controller
takes it out of every ISR, so each partition of an RF 3 topic is under-replicated, and a
partition whose only replica it held has no leader, so it is unavailable; the healthy cluster
reports neither; ``odradek cluster describe`` counts both."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from odradek.cli.main import main
from odradek.client import AdminClient, NewTopic
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble

pytestmark = pytest.mark.cluster


def _state(cluster: Cluster, topic: str, partition: int) -> Any:
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    return json.loads(cluster.store.get(path)[0])


def _describe(capsys: pytest.CaptureFixture[str], bootstrap: str, flag: str) -> list[str]:
    assert main(["topics", "describe", flag, "--bootstrap-server", bootstrap]) == 0
    return capsys.readouterr().out.splitlines()


def test_a_killed_broker_leaves_partitions_under_replicated_and_unavailable(
    zookeeper: ZooKeeperEnsemble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chroot = f"{zookeeper.connect_string}/t-{uuid.uuid4().hex[:12]}"
    with Cluster(3, chroot, tmp_path) as cluster:
        cluster.wait_until(lambda: cluster.controller_id() is not None, what="a controller")
        controller = cluster.controller_id()
        victim = next(b for b in cluster.brokers if b != controller)
        with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            admin.create_topics(
                [
                    NewTopic("spread", 2, 3),
                    NewTopic("lonely", replica_assignment={0: [victim]}),
                ]
            ).all()
        survivor = cluster.brokers[controller or 0].address
        healthy = [
            _describe(capsys, survivor, flag)
            for flag in ("--under-replicated-partitions", "--unavailable-partitions")
        ]

        cluster.kill(victim)
        cluster.wait_until(
            lambda: (
                _state(cluster, "lonely", 0)["leader"] == -1
                and all(victim not in _state(cluster, "spread", p)["isr"] for p in (0, 1))
            ),
            what="the controller to take the killed broker out",
        )
        # ZooKeeper is written before the controller's UpdateMetadata reaches the survivor's
        # cache, which the CLI reads: wait for the survivor to say so too.
        cluster.wait_until(
            lambda: (
                len(_describe(capsys, survivor, "--under-replicated-partitions")) == 2
                and len(_describe(capsys, survivor, "--unavailable-partitions")) == 1
            ),
            what="the survivor's metadata to take the killed broker out",
        )
        under = _describe(capsys, survivor, "--under-replicated-partitions")
        unavailable = _describe(capsys, survivor, "--unavailable-partitions")
        assert main(["cluster", "describe", "--bootstrap-server", survivor]) == 0
        counts = capsys.readouterr().out.splitlines()[-2:]

    assert healthy == [[], []]
    assert [line.split("\t")[1:3] for line in under] == [
        ["Topic: spread", "Partition: 0"],
        ["Topic: spread", "Partition: 1"],
    ]
    isrs = [line.split("Isr: ")[1].split(",") for line in under]
    assert all(len(isr) == 2 and str(victim) not in isr for isr in isrs)
    assert counts == ["UnderReplicatedPartitions: 2", "OfflinePartitions: 1"]
    assert unavailable == [
        f"\tTopic: lonely\tPartition: 0\tLeader: none\tReplicas: {victim}\tIsr: {victim}"
    ]
