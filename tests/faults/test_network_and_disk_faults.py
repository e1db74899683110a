"""The network, disk and clock faults against a real cluster whose brokers and ZooKeeper nodes
are test hosts in network namespaces: each applied with an observable effect, then healed back
to a healthy cluster. Skipped (with the reason) where namespaces cannot be made."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.faults._produce import produce_one

from odradek.testing.faults.cluster import FaultCluster, port_open
from odradek.testing.faults.injectors import (
    BrokerCutFromZooKeeper,
    ClockSkew,
    FullDisk,
    LeaderCutFromFollowers,
    PartitionOne,
    available_faults,
)
from odradek.testing.faults.netns import probe_namespaces
from odradek.testing.zookeeper import zookeeper_installed

_NO_NAMESPACES = probe_namespaces()

pytestmark = [
    pytest.mark.faults,
    pytest.mark.cluster,
    pytest.mark.skipif(not zookeeper_installed(), reason="ZooKeeper is not installed"),
    pytest.mark.skipif(_NO_NAMESPACES is not None, reason=f"no namespaces: {_NO_NAMESPACES}"),
]

TOPIC = "faults"
PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultCluster]:
    with FaultCluster(
        tmp_path_factory.mktemp("netfaults"), use_namespaces=True, disk_bytes=64 << 20
    ) as started:
        started.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
        yield started


@pytest.fixture
def healthy(cluster: FaultCluster) -> Iterator[FaultCluster]:
    """The module's cluster, healed and healthy again after the test."""
    yield cluster
    cluster.heal_all()
    cluster.wait_healthy()
    assert cluster.active_faults == []


def _led_by(cluster: FaultCluster, broker_id: int) -> list[int]:
    return [p for p in range(PARTITIONS) if cluster.leader_of(TOPIC, p) == broker_id]


def _skip_unless_available(cluster: FaultCluster, kind: str) -> None:
    reason = available_faults(cluster)[kind]
    if reason is not None:
        pytest.skip(f"{kind}: {reason}")


def test_every_host_has_its_own_namespace_and_address(healthy: FaultCluster) -> None:
    assert healthy.isolation == "network namespaces"
    assert healthy.network is not None
    brokers = [healthy.broker_host(b) for b in healthy.broker_ids]
    zookeepers = healthy.zookeeper_hosts()
    assert len(set(brokers + zookeepers)) == 6
    assert all(host.startswith(healthy.network.subnet.rsplit(".", 1)[0] + ".") for host in brokers)
    own = os.readlink("/proc/self/ns/net")
    namespaces = {os.readlink(f"/proc/{healthy.broker_pid(b)}/ns/net") for b in healthy.broker_ids}
    assert len(namespaces) == 3
    assert own not in namespaces
    for broker_id in healthy.broker_ids:
        assert healthy.log_dir(broker_id).parent.name == f"broker-{broker_id}"
        assert healthy.has_disk(broker_id)
    kinds = available_faults(healthy)
    assert [kind for kind, reason in kinds.items() if reason is not None] == ["slow-disk"]


def test_partitioned_leader_loses_leadership_and_registration(healthy: FaultCluster) -> None:
    fault = PartitionOne(random.Random(11))
    fault.apply(healthy)
    victim = fault.broker_id
    assert victim is not None
    led = _led_by(healthy, victim)
    assert led, "every broker leads one partition of a balanced topic"
    healthy.wait_until(
        lambda: (
            victim not in healthy.registered()
            and all(healthy.leader_of(TOPIC, p) not in (None, victim) for p in led)
        ),
        60,
        "the partitioned broker to lose its registration and its leaderships",
    )
    assert produce_one(healthy.address(victim), TOPIC, 0, acks="1", timeout_s=3) is not None
    fault.heal(healthy)
    healthy.wait_healthy()
    assert victim in healthy.registered()


def test_leader_cut_from_followers_still_serves_clients(healthy: FaultCluster) -> None:
    fault = LeaderCutFromFollowers(random.Random(12))
    target = fault.apply(healthy)
    leader = fault.broker_id
    assert leader is not None
    partition = int(target.split(f"{TOPIC}-")[1].split(")")[0])
    # Clients and ZooKeeper still reach the leader: it stays registered and takes acks=1...
    assert produce_one(healthy.address(leader), TOPIC, partition, acks="1") is None
    assert leader in healthy.registered()
    # ...but no follower replicates it, so acks=all with min.insync.replicas=2 is refused.
    assert produce_one(healthy.bootstrap_servers, TOPIC, partition, acks="all") is not None
    fault.heal(healthy)
    healthy.wait_healthy()
    assert produce_one(healthy.bootstrap_servers, TOPIC, partition, acks="all") is None


