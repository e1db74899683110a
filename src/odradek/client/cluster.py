"""Cluster metadata: an immutable ``Cluster`` view, the thread-safe ``Metadata`` that holds the
current one, and ``MetadataUpdater``, which keeps it fresh through a ``NetworkClient``.

This module owns what the client believes about the cluster: brokers and their addresses,
topics, and each partition's leader, replicas and ISR. The rules it keeps:

- A ``Cluster`` never changes; ``Metadata.cluster`` is replaced whole by each Metadata
  response, so any thread may read it without locks (a partitioner gets one).
- The updater asks for metadata when it is older than ``metadata.max.age.ms``, and as soon as
  someone calls ``request_update``: after NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
  LEADER_NOT_AVAILABLE and their kin (``needs_metadata_refresh``), when a connection is lost,
  when a topic of interest is missing or has a partition without a leader. A failed or
  incomplete refresh is retried after ``retry.backoff.ms``, doubled per failure up to
  ``retry.backoff.max.ms``. One Metadata request is in flight at a time, to the least loaded
  node (a bootstrap address until the brokers are known).
- Topics of interest: all topics (``topics=None``), or a set that grows with ``add_topics``
  (the producer adds each topic it sends to; an empty set asks for brokers only).
- A partition whose new leader epoch is older than the one known is kept as known (KIP-320).

Threading: ``Metadata`` may be read and asked for updates from any thread; ``update`` and
``failed_update`` are called by the updater on the network client's thread. ``wait_for_topic``
waits on a condition from another thread (the producer's ``send``, ``max.block.ms``), or
drives the network itself when given its ``poll`` (owner-thread callers such as admin).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from odradek._types import TopicPartition
from odradek.client.backoff import backoff_ms
from odradek.client.config import ClientConfig
from odradek.client.connection import LOGIN_ERRORS
from odradek.client.network import NetworkClient, RequestFuture
from odradek.errors import (
    ErrorCode,
    KafkaError,
    KafkaTimeoutError,
    error_for_code,
)
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = [
    "METADATA_VERSIONS",
    "BrokerMetadata",
    "Cluster",
    "Metadata",
    "MetadataUpdater",
    "PartitionMetadata",
    "TopicMetadata",
    "needs_metadata_refresh",
]

log = logging.getLogger(__name__)

#: Metadata versions the client reads (v0 is left out: there an empty list meant "all").
METADATA_VERSIONS: Final = VersionRange(1, 12)
NO_LEADER: Final = -1

#: Error codes after which a client refreshes its metadata before retrying (Kafka's
#: InvalidMetadataException family, plus a lost connection).
_REFRESH_CODES: Final = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.BROKER_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INCONSISTENT_TOPIC_ID,
    }
)


def needs_metadata_refresh(code: int) -> bool:
    """Whether a response error code means the client's metadata is stale."""
    return code in _REFRESH_CODES


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """One partition as the last Metadata response described it (leader -1: none)."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int = -1
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()
    error_code: int = 0

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """One topic: its error code (0: fine) and its partitions in partition order."""

    name: str
    error_code: int
    is_internal: bool
    partitions: tuple[PartitionMetadata, ...]
    #: Metadata v10+ (KIP-516); None before, or for a topic without one.
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True)
class Cluster:
    """An immutable view of the cluster (Kafka's ``Cluster``): safe to share between threads."""

    brokers: Mapping[int, BrokerMetadata] = field(default_factory=dict)
    topics: Mapping[str, TopicMetadata] = field(default_factory=dict)
    cluster_id: str | None = None
    controller_id: int = -1
    #: Increases with every update of the ``Metadata`` that made it.
    version: int = 0
    _leaders: Mapping[TopicPartition, PartitionMetadata] = field(default_factory=dict, repr=False)
    _by_node: Mapping[int, tuple[PartitionMetadata, ...]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(
        cls,
        brokers: Iterable[BrokerMetadata],
        topics: Iterable[TopicMetadata],
        *,
        cluster_id: str | None = None,
        controller_id: int = -1,
        version: int = 0,
    ) -> Cluster:
        """A cluster view with its lookup tables (leader by partition, partitions by node)."""
        topic_map = {topic.name: topic for topic in topics}
        leaders: dict[TopicPartition, PartitionMetadata] = {}
        by_node: dict[int, list[PartitionMetadata]] = {}
        for topic in topic_map.values():
            for partition in topic.partitions:
                leaders[TopicPartition(partition.topic, partition.partition)] = partition
                if partition.leader >= 0:
                    by_node.setdefault(partition.leader, []).append(partition)
        return cls(
            brokers=MappingProxyType({broker.node_id: broker for broker in brokers}),
            topics=MappingProxyType(topic_map),
            cluster_id=cluster_id,
            controller_id=controller_id,
            version=version,
            _leaders=MappingProxyType(leaders),
            _by_node=MappingProxyType({node: tuple(p) for node, p in by_node.items()}),
        )

    def topic(self, name: str) -> TopicMetadata | None:
        return self.topics.get(name)

    def partition(self, tp: TopicPartition) -> PartitionMetadata | None:
        return self._leaders.get(tp)

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The leader's broker id, or ``None`` when unknown or leaderless."""
        partition = self._leaders.get(tp)
        if partition is None or partition.leader < 0:
            return None
        return partition.leader

    def leader_broker(self, tp: TopicPartition) -> BrokerMetadata | None:
        leader = self.leader_for(tp)
        return self.brokers.get(leader) if leader is not None else None

    def partitions_for(self, topic: str) -> list[PartitionMetadata] | None:
        """The topic's partitions (``None``: the topic is not known)."""
        entry = self.topics.get(topic)
        if entry is None or entry.error_code:
            return None
        return list(entry.partitions)

    def partition_count(self, topic: str) -> int | None:
        entry = self.topics.get(topic)
        if entry is None or entry.error_code:
            return None
        return len(entry.partitions)

    def available_partitions_for(self, topic: str) -> list[PartitionMetadata]:
        """The topic's partitions that have a leader."""
        return [p for p in self.partitions_for(topic) or () if p.leader >= 0]

    def partitions_for_node(self, node_id: int) -> tuple[PartitionMetadata, ...]:
        """The partitions ``node_id`` leads."""
        return self._by_node.get(node_id, ())

    def broker(self, node_id: int) -> BrokerMetadata | None:
        return self.brokers.get(node_id)

    @property
    def topic_names(self) -> list[str]:
        return sorted(name for name, topic in self.topics.items() if not topic.error_code)


def cluster_from_response(body: Mapping[str, Any], version: int, previous: Cluster) -> Cluster:
    """Builds the cluster view a Metadata response describes.

    Partitions the response leaves without a newer leader epoch than ``previous`` knows are
    kept as ``previous`` has them (KIP-320: a stale broker must not move leadership back).
    """
    brokers = [
        BrokerMetadata(int(b["node_id"]), str(b["host"]), int(b["port"]), b.get("rack"))
        for b in body.get("brokers") or ()
    ]
    topics = []
    for entry in body.get("topics") or ():
        name = entry.get("name")
        if name is None:
            continue
        partitions = []
        for p in entry.get("partitions") or ():
            partition = PartitionMetadata(
                topic=name,
                partition=int(p["partition_index"]),
                leader=int(p.get("leader_id", NO_LEADER)),
                leader_epoch=int(p.get("leader_epoch", -1)),
                replicas=tuple(int(n) for n in p.get("replica_nodes") or ()),
                isr=tuple(int(n) for n in p.get("isr_nodes") or ()),
                offline_replicas=tuple(int(n) for n in p.get("offline_replicas") or ()),
                error_code=int(p.get("error_code", 0)),
            )
            known = previous.partition(partition.topic_partition)
            if (
                known is not None
                and partition.leader_epoch >= 0
                and known.leader_epoch > partition.leader_epoch
            ):
                partition = known
            partitions.append(partition)
        partitions.sort(key=lambda item: item.partition)
        topics.append(
            TopicMetadata(
                name=name,
                error_code=int(entry.get("error_code", 0)),
                is_internal=bool(entry.get("is_internal", False)),
                partitions=tuple(partitions),
                topic_id=_topic_id(entry.get("topic_id")),
            )
        )
    return Cluster.build(
        brokers,
        topics,
        cluster_id=body.get("cluster_id"),
        controller_id=int(body.get("controller_id", -1)),
        version=previous.version + 1,
    )


def _topic_id(value: Any) -> uuid.UUID | None:
    return value if isinstance(value, uuid.UUID) and value.int else None


class Metadata:
    """The current ``Cluster`` and when to refresh it (see the module docstring).

    Args:
        topics: the topics of interest (``None``: every topic).
        metadata_max_age_ms, retry_backoff_ms, retry_backoff_max_ms: Kafka's settings.
        allow_auto_topic_creation: sent with each request (Metadata v4+).
    """

    @classmethod
    def from_config(
        cls, config: ClientConfig, *, allow_auto_topic_creation: bool = True
    ) -> Metadata:
        """Metadata with no topics of interest yet, timed by a client's ``metadata.max.age.ms``,
        ``retry.backoff.ms`` and ``retry.backoff.max.ms``."""
        return cls(
            topics=(),
            metadata_max_age_ms=config.get_int("metadata.max.age.ms"),
            retry_backoff_ms=config.get_int("retry.backoff.ms"),
            retry_backoff_max_ms=config.get_int("retry.backoff.max.ms"),
            allow_auto_topic_creation=allow_auto_topic_creation,
        )

    def __init__(
        self,
        *,
        topics: Iterable[str] | None = None,
        metadata_max_age_ms: int = 300_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1_000,
        allow_auto_topic_creation: bool = True,
    ) -> None:
        self._condition = threading.Condition()
        self._cluster = Cluster()
        self._topics: set[str] | None = set(topics) if topics is not None else None
        self._max_age_ms = metadata_max_age_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._retry_backoff_max_ms = retry_backoff_max_ms
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self._need_update = True
        # Refresh requests counted, and the count when the request in flight was sent: a
        # request made after the send is not answered by that response (it may predate a
        # topic of interest), so the metadata stays marked for another refresh.
        self._update_requests = 0
        self._requests_at_send = 0
        self._last_refresh_ms: int | None = None
        self._last_attempt_ms: int | None = None
        self._failures = 0
        self._last_error: BaseException | None = None
        self._topic_errors: dict[str, int] = {}
        self._wakeup: Callable[[], None] = _nothing
        self._closed = False

    # -- reads (any thread)

    @property
    def cluster(self) -> Cluster:
        return self._cluster

    @property
    def version(self) -> int:
        return self._cluster.version

    @property
    def topics(self) -> frozenset[str] | None:
        """The topics of interest (``None``: all)."""
        with self._condition:
            return frozenset(self._topics) if self._topics is not None else None

    @property
    def last_error(self) -> BaseException | None:
        """Why the last refresh failed (``None`` after a success)."""
        return self._last_error

    def set_wakeup(self, wakeup: Callable[[], None]) -> None:
        """What ``request_update`` calls to get the network thread's attention."""
        self._wakeup = wakeup

    # -- requests for updates (any thread)

    def request_update(self) -> int:
        """Asks for a refresh as soon as the retry backoff allows; returns the version a
        caller waits to see exceeded."""
        with self._condition:
            self._need_update = True
            self._update_requests += 1
            version = self._cluster.version
        self._wakeup()
        return version

    def add_topics(self, topics: Iterable[str]) -> bool:
        """Adds topics of interest; asks for a refresh if any is new. Returns whether one was."""
        with self._condition:
            if self._topics is None:
                new = [t for t in topics if t not in self._cluster.topics]
            else:
                new = [t for t in topics if t not in self._topics]
                self._topics.update(new)
        if new:
            self.request_update()
        return bool(new)

    def set_topics(self, topics: Iterable[str] | None, *, refresh: bool = True) -> None:
        """Replaces the topics of interest (``None``: all); asks for a refresh unless told not
        to (a topic nobody is interested in any more needs none)."""
        with self._condition:
            self._topics = set(topics) if topics is not None else None
            if not refresh:
                self._need_update = False
                self._failures = 0
        if refresh:
            self.request_update()

    def handle_error_code(self, code: int) -> None:
        """Asks for a refresh when ``code`` means the metadata is stale."""
        if needs_metadata_refresh(code):
            self.request_update()

    # -- the updater's side (network thread)

    def time_to_next_update_ms(self, now_ms: int) -> int:
        """Ms until a refresh is due (0: now)."""
        with self._condition:
            if self._need_update or self._last_refresh_ms is None:
                if self._last_attempt_ms is None or not self._failures:
                    return 0
                wait = backoff_ms(
                    self._retry_backoff_ms, self._retry_backoff_max_ms, self._failures - 1
                )
                return max(0, self._last_attempt_ms + wait - now_ms)
            return max(0, self._last_refresh_ms + self._max_age_ms - now_ms)

    def request_fields(self, version: int) -> dict[str, Any]:
        """The Metadata request body for the topics of interest."""
        with self._condition:
            topics = (
                None
                if self._topics is None
                else [{"name": t, "topic_id": None} for t in sorted(self._topics)]
            )
        return {
            "topics": topics,
            "allow_auto_topic_creation": self.allow_auto_topic_creation,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        }

    def attempted(self, now_ms: int) -> None:
        with self._condition:
            self._last_attempt_ms = now_ms
            self._requests_at_send = self._update_requests

    def update(self, body: Mapping[str, Any], version: int, now_ms: int) -> Cluster:
        """Installs the view a Metadata response describes and wakes waiting threads.

        A topic of interest that is missing, has a retriable error or a leaderless partition
        keeps the metadata marked for another refresh (after the retry backoff).
        """
        with self._condition:
            cluster = cluster_from_response(body, version, self._cluster)
            self._cluster = cluster
            self._last_refresh_ms = now_ms
            self._last_error = None
            incomplete = False
            interesting = self._topics if self._topics is not None else cluster.topics.keys()
            self._topic_errors = {}
            for name in interesting:
                topic = cluster.topics.get(name)
                if topic is None:
                    incomplete = True
                elif topic.error_code:
                    if ErrorCode(topic.error_code).retriable:
                        incomplete = True
                    else:
                        self._topic_errors[name] = topic.error_code
                elif any(p.leader < 0 for p in topic.partitions):
                    incomplete = True
            asked_since_send = self._update_requests > self._requests_at_send
            self._need_update = incomplete or asked_since_send
            self._failures = self._failures + 1 if incomplete else 0
            self._condition.notify_all()
        return cluster

    def failed_update(self, error: BaseException, now_ms: int) -> None:
        with self._condition:
            self._failures += 1
            self._last_attempt_ms = now_ms
            self._need_update = True
            self._last_error = error
            self._condition.notify_all()

    def login_error(self) -> KafkaError | None:
        """The refused SASL login of the last metadata attempt, if that is how it failed:
        fatal for a caller waiting on metadata (Kafka's clients fail at once on it rather
        than retrying until their timeout)."""
        error = self._last_error
        if isinstance(error, KafkaError) and error.error_code in LOGIN_ERRORS:
            return error
        return None

    def close(self) -> None:
        """Wakes every waiter; they fail at once."""
        with self._condition:
            self._closed = True
            self._condition.notify_all()

    # -- waiting

    def wait_for_update(self, version: int, timeout_ms: int) -> bool:
        """Waits (other threads only) until the version exceeds ``version``; False on timeout."""
        with self._condition:
            return self._condition.wait_for(
                lambda: (
                    self._cluster.version > version
                    or self._closed
                    or self.login_error() is not None
                ),
                timeout_ms / 1000.0,
            )

    def wait_for_topic(
        self,
        topic: str,
        timeout_ms: int,
        *,
        monotonic_ms: Callable[[], int],
        poll: Callable[[int], object] | None = None,
    ) -> TopicMetadata:
        """Returns the topic's metadata once known, refreshing as needed (``max.block.ms``).

        Args:
            topic: the topic (added to the topics of interest).
            timeout_ms: the longest wait.
            monotonic_ms: the clock the deadline is measured on.
            poll: the network client's ``poll`` when the caller owns it; otherwise the caller
                waits for the network thread's updates.

        Raises:
            KafkaTimeoutError: not known within ``timeout_ms``.
            KafkaError: the broker answered a non-retriable error for it (invalid name,
                authorization).
        """
        deadline = monotonic_ms() + timeout_ms
        self.add_topics([topic])
        while True:
            cluster = self._cluster
            entry = cluster.topics.get(topic)
            if entry is not None and not entry.error_code and entry.partitions:
                return entry
            code = self._topic_errors.get(topic)
            if code:
                raise error_for_code(code, f"metadata for topic {topic!r}: {ErrorCode(code).name}")
            if self._closed:
                raise KafkaError(
                    f"metadata for topic {topic!r}: closed", code=ErrorCode.NETWORK_EXCEPTION
                )
            refused = self.login_error()
            if refused is not None:
                raise KafkaError(
                    f"metadata for topic {topic!r}: {refused}", code=refused.error_code
                )
            remaining = deadline - monotonic_ms()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    f"topic {topic!r} not present in metadata after {timeout_ms} ms"
                )
            version = self.request_update()
            if poll is not None:
                poll(remaining)
            else:
                self.wait_for_update(version, remaining)


def _nothing() -> None:
    return None


class MetadataUpdater:
    """Keeps a ``Metadata`` fresh through a ``NetworkClient`` (one in-flight request at a time).

    Installs itself as a poll hook and a disconnect listener of ``network``, and feeds every
    response's broker addresses back to it. Runs only on the network client's thread.
    """

    def __init__(self, network: NetworkClient, metadata: Metadata) -> None:
        self._network = network
        self._metadata = metadata
        self._in_flight: RequestFuture | None = None
        metadata.set_wakeup(network.wakeup)
        network.add_poll_hook(self._on_poll)
        network.add_disconnect_listener(self._on_disconnect)

    @property
    def metadata(self) -> Metadata:
        return self._metadata

    def _on_disconnect(self, node_id: int) -> None:
        self._metadata.request_update()

    def _on_poll(self, now_ms: int) -> int | None:
        if self._in_flight is not None:
            return None
        wait = self._metadata.time_to_next_update_ms(now_ms)
        if wait > 0:
            return wait
        node_id = self._network.least_loaded_node()
        if node_id is None:
            # Every node is inside its reconnect backoff: try when the first one is out.
            nodes = self._network.broker_nodes or self._network.bootstrap_nodes
            return min((self._network.connection_delay_ms(n) for n in nodes), default=100)
        self._metadata.attempted(now_ms)
        future = self._network.send(
            node_id, ApiKey.METADATA, self._metadata.request_fields, versions=METADATA_VERSIONS
        )
        self._in_flight = future
        future.add_done_callback(self._on_response)
        return None

    def _on_response(self, future: object) -> None:
        assert isinstance(future, RequestFuture)
        self._in_flight = None
        now = self._network.clock.monotonic_ms()
        error = future.exception()
        if error is not None:
            log.info("metadata request to node %d failed: %s", future.node_id, error)
            self._metadata.failed_update(error, now)
            return
        cluster = self._metadata.update(future.result(), future.api_version, now)
        if cluster.brokers:
            self._network.update_nodes(
                {node: (b.host, b.port) for node, b in cluster.brokers.items()}
            )

    def update_now(self, timeout_ms: int) -> Cluster:
        """Refreshes at once and waits for the answer, polling the network (owner thread).

        Raises:
            KafkaTimeoutError: no answer within ``timeout_ms``.
        """
        clock = self._network.clock
        deadline = clock.monotonic_ms() + timeout_ms
        version = self._metadata.request_update()
        while self._metadata.version <= version:
            remaining = deadline - clock.monotonic_ms()
            if remaining <= 0:
                error = self._metadata.last_error
                raise KafkaTimeoutError(
                    f"no metadata within {timeout_ms} ms" + (f": {error}" if error else "")
                )
            self._network.poll(remaining)
        return self._metadata.cluster
