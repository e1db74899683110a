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
- ``topics``: ``ClusterMetadata`` (cluster id, broker registrations, topics, topic configs,
  partition states) and the pure rules for topic names and replica assignment.

``zookeeper.py`` is the only module that imports kazoo.
"""

from odradek.controller.assignment import (
    assign_replicas,
    topic_names_collide,
    validate_assignment,
    validate_topic_name,
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
from odradek.controller.topics import (
    BrokerRegistration,
    ClusterMetadata,
    Endpoint,
    PartitionState,
    new_uuid_string,
)

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
