"""``ClusterMetadata``: Kafka's ZooKeeper layout, read and written through any ``MetadataStore``.

This is odradek's counterpart of Kafka's ``KafkaZkClient`` + ``AdminZkClient``: it owns the
paths and the JSON of each node (the rules for topic names and replica assignments are
``controller.assignment``'s). It holds no state of its own besides the store, so several
instances may share one.

Layout (JSON is compact UTF-8; the broker and the tools of later issues rely on it)::

    /cluster/id                              {"version":"1","id":"<22-char base64 UUID>"}
    /brokers/ids/<id>           (ephemeral)  {"version":5,"host":..,"port":..,"endpoints":[..],
                                              "listener_security_protocol_map":{..},
                                              "jmx_port":-1,"timestamp":"<ms>","features":{}}
    /brokers/topics/<t>                      {"version":3,"topic_id":"<22-char base64 UUID>",
                                              "partitions":{"0":[0],..},
                                              "adding_replicas":{},"removing_replicas":{}}
    /brokers/topics/<t>/partitions/<p>/state {"controller_epoch":1,"leader":0,"version":1,
                                              "leader_epoch":0,"isr":[0]}
    /config/topics/<t>                       {"version":1,"config":{"retention.ms":"1000"}}
    /config/brokers/<id>                     (same form; created by later issues)
    /admin/delete_topics/<t>                 (empty; the controller's deletion queue, later)
    /admin/reassign_partitions               {"version":1,"partitions":[{"topic":..,
                                              "partition":..,"replicas":[..]}]} (written by
                                              tools; the controller starts the reassignments
                                              and deletes the node)
    /isr_change_notification                 (ISR change notifications, later)
    /controller                 (ephemeral)  {"version":1,"brokerid":0,"timestamp":"<ms>"}
    /controller_epoch                        "1" (see ``controller.election``)

Topic assignments are written as Kafka 2.8+ does (version 3, with a ``topic_id``, KIP-516);
versions 1 and 2, without one, are read too. While a partition is reassigned (KIP-455) its
``partitions`` entry is the whole replica set and ``adding_replicas`` / ``removing_replicas``
name the replicas coming and going (``replica_assignments``, ``reassignment_op``).

Thread safety: as safe as the store; read-modify-write updates use the node version
(compare-and-set) and retry.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek.controller.assignment import (
    topic_names_collide,
    validate_assignment,
    validate_topic_name,
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

logger = logging.getLogger(__name__)

CLUSTER_ID_PATH = "/cluster/id"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
TOPIC_CONFIGS_PATH = "/config/topics"
BROKER_CONFIGS_PATH = "/config/brokers"
DELETE_TOPICS_PATH = "/admin/delete_topics"
REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"

#: Persistent paths Kafka creates at startup (``KafkaZkClient.createTopLevelPaths``'s subset
#: that odradek uses or will use: the controller's deletion queue and ISR notifications).
TOP_LEVEL_PATHS = (
    BROKER_IDS_PATH,
    TOPICS_PATH,
    TOPIC_CONFIGS_PATH,
    BROKER_CONFIGS_PATH,
    DELETE_TOPICS_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
)

_BROKER_REGISTRATION_VERSION = 5
_TOPIC_ASSIGNMENT_VERSION = 3
_PARTITION_STATE_VERSION = 1
_CAS_ATTEMPTS = 100


# --- values ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener of a registered broker (Kafka's ``EndPoint``)."""

    listener_name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def connection_string(self) -> str:
        """``NAME://host:port`` (IPv6 hosts in brackets), as in ``endpoints``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A broker's entry under ``/brokers/ids``.

    ``host`` and ``port`` are those of the PLAINTEXT endpoint (``None`` and -1 without one), as
    Kafka writes them for old clients.
    """

    broker_id: int
    endpoints: tuple[Endpoint, ...]
    timestamp_ms: int
    rack: str | None = None
    jmx_port: int = -1

    @property
    def host(self) -> str | None:
        plaintext = self._plaintext()
        return plaintext.host if plaintext else None

    @property
    def port(self) -> int:
        plaintext = self._plaintext()
        return plaintext.port if plaintext else -1

    def endpoint(self, listener_name: str) -> Endpoint | None:
        """The endpoint of ``listener_name``, if the broker has one."""
        for endpoint in self.endpoints:
            if endpoint.listener_name == listener_name:
                return endpoint
        return None

    def _plaintext(self) -> Endpoint | None:
        for endpoint in self.endpoints:
            if endpoint.security_protocol == "PLAINTEXT":
                return endpoint
        return None


