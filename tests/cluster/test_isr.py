"""The leader side of replication on 2 ``odradek serve`` brokers and a real ZooKeeper, the test
playing the follower: a phantom broker (a registration the test makes, pointing at a closed
port) is the second replica of a partition, and the test sends the leader raw Fetch requests
with that broker's ``replica_id``.

What it proves: the high watermark stays at 0 until the follower fetched, then follows its
fetch offset, and a consumer (``replica_id`` -1) reads only below it; a follower that stops
fetching leaves the ISR after ``replica.lag.time.max.ms`` and rejoins once caught up, each
change written by the controller (the partition state in ZooKeeper, its version moving) after
the leader's AlterPartition, forwarded by the leader to the controller on the other broker;
AlterPartition with an old partition epoch or leader epoch is refused and changes nothing; a
broker that is not a replica gets NOT_LEADER_OR_FOLLOWER."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.broker._wire import Wire

from odradek.client import AdminClient, NewTopic
from odradek.client.producer import Producer
from odradek.controller.topics import ClusterMetadata, Endpoint
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey
from odradek.protocol.inter_broker import ALTER_PARTITION_VERSION
from odradek.testing.cluster import Cluster

pytestmark = pytest.mark.cluster

TOPIC = "isr"
PHANTOM = 7
#: Long enough for the first part (three appends, five fetches) on a busy machine.
LAG_MS = 8_000


@pytest.fixture
def cluster(zookeeper_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    settings = {"replica.lag.time.max.ms": str(LAG_MS)}
    with Cluster(2, zookeeper_chroot, tmp_path, settings=settings) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _state(cluster: Cluster) -> tuple[dict[str, Any], int]:
    data, version = cluster.store.get(f"/brokers/topics/{TOPIC}/partitions/0/state")
    return json.loads(data), version


def _fetch(wire: Wire, replica_id: int, offset: int) -> dict[str, Any]:
    answer = wire.request(
        ApiKey.FETCH,
        11,
        {
            "replica_id": replica_id,
            "max_wait": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": TOPIC,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
    partition: dict[str, Any] = answer["responses"][0]["partitions"][0]
    return partition


def _batches(partition: dict[str, Any]) -> int:
    """How many batches a fetch answer carries (each holds one record here)."""
    records = partition["records"] or b""
    count, position = 0, 0
    while position + 12 <= len(records):
        length = int.from_bytes(records[position + 8 : position + 12], "big")
        position += 12 + length
        count += 1
    return count


def _alter_partition(
    wire: Wire, broker_id: int, leader_epoch: int, isr: list[int], partition_epoch: int
) -> dict[str, Any]:
    answer = wire.request(
        ApiKey.ALTER_PARTITION,
        ALTER_PARTITION_VERSION,
        {
            "broker_id": broker_id,
            "broker_epoch": -1,
            "topics": [
                {
                    "topic_name": TOPIC,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "leader_epoch": leader_epoch,
                            "new_isr": isr,
                            "leader_recovery_state": 0,
                            "partition_epoch": partition_epoch,
                        }
                    ],
                }
            ],
        },
    )
    assert answer["error_code"] == ErrorCode.NONE
    partition: dict[str, Any] = answer["topics"][0]["partitions"][0]
    return partition


def test_the_leader_tracks_its_follower_the_isr_shrinks_and_expands(cluster: Cluster) -> None:
    controller = cluster.controller_id()
    assert controller is not None
    leader = next(b for b in cluster.brokers if b != controller)
    metadata = ClusterMetadata(cluster.store)
    metadata.register_broker(PHANTOM, [Endpoint("PLAINTEXT", "127.0.0.1", _closed_port())])
    admin = AdminClient({"bootstrap.servers": cluster.brokers[leader].address})
    try:
        _wait(
            lambda: PHANTOM in {b.node_id for b in admin.describe_cluster().brokers},
            "the phantom broker in the cluster",
        )
        admin.create_topics([NewTopic(TOPIC, replica_assignment={0: [leader, PHANTOM]})]).all()
    finally:
        admin.close()
    state, version = _state(cluster)
    assert (state["leader"], state["isr"]) == (leader, [leader, PHANTOM])
    wire = Wire(cluster.brokers[leader].port, client_id="phantom-follower")
    producer = Producer({"bootstrap.servers": cluster.brokers[leader].address, "acks": "1"})
    try:
        for value in (b"a", b"b", b"c"):  # three batches: offsets 0, 1, 2
            producer.send(TOPIC, value, partition=0).get(30)
        _consumer_and_follower_see_the_high_watermark(wire, cluster, controller)
        # The follower stops fetching while the leader appends: out of the ISR after the lag.
        producer.send(TOPIC, b"d", partition=0).get(30)
    finally:
        producer.close()
    _wait(lambda: _state(cluster)[0]["isr"] == [leader], "the ISR to shrink")
    shrunk, shrunk_version = _state(cluster)
    assert shrunk_version > version
    assert shrunk["leader_epoch"] == state["leader_epoch"]  # an ISR change is no new epoch
    # Alone in its ISR, the leader commits its own log.
    _wait(lambda: _fetch(wire, -1, 0)["high_watermark"] == 4, "the HW of a lone leader")

    # Caught up again (at the HW): back into the ISR.
    _fetch(wire, PHANTOM, 4)
    _wait(lambda: _state(cluster)[0]["isr"] == [leader, PHANTOM], "the ISR to expand")
    expanded, expanded_version = _state(cluster)
    assert expanded_version > shrunk_version
    assert expanded["leader_epoch"] == state["leader_epoch"]
    wire.close()
    _stale_alter_partitions_are_refused(cluster, leader, shrunk_version)


def _consumer_and_follower_see_the_high_watermark(
    wire: Wire, cluster: Cluster, controller: int
) -> None:
    # The follower has not fetched: nothing is committed, a consumer sees nothing.
    consumer = _fetch(wire, -1, 0)
    assert consumer["high_watermark"] == 0
    assert _batches(consumer) == 0
    assert _fetch(wire, PHANTOM, 0)["high_watermark"] == 0
    # It fetches at 2 (it holds offsets 0 and 1): the HW is 2.
    assert _fetch(wire, PHANTOM, 2)["high_watermark"] == 2
    consumer = _fetch(wire, -1, 0)
    assert consumer["high_watermark"] == 2
    assert _batches(consumer) == 2
    assert _fetch(wire, PHANTOM, 3)["high_watermark"] == 3
    # A broker that is not a replica is no follower.
    assert _fetch(wire, controller, 3)["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def _stale_alter_partitions_are_refused(cluster: Cluster, leader: int, old_version: int) -> None:
    controller = cluster.controller_id()
    assert controller is not None
    expanded, expanded_version = _state(cluster)
    shrunk_version = old_version
    # Old partition epoch, old leader epoch: refused, nothing written.
    to_controller = Wire(cluster.brokers[controller].port, client_id="stale-leader")
    epoch = expanded["leader_epoch"]
    stale_version = _alter_partition(to_controller, leader, epoch, [leader], shrunk_version)
    stale_epoch = _alter_partition(to_controller, leader, epoch - 1, [leader], expanded_version)
    assert stale_version["error_code"] == ErrorCode.INVALID_UPDATE_VERSION
    assert stale_epoch["error_code"] == ErrorCode.FENCED_LEADER_EPOCH
    assert _state(cluster) == (expanded, expanded_version)
    # The current epochs are accepted (and answered with the new state).
    accepted = _alter_partition(to_controller, leader, epoch, [leader], expanded_version)
    assert accepted["error_code"] == ErrorCode.NONE
    assert accepted["isr"] == [leader]
    assert accepted["partition_epoch"] == expanded_version + 1
    assert _state(cluster)[0]["isr"] == [leader]
    to_controller.close()
