"""The workload, the replica reads and the checker on a real 3-broker cluster (no fault
harness): a run through a leader kill -9 and restart checks clean with every kind of event
recorded, and a replica whose log loses its tail afterwards is caught — lost acknowledged
records when it is the reference replica, a divergent replica either way."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests._zookeeper import zookeeper, zookeeper_chroot

from odradek.client import AdminClient, NewTopic
from odradek.records.batch import iter_batches
from odradek.testing.cluster import Cluster
from odradek.testing.faults.checker import check
from odradek.testing.faults.history import (
    Commit,
    CommittedRead,
    Consume,
    FaultWindow,
    History,
    Send,
)
from odradek.testing.faults.replica_read import partition_layouts, read_replicas
from odradek.testing.faults.workload import Workload, WorkloadConfig, wait_for

__all__ = ["zookeeper", "zookeeper_chroot"]

pytestmark = [pytest.mark.faults, pytest.mark.cluster]

SETTINGS = {"replica.lag.time.max.ms": "2000", "replica.fetch.wait.max.ms": "100"}


@pytest.fixture
def cluster(zookeeper_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(3, zookeeper_chroot, tmp_path, settings=SETTINGS) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


def _leader(cluster: Cluster, topic: str, partition: int) -> int:
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    leader = json.loads(cluster.store.get(path)[0])["leader"]
    assert isinstance(leader, int)
    return leader


def _full_isr(cluster: Cluster, topic: str, partitions: int) -> bool:
    try:
        states = [
            json.loads(cluster.store.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])
            for p in range(partitions)
        ]
    except Exception:
        return False
    return all(sorted(s["isr"]) == [0, 1, 2] and s["leader"] >= 0 for s in states)


def _more_acks(workload: Workload, count: int) -> None:
    base = workload.statistics().acknowledged
    wait_for(lambda: workload.statistics().acknowledged >= base + count, 90, "acks")


def test_a_run_through_a_leader_kill_is_clean_and_a_lost_tail_is_caught(
    cluster: Cluster,
) -> None:
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic("load", 3, 3, configs={"min.insync.replicas": "2"})]).all()
    cluster.wait_until(lambda: _full_isr(cluster, "load", 3), what="the topic's ISRs")
    history = History()
    workload = Workload(WorkloadConfig("load", 3, producers=2, consumers=2), history)
    workload.start(cluster.bootstrap_servers)
    try:
        _more_acks(workload, 200)
        victim = _leader(cluster, "load", 0)
        applied = history.now_s()
        cluster.kill(victim)
        _more_acks(workload, 200)
        cluster.restart(victim)
        healed = history.now_s()
        cluster.wait_until(lambda: _full_isr(cluster, "load", 3), 120, "the ISRs full again")
        _more_acks(workload, 200)
        wait_for(lambda: workload.statistics().commits > 0, 60, "a commit")
    finally:
        workload.stop()

    layouts = partition_layouts(cluster.bootstrap_servers, "load")
    leaders = {layout.partition: layout.leader for layout in layouts}
    replicas = read_replicas(layouts, "load", lambda b: cluster.brokers[b].log_dir)
    events = history.events()
    faults = [FaultWindow("kill-leader", f"broker {victim}", applied, healed)]
    report = check(events, replicas, faults, leaders=leaders)
    assert report.clean, report
    assert report.acknowledged >= 600
    assert sum(layout.high_watermark for layout in layouts) >= report.acknowledged
    assert {type(e) for e in events} >= {Send, Consume, Commit, CommittedRead}
    assert {s.idempotent for s in events if isinstance(s, Send)} == {True, False}
    assert report.unavailability["kill-leader"].max_s > 0

    # Every broker stops cleanly; then partition 0's leader loses its last batch on disk.
    for broker_id in cluster.brokers:
        cluster.terminate(broker_id)
    leader_dir = cluster.brokers[leaders[0]].log_dir / "load-0"
    segment = sorted(leader_dir.glob("*.log"))[-1]
    data = segment.read_bytes()
    last_position = [position for position, _ in iter_batches(data)][-1]
    segment.write_bytes(data[:last_position])
    cut = read_replicas(layouts, "load", lambda b: cluster.brokers[b].log_dir, timeout_s=0)
    damaged = check(events, cut, faults, leaders=leaders)
    assert damaged.lost, "the acknowledged records of the cut batch were not reported lost"
    assert {lost.partition for lost in damaged.lost} == {0}
    assert {(d.partition, d.reference_broker_id) for d in damaged.divergent} == {(0, leaders[0])}
    assert len(damaged.divergent) == 2  # both followers hold what the reference lacks
