"""Partition reassignment (KIP-455) on one 3-broker cluster on a real ZooKeeper: through
kafka-python's admin client (AlterPartitionReassignments / ListPartitionReassignments), our
AdminClient, ``/admin/reassign_partitions`` and ``odradek reassign-partitions``; a new
controller resumes the reassignments in progress (that test kills the controller: it runs
last).

Followers replicate, so a reassignment onto live brokers completes within moments (that is
test_reassignment_completion.py's). To see one in progress, a test adds a phantom broker
as well: a registration the test makes (``phantom``), pointing at a closed port, which never
fetches and so never joins the ISR. A reassignment that only removes or reorders replicas
completes at once: replicas == target on every broker, the leader moved off a removed
replica, the removed replica's log deleted.
"""

from __future__ import annotations

import contextlib
import json
import socket
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests._blocking_connection import BlockingConnection

from odradek.cli.main import main
from odradek.client import AdminClient, NewTopic, TopicPartition
from odradek.client.admin_types import PartitionReassignment
from odradek.controller.topics import BROKER_IDS_PATH, ClusterMetadata, Endpoint
from odradek.errors import KafkaError
from odradek.protocol import ApiKey
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaProducer
    from kafka import TopicPartition as KafkaTopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import (
        InvalidReplicationAssignmentError,
        NoReassignmentInProgressError,
        UnknownTopicOrPartitionError,
    )

pytestmark = pytest.mark.cluster

WAIT_S = 60.0
#: Two racks: a partition of two replicas must have one on broker 2.
RACKS = {0: "east", 1: "east", 2: "west"}
PHANTOM = 5


