"""``MetadataCache``: what a broker of a cluster knows about the cluster, as the controller
told it — the live brokers, the controller, and every partition's leader, leader epoch,
replicas, ISR and offline replicas.

Kafka's ``MetadataCache``: filled only by the controller's UpdateMetadata requests (and the
partition states of its LeaderAndIsr requests), never by reading the metadata store, so a
Metadata request costs no ZooKeeper round trip and every broker sees the controller's changes
in the order the controller made them.

Fencing: a request carries the controller epoch. One older than the newest this broker has
seen comes from a deposed controller and is refused (``is_stale``: the handlers answer
STALE_CONTROLLER_EPOCH); a newer one moves the cache to the new controller.

Listeners: the controller sends every endpoint of every live broker, each with its listener
name. A query naming a listener (the one a client connected through) sees the brokers at
that listener's endpoints, and only the brokers that have one, as Kafka answers; a query
naming none sees each broker at its endpoint of ``listener_name`` (this broker's
``inter.broker.listener.name``: the fetchers, forwarding), or its first endpoint without one.

A partition state whose leader is ``LEADER_DURING_DELETE`` (-2, Kafka's
``LeaderAndIsr.LeaderDuringDelete``) removes the partition: its topic is being deleted.

Thread safety: the event loop thread only (the handlers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from odradek._types import TopicPartition

#: The leader of a partition whose topic is being deleted.
LEADER_DURING_DELETE = -2
#: No leader (the partition is offline).
NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class LiveBroker:
    """A live broker as clients of one listener reach it (``listener`` None: unnamed)."""

    broker_id: int
    host: str
    port: int
    rack: str | None = None
    listener: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """One partition as the controller last described it."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


class MetadataCache:
    """The cluster as this broker knows it; see the module docstring."""

    def __init__(self, broker_id: int, listener_name: str = "PLAINTEXT") -> None:
        self.broker_id = broker_id
        self.listener_name = listener_name
        self.controller_id: int | None = None
        self.controller_epoch = -1
        #: Each broker at its ``listener_name`` endpoint (or its first one), by id.
        self._brokers: dict[int, LiveBroker] = {}
        #: The brokers of each listener, by listener name, then id.
        self._listeners: Mapping[str, dict[int, LiveBroker]] = {}
        self._topics: dict[str, dict[int, PartitionMetadata]] = {}
        self.updates = 0

    # --- fencing ---------------------------------------------------------------------------

    def is_stale(self, controller_epoch: int) -> bool:
        """Whether a request with this controller epoch comes from a deposed controller."""
        return controller_epoch < self.controller_epoch

    def accept_controller(self, controller_id: int, controller_epoch: int) -> bool:
        """Records the controller of a request; False (nothing recorded) when it is stale."""
        if self.is_stale(controller_epoch):
            return False
        self.controller_id = controller_id
        self.controller_epoch = controller_epoch
        return True

    # --- updates ---------------------------------------------------------------------------

    def set_brokers(self, brokers: Iterable[LiveBroker]) -> None:
        """Replaces the live brokers: one entry per broker and listener."""
        default: dict[int, LiveBroker] = {}
        listeners: dict[str, dict[int, LiveBroker]] = {}
        for broker in brokers:
            if broker.listener is not None:
                listeners.setdefault(broker.listener, {})[broker.broker_id] = broker
            if broker.broker_id not in default or broker.listener == self.listener_name:
                default[broker.broker_id] = broker
        self._brokers = default
        self._listeners = listeners

    def update_partitions(self, states: Iterable[PartitionMetadata]) -> list[str]:
        """Applies partition states; returns the topics removed (every partition of theirs
        was deleted)."""
        touched: set[str] = set()
        for state in states:
            partitions = self._topics.setdefault(state.topic, {})
            if state.leader == LEADER_DURING_DELETE:
                partitions.pop(state.partition, None)
                touched.add(state.topic)
            else:
                partitions[state.partition] = state
        removed = [topic for topic in sorted(touched) if not self._topics.get(topic)]
        for topic in removed:
            self._topics.pop(topic, None)
        self.updates += 1
        return removed

    def remove_partition(self, topic_partition: TopicPartition) -> None:
        partitions = self._topics.get(topic_partition.topic)
        if partitions is None:
            return
        partitions.pop(topic_partition.partition, None)
        if not partitions:
            del self._topics[topic_partition.topic]

    # --- queries ---------------------------------------------------------------------------

    def _view(self, listener: str | None) -> Mapping[int, LiveBroker]:
        if listener is None:
            return self._brokers
        return self._listeners.get(listener, self._brokers if not self._listeners else {})

    def brokers(self, listener: str | None = None) -> list[LiveBroker]:
        """The live brokers (with an endpoint on ``listener``, when named), by id."""
        view = self._view(listener)
        return [view[broker_id] for broker_id in sorted(view)]

    def broker(self, broker_id: int, listener: str | None = None) -> LiveBroker | None:
        return self._view(listener).get(broker_id)

    def controller(self, listener: str | None = None) -> LiveBroker | None:
        """The controller's address, when it is a live broker this cache knows."""
        if self.controller_id is None:
            return None
        return self._view(listener).get(self.controller_id)

    def topic_names(self) -> list[str]:
        return sorted(self._topics)

    def has_topic(self, topic: str) -> bool:
        return topic in self._topics

    def partitions(self, topic: str) -> list[PartitionMetadata]:
        """The topic's partitions, by index (empty: unknown topic)."""
        partitions = self._topics.get(topic, {})
        return [partitions[index] for index in sorted(partitions)]

    def partition_count(self, topic: str) -> int:
        return len(self._topics.get(topic, {}))

    def partition(self, topic_partition: TopicPartition) -> PartitionMetadata | None:
        return self._topics.get(topic_partition.topic, {}).get(topic_partition.partition)

    def leader(
        self, topic_partition: TopicPartition, listener: str | None = None
    ) -> LiveBroker | None:
        """The partition's leader, if it has a live one (with an endpoint on ``listener``)."""
        state = self.partition(topic_partition)
        if state is None or state.leader < 0:
            return None
        return self._view(listener).get(state.leader)

    def partition_total(self) -> int:
        return sum(len(partitions) for partitions in self._topics.values())