@dataclass(frozen=True, slots=True)
class PartitionState:
    """A partition's leader and ISR, as stored in ``.../partitions/<p>/state``.

    ``zk_version`` is the node's version: pass it as ``expected_version`` to change the state
    only if nobody else did since it was read.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int


def new_uuid_string() -> str:
    """A random UUID as Kafka prints one: 22 characters of URL-safe base64 without padding.

    Like Kafka's ``Uuid.randomUuid``, never one that starts with ``-`` (awkward on command
    lines).
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


# --- the facade ------------------------------------------------------------------------------


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
            self.store.create(
                CLUSTER_ID_PATH, _encode({"version": "1", "id": cluster_id}), make_parents=True
            )
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
        document = self._read_json(CLUSTER_ID_PATH)[0]
        cluster_id = document.get("id")
        if not isinstance(cluster_id, str):
            raise CorruptMetadataError(f"{CLUSTER_ID_PATH} has no string 'id': {document}")
        return cluster_id

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
        document: dict[str, Any] = {
            "version": _BROKER_REGISTRATION_VERSION,
            "host": registration.host,
            "port": registration.port,
            "endpoints": [endpoint.connection_string() for endpoint in registration.endpoints],
            "listener_security_protocol_map": {
                endpoint.listener_name: endpoint.security_protocol
                for endpoint in registration.endpoints
            },
            "jmx_port": registration.jmx_port,
            "timestamp": str(registration.timestamp_ms),
            "features": {},
        }
        if rack is not None:
            document["rack"] = rack
        path = join_path(BROKER_IDS_PATH, str(broker_id))
        try:
            self.store.create(path, _encode(document), ephemeral=True, make_parents=True)
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
        path = join_path(BROKER_IDS_PATH, str(broker_id))
        try:
            document = self._read_json(path)[0]
        except NoNodeError:
            return None
        return _parse_broker(path, broker_id, document)

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
        return self.store.exists(_topic_path(topic))

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
        document = _assignment_document(topic_id, assignment)
        try:
            self.store.create(_topic_path(topic), _encode(document), make_parents=True)
        except NodeExistsError:
            raise TopicAlreadyExistsError(f"topic {topic!r} already exists") from None
        logger.info("created topic %s (id %s) with %d partitions", topic, topic_id, len(assignment))
        return topic_id

    def assignment(self, topic: str) -> dict[int, list[int]]:
        """partition → replicas of ``topic``.

        Raises:
            UnknownTopicOrPartitionError: no such topic.
        """
        return _parse_partitions(self._read_topic(topic)[0], topic)

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
        partitions = _parse_partitions(document, topic)
        adding = _parse_replica_map(document, "adding_replicas", topic)
        removing = _parse_replica_map(document, "removing_replicas", topic)
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
        partitions = _parse_partitions(document, topic)
        unknown = sorted(set(changes) - set(partitions))
        if unknown:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} has no partition(s) {unknown}")
        adding = _parse_replica_map(document, "adding_replicas", topic)
        removing = _parse_replica_map(document, "removing_replicas", topic)
        for index, change in changes.items():
            partitions[index] = list(change.replicas)
            for entries, replicas in ((adding, change.adding), (removing, change.removing)):
                if replicas:
                    entries[index] = list(replicas)
                else:
                    entries.pop(index, None)
        document = dict(
            document,
            partitions=_partitions_json(partitions),
            adding_replicas=_partitions_json(adding),
            removing_replicas=_partitions_json(removing),
        )
        return SetOp(_topic_path(topic), _encode(document), version)

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
            current = _parse_partitions(document, topic)
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
            document = dict(document, partitions=_partitions_json(merged))
            try:
                self.store.set(_topic_path(topic), _encode(document), version)
            except BadVersionError:
                continue
            except NoNodeError:
                raise _unknown_topic(topic) from None
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
            self.store.delete(_topic_path(topic), recursive=True)
        except NoNodeError:
            raise _unknown_topic(topic) from None
        with contextlib.suppress(NoNodeError):
            self.store.delete(_config_path(topic), recursive=True)
        logger.info("deleted topic %s", topic)

    # --- topic configs ---------------------------------------------------------------------

    def topic_configs(self, topic: str) -> dict[str, str]:
        """The topic's config overrides (only those set, not the defaults).

        Raises:
            UnknownTopicOrPartitionError: no such topic.
        """
        if not self.topic_exists(topic):
            raise _unknown_topic(topic)
        try:
            document = self._read_json(_config_path(topic))[0]
        except NoNodeError:
            return {}
        config = document.get("config", {})
        if not isinstance(config, dict):
            raise CorruptMetadataError(f"{_config_path(topic)} has a non-object 'config'")
        return {str(name): str(value) for name, value in config.items()}

    def set_topic_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        """Replaces the topic's config overrides with ``configs`` (stored as given).

        Raises:
            UnknownTopicOrPartitionError: no such topic.
        """
        if not self.topic_exists(topic):
            raise _unknown_topic(topic)
        self._write_topic_configs(topic, configs)

    def _write_topic_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        data = _encode({"version": 1, "config": {name: str(v) for name, v in configs.items()}})
        path = _config_path(topic)
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
        document = {
            "controller_epoch": controller_epoch,
            "leader": leader,
            "version": _PARTITION_STATE_VERSION,
            "leader_epoch": leader_epoch,
            "isr": list(isr),
        }
        path = _state_path(topic, partition)
        data = _encode(document)
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
        data = _encode(
            {
                "controller_epoch": controller_epoch,
                "leader": leader,
                "version": _PARTITION_STATE_VERSION,
                "leader_epoch": 0,
                "isr": list(isr),
            }
        )
        for partition in partitions:
            path = _state_path(topic, partition)
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
            current = _parse_partitions(document, topic)
            kept = {p: r for p, r in current.items() if p < keep}
            if len(kept) == len(current):
                return
            document = dict(document, partitions=_partitions_json(kept))
            try:
                self.store.set(_topic_path(topic), _encode(document), version)
            except BadVersionError:
                continue
            except NoNodeError:
                raise _unknown_topic(topic) from None
            for partition in sorted(set(current) - set(kept)):
                with contextlib.suppress(NoNodeError):
                    self.store.delete(
                        join_path(_topic_path(topic), "partitions", str(partition)),
                        recursive=True,
                    )
            logger.info("topic %s is back to %d partitions", topic, len(kept))
            return
        raise BadVersionError(f"topic {topic!r} kept changing while removing partitions")

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        """The partition's leader and ISR, or ``None`` if none was written (no leader elected
        yet, or no such partition)."""
        path = _state_path(topic, partition)
        try:
            document, version = self._read_json(path)
        except NoNodeError:
            return None
        try:
            return PartitionState(
                leader=int(document["leader"]),
                leader_epoch=int(document["leader_epoch"]),
                isr=tuple(int(replica) for replica in document["isr"]),
                controller_epoch=int(document["controller_epoch"]),
                zk_version=version,
            )
        except (KeyError, TypeError, ValueError) as error:
            raise CorruptMetadataError(f"malformed partition state at {path}: {error}") from None

    # --- helpers ---------------------------------------------------------------------------

    def _read_topic(self, topic: str) -> tuple[dict[str, Any], int]:
        try:
            return self._read_json(_topic_path(topic))
        except NoNodeError:
            raise _unknown_topic(topic) from None

    def _read_json(self, path: str) -> tuple[dict[str, Any], int]:
        data, version = self.store.get(path)
        try:
            document = json.loads(data)
        except ValueError as error:
            raise CorruptMetadataError(f"malformed JSON at {path}: {error}") from None
        if not isinstance(document, dict):
            raise CorruptMetadataError(f"{path} does not hold a JSON object")
        return document, version