@pytest.fixture(scope="module")
def cluster(
    zookeeper: ZooKeeperEnsemble, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    chroot = f"{zookeeper.connect_string}/r-{uuid.uuid4().hex[:12]}"
    brokers = Cluster(3, chroot, tmp_path_factory.mktemp("cluster"))
    for broker_id, rack in RACKS.items():
        brokers.brokers[broker_id].settings["broker.rack"] = rack
    with brokers as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


@contextlib.contextmanager
def _phantom(cluster: Cluster) -> Iterator[int]:
    """Broker 5: registered by the test at a closed port, so it never fetches and a replica
    added on it never joins the ISR; unregistered afterwards (topics created meanwhile
    could be placed on it). A client that picks it to connect to fails: clients that talk
    to the cluster meanwhile must already know their way (the controller)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ClusterMetadata(cluster.store).register_broker(
        PHANTOM, [Endpoint("PLAINTEXT", "127.0.0.1", port)], rack="west"
    )
    try:
        with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            cluster.wait_until(
                lambda: PHANTOM in {b.node_id for b in admin.describe_cluster().brokers},
                timeout_s=WAIT_S,
                what="the phantom broker in the cluster",
            )
        yield PHANTOM
    finally:
        cluster.store.delete(f"{BROKER_IDS_PATH}/{PHANTOM}")


@pytest.fixture
def phantom(cluster: Cluster) -> Iterator[int]:
    with _phantom(cluster) as broker_id:
        yield broker_id


def _create(cluster: Cluster, topic: str, assignment: dict[int, list[int]]) -> None:
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(topic, replica_assignment=assignment)]).all()
    # Every broker serves it before the test goes on.
    for broker_id in cluster.brokers:
        cluster.wait_until(
            lambda b=broker_id: set(_metadata(cluster, b, topic)) == set(assignment),
            timeout_s=WAIT_S,
            what=f"broker {broker_id} serving {topic}",
        )


def _topic_node(cluster: Cluster, topic: str) -> dict[str, Any]:
    document = json.loads(cluster.store.get(f"/brokers/topics/{topic}")[0])
    assert isinstance(document, dict)
    return document


def _state(cluster: Cluster, topic: str, partition: int) -> dict[str, Any]:
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    document = json.loads(cluster.store.get(path)[0])
    assert isinstance(document, dict)
    return document


def _metadata(cluster: Cluster, broker_id: int, topic: str) -> dict[int, tuple[int, list[int]]]:
    """partition → (leader, replicas) as broker ``broker_id`` itself answers Metadata."""
    with BlockingConnection(cluster.brokers[broker_id].address) as connection:
        body = connection.request(ApiKey.METADATA, 1, {"topics": [{"name": topic}]})
    (entry,) = body["topics"]
    return {
        int(p["partition_index"]): (int(p["leader_id"]), [int(r) for r in p["replica_nodes"]])
        for p in entry["partitions"]
        if not p["error_code"]
    }


def _everywhere(cluster: Cluster, condition: Callable[[int], bool], what: str) -> None:
    for broker_id in cluster.brokers:
        if cluster.brokers[broker_id].running:
            cluster.wait_until(
                lambda b=broker_id: condition(b), timeout_s=WAIT_S, what=f"{what} on {broker_id}"
            )


def _log_dir(cluster: Cluster, broker_id: int, topic: str, partition: int) -> Path:
    return cluster.brokers[broker_id].log_dir / f"{topic}-{partition}"


def _kafka_admin(cluster: Cluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="reassign-test")


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    status = main(list(args))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, captured.out.splitlines(), captured.err


def test_kafka_python_starts_lists_and_cancels_a_reassignment(cluster: Cluster) -> None:
    topic = "moving"
    _create(cluster, topic, {0: [0, 1], 1: [1, 2]})
    _everywhere(cluster, lambda b: _log_dir(cluster, b, topic, 0).is_dir() or b == 2, "logs")
    admin = _kafka_admin(cluster)
    # kafka-python finds the controller now, before the phantom could be picked to ask.
    assert admin.list_partition_reassignments() == {}
    with contextlib.ExitStack() as stack:
        phantom = stack.enter_context(_phantom(cluster))
        stack.callback(admin.close)
        tp0 = KafkaTopicPartition(topic, 0)
        results = admin.alter_partition_reassignments(
            {
                tp0: [1, 2, phantom],
                KafkaTopicPartition(topic, 7): [0, 1],
                KafkaTopicPartition(topic, 1): [1, 9],
            }
        )
        assert results == {
            tp0: None,
            KafkaTopicPartition(topic, 7): UnknownTopicOrPartitionError,
            KafkaTopicPartition(topic, 1): InvalidReplicationAssignmentError,
        }
        # In progress: RS = target + leaving originals, brokers 2 and the phantom being
        # added (the phantom never catches up), 0 removed.
        listed = admin.list_partition_reassignments()
        assert listed == {
            tp0: {
                "replicas": [1, 2, phantom, 0],
                "adding_replicas": [2, phantom],
                "removing_replicas": [0],
            }
        }
        node = _topic_node(cluster, topic)
        assert node["partitions"]["0"] == [1, 2, phantom, 0]
        assert (node["adding_replicas"], node["removing_replicas"]) == (
            {"0": [2, phantom]},
            {"0": [0]},
        )
        state = _state(cluster, topic, 0)
        assert (state["leader"], state["leader_epoch"]) == (0, 1)  # bumped for the new RS
        _everywhere(
            cluster, lambda b: _metadata(cluster, b, topic)[0] == (0, [1, 2, phantom, 0]), "RS"
        )
        # The new replica's log was created on broker 2 (a follower now).
        cluster.wait_until(
            lambda: _log_dir(cluster, 2, topic, 0).is_dir(), timeout_s=WAIT_S, what="log on 2"
        )
        with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as ours:
            assert ours.list_partition_reassignments([TopicPartition(topic, 0)]) == {
                TopicPartition(topic, 0): PartitionReassignment(
                    (1, 2, phantom, 0), (2, phantom), (0,)
                )
            }
            assert ours.list_partition_reassignments([TopicPartition(topic, 1)]) == {}

        # Cancel: back to brokers 0 and 1 (in RS's order, as Kafka: [1, 0]); broker 2's new
        # replica is stopped and its log deleted; broker 0 still leads.
        assert admin.alter_partition_reassignments({tp0: None}) == {tp0: None}
        assert admin.list_partition_reassignments() == {}
        node = _topic_node(cluster, topic)
        assert node["partitions"]["0"] == [1, 0]
        assert (node["adding_replicas"], node["removing_replicas"]) == ({}, {})
        _everywhere(cluster, lambda b: _metadata(cluster, b, topic)[0] == (0, [1, 0]), "OR")
        cluster.wait_until(
            lambda: not _log_dir(cluster, 2, topic, 0).exists(),
            timeout_s=WAIT_S,
            what="broker 2's log of moving-0 deleted",
        )
        assert _log_dir(cluster, 0, topic, 0).is_dir()
        assert admin.alter_partition_reassignments({tp0: None}) == {
            tp0: NoReassignmentInProgressError
        }


def test_a_removal_completes_at_once_and_deletes_the_removed_replica(cluster: Cluster) -> None:
    topic = "shrinking"
    _create(cluster, topic, {0: [1, 2], 1: [2, 0]})
    cluster.wait_until(
        lambda: _log_dir(cluster, 1, topic, 0).is_dir(), timeout_s=WAIT_S, what="log on 1"
    )
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        results = admin.alter_partition_reassignments(
            {TopicPartition(topic, 0): [2], TopicPartition(topic, 1): [0, 2]}
        )
        results.all()
        assert admin.list_partition_reassignments() == {}
    # Broker 1 led partition 0 and left it: broker 2 leads, alone, on every broker.
    _everywhere(cluster, lambda b: _metadata(cluster, b, topic)[0] == (2, [2]), "target 0")
    # A reorder keeps the leader (it is in the target): preferred replica 0, leader still 2.
    _everywhere(cluster, lambda b: _metadata(cluster, b, topic)[1] == (2, [0, 2]), "target 1")
    state = _state(cluster, topic, 0)
    assert (state["leader"], state["isr"]) == (2, [2])
    assert _topic_node(cluster, topic)["partitions"] == {"0": [2], "1": [0, 2]}
    cluster.wait_until(
        lambda: not _log_dir(cluster, 1, topic, 0).exists(),
        timeout_s=WAIT_S,
        what="broker 1's log of shrinking-0 deleted",
    )
    # The new leader takes writes.
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks=1)
    try:
        written = producer.send(topic, b"after", partition=0).get(timeout=30)
    finally:
        producer.close()
    assert written.partition == 0


def test_a_reassignment_written_to_zookeeper_is_taken_over(cluster: Cluster, phantom: int) -> None:
    topic = "zk-moved"
    _create(cluster, topic, {0: [0, 1], 1: [1, 0]})
    document = {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": 0, "replicas": [0, 2, phantom]},
            {"topic": topic, "partition": 1, "replicas": [0, 1]},
        ],
    }
    cluster.store.create("/admin/reassign_partitions", json.dumps(document).encode())
    cluster.wait_until(
        lambda: not cluster.store.exists("/admin/reassign_partitions"),
        timeout_s=WAIT_S,
        what="the controller to delete /admin/reassign_partitions",
    )
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        # Partition 0 adds broker 2 and the phantom (in progress); partition 1 was a
        # reorder (completed).
        assert admin.list_partition_reassignments() == {
            TopicPartition(topic, 0): PartitionReassignment((0, 2, phantom, 1), (2, phantom), (1,))
        }
        assert _topic_node(cluster, topic)["partitions"]["1"] == [0, 1]
        admin.alter_partition_reassignments({TopicPartition(topic, 0): None}).all()
    # A malformed node is dropped, not retried forever.
    cluster.store.create("/admin/reassign_partitions", b"{not json")
    cluster.wait_until(
        lambda: not cluster.store.exists("/admin/reassign_partitions"),
        timeout_s=WAIT_S,
        what="the malformed node deleted",
    )


def test_cli_generate_execute_verify_and_cancel(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path, phantom: int
) -> None:
    topic = "planned"
    _create(cluster, topic, {0: [0, 1], 1: [1, 2], 2: [2, 0], 3: [0, 2]})
    bootstrap = ("--bootstrap-server", cluster.brokers[1].address)
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    status, out, err = _cli(
        capsys, "reassign-partitions", *bootstrap, "--generate",
        "--topics-to-move-json-file", str(topics_file), "--broker-list", "0,1,2",
    )  # fmt: skip
    assert (status, err) == (0, "")
    assert out[0] == "Current partition replica assignment"
    assert out[3] == "Proposed partition reassignment configuration"
    current = {p["partition"]: p["replicas"] for p in json.loads(out[1])["partitions"]}
    assert current == {0: [0, 1], 1: [1, 2], 2: [2, 0], 3: [0, 2]}
    proposed = json.loads(out[4])
    assert {len(p["replicas"]) for p in proposed["partitions"]} == {2}
    assert len(proposed["partitions"]) == 4

    # A plan of our own, so that what completes is known: partition 0 reorders (completes),
    # 1 drops broker 2 for the phantom (in progress: the phantom never catches up), 2 keeps
    # its replicas.
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": topic, "partition": 0, "replicas": [1, 0]},
                    {"topic": topic, "partition": 1, "replicas": [1, phantom]},
                    {"topic": topic, "partition": 2, "replicas": [2, 0]},
                ],
            }
        )
    )
    status, out, err = _cli(
        capsys,
        "reassign-partitions",
        *bootstrap,
        "--execute",
        "--reassignment-json-file",
        str(plan),
    )
    assert (status, err) == (0, "")
    assert out[:2] == ["Current partition replica assignment", ""]
    rollback = json.loads(out[2])
    assert [(p["partition"], p["replicas"]) for p in rollback["partitions"]] == [
        (0, [0, 1]),
        (1, [1, 2]),
        (2, [2, 0]),
    ]
    assert out[3:] == [
        "",
        "Save this to use as the --reassignment-json-file option during rollback",
        f"Successfully started partition reassignments for {topic}-0,{topic}-1,{topic}-2",
    ]

    status, out, err = _cli(
        capsys, "reassign-partitions", *bootstrap, "--verify", "--reassignment-json-file", str(plan)
    )
    assert (status, err) == (0, "")
    assert out == [
        "Status of partition reassignment:",
        f"Reassignment of partition {topic}-0 is completed.",
        f"Reassignment of partition {topic}-1 is still in progress.",
        f"Reassignment of partition {topic}-2 is completed.",
    ]
    _everywhere(cluster, lambda b: _metadata(cluster, b, topic)[0][1] == [1, 0], "reordered")

    # Another execute while one runs needs --additional.
    status, out, err = _cli(
        capsys,
        "reassign-partitions",
        *bootstrap,
        "--execute",
        "--reassignment-json-file",
        str(plan),
    )
    assert status == 2
    assert out == []
    assert err.count("\n") == 1
    assert "use --additional" in err

    status, out, err = _cli(
        capsys, "reassign-partitions", *bootstrap, "--cancel", "--reassignment-json-file", str(plan)
    )
    assert (status, err) == (0, "")
    assert out == [f"Successfully cancelled partition reassignment for: {topic}-1"]
    status, out, err = _cli(
        capsys, "reassign-partitions", *bootstrap, "--verify", "--reassignment-json-file", str(plan)
    )
    assert out[2] == (
        f"There is no active reassignment of partition {topic}-1, but replica set is [1,2] "
        f"rather than [1,{phantom}]."
    )
    status, out, err = _cli(
        capsys, "reassign-partitions", *bootstrap, "--cancel", "--reassignment-json-file", str(plan)
    )
    assert out == ["None of the specified partition reassignments are active."]


def test_cli_mistakes_are_one_line(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bootstrap = ("--bootstrap-server", cluster.brokers[0].address)
    _create(cluster, "mistaken", {0: [0, 1]})
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"version": 1, "topics": [{"topic": "no-such-topic"}]}))
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"partitions": [{"topic": "mistaken", "partition": 0, "replicas": [1, 7]}]})
    )
    cases = [
        (["--generate", "--topics-to-move-json-file", str(topics_file), "--broker-list", "0,1"],
         2, "do not exist"),
        (["--generate", "--topics-to-move-json-file", str(topics_file), "--broker-list", "0,5"],
         2, "[5] are not in the cluster"),
        (["--execute", "--additional", "--reassignment-json-file", str(plan)],
         1, "1 partition reassignment"),
    ]  # fmt: skip
    for args, expected, fragment in cases:
        status, _out, err = _cli(capsys, "reassign-partitions", *bootstrap, *args)
        assert status == expected, args
        assert fragment in err, (args, err)
        assert err.startswith(("odradek: ", "Error reassigning")), err
    # The refused partition's own line names its error.
    status, _out, err = _cli(
        capsys,
        "reassign-partitions",
        *bootstrap,
        "--execute",
        "--additional",
        "--reassignment-json-file",
        str(plan),
    )
    assert status == 1
    assert err.splitlines()[0].startswith(
        "Error reassigning partition mistaken-0: INVALID_REPLICA_ASSIGNMENT: broker(s) [7]"
    )


def test_topics_and_generated_plans_span_racks(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    topic = "racked"
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(topic, 6, 2)]).all()
    assignment = {int(p): r for p, r in _topic_node(cluster, topic)["partitions"].items()}
    assert len(assignment) == 6
    for replicas in assignment.values():
        assert {RACKS[b] for b in replicas} == {"east", "west"}
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    generate = [
        "reassign-partitions", "--bootstrap-server", cluster.brokers[0].address, "--generate",
        "--topics-to-move-json-file", str(topics_file), "--broker-list", "0,1,2",
    ]  # fmt: skip
    status, out, err = _cli(capsys, *generate)
    assert (status, err) == (0, "")
    for entry in json.loads(out[4])["partitions"]:
        assert {RACKS[b] for b in entry["replicas"]} == {"east", "west"}
    # Only one rack among the brokers listed: a plan within it is still possible...
    status, out, err = _cli(capsys, *generate[:-1], "0,1")
    assert (status, err) == (0, "")
    assert {b for e in json.loads(out[4])["partitions"] for b in e["replicas"]} == {0, 1}


def test_a_broker_that_is_not_the_controller_forwards_both_requests(
    cluster: Cluster, phantom: int
) -> None:
    topic = "forwarded"
    _create(cluster, topic, {0: [0, 1]})
    controller = cluster.controller_id()
    others = [b for b in cluster.brokers if b != controller]
    alter = {
        "timeout": 30_000,
        "allow_replication_factor_change": False,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    # The phantom never catches up: the reassignment stays in progress
                    # until it is cancelled (broker 2 alone could finish it at any time).
                    {"partition_index": 0, "replicas": [2, phantom]},
                    {"partition_index": 3, "replicas": [2, 1]},
                ],
            }
        ],
    }
    with BlockingConnection(cluster.brokers[others[0]].address) as connection:
        body = connection.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1, alter)
    assert body["error_code"] == 0
    (answer,) = body["responses"]
    assert [(p["partition_index"], p["error_code"]) for p in answer["partitions"]] == [
        (0, 0),
        (3, 3),  # UNKNOWN_TOPIC_OR_PARTITION
    ]
    listing = {"timeout": 30_000, "topics": [{"name": topic, "partition_indexes": [0, 1]}]}
    with BlockingConnection(cluster.brokers[others[1]].address) as connection:
        body = connection.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, listing)
    assert body["error_code"] == 0
    assert body["topics"] == [
        {
            "name": topic,
            "partitions": [
                {
                    "partition_index": 0,
                    "replicas": [2, phantom, 0, 1],
                    "adding_replicas": [2, phantom],
                    "removing_replicas": [0, 1],
                }
            ],
        }
    ]
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.alter_partition_reassignments({TopicPartition(topic, 0): None}).all()


def test_a_new_controller_resumes_a_reassignment_in_progress(
    cluster: Cluster, phantom: int
) -> None:
    topic = "resumed"
    controller = cluster.controller_id()
    assert controller is not None
    others = sorted(b for b in cluster.brokers if b != controller)
    _create(cluster, topic, {0: [others[0]]})
    tp = TopicPartition(topic, 0)
    with AdminClient({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.alter_partition_reassignments({tp: [others[1], phantom]}).all()
    cluster.kill(controller)
    cluster.wait_until(
        lambda: cluster.controller_id() not in (None, controller),
        timeout_s=WAIT_S,
        what="a new controller",
    )
    bootstrap = ",".join(cluster.brokers[b].address for b in others)
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        expected = {
            tp: PartitionReassignment(
                (others[1], phantom, others[0]), (others[1], phantom), (others[0],)
            )
        }

        def listed() -> bool:
            try:
                return admin.list_partition_reassignments(timeout_ms=5_000) == expected
            except KafkaError:
                return False

        cluster.wait_until(listed, timeout_s=WAIT_S, what="the reassignment listed again")
        # The new controller can cancel it: it holds the original replicas too.
        admin.alter_partition_reassignments({tp: None}).all()
        assert admin.list_partition_reassignments() == {}
    assert _topic_node(cluster, topic)["partitions"]["0"] == [others[0]]
