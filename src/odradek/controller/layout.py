"""Kafka's ZooKeeper layout, as values: the paths, and the JSON of each node encoded and
decoded (Kafka's ``ZkData``). Pure: no store, no clock, no I/O — ``ClusterMetadata``
(``controller.topics``) reads and writes these nodes through a ``MetadataStore``, and the
controller's fenced ``multi`` writes (``controller.context``) build their node data here.

Layout (JSON is compact UTF-8; the broker and Kafka's ZooKeeper-mode tools rely on it)::

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
    /admin/delete_topics/<t>                 (empty; a request to delete topic t: the
                                              controller deletes it, then the node)
    /admin/preferred_replica_election        {"version":1,"partitions":[{"topic":"t",
                                              "partition":0},..]} (a request: the controller
                                              elects, then deletes the node)
    /admin/reassign_partitions               {"version":1,"partitions":[{"topic":..,
                                              "partition":..,"replicas":[..]}]} (written by
                                              tools; the controller starts the reassignments
                                              and deletes the node; its JSON is
                                              ``controller.reassignment``'s)
    /isr_change_notification                 (ISR change notifications, later)
    /controller                 (ephemeral)  {"version":1,"brokerid":0,"timestamp":"<ms>"}
    /controller_epoch                        "1" (see ``controller.election``)

Topic assignments are written as Kafka 2.8+ does (version 3, with a ``topic_id``, KIP-516);
versions 1 and 2, without one, are read too. While a partition is reassigned (KIP-455) its
``partitions`` entry is the whole replica set and ``adding_replicas`` / ``removing_replicas``
name the replicas coming and going.

The rule: a path that takes a topic name checks the name first (``InvalidTopicError``), so
no illegal name becomes part of a path; a decoder raises ``CorruptMetadataError`` naming the
path for anything that is not Kafka's JSON, never a ``KeyError`` or ``TypeError``.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from odradek._types import TopicPartition
from odradek.controller.assignment import validate_topic_name
from odradek.controller.store import join_path
from odradek.errors import CorruptMetadataError, UnknownTopicOrPartitionError

CLUSTER_ID_PATH = "/cluster/id"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
TOPIC_CONFIGS_PATH = "/config/topics"
BROKER_CONFIGS_PATH = "/config/brokers"
DELETE_TOPICS_PATH = "/admin/delete_topics"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
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


# --- paths -------------------------------------------------------------------------------


def broker_path(broker_id: int) -> str:
    """``/brokers/ids/<broker_id>``."""
    return join_path(BROKER_IDS_PATH, str(broker_id))


def topic_path(topic: str) -> str:
    """``/brokers/topics/<topic>``.

    Raises:
        InvalidTopicError: an illegal name.
    """
    validate_topic_name(topic)
    return join_path(TOPICS_PATH, topic)


def topic_config_path(topic: str) -> str:
    """``/config/topics/<topic>``.

    Raises:
        InvalidTopicError: an illegal name.
    """
    validate_topic_name(topic)
    return join_path(TOPIC_CONFIGS_PATH, topic)


def topic_partitions_path(topic: str) -> str:
    """``/brokers/topics/<topic>/partitions``."""
    return join_path(topic_path(topic), "partitions")


def partition_path(topic: str, partition: int) -> str:
    """``/brokers/topics/<topic>/partitions/<partition>``."""
    return join_path(topic_partitions_path(topic), str(partition))


def partition_state_path(topic: str, partition: int) -> str:
    """``/brokers/topics/<topic>/partitions/<partition>/state``."""
    return join_path(partition_path(topic, partition), "state")


def unknown_topic(topic: str) -> UnknownTopicOrPartitionError:
    """The error for a topic that does not exist."""
    return UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")


# --- node data ---------------------------------------------------------------------------


def encode_json(document: Mapping[str, Any]) -> bytes:
    """A node's data: compact UTF-8 JSON, as Kafka writes it."""
    return json.dumps(document, separators=(",", ":")).encode("utf-8")


def decode_object(path: str, data: bytes) -> dict[str, Any]:
    """The JSON object stored at ``path``.

    Raises:
        CorruptMetadataError: not JSON, or not an object.
    """
    try:
        document = json.loads(data)
    except ValueError as error:
        raise CorruptMetadataError(f"malformed JSON at {path}: {error}") from None
    if not isinstance(document, dict):
        raise CorruptMetadataError(f"{path} does not hold a JSON object")
    return document


def encode_cluster_id(cluster_id: str) -> bytes:
    """``/cluster/id``'s data."""
    return encode_json({"version": "1", "id": cluster_id})


