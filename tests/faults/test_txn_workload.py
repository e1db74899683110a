"""The transactional workload and the read_committed read on a real 3-broker cluster (no
fault harness): transactions commit and abort, a producer fenced in the middle of the run by
another client with its transactional.id records an unknown outcome and is replaced, and the
checker finds the committed transactions whole and once, the aborted ones invisible."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from tests._zookeeper import zookeeper, zookeeper_chroot

from odradek.client import AdminClient, NewTopic
from odradek.testing.cluster import Cluster
from odradek.testing.faults.checker import check
from odradek.testing.faults.history import History, Transaction
from odradek.testing.faults.txn_workload import TxnWorkload, TxnWorkloadConfig, read_committed
from odradek.testing.faults.workload import wait_for

__all__ = ["zookeeper", "zookeeper_chroot"]

pytestmark = [pytest.mark.faults, pytest.mark.cluster]

SETTINGS = {
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.wait.max.ms": "100",
    "transaction.state.log.num.partitions": "3",
}


@pytest.fixture
def cluster(zookeeper_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(3, zookeeper_chroot, tmp_path, settings=SETTINGS) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


def test_transactions_commit_abort_and_survive_a_fencing(cluster: Cluster) -> None:
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic("txload", 3, 3, configs={"min.insync.replicas": "2"})]).all()
    history = History()
    config = TxnWorkloadConfig("txload", 3, "fence-test", seed=3, abort_every=3)
    workload = TxnWorkload(config, history)
    workload.start(cluster.bootstrap_servers)
    try:
        wait_for(lambda: workload.statistics().committed >= 5, 90, "5 commits")
        wait_for(lambda: workload.statistics().aborted >= 1, 90, "an abort")
        # Another client takes the transactional id: the workload's producer is fenced.
        fencer = Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "fence-test-tx0"}
        )
        fencer.init_transactions(30)
        wait_for(lambda: workload.statistics().unknown >= 1, 90, "a fenced transaction")
        base = workload.statistics().committed
        wait_for(lambda: workload.statistics().committed >= base + 3, 90, "commits again")
    finally:
        workload.stop()

    logs = read_committed(cluster.bootstrap_servers, "txload", 3, timeout_s=60)
    events = history.events()
    report = check(events, [], committed_logs=logs)
    txns = report.transactions
    assert report.clean, txns.examples()
    assert txns.committed >= 8
    assert txns.aborted >= 1
    assert txns.unknown >= 1
    assert workload.statistics().replaced >= 1
    committed = [e for e in events if isinstance(e, Transaction) and e.outcome == "committed"]
    assert txns.records_visible >= sum(len(t.records) for t in committed)
    # The read saw exactly the committed transactions (and unknown ones the coordinator
    # committed): an aborted value in it would have been a violation above.
    assert sum(len(log.records) for log in logs) == txns.records_visible + txns.unowned