def test_broker_cut_from_zookeeper_loses_its_registration(healthy: FaultCluster) -> None:
    fault = BrokerCutFromZooKeeper(random.Random(13))
    fault.apply(healthy)
    victim = fault.broker_id
    assert victim is not None
    healthy.wait_until(lambda: victim not in healthy.registered(), 60, "the registration to vanish")
    healthy.wait_until(lambda: not _led_by(healthy, victim), 60, "leadership to move away")
    # Cut from ZooKeeper only: the test process still connects to it.
    host, port = healthy.address(victim).rsplit(":", 1)
    assert not healthy.broker_running(victim) or port_open(host, int(port))
    fault.heal(healthy)
    healthy.wait_healthy()
    assert victim in healthy.registered()


def test_full_disk_fails_produce_and_the_broker_serves_after_heal(healthy: FaultCluster) -> None:
    _skip_unless_available(healthy, "full-disk")
    fault = FullDisk(random.Random(14))
    fault.apply(healthy)
    victim = fault.broker_id
    assert victim is not None
    assert healthy.disk_free_bytes(victim) < 1 << 20
    partition = _led_by(healthy, victim)[0]
    # Larger than a page: a small batch could still fit in the free tail of the segment's last
    # tmpfs page (earlier tests in the module wrote to it) and be acknowledged.
    error = produce_one(
        healthy.bootstrap_servers, TOPIC, partition, acks="all", timeout_s=8, value=bytes(64 << 10)
    )
    assert error is not None
    assert healthy.broker_running(victim)
    assert victim in healthy.registered()
    fault.heal(healthy)
    assert healthy.disk_free_bytes(victim) > 32 << 20
    assert healthy.broker_running(victim)
    healthy.wait_healthy()
    led = _led_by(healthy, victim) or [partition]
    assert produce_one(healthy.bootstrap_servers, TOPIC, led[0], acks="all") is None


def test_skewed_broker_registers_with_its_own_clock(healthy: FaultCluster) -> None:
    _skip_unless_available(healthy, "clock-skew")
    fault = ClockSkew(random.Random(15), skew_s=7200)
    fault.apply(healthy)
    victim = fault.broker_id
    assert victim is not None
    assert healthy.skewed_brokers() == {victim: fault.applied_skew_s}
    registered_at_s = int(healthy.brokers.registration(victim)["timestamp"]) / 1000
    assert abs(registered_at_s - time.time() - fault.applied_skew_s) < 600
    fault.heal(healthy)
    healthy.wait_healthy()
    registered_at_s = int(healthy.brokers.registration(victim)["timestamp"]) / 1000
    assert abs(registered_at_s - time.time()) < 600


def test_stop_leaves_no_namespace_interface_or_mount(tmp_path: Path) -> None:
    cluster = FaultCluster(tmp_path, brokers=1, zookeepers=1, use_namespaces=True)
    cluster.start()
    network = cluster.network
    assert network is not None
    assert network.leftovers()
    cluster.create_topic("kept", 1, 1)
    cluster.stop_brokers()
    assert not cluster.broker_running(0)
    assert (cluster.log_dir(0) / "kept-0").is_dir()  # readable until stop
    cluster.stop()
    assert not cluster.log_dir(0).exists()
    assert network.leftovers() == []
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        assert str(tmp_path) not in mounts.read()
    cluster.stop()  # twice is fine


def test_a_failed_start_tears_everything_down(tmp_path: Path) -> None:
    cluster = FaultCluster(
        tmp_path,
        brokers=1,
        zookeepers=1,
        use_namespaces=True,
        broker_settings={"num.partitions": "x"},
    )
    try:
        with pytest.raises(Exception, match="did not start"):
            cluster.start(timeout_s=60)
        assert cluster.network is not None
        assert cluster.network.leftovers() == []
        assert not cluster.zookeeper_running(0)
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            assert str(tmp_path) not in mounts.read()
    finally:
        # Should this test fail, nothing it started may outlive it (a ZooKeeper client left
        # running draws from the global random module and breaks later hypothesis tests).
        cluster.stop()