def decode_cluster_id(document: Mapping[str, Any]) -> str:
    """The id in ``/cluster/id``'s object.

    Raises:
        CorruptMetadataError: no string ``id``.
    """
    cluster_id = document.get("id")
    if not isinstance(cluster_id, str):
        raise CorruptMetadataError(f"{CLUSTER_ID_PATH} has no string 'id': {document}")
    return cluster_id


def broker_document(registration: BrokerRegistration) -> dict[str, Any]:
    """``/brokers/ids/<id>``'s object (Kafka's version 5)."""
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
    if registration.rack is not None:
        document["rack"] = registration.rack
    return document


def parse_broker(path: str, broker_id: int, document: Mapping[str, Any]) -> BrokerRegistration:
    """A broker registration from its object (versions without ``endpoints`` too).

    Raises:
        CorruptMetadataError: malformed.
    """
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


def partitions_json(assignment: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    """partition → replicas as Kafka's JSON object (string keys, in partition order)."""
    return {str(p): list(assignment[p]) for p in sorted(assignment)}


def assignment_document(topic_id: str, assignment: Mapping[int, Sequence[int]]) -> dict[str, Any]:
    """A new topic's ``/brokers/topics/<t>`` object (version 3, nothing being reassigned)."""
    return {
        "version": _TOPIC_ASSIGNMENT_VERSION,
        "topic_id": topic_id,
        "partitions": partitions_json(assignment),
        "adding_replicas": {},
        "removing_replicas": {},
    }


def parse_partitions(document: Mapping[str, Any], topic: str) -> dict[int, list[int]]:
    """partition → replicas of a topic's object, in partition order.

    Raises:
        CorruptMetadataError: malformed ``partitions``.
    """
    try:
        return {
            int(partition): [int(replica) for replica in replicas]
            for partition, replicas in sorted(
                document["partitions"].items(), key=lambda item: int(item[0])
            )
        }
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise CorruptMetadataError(f"malformed assignment of topic {topic!r}: {error}") from None


def parse_replica_map(document: Mapping[str, Any], key: str, topic: str) -> dict[int, list[int]]:
    """A topic object's ``adding_replicas`` or ``removing_replicas`` (absent: empty).

    Raises:
        CorruptMetadataError: malformed.
    """
    entries = document.get(key) or {}
    try:
        return {
            int(partition): [int(replica) for replica in replicas]
            for partition, replicas in entries.items()
        }
    except (TypeError, ValueError, AttributeError) as error:
        raise CorruptMetadataError(f"malformed {key} of topic {topic!r}: {error}") from None


def encode_topic_configs(configs: Mapping[str, str]) -> bytes:
    """``/config/topics/<t>``'s data."""
    return encode_json({"version": 1, "config": {name: str(v) for name, v in configs.items()}})


def encode_partition_state(
    leader: int, leader_epoch: int, isr: Sequence[int], controller_epoch: int
) -> bytes:
    """A partition state node's data (Kafka's JSON)."""
    return encode_json(
        {
            "controller_epoch": controller_epoch,
            "leader": leader,
            "version": _PARTITION_STATE_VERSION,
            "leader_epoch": leader_epoch,
            "isr": list(isr),
        }
    )


def decode_partition_state(path: str, document: Mapping[str, Any], version: int) -> PartitionState:
    """A partition state from its object and its node's ``version``.

    Raises:
        CorruptMetadataError: malformed.
    """
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


def encode_preferred_replica_election(partitions: Sequence[TopicPartition]) -> bytes:
    """``/admin/preferred_replica_election``'s data (Kafka's JSON, version 1)."""
    return encode_json(
        {
            "version": 1,
            "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in partitions],
        }
    )


def decode_preferred_replica_election(data: bytes) -> list[TopicPartition]:
    """The partitions of ``/admin/preferred_replica_election``, in order, each once.

    Raises:
        CorruptMetadataError: not Kafka's JSON (an object with a ``partitions`` list of
            ``{"topic": str, "partition": int}``).
    """
    path = PREFERRED_REPLICA_ELECTION_PATH
    try:
        document = json.loads(data)
    except ValueError as error:
        raise CorruptMetadataError(f"malformed JSON at {path}: {error}") from None
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise CorruptMetadataError(f"{path} has no 'partitions' list")
    partitions: dict[TopicPartition, None] = {}
    for entry in entries:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or type(partition) is not int:
            raise CorruptMetadataError(
                f"{path}: each partition must be {{'topic': str, 'partition': int}}, got {entry!r}"
            )
        partitions[TopicPartition(topic, partition)] = None
    return list(partitions)
