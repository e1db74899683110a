"""ClusterController's reassignment shell in one process, on the local store: three brokers
registered at an address that refuses connections (the controller's requests fail fast and
are not the point here), so what is checked is what the controller writes — the topic node's
replicas and adding/removing maps, the partition state — and what it holds, across the ISR's
growth (``_on_isr_changed``, the seam AlterPartition calls), ``/admin/reassign_partitions``
and a new controller taking over. Also the controller's rack-aware topic creation (the
brokers' registered ``broker.rack``)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from odradek._types import TopicPartition
from odradek.controller.brokers import LiveBrokers
from odradek.controller.cluster import ClusterController, ControllerSettings, TopicRequest
from odradek.controller.controller import Controller
from odradek.controller.election import CONTROLLER_PATH, ControllerEpoch
from odradek.controller.leaders import LeaderAndIsr
from odradek.controller.local import LocalMetadataStore
from odradek.controller.partition_states import PartitionRecord
from odradek.controller.reassignment import ReplicaAssignment
from odradek.controller.topics import REASSIGN_PARTITIONS_PATH, ClusterMetadata, Endpoint
from odradek.errors import ErrorCode

TP = TopicPartition("t", 0)


def _refused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@dataclass
class Running:
    shell: ClusterController
    controller: Controller
    live: LiveBrokers

    def stop(self) -> None:
        self.controller.stop()


def _start(metadata: ClusterMetadata, broker_id: int) -> Running:
    holder: list[ClusterController] = []

    def elected(epoch: ControllerEpoch) -> None:
        holder[0].on_elected(epoch)

    def resigned() -> None:
        holder[0].on_resigned()

    def brokers_changed(added: list[int], removed: list[int]) -> None:
        holder[0].on_brokers_changed(added, removed)

    controller = Controller(metadata.store, broker_id, on_elected=elected, on_resigned=resigned)
    live = LiveBrokers(metadata, on_change=brokers_changed)
    settings = ControllerSettings("PLAINTEXT", 1, 1, False, True, lambda configs: None)
    holder.append(ClusterController(controller, metadata, live, settings, channel_timeout_s=1))
    live.start()
    controller.start()
    _wait(lambda: holder[0].active, "the controller elected")
    return Running(holder[0], controller, live)


@pytest.fixture
def metadata(tmp_path: Path) -> Iterator[ClusterMetadata]:
    store = LocalMetadataStore(tmp_path / "meta")
    cluster = ClusterMetadata(store)
    cluster.ensure_top_level_paths()
    port = _refused_port()
    for broker_id in (0, 1, 2):
        cluster.register_broker(broker_id, [Endpoint("PLAINTEXT", "127.0.0.1", port)])
    yield cluster
    store.close()


def _topic(metadata: ClusterMetadata) -> dict[str, object]:
    document = json.loads(metadata.store.get("/brokers/topics/t")[0])
    assert isinstance(document, dict)
    return document


def _grow_isr(running: Running, isr: tuple[int, ...]) -> None:
    """What the controller does when the leader's AlterPartition adds replicas to the ISR:
    writes the state, holds it, and calls ``_on_isr_changed``."""
    shell, metadata = running.shell, running.shell.context.metadata

    def grow() -> None:
        record = shell.context.partitions[TP]
        epoch = running.controller.epoch
        assert epoch is not None
        written = metadata.set_partition_state(
            TP.topic,
            TP.partition,
            leader=record.state.leader,
            leader_epoch=record.state.leader_epoch,
            isr=isr,
            controller_epoch=epoch.epoch,
            expected_version=record.zk_version,
        )
        state = LeaderAndIsr(record.state.leader, record.state.leader_epoch, isr)
        shell.context.partitions[TP] = PartitionRecord(record.replicas, state, written.zk_version)
        shell._on_isr_changed(TP)

    shell._submit(grow).result(timeout=10)


def test_a_reassignment_completes_when_its_new_replicas_join_the_isr(
    metadata: ClusterMetadata,
) -> None:
    running = _start(metadata, 0)
    try:
        shell = running.shell
        shell.create_topics([TopicRequest("t", assignment={0: [0, 1]})]).result(timeout=10)
        assert shell.alter_partition_reassignments({TP: [2, 1]}).result(timeout=10) == {
            TP: (ErrorCode.NONE, None)
        }
        moving = ReplicaAssignment((2, 1, 0), adding=(2,), removing=(0,))
        assert shell.list_partition_reassignments().result(timeout=10) == {TP: moving}
        assert _topic(metadata)["adding_replicas"] == {"0": [2]}
        state = metadata.partition_state("t", 0)
        assert state is not None
        assert (state.leader, state.leader_epoch, state.isr) == (0, 1, (0, 1))

        _grow_isr(running, (0, 1))  # nothing new in sync: still in progress
        assert shell.list_partition_reassignments().result(timeout=10) == {TP: moving}

        _grow_isr(running, (0, 1, 2))
        assert shell.list_partition_reassignments().result(timeout=10) == {}
        document = _topic(metadata)
        assert document["partitions"] == {"0": [2, 1]}
        assert (document["adding_replicas"], document["removing_replicas"]) == ({}, {})
        state = metadata.partition_state("t", 0)
        assert state is not None
        # Broker 0 led and was removed: the first target replica in sync leads.
        assert (state.leader, state.leader_epoch, state.isr) == (2, 2, (1, 2))
    finally:
        running.stop()


def test_a_new_controller_resumes_and_completes_a_stored_reassignment(
    metadata: ClusterMetadata,
) -> None:
    first = _start(metadata, 0)
    first.shell.create_topics([TopicRequest("t", assignment={0: [0]})]).result(timeout=10)
    first.shell.alter_partition_reassignments({TP: [1]}).result(timeout=10)
    first.stop()
    metadata.store.delete(CONTROLLER_PATH)  # as when broker 0's session ends
    second = _start(metadata, 1)
    try:
        assert second.shell.list_partition_reassignments().result(timeout=10) == {
            TP: ReplicaAssignment((1, 0), adding=(1,), removing=(0,))
        }
        _grow_isr(second, (0, 1))
        assert second.shell.list_partition_reassignments().result(timeout=10) == {}
        assert _topic(metadata)["partitions"] == {"0": [1]}
    finally:
        second.stop()


def test_the_zookeeper_node_starts_reassignments_and_is_deleted(
    metadata: ClusterMetadata,
) -> None:
    running = _start(metadata, 0)
    try:
        shell = running.shell
        shell.create_topics([TopicRequest("t", assignment={0: [0], 1: [1]})]).result(timeout=10)
        document = {
            "version": 1,
            "partitions": [
                {"topic": "t", "partition": 0, "replicas": [2]},
                {"topic": "t", "partition": 9, "replicas": [2]},
            ],
        }
        metadata.store.create(REASSIGN_PARTITIONS_PATH, json.dumps(document).encode())
        _wait(lambda: not metadata.store.exists(REASSIGN_PARTITIONS_PATH), "the node deleted")
        assert shell.list_partition_reassignments().result(timeout=10) == {
            TP: ReplicaAssignment((2, 0), adding=(2,), removing=(0,))
        }
    finally:
        running.stop()


def test_a_reassignment_of_more_partitions_than_one_write_holds(
    metadata: ClusterMetadata,
) -> None:
    count = 1_201  # three multis of at most 500 partition states
    running = _start(metadata, 0)
    try:
        shell = running.shell
        assignment = {p: [0, 1] for p in range(count)}
        shell.create_topics([TopicRequest("t", assignment=assignment)]).result(timeout=30)
        targets = {TopicPartition("t", p): [1] for p in range(count)}
        results = shell.alter_partition_reassignments(targets).result(timeout=30)
        assert set(results.values()) == {(ErrorCode.NONE, None)}
        assert shell.list_partition_reassignments().result(timeout=10) == {}
        assert _topic(metadata)["partitions"] == {str(p): [1] for p in range(count)}
        states = [metadata.partition_state("t", p) for p in range(count)]
        assert {(s.leader, s.isr) for s in states if s is not None} == {(1, (1,))}
        assert all(s is not None and s.leader_epoch == 2 for s in states)
    finally:
        running.stop()


def test_partitions_cannot_be_added_while_the_topic_is_reassigned(
    metadata: ClusterMetadata,
) -> None:
    running = _start(metadata, 0)
    try:
        shell = running.shell
        shell.create_topics([TopicRequest("t", assignment={0: [0, 1]})]).result(timeout=10)
        shell.alter_partition_reassignments({TP: [0, 1, 2]}).result(timeout=10)
        (refused,) = shell.create_partitions([("t", 2, None)]).result(timeout=10)
        assert refused.error_code is ErrorCode.REASSIGNMENT_IN_PROGRESS
        assert "t-0" in (refused.message or "")
        shell.alter_partition_reassignments({TP: None}).result(timeout=10)
        (added,) = shell.create_partitions([("t", 2, None)]).result(timeout=10)
        assert added.error_code is ErrorCode.NONE
        # The cancelled move left partition 0 with 2 replicas: the new one gets 2 too.
        assert len(set(metadata.assignment("t")[1])) == 2
    finally:
        running.stop()


@pytest.mark.parametrize(
    ("racks", "spread"),
    [({0: "a", 1: "a", 2: "b"}, True), ({0: "a", 1: "b", 2: None}, False)],
)
def test_topic_creation_uses_the_registered_racks(
    tmp_path: Path, racks: dict[int, str | None], spread: bool
) -> None:
    store = LocalMetadataStore(tmp_path / "racked")
    cluster = ClusterMetadata(store)
    cluster.ensure_top_level_paths()
    port = _refused_port()
    for broker_id, rack in racks.items():
        cluster.register_broker(broker_id, [Endpoint("PLAINTEXT", "127.0.0.1", port)], rack=rack)
    running = _start(cluster, 0)
    try:
        (result,) = running.shell.create_topics([TopicRequest("r", 6, 2)]).result(timeout=10)
        if spread:
            assert result.error_code is ErrorCode.NONE
            for replicas in cluster.assignment("r").values():
                assert {racks[b] for b in replicas} == {"a", "b"}
        else:
            assert result.error_code is ErrorCode.INVALID_REPLICATION_FACTOR
            assert "broker(s) [2] have no broker.rack" in (result.message or "")
            assert not cluster.topic_exists("r")
    finally:
        running.stop()
        store.close()
