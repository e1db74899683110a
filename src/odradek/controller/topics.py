"""``ClusterMetadata``: Kafka's ZooKeeper layout, read and written through any ``MetadataStore``.

This is odradek's counterpart of Kafka's ``KafkaZkClient`` + ``AdminZkClient``: it owns the
reads and writes of the layout's nodes — cluster id, broker registrations, topics and their
assignments (with KIP-455 reassignment maps), topic configs, partition states, and the
ZooKeeper-mode tools' admin requests. The paths and each node's JSON are
``controller.layout``'s (pure); the rules for topic names and replica assignments are
``controller.assignment``'s. It holds no state of its own besides the store, so several
instances may share one.

Why two modules: the layout is a wire format that the controller's fenced ``multi`` writes,
the tools and the tests need without a store, while this facade is about the store's rules
— which node is written first so that a reader never sees half a topic, compare-and-set
retries, what a missing node means.

The layout's values and codecs that importers found here before the split (``Endpoint``,
``BrokerRegistration``, ``PartitionState``, the paths, ``encode_partition_state`` ...) are
named here too (``__all__``); new code imports them from ``controller.layout``.

Thread safety: as safe as the store; read-modify-write updates use the node version
(compare-and-set) and retry.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.controller.assignment import (
    topic_names_collide,
    validate_assignment,
    validate_topic_name,
)
from odradek.controller.layout import (
    BROKER_CONFIGS_PATH,
    BROKER_IDS_PATH,
    CLUSTER_ID_PATH,
    DELETE_TOPICS_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
    PREFERRED_REPLICA_ELECTION_PATH,
    REASSIGN_PARTITIONS_PATH,
    TOP_LEVEL_PATHS,
    TOPIC_CONFIGS_PATH,
    TOPICS_PATH,
    BrokerRegistration,
    Endpoint,
    PartitionState,
    assignment_document,
    broker_document,
    broker_path,
    decode_cluster_id,
    decode_object,
    decode_partition_state,
    decode_preferred_replica_election,
    encode_cluster_id,
    encode_json,
    encode_partition_state,
    encode_preferred_replica_election,
    encode_topic_configs,
    new_uuid_string,
    parse_broker,
    parse_partitions,
    parse_replica_map,
    partition_path,
    partition_state_path,
    partitions_json,
    topic_config_path,
    topic_path,
    unknown_topic,
)
from odradek.controller.reassignment import ReplicaAssignment
from odradek.controller.store import MetadataStore, SetOp, join_path
from odradek.errors import (
    BadVersionError,
    CorruptMetadataError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidTopicError,
    NodeExistsError,
    NoNodeError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)

__all__ = [
    "BROKER_CONFIGS_PATH",
    "BROKER_IDS_PATH",
    "CLUSTER_ID_PATH",
    "DELETE_TOPICS_PATH",
    "ISR_CHANGE_NOTIFICATION_PATH",
    "PREFERRED_REPLICA_ELECTION_PATH",
    "REASSIGN_PARTITIONS_PATH",
    "TOPICS_PATH",
    "TOPIC_CONFIGS_PATH",
    "TOP_LEVEL_PATHS",
    "BrokerRegistration",
    "ClusterMetadata",
    "Endpoint",
    "PartitionState",
    "decode_preferred_replica_election",
    "encode_partition_state",
    "encode_preferred_replica_election",
    "new_uuid_string",
    "partition_state_path",
]

logger = logging.getLogger(__name__)

_CAS_ATTEMPTS = 100


class ClusterMetadata:
    """Kafka's metadata layout over a ``MetadataStore`` (see the module docstring).

    Args:
        store: where the metadata lives.
        clock: the broker registration timestamp source.

    Errors from the store (``MetadataStoreError``) pass through unless a method says otherwise.
    """

    def __init__(self, store: MetadataStore, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.store = store
        self._clock = clock

    def ensure_top_level_paths(self) -> None:
        """Creates the ``TOP_LEVEL_PATHS`` that are missing (one file write locally)."""
        with self.store.batched():
            for path in TOP_LEVEL_PATHS:
                if not self.store.exists(path):
                    with contextlib.suppress(NodeExistsError):  # created meanwhile
                        self.store.create(path, make_parents=True)

    # --- cluster id ------------------------------------------------------------------------

    def get_or_create_cluster_id(self) -> str:
        """The cluster id, generated (``new_uuid_string``) and stored on first call."""
        try:
            return self._read_cluster_id()
        except NoNodeError:
            pass
        cluster_id = new_uuid_string()
        try:
            self.store.create(CLUSTER_ID_PATH, encode_cluster_id(cluster_id), make_parents=True)
        except NodeExistsError:
            return self._read_cluster_id()  # another broker won the race
        logger.info("created cluster id %s", cluster_id)
        return cluster_id

    def cluster_id(self) -> str | None:
        """The stored cluster id, or ``None`` before ``get_or_create_cluster_id``."""
        try:
            return self._read_cluster_id()
        except NoNodeError:
            return None

    def _read_cluster_id(self) -> str:
        return decode_cluster_id(self._read_json(CLUSTER_ID_PATH)[0])

    # --- brokers ---------------------------------------------------------------------------

    def register_broker(
        self,
        broker_id: int,
        endpoints: Sequence[Endpoint],
        *,
        rack: str | None = None,
    ) -> BrokerRegistration:
        """Creates this broker's ephemeral ``/brokers/ids/<broker_id>``.

        Raises:
            NodeExistsError: a broker with this id is registered (another live session).
        """
        registration = BrokerRegistration(
            broker_id=broker_id,
            endpoints=tuple(endpoints),
            timestamp_ms=self._clock.now_ms(),
            rack=rack,
        )
        document = broker_document(registration)
        path = broker_path(broker_id)
        try:
            self.store.create(path, encode_json(document), ephemeral=True, make_parents=True)
        except NodeExistsError:
            raise NodeExistsError(
                f"broker {broker_id} is already registered at {path} by another session"
            ) from None
        logger.info("registered broker %d: %s", broker_id, document["endpoints"])
        return registration

    def registered_brokers(self) -> list[BrokerRegistration]:
        """The live brokers, by id."""
        try:
            names = self.store.children(BROKER_IDS_PATH)
        except NoNodeError:
            return []
        brokers = []
        for name in names:
            registration = self.broker(int(name))
            if registration is not None:  # it may have gone since children() answered
                brokers.append(registration)
        return sorted(brokers, key=lambda registration: registration.broker_id)

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        """The registration of ``broker_id``, or ``None`` if it is not live."""
        path = broker_path(broker_id)
        try:
            document = self._read_json(path)[0]
        except NoNodeError:
            return None
        return parse_broker(path, broker_id, document)

    # --- topics ----------------------------------------------------------------------------

    def topics(self) -> list[str]:
        """Every topic name, sorted."""
        try:
            return self.store.children(TOPICS_PATH)
        except NoNodeError:
            return []

    def topic_exists(self, topic: str) -> bool:
        """Whether ``topic`` exists.

        Raises:
            InvalidTopicError: an illegal name (as does every method taking a topic name: a
                name is checked before it becomes part of a path).
        """
        return self.store.exists(topic_path(topic))

    def create_topic(
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int]],
        configs: Mapping[str, str] | None = None,
    ) -> str:
        """Creates a topic: its config node first, then its assignment (as Kafka does, so that
        whoever sees the topic finds its config). Partition states are the controller's job.

        ``configs`` are stored as given: the caller validates them (``LogConfig``).

        Returns:
            the new topic's id.

        Raises:
            InvalidTopicError: an illegal name, or one that collides with an existing topic's
                once ``.`` and ``_`` are treated alike.
            TopicAlreadyExistsError: the topic exists.
            InvalidPartitionsError, InvalidReplicaAssignmentError: a malformed assignment.
        """
        validate_topic_name(topic)
        validate_assignment(assignment)
        if self.topic_exists(topic):
            raise TopicAlreadyExistsError(f"topic {topic!r} already exists")
        if "." in topic or "_" in topic:
            collisions = [name for name in self.topics() if topic_names_collide(name, topic)]
            if collisions:
                raise InvalidTopicError(
                    f"topic {topic!r} collides with existing topic(s) {collisions}: "
                    "'.' and '_' are the same in metric names"
                )
        self._write_topic_configs(topic, configs or {})
        topic_id = new_uuid_string()
        document = assignment_document(topic_id, assignment)
        try:
            self.store.create(topic_path(topic), encode_json(document), make_parents=True)
        except NodeExistsError:
            raise TopicAlreadyExistsError(f"topic {topic!r} already exists") from None
        logger.info("created topic %s (id %s) with %d partitions", topic, topic_id, len(assignment))
        return topic_id

    def assignment(self, topic: str) -> dict[int, list[int]]:
        """partition → replicas of ``topic``.

        Raises:
            UnknownTopicOrPartitionError: no such topic.
        """
        return parse_partitions(self._read_topic(topic)[0], topic)

    def topic_id(self, topic: str) -> str | None:
        """The topic's id (``None`` for a topic written without one, by Kafka < 2.8).

        Raises:
            UnknownTopicOrPartitionError: no such topic.
        """
        topic_id = self._read_topic(topic)[0].get("topic_id")
        return topic_id if isinstance(topic_id, str) else None

    def replica_assignments(self, topic: str) -> dict[int, ReplicaAssignment]:
        """partition → replica set of ``topic``, with the replicas being added and removed
        by a reassignment in progress (KIP-455).

        Raises:
            UnknownTopicOrPartitionError: no such topic.
            CorruptMetadataError: malformed ``adding_replicas`` / ``removing_replicas``.
        """
        document = self._read_topic(topic)[0]
        partitions = parse_partitions(document, topic)
        adding = parse_replica_map(document, "adding_replicas", topic)
        removing = parse_replica_map(document, "removing_replicas", topic)
        return {
            index: ReplicaAssignment(
                tuple(replicas),
                tuple(adding.get(index, ())),
                tuple(removing.get(index, ())),
            )
            for index, replicas in partitions.items()
        }

    def reassignment_op(self, topic: str, changes: Mapping[int, ReplicaAssignment]) -> SetOp:
        """The write that gives ``changes``' partitions of ``topic`` their replica sets and
        reassignment maps (others kept), conditional on the topic node's current version: for
        the controller's fenced ``multi``.

        Raises:
            UnknownTopicOrPartitionError: no such topic, or a partition it does not have.
        """
        document, version = self._read_topic(topic)
        partitions = parse_partitions(document, topic)
        unknown = sorted(set(changes) - set(partitions))
        if unknown:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} has no partition(s) {unknown}")
        adding = parse_replica_map(document, "adding_replicas", topic)
        removing = parse_replica_map(document, "removing_replicas", topic)
        for index, change in changes.items():
            partitions[index] = list(change.replicas)
            for entries, replicas in ((adding, change.adding), (removing, change.removing)):
                if replicas:
                    entries[index] = list(replicas)
                else:
                    entries.pop(index, None)
        document = dict(
            document,
            partitions=partitions_json(partitions),
            adding_replicas=partitions_json(adding),
            removing_replicas=partitions_json(removing),
        )
        return SetOp(topic_path(topic), encode_json(document), version)

    def add_partitions(self, topic: str, new_assignment: Mapping[int, Sequence[int]]) -> None:
        """Adds partitions to ``topic``; ``new_assignment`` holds the new partitions only,
        numbered from the current partition count on.

        Raises:
            UnknownTopicOrPartitionError: no such topic.
            InvalidPartitionsError: ``new_assignment`` is empty or does not start at the
                current partition count.
            InvalidReplicaAssignmentError: a malformed assignment, or a replication factor
                different from the topic's.
        """
        for _ in range(_CAS_ATTEMPTS):
            document, version = self._read_topic(topic)
            current = parse_partitions(document, topic)
            if not new_assignment:
                raise InvalidPartitionsError(f"no partitions to add to topic {topic!r}")
            if min(new_assignment) != len(current):
                raise InvalidPartitionsError(
                    f"topic {topic!r} has {len(current)} partitions: new partitions must be "
                    f"numbered from {len(current)}, got {sorted(new_assignment)}"
                )
            validate_assignment(new_assignment, first_partition=len(current))
            merged = {**current, **{p: list(r) for p, r in new_assignment.items()}}
            if len({len(replicas) for replicas in merged.values()}) > 1:
                raise InvalidReplicaAssignmentError(
                    f"new partitions of topic {topic!r} must keep its replication factor "
                    f"{len(current[0])}"
                )
            document = dict(document, partitions=partitions_json(merged))
            try:
                self.store.set(topic_path(topic), encode_json(document), version)
            except BadVersionError:
                continue
            except NoNodeError:
                raise unknown_topic(topic) from None
            logger.info("topic %s now has %d partitions", topic, len(merged))
            return
        raise BadVersionError(f"topic {topic!r} kept changing while adding partitions")

    def delete_topic(self, topic: str) -> None:
        """Removes the topic, its partition states and its config at once.

        (Kafka marks ``/admin/delete_topics/<t>`` and lets the controller delete; the broker
        checks ``delete.topic.enable`` before calling this.)

        Raises:
            UnknownTopicOrPartitionError: no such topic.
        """
        try:
            self.store.delete(topic_path(topic), recursive=True)
        except NoNodeError:
            raise unknown_topic(topic) from None
        with contextlib.suppress(NoNodeError):
            self.store.delete(topic_config_path(topic), recursive=True)
        logger.info("deleted topic %s", topic)

    # --- admin requests (the ZooKeeper-mode tools' nodes) ------------------------------------

    def request_topic_deletion(self, topic: str) -> None:
        """Creates ``/admin/delete_topics/<topic>``, as ``kafka-topics.sh --delete
        --zookeeper`` does; the controller deletes the topic and then the node.

        Raises:
            InvalidTopicError: an illegal name.
            NodeExistsError: its deletion is requested already.
        """
        validate_topic_name(topic)
        self.store.create(join_path(DELETE_TOPICS_PATH, topic), make_parents=True)

    def request_preferred_replica_election(self, partitions: Sequence[TopicPartition]) -> None:
        """Creates ``/admin/preferred_replica_election`` for ``partitions``, as
        ``kafka-preferred-replica-election.sh --zookeeper`` does.

        Raises:
            NodeExistsError: an election requested earlier is still under way.
        """
        self.store.create(
            PREFERRED_REPLICA_ELECTION_PATH,
            encode_preferred_replica_election(partitions),
            make_parents=True,
        )

    # --- topic configs ---------------------------------------------------------------------

    def topic_configs(self, topic: str) -> dict[str, str]:
        """The topic's config overrides (only those set, not the defaults).

        Raises:
            UnknownTopicOrPartitionError: no such topic.
        """
        if not self.topic_exists(topic):
            raise unknown_topic(topic)
        try:
            document = self._read_json(topic_config_path(topic))[0]
        except NoNodeError:
            return {}
        config = document.get("config", {})
        if not isinstance(config, dict):
            raise CorruptMetadataError(f"{topic_config_path(topic)} has a non-object 'config'")
        return {str(name): str(value) for name, value in config.items()}

    def watch_topic_config(self, topic: str, callback: Callable[[str], object]) -> None:
        """Calls ``callback(topic)`` after each creation, change or deletion of the topic's
        config node (``/config/topics/<topic>``), on the store's thread, for as long as this
        session lasts. Brokers use it to apply a config another broker altered."""

        def changed(_path: str) -> None:
            callback(topic)

        self.store.watch_data(topic_config_path(topic), changed)

    def set_topic_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        """Replaces the topic's config overrides with ``configs`` (stored as given).

        Raises:
            UnknownTopicOrPartitionError: no such topic.
        """
        if not self.topic_exists(topic):
            raise unknown_topic(topic)
        self._write_topic_configs(topic, configs)

    def _write_topic_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        data = encode_topic_configs(configs)
        path = topic_config_path(topic)
        try:
            self.store.set(path, data)
        except NoNodeError:
            self.store.create(path, data, make_parents=True)

    # --- partition states ------------------------------------------------------------------

    def set_partition_state(
        self,
        topic: str,
        partition: int,
        *,
        leader: int,
        leader_epoch: int,
        isr: Sequence[int],
        controller_epoch: int,
        expected_version: int = -1,
    ) -> PartitionState:
        """Writes a partition's leader and ISR.

        Args:
            expected_version: the ``zk_version`` the state must still have (compare-and-set),
                or -1 to write unconditionally, creating the node if missing.

        Returns:
            the state written, with its new ``zk_version``.

        Raises:
            UnknownTopicOrPartitionError: no such topic or partition.
            BadVersionError: the state changed since ``expected_version``.
            NoNodeError: ``expected_version`` ≥ 0 but the state does not exist.
        """
        if partition not in self.assignment(topic):
            raise UnknownTopicOrPartitionError(f"topic {topic!r} has no partition {partition}")
        path = partition_state_path(topic, partition)
        data = encode_partition_state(leader, leader_epoch, isr, controller_epoch)
        try:
            zk_version = self.store.set(path, data, expected_version)
        except NoNodeError:
            if expected_version != -1:
                raise
            self.store.create(path, data, make_parents=True)
            zk_version = 0
        return PartitionState(leader, leader_epoch, tuple(isr), controller_epoch, zk_version)

    def create_partition_states(
        self,
        topic: str,
        partitions: Sequence[int],
        *,
        leader: int,
        isr: Sequence[int],
        controller_epoch: int,
    ) -> None:
        """Writes the first state (leader epoch 0) of many partitions of one topic, reading
        the topic's assignment once (``set_partition_state`` reads it per partition, which
        makes a topic of N partitions cost N² to set up). Wrap the call in the store's
        ``batched`` to persist them in one write.

        Raises:
            UnknownTopicOrPartitionError: no such topic, or a partition it does not have.
        """
        assigned = self.assignment(topic)
        missing = sorted(set(partitions) - assigned.keys())
        if missing:
            raise UnknownTopicOrPartitionError(
                f"topic {topic!r} has no partition(s) {missing[:10]}"
            )
        data = encode_partition_state(leader, 0, isr, controller_epoch)
        for partition in partitions:
            path = partition_state_path(topic, partition)
            try:
                self.store.set(path, data)
            except NoNodeError:
                self.store.create(path, data, make_parents=True)

    def remove_partitions(self, topic: str, keep: int) -> None:
        """Shrinks ``topic`` back to its first ``keep`` partitions, with their states (undoes
        an ``add_partitions`` whose logs could not be created; Kafka never shrinks a topic
        otherwise).

        Raises:
            UnknownTopicOrPartitionError: no such topic.
        """
        for _ in range(_CAS_ATTEMPTS):
            document, version = self._read_topic(topic)
            current = parse_partitions(document, topic)
            kept = {p: r for p, r in current.items() if p < keep}
            if len(kept) == len(current):
                return
            document = dict(document, partitions=partitions_json(kept))
            try:
                self.store.set(topic_path(topic), encode_json(document), version)
            except BadVersionError:
                continue
            except NoNodeError:
                raise unknown_topic(topic) from None
            for partition in sorted(set(current) - set(kept)):
                with contextlib.suppress(NoNodeError):
                    self.store.delete(partition_path(topic, partition), recursive=True)
            logger.info("topic %s is back to %d partitions", topic, len(kept))
            return
        raise BadVersionError(f"topic {topic!r} kept changing while removing partitions")

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        """The partition's leader and ISR, or ``None`` if none was written (no leader elected
        yet, or no such partition)."""
        path = partition_state_path(topic, partition)
        try:
            document, version = self._read_json(path)
        except NoNodeError:
            return None
        return decode_partition_state(path, document, version)

    # --- helpers ---------------------------------------------------------------------------

    def _read_topic(self, topic: str) -> tuple[dict[str, Any], int]:
        try:
            return self._read_json(topic_path(topic))
        except NoNodeError:
            raise unknown_topic(topic) from None

    def _read_json(self, path: str) -> tuple[dict[str, Any], int]:
        data, version = self.store.get(path)
        return decode_object(path, data), version
