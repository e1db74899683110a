"""The process faults against a real loopback cluster (3 ZooKeeper nodes, 3 brokers): each
applied with an observable effect on leadership, ISR or registration, then healed back to a
healthy cluster."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from odradek.testing.faults.cluster import FaultCluster
from odradek.testing.faults.injectors import (
    KillBroker,
    KillZooKeeper,
    PausePastSession,
    available_faults,
)
from odradek.testing.zookeeper import zookeeper_installed

pytestmark = [
    pytest.mark.faults,
    pytest.mark.cluster,
    pytest.mark.skipif(not zookeeper_installed(), reason="ZooKeeper is not installed"),
]

TOPIC = "faults"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultCluster]:
    with FaultCluster(tmp_path_factory.mktemp("faults"), use_namespaces=False) as started:
        started.create_topic(TOPIC, 3, 3, {"min.insync.replicas": "2"})
        yield started


@pytest.fixture
def healthy(cluster: FaultCluster) -> Iterator[FaultCluster]:
    """The module's cluster, healed and healthy again after the test."""
    yield cluster
    cluster.heal_all()
    cluster.wait_healthy()
    assert cluster.active_faults == []


def test_loopback_cluster_says_so_and_serves(healthy: FaultCluster) -> None:
    assert healthy.isolation.startswith("loopback")
    assert sorted(healthy.registered()) == healthy.broker_ids
    assert all(address.startswith("127.0.0.1:") for address in healthy.bootstrap_servers.split(","))
    for partition in range(3):
        assert healthy.leader_of(TOPIC, partition) in healthy.broker_ids
        assert sorted(healthy.isr_of(TOPIC, partition)) == healthy.broker_ids
    healthy.wait_healthy(timeout_s=30)
    available = available_faults(healthy)
    for kind in ("partition-one", "leader-cut-from-followers", "broker-cut-from-zookeeper"):
        assert available[kind] == "needs network namespaces (network namespaces not requested)"
    for kind in ("kill-leader", "kill-follower", "kill-controller", "pause-past-session"):
        assert available[kind] is None
    assert available["kill-zookeeper"] is None


def test_kill_leader_moves_leadership_and_heals(healthy: FaultCluster) -> None:
    fault = KillBroker("kill-leader", random.Random(1))
    target = fault.apply(healthy)
    victim = fault.broker_id
    assert victim is not None
    assert f"broker {victim}" in target
    assert not healthy.broker_running(victim)
    led = [p for p in range(3) if healthy.leader_of(TOPIC, p) == victim]
    healthy.wait_until(
        lambda: all(healthy.leader_of(TOPIC, p) not in (None, victim) for p in led),
        60,
        "leadership to move off the killed broker",
    )
    fault.heal(healthy)
    assert healthy.broker_running(victim)
    assert healthy.active_faults == []
    healthy.wait_healthy()


def test_kill_follower_shrinks_the_isr(healthy: FaultCluster) -> None:
    fault = KillBroker("kill-follower", random.Random(2))
    fault.apply(healthy)
    victim = fault.broker_id
    assert victim is not None
    healthy.wait_until(
        lambda: all(victim not in healthy.isr_of(TOPIC, p) for p in range(3)),
        60,
        "the killed follower to leave every ISR",
    )
    fault.heal(healthy)
    healthy.wait_healthy()
    assert all(victim in healthy.isr_of(TOPIC, p) for p in range(3))


def test_kill_controller_elects_another(healthy: FaultCluster) -> None:
    before = healthy.controller_id()
    fault = KillBroker("kill-controller", random.Random(3))
    assert fault.apply(healthy) == f"broker {before} (controller)"
    healthy.wait_until(
        lambda: healthy.controller_id() not in (None, before), 60, "another controller"
    )
    fault.heal(healthy)
    healthy.wait_healthy()


def test_pause_past_session_expires_the_zombie_leader(healthy: FaultCluster) -> None:
    fault = PausePastSession(random.Random(4))
    fault.apply(healthy)  # returns once the registration is gone
    zombie = fault.broker_id
    assert zombie is not None
    assert healthy.paused_brokers() == {zombie}
    assert zombie not in healthy.registered()
    assert healthy.broker_running(zombie)  # stopped, not dead
    healthy.wait_until(
        lambda: all(healthy.leader_of(TOPIC, p) != zombie for p in range(3)),
        60,
        "leadership to move off the paused broker",
    )
    fault.heal(healthy)
    assert healthy.paused_brokers() == set()
    healthy.wait_healthy()
    assert zombie in healthy.registered()


def test_kill_zookeeper_node_keeps_the_quorum_serving(healthy: FaultCluster) -> None:
    fault = KillZooKeeper(random.Random(5))
    fault.apply(healthy)
    assert fault.index is not None
    assert not healthy.zookeeper_running(fault.index)
    healthy.create_topic("after-zookeeper-kill", 1, 3)  # the controller still works
    assert healthy.leader_of("after-zookeeper-kill", 0) in healthy.broker_ids
    fault.heal(healthy)
    assert healthy.zookeeper_running(fault.index)
    healthy.wait_healthy()


def test_heal_all_undoes_faults_left_applied(healthy: FaultCluster) -> None:
    killed = KillBroker("kill-follower", random.Random(6))
    killed.apply(healthy)
    zookeeper = KillZooKeeper(random.Random(7))
    zookeeper.apply(healthy)
    assert len(healthy.active_faults) == 2
    healthy.heal_all()
    assert healthy.active_faults == []
    assert all(healthy.broker_running(b) for b in healthy.broker_ids)
    assert all(healthy.zookeeper_running(i) for i in range(3))
    healthy.wait_healthy()
