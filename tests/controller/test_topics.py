"""ClusterMetadata over each MetadataStore (the ``store`` fixture: local and ZooKeeper): cluster
id, broker registrations, topics, topic configs and partition states in Kafka's layout; topic
name rules; replica assignment."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from tests.controller.test_store_contract import wait_for

from odradek._clock import MockClock
from odradek.controller.assignment import (
    assign_replicas,
    topic_names_collide,
    validate_assignment,
    validate_topic_name,
)
from odradek.controller.local import LocalMetadataStore
from odradek.controller.reassignment import ReplicaAssignment
from odradek.controller.store import MetadataStore
from odradek.controller.topics import (
    BrokerRegistration,
    ClusterMetadata,
    Endpoint,
    PartitionState,
    new_uuid_string,
)
from odradek.errors import (
    BadVersionError,
    CorruptMetadataError,
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    KafkaError,
    NodeExistsError,
    NoNodeError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
    error_for_code,
)

_UUID_TEXT = re.compile(r"[A-Za-z0-9_-]{22}")


@pytest.fixture
def clock() -> MockClock:
    return MockClock(now_ms=1_700_000_000_123)


@pytest.fixture
def metadata(store: MetadataStore, clock: MockClock) -> ClusterMetadata:
    return ClusterMetadata(store, clock=clock)


def node_json(store: MetadataStore, path: str) -> object:
    return json.loads(store.get(path)[0])


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (TopicAlreadyExistsError, ErrorCode.TOPIC_ALREADY_EXISTS),
        (InvalidPartitionsError, ErrorCode.INVALID_PARTITIONS),
        (InvalidReplicationFactorError, ErrorCode.INVALID_REPLICATION_FACTOR),
        (InvalidReplicaAssignmentError, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ],
)
def test_new_errors_carry_kafka_codes(error: type[KafkaError], code: ErrorCode) -> None:
    assert error("x").error_code is code
    assert type(error_for_code(code)) is error


# --- cluster id ------------------------------------------------------------------------------


def test_cluster_id_is_created_once_and_survives_restarts(tmp_path: Path) -> None:
    with LocalMetadataStore(tmp_path) as store:
        metadata = ClusterMetadata(store)
        assert metadata.cluster_id() is None
        cluster_id = metadata.get_or_create_cluster_id()
        assert _UUID_TEXT.fullmatch(cluster_id)
        assert metadata.get_or_create_cluster_id() == cluster_id
        assert node_json(store, "/cluster/id") == {"version": "1", "id": cluster_id}
    with LocalMetadataStore(tmp_path) as store:
        assert ClusterMetadata(store).get_or_create_cluster_id() == cluster_id


def test_uuid_strings() -> None:
    ids = {new_uuid_string() for _ in range(200)}
    assert len(ids) == 200
    assert all(_UUID_TEXT.fullmatch(text) and not text.startswith("-") for text in ids)


def test_corrupt_cluster_id_is_reported(store: MetadataStore) -> None:
    store.create("/cluster/id", b"{nope", make_parents=True)
    with pytest.raises(CorruptMetadataError, match="/cluster/id"):
        ClusterMetadata(store).get_or_create_cluster_id()


# --- brokers ---------------------------------------------------------------------------------


def test_broker_registration_layout(
    store: MetadataStore, metadata: ClusterMetadata, clock: MockClock
) -> None:
    registration = metadata.register_broker(0, [Endpoint("PLAINTEXT", "localhost", 9092)])
    assert registration.timestamp_ms == clock.now_ms()
    assert node_json(store, "/brokers/ids/0") == {
        "version": 5,
        "host": "localhost",
        "port": 9092,
        "endpoints": ["PLAINTEXT://localhost:9092"],
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "jmx_port": -1,
        "timestamp": "1700000000123",
        "features": {},
    }
    assert metadata.registered_brokers() == [registration]
    assert metadata.broker(0) == registration
    assert metadata.broker(1) is None


def test_registered_brokers_sorted_with_rack_and_ipv6(metadata: ClusterMetadata) -> None:
    assert metadata.registered_brokers() == []
    metadata.register_broker(10, [Endpoint("PLAINTEXT", "::1", 9094)], rack="r1")
    metadata.register_broker(2, [Endpoint("PLAINTEXT", "h2", 9093)])
    brokers = metadata.registered_brokers()
    assert [broker.broker_id for broker in brokers] == [2, 10]
    assert brokers[1].rack == "r1"
    assert brokers[1].host == "::1"
    assert brokers[1].port == 9094
    assert brokers[1].endpoint("PLAINTEXT") == Endpoint("PLAINTEXT", "::1", 9094)
    assert brokers[1].endpoint("EXTERNAL") is None
    assert brokers[0].rack is None


def test_registration_is_ephemeral(tmp_path: Path) -> None:
    with LocalMetadataStore(tmp_path) as store:
        ClusterMetadata(store).register_broker(0, [Endpoint("PLAINTEXT", "h", 1)])
    with LocalMetadataStore(tmp_path) as store:
        assert ClusterMetadata(store).registered_brokers() == []


def test_duplicate_broker_id_is_refused(metadata: ClusterMetadata) -> None:
    metadata.register_broker(0, [Endpoint("PLAINTEXT", "h", 1)])
    with pytest.raises(NodeExistsError, match="broker 0 is already registered"):
        metadata.register_broker(0, [Endpoint("PLAINTEXT", "other", 2)])


def test_broker_without_plaintext_endpoint() -> None:
    registration = BrokerRegistration(0, (Endpoint("INTERNAL", "h", 1, "SSL"),), 0)
    assert registration.host is None
    assert registration.port == -1


# --- topics ----------------------------------------------------------------------------------


def test_create_topic_round_trip(store: MetadataStore, metadata: ClusterMetadata) -> None:
    metadata.ensure_top_level_paths()
    assert metadata.topics() == []
    topic_id = metadata.create_topic(
        "orders", {0: [0], 1: [0], 2: [0]}, {"retention.ms": "1000", "cleanup.policy": "compact"}
    )
    assert metadata.topics() == ["orders"]
    assert metadata.topic_exists("orders")
    assert metadata.assignment("orders") == {0: [0], 1: [0], 2: [0]}
    assert metadata.topic_id("orders") == topic_id
    assert _UUID_TEXT.fullmatch(topic_id)
    assert metadata.topic_configs("orders") == {"retention.ms": "1000", "cleanup.policy": "compact"}
    assert node_json(store, "/brokers/topics/orders") == {
        "version": 3,
        "topic_id": topic_id,
        "partitions": {"0": [0], "1": [0], "2": [0]},
        "adding_replicas": {},
        "removing_replicas": {},
    }
    assert node_json(store, "/config/topics/orders") == {
        "version": 1,
        "config": {"retention.ms": "1000", "cleanup.policy": "compact"},
    }


def test_topics_survive_restart(tmp_path: Path) -> None:
    with LocalMetadataStore(tmp_path) as store:
        ClusterMetadata(store).create_topic("a", {0: [0]})
        ClusterMetadata(store).create_topic("b", {0: [0], 1: [0]})
    with LocalMetadataStore(tmp_path) as store:
        metadata = ClusterMetadata(store)
        assert metadata.topics() == ["a", "b"]
        assert metadata.assignment("b") == {0: [0], 1: [0]}
        assert metadata.topic_configs("a") == {}


def test_kafka_version_2_assignment_is_read(store: MetadataStore) -> None:
    document = {"version": 2, "partitions": {"1": [2, 1], "0": [1, 2]}, "adding_replicas": {}}
    store.create("/brokers/topics/old", json.dumps(document).encode(), make_parents=True)
    metadata = ClusterMetadata(store)
    assert metadata.assignment("old") == {0: [1, 2], 1: [2, 1]}
    assert list(metadata.assignment("old")) == [0, 1]
    assert metadata.topic_id("old") is None


def test_create_existing_topic(metadata: ClusterMetadata) -> None:
    metadata.create_topic("t", {0: [0]}, {"retention.ms": "1"})
    with pytest.raises(TopicAlreadyExistsError) as caught:
        metadata.create_topic("t", {0: [0]}, {"retention.ms": "2"})
    assert caught.value.error_code is ErrorCode.TOPIC_ALREADY_EXISTS
    assert metadata.topic_configs("t") == {"retention.ms": "1"}


@pytest.mark.parametrize(
    ("existing", "new"),
    [("my.topic", "my_topic"), ("my_topic", "my.topic"), ("a.b_c", "a_b.c")],
)
def test_dot_underscore_collision_is_invalid(
    metadata: ClusterMetadata, existing: str, new: str
) -> None:
    metadata.create_topic(existing, {0: [0]})
    with pytest.raises(InvalidTopicError, match="collides") as caught:
        metadata.create_topic(new, {0: [0]})
    assert caught.value.error_code is ErrorCode.INVALID_TOPIC_EXCEPTION
    assert metadata.topics() == [existing]


def test_create_topic_checks_the_assignment(metadata: ClusterMetadata) -> None:
    with pytest.raises(InvalidPartitionsError):
        metadata.create_topic("t", {})
    with pytest.raises(InvalidReplicaAssignmentError):
        metadata.create_topic("t", {1: [0]})
    with pytest.raises(InvalidTopicError):
        metadata.create_topic("bad/name", {0: [0]})
    assert metadata.topics() == []


def test_unknown_topic(metadata: ClusterMetadata) -> None:
    for call in (
        lambda: metadata.assignment("nope"),
        lambda: metadata.topic_id("nope"),
        lambda: metadata.topic_configs("nope"),
        lambda: metadata.set_topic_configs("nope", {}),
        lambda: metadata.add_partitions("nope", {0: [0]}),
        lambda: metadata.delete_topic("nope"),
        lambda: metadata.set_partition_state(
            "nope", 0, leader=0, leader_epoch=0, isr=[0], controller_epoch=1
        ),
    ):
        with pytest.raises(UnknownTopicOrPartitionError):
            call()
    assert not metadata.topic_exists("nope")


def test_add_partitions(metadata: ClusterMetadata) -> None:
    metadata.create_topic("t", {0: [0, 1], 1: [1, 0]})
    topic_id = metadata.topic_id("t")
    metadata.add_partitions("t", {2: [0, 1], 3: [1, 0]})
    assert metadata.assignment("t") == {0: [0, 1], 1: [1, 0], 2: [0, 1], 3: [1, 0]}
    assert metadata.topic_id("t") == topic_id


@pytest.mark.parametrize(
    ("new", "error"),
    [
        ({}, InvalidPartitionsError),
        ({1: [0]}, InvalidPartitionsError),  # not above the current count
        ({3: [0]}, InvalidPartitionsError),  # a gap
        ({2: [0], 4: [0]}, InvalidReplicaAssignmentError),
        ({2: [0, 1]}, InvalidReplicaAssignmentError),  # another replication factor
        ({2: []}, InvalidReplicaAssignmentError),
    ],
)
def test_add_partitions_errors(
    metadata: ClusterMetadata, new: dict[int, list[int]], error: type[Exception]
) -> None:
    metadata.create_topic("t", {0: [0], 1: [0]})
    with pytest.raises(error):
        metadata.add_partitions("t", new)
    assert metadata.assignment("t") == {0: [0], 1: [0]}


def test_delete_topic_removes_everything(store: MetadataStore, metadata: ClusterMetadata) -> None:
    metadata.create_topic("t", {0: [0], 1: [0]}, {"retention.ms": "5"})
    metadata.set_partition_state("t", 0, leader=0, leader_epoch=0, isr=[0], controller_epoch=1)
    metadata.create_topic("keep", {0: [0]})
    metadata.delete_topic("t")
    assert metadata.topics() == ["keep"]
    assert not store.exists("/brokers/topics/t")
    assert not store.exists("/config/topics/t")
    assert metadata.partition_state("t", 0) is None
    metadata.create_topic("t", {0: [0]})  # the name is free again, with no leftovers
    assert metadata.topic_configs("t") == {}


# --- topic configs ---------------------------------------------------------------------------


def test_set_topic_configs_replaces_them(metadata: ClusterMetadata) -> None:
    metadata.create_topic("t", {0: [0]}, {"retention.ms": "1", "segment.bytes": "2000"})
    metadata.set_topic_configs("t", {"cleanup.policy": "compact"})
    assert metadata.topic_configs("t") == {"cleanup.policy": "compact"}
    metadata.set_topic_configs("t", {})
    assert metadata.topic_configs("t") == {}


def test_config_watch_sees_changes(store: MetadataStore, metadata: ClusterMetadata) -> None:
    seen: list[dict[str, str]] = []
    metadata.create_topic("t", {0: [0]})
    store.watch_data("/config/topics/t", lambda path: seen.append(metadata.topic_configs("t")))
    metadata.set_topic_configs("t", {"retention.ms": "9"})
    wait_for(lambda: seen == [{"retention.ms": "9"}])


# --- partition states ------------------------------------------------------------------------


def test_partition_state_round_trip(store: MetadataStore, metadata: ClusterMetadata) -> None:
    metadata.create_topic("t", {0: [0], 1: [0]})
    assert metadata.partition_state("t", 0) is None
    written = metadata.set_partition_state(
        "t", 0, leader=0, leader_epoch=0, isr=[0], controller_epoch=1
    )
    assert written == PartitionState(
        leader=0, leader_epoch=0, isr=(0,), controller_epoch=1, zk_version=0
    )
    assert metadata.partition_state("t", 0) == written
    assert node_json(store, "/brokers/topics/t/partitions/0/state") == {
        "controller_epoch": 1,
        "leader": 0,
        "version": 1,
        "leader_epoch": 0,
        "isr": [0],
    }
    assert metadata.partition_state("t", 1) is None
    # The state lives under the topic node, but the assignment is unchanged.
    assert metadata.assignment("t") == {0: [0], 1: [0]}


def test_partition_state_compare_and_set(metadata: ClusterMetadata) -> None:
    metadata.create_topic("t", {0: [0, 1]})
    first = metadata.set_partition_state(
        "t", 0, leader=0, leader_epoch=0, isr=[0, 1], controller_epoch=1
    )
    shrunk = metadata.set_partition_state(
        "t",
        0,
        leader=0,
        leader_epoch=0,
        isr=[0],
        controller_epoch=1,
        expected_version=first.zk_version,
    )
    assert shrunk.zk_version == 1
    with pytest.raises(BadVersionError):
        metadata.set_partition_state(
            "t", 0, leader=1, leader_epoch=1, isr=[1], controller_epoch=1, expected_version=0
        )
    assert metadata.partition_state("t", 0) == shrunk


def test_conditional_write_of_a_missing_state(metadata: ClusterMetadata) -> None:
    metadata.create_topic("t", {0: [0]})
    with pytest.raises(NoNodeError):
        metadata.set_partition_state(
            "t", 0, leader=0, leader_epoch=0, isr=[0], controller_epoch=1, expected_version=0
        )


def test_partition_state_of_unknown_partition(metadata: ClusterMetadata) -> None:
    metadata.create_topic("t", {0: [0]})
    with pytest.raises(UnknownTopicOrPartitionError):
        metadata.set_partition_state("t", 5, leader=0, leader_epoch=0, isr=[0], controller_epoch=1)


# --- topic names -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["a", "orders", "__consumer_offsets", "my-topic_v1.2", "A" * 249, "...", "-", "_"],
)
def test_legal_topic_names(name: str) -> None:
    validate_topic_name(name)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "empty"),
        (".", "cannot be '.'"),
        ("..", "cannot be '..'"),
        ("A" * 250, "longer than 249"),
        ("has space", "character other than"),
        ("slash/topic", "character other than"),
        ("colon:topic", "character other than"),
        ("tést", "character other than"),
        ("tab\t", "character other than"),
    ],
)
def test_illegal_topic_names(name: str, message: str) -> None:
    with pytest.raises(InvalidTopicError, match=message) as caught:
        validate_topic_name(name)
    assert caught.value.error_code is ErrorCode.INVALID_TOPIC_EXCEPTION


def test_topic_name_collisions() -> None:
    assert topic_names_collide("a.b", "a_b")
    assert topic_names_collide("a.b", "a.b")
    assert not topic_names_collide("a.b", "a-b")


# --- replica assignment ----------------------------------------------------------------------


def test_single_broker_assignment() -> None:
    assert assign_replicas(3, 1, [0]) == {0: [0], 1: [0], 2: [0]}
    assert assign_replicas(2, 1, [7], start_index=0) == {0: [7], 1: [7]}


def test_round_robin_like_kafka() -> None:
    # Five brokers, ten partitions, three replicas, fixed start: leaders go round-robin and
    # the follower shift grows by one after each round of five partitions.
    assert assign_replicas(10, 3, [4, 3, 2, 1, 0], start_index=0) == {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }


def test_start_index_and_start_partition() -> None:
    assert assign_replicas(3, 1, [0, 1, 2], start_index=1) == {0: [1], 1: [2], 2: [0]}
    whole = assign_replicas(6, 2, [0, 1, 2], start_index=0)
    tail = assign_replicas(2, 2, [0, 1, 2], start_index=0, start_partition=4)
    assert tail == {4: whole[4], 5: whole[5]}


@pytest.mark.parametrize("seed", range(20))
def test_random_assignments_are_balanced_and_distinct(seed: int) -> None:
    brokers = [1, 2, 3, 4]
    assignment = assign_replicas(12, 3, brokers, rng=random.Random(seed))
    validate_assignment(assignment)
    assert sorted(assignment) == list(range(12))
    for replicas in assignment.values():
        assert len(set(replicas)) == 3
        assert set(replicas) <= set(brokers)
    leaders = [replicas[0] for replicas in assignment.values()]
    assert all(leaders.count(broker) == 3 for broker in brokers)


def test_assignment_errors() -> None:
    with pytest.raises(InvalidReplicationFactorError, match="larger than the 1 available"):
        assign_replicas(1, 3, [0])
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas(1, 0, [0])
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas(1, 1, [])
    with pytest.raises(InvalidPartitionsError):
        assign_replicas(0, 1, [0])


@pytest.mark.parametrize(
    ("assignment", "error"),
    [
        ({}, InvalidPartitionsError),
        ({0: [0], 2: [0]}, InvalidReplicaAssignmentError),
        ({0: []}, InvalidReplicaAssignmentError),
        ({0: [0, 0]}, InvalidReplicaAssignmentError),
        ({0: [0], 1: [0, 1]}, InvalidReplicaAssignmentError),
    ],
)
def test_validate_assignment(assignment: dict[int, list[int]], error: type[Exception]) -> None:
    with pytest.raises(error):
        validate_assignment(assignment)


def test_create_partition_states_writes_each_first_state(
    store: LocalMetadataStore, metadata: ClusterMetadata
) -> None:
    metadata.create_topic("t", {p: [0] for p in range(5)})
    metadata.set_partition_state("t", 4, leader=0, leader_epoch=3, isr=[0], controller_epoch=1)

    with store.batched():
        metadata.create_partition_states("t", [0, 1, 2, 4], leader=0, isr=[0], controller_epoch=2)

    for partition in (0, 1, 2, 4):
        state = metadata.partition_state("t", partition)
        assert state is not None
        assert (state.leader, state.leader_epoch, state.isr, state.controller_epoch) == (
            0,
            0,
            (0,),
            2,
        )
    assert metadata.partition_state("t", 3) is None
    with pytest.raises(UnknownTopicOrPartitionError, match=r"\[5\]"):
        metadata.create_partition_states("t", [5], leader=0, isr=[0], controller_epoch=1)


def test_remove_partitions_undoes_add_partitions(
    store: LocalMetadataStore, metadata: ClusterMetadata
) -> None:
    metadata.create_topic("t", {0: [0], 1: [0]})
    metadata.add_partitions("t", {2: [0], 3: [0]})
    metadata.create_partition_states("t", [0, 1, 2, 3], leader=0, isr=[0], controller_epoch=1)

    metadata.remove_partitions("t", 2)

    assert metadata.assignment("t") == {0: [0], 1: [0]}
    assert metadata.partition_state("t", 1) is not None
    assert not store.exists("/brokers/topics/t/partitions/2")
    assert not store.exists("/brokers/topics/t/partitions/3")
    metadata.remove_partitions("t", 2)  # nothing more to remove
    assert metadata.assignment("t") == {0: [0], 1: [0]}
    with pytest.raises(UnknownTopicOrPartitionError):
        metadata.remove_partitions("missing", 0)


# --- reassignment layout (KIP-455) ---------------------------------------------------------


def test_a_reassignment_is_stored_beside_the_partitions_as_kafka_does(
    metadata: ClusterMetadata, store: MetadataStore
) -> None:
    metadata.create_topic("moving", {0: [0, 1], 1: [1, 2]})
    assert metadata.replica_assignments("moving") == {
        0: ReplicaAssignment((0, 1)),
        1: ReplicaAssignment((1, 2)),
    }
    moving = ReplicaAssignment((3, 1, 0), adding=(3,), removing=(0,))
    store.multi([metadata.reassignment_op("moving", {0: moving})])
    document = node_json(store, "/brokers/topics/moving")
    assert isinstance(document, dict)
    assert document["partitions"] == {"0": [3, 1, 0], "1": [1, 2]}
    assert document["adding_replicas"] == {"0": [3]}
    assert document["removing_replicas"] == {"0": [0]}
    assert metadata.replica_assignments("moving")[0] == moving
    assert metadata.assignment("moving") == {0: [3, 1, 0], 1: [1, 2]}
    # Completion clears the maps.
    store.multi([metadata.reassignment_op("moving", {0: ReplicaAssignment((3, 1))})])
    document = node_json(store, "/brokers/topics/moving")
    assert isinstance(document, dict)
    assert (document["adding_replicas"], document["removing_replicas"]) == ({}, {})
    assert metadata.replica_assignments("moving")[0] == ReplicaAssignment((3, 1))


def test_a_reassignment_write_is_conditional_on_the_topic_node(
    metadata: ClusterMetadata, store: MetadataStore
) -> None:
    metadata.create_topic("raced", {0: [0]})
    op = metadata.reassignment_op("raced", {0: ReplicaAssignment((1, 0), (1,), (0,))})
    metadata.add_partitions("raced", {1: [0]})
    with pytest.raises(BadVersionError):
        store.multi([op])
    with pytest.raises(UnknownTopicOrPartitionError):
        metadata.reassignment_op("raced", {5: ReplicaAssignment((1,))})


def test_malformed_reassignment_maps_are_corrupt_metadata(
    metadata: ClusterMetadata, store: MetadataStore
) -> None:
    metadata.create_topic("bent", {0: [0]})
    data = json.dumps({"version": 3, "partitions": {"0": [0]}, "adding_replicas": {"0": "x"}})
    store.set("/brokers/topics/bent", data.encode())
    with pytest.raises(CorruptMetadataError, match="adding_replicas"):
        metadata.replica_assignments("bent")
