"""Cluster metadata: the ``MetadataStore`` port, its embedded implementation, and Kafka's
ZooKeeper layout on top of it.

- ``store``: the port (a ZooKeeper-shaped tree of versioned nodes, ``multi`` operations) and
  path helpers.
- ``local``: ``LocalMetadataStore``, the single-node store persisted to one JSON file.
- ``zookeeper``: ``ZooKeeperMetadataStore``, the port on Apache ZooKeeper (kazoo).
- ``election`` (pure) and ``controller`` (its shell): the controller election through
  ``/controller`` and ``/controller_epoch``, and epoch-fenced controller writes.
- ``leaders``: Kafka's partition leader election algorithms (pure).
- ``brokers``: ``LiveBrokers``, the registered brokers kept current by a watch.
- ``layout`` (pure): Kafka's ZooKeeper paths and each node's JSON; ``topics``:
  ``ClusterMetadata``, the layout read and written through the store (cluster id, broker
  registrations, topics, topic configs, partition states); ``assignment`` (pure): the
  rules for topic names and replica assignment.
- ``cluster``: ``ClusterController``, what the elected controller does, with its duties in
  ``context``, ``broker_updates``, ``broker_changes``, ``topic_changes``, ``isr_updates``,
  ``leader_elections``, ``reassigner`` and ``admin_nodes`` (see ``cluster``'s docstring).

``zookeeper.py`` is the only module that imports kazoo.
"""

from odradek.controller.assignment import (
    assign_replicas,
    topic_names_collide,
    validate_assignment,
    validate_topic_name,
)
from odradek.controller.layout import (
    BrokerRegistration,
    Endpoint,
    PartitionState,
    new_uuid_string,
)
from odradek.controller.local import LocalMetadataStore, LocalStoreStatistics
from odradek.controller.store import (
    CheckOp,
    CreateOp,
    DeleteOp,
    MetadataStore,
    Op,
    SetOp,
    WatchCallback,
)
from odradek.controller.topics import ClusterMetadata

__all__ = [
    "BrokerRegistration",
    "CheckOp",
    "ClusterMetadata",
    "CreateOp",
    "DeleteOp",
    "Endpoint",
    "LocalMetadataStore",
    "LocalStoreStatistics",
    "MetadataStore",
    "Op",
    "PartitionState",
    "SetOp",
    "WatchCallback",
    "assign_replicas",
    "new_uuid_string",
    "topic_names_collide",
    "validate_assignment",
    "validate_topic_name",
]