def partition_state_path(topic: str, partition: int) -> str:
    """``/brokers/topics/<topic>/partitions/<partition>/state``."""
    return _state_path(topic, partition)


def encode_partition_state(
    leader: int, leader_epoch: int, isr: Sequence[int], controller_epoch: int
) -> bytes:
    """A partition state node's data (Kafka's JSON)."""
    return _encode(
        {
            "controller_epoch": controller_epoch,
            "leader": leader,
            "version": _PARTITION_STATE_VERSION,
            "leader_epoch": leader_epoch,
            "isr": list(isr),
        }
    )


def _encode(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode("utf-8")


def _topic_path(topic: str) -> str:
    validate_topic_name(topic)
    return join_path(TOPICS_PATH, topic)


def _config_path(topic: str) -> str:
    validate_topic_name(topic)
    return join_path(TOPIC_CONFIGS_PATH, topic)


def _state_path(topic: str, partition: int) -> str:
    return join_path(_topic_path(topic), "partitions", str(partition), "state")


def _unknown_topic(topic: str) -> UnknownTopicOrPartitionError:
    return UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")


def _partitions_json(assignment: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    return {str(p): list(assignment[p]) for p in sorted(assignment)}


def _assignment_document(topic_id: str, assignment: Mapping[int, Sequence[int]]) -> dict[str, Any]:
    return {
        "version": _TOPIC_ASSIGNMENT_VERSION,
        "topic_id": topic_id,
        "partitions": _partitions_json(assignment),
        "adding_replicas": {},
        "removing_replicas": {},
    }


def _parse_partitions(document: Mapping[str, Any], topic: str) -> dict[int, list[int]]:
    try:
        return {
            int(partition): [int(replica) for replica in replicas]
            for partition, replicas in sorted(
                document["partitions"].items(), key=lambda item: int(item[0])
            )
        }
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise CorruptMetadataError(f"malformed assignment of topic {topic!r}: {error}") from None


def _parse_replica_map(document: Mapping[str, Any], key: str, topic: str) -> dict[int, list[int]]:
    entries = document.get(key) or {}
    try:
        return {
            int(partition): [int(replica) for replica in replicas]
            for partition, replicas in entries.items()
        }
    except (TypeError, ValueError, AttributeError) as error:
        raise CorruptMetadataError(f"malformed {key} of topic {topic!r}: {error}") from None


def _parse_broker(path: str, broker_id: int, document: Mapping[str, Any]) -> BrokerRegistration:
    try:
        protocols: Mapping[str, str] = document.get("listener_security_protocol_map") or {}
        endpoints = []
        for text in document.get("endpoints", []):
            name, _, address = str(text).partition("://")
            host, _, port = address.rpartition(":")
            endpoints.append(Endpoint(name, host.strip("[]"), int(port), protocols.get(name, name)))
        if not endpoints and document.get("host") is not None:
            endpoints.append(Endpoint("PLAINTEXT", str(document["host"]), int(document["port"])))
        rack = document.get("rack")
        return BrokerRegistration(
            broker_id=broker_id,
            endpoints=tuple(endpoints),
            timestamp_ms=int(document.get("timestamp", -1)),
            rack=str(rack) if rack is not None else None,
            jmx_port=int(document.get("jmx_port", -1)),
        )
    except (TypeError, ValueError, AttributeError) as error:
        raise CorruptMetadataError(f"malformed broker registration at {path}: {error}") from None
