"""``AdminClient``: synchronous topic, config, offset and cluster administration.

Every call sends its requests and waits for the answers on the calling thread, which drives
the client's own ``NetworkClient`` (one call at a time: a lock serialises callers, so one
``AdminClient`` may be shared between threads). Each call takes ``timeout_ms`` (default
``default.api.timeout.ms``) for the whole call, retries included.

Where requests go (as Kafka's admin client sends them): topic creation and deletion, new
partitions and config changes to the controller (from metadata); ListOffsets and
DeleteRecords to each partition's leader, grouped per leader; describe calls to the least
loaded broker (broker configs to that broker).

Errors: a request that fails on the network (connection lost, timeout, NOT_CONTROLLER) is
retried after ``retry.backoff.ms`` until the call's deadline, then raises its ``KafkaError``
(REQUEST_TIMED_OUT, NETWORK_EXCEPTION). Per-item errors (a topic that exists, a partition that
is unknown) come back in the call's ``AdminResult`` as ``KafkaError`` subclasses; retriable
per-item leader errors (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE) refresh metadata and
are retried within the deadline first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Self, TypeVar

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.client.admin_groups import GroupAdmin
from odradek.client.admin_types import (
    AdminResult,
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    DeletedRecords,
    ListOffsetsResultInfo,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    TopicDescription,
)
from odradek.client.admin_wire import (
    alter_config_ops,
    any_code,
    by_topic,
    config_entry,
    constant_node,
    creatable_topic,
    item_error,
    item_results,
    metadata_fields,
    no_leader,
    raise_for,
    timed_out,
    topic_description,
)
from odradek.client.cluster import (
    METADATA_VERSIONS,
    BrokerMetadata,
    Cluster,
    Metadata,
    MetadataUpdater,
    needs_metadata_refresh,
)
from odradek.client.config import ADMIN, ClientConfig
from odradek.client.network import NetworkClient
from odradek.errors import (
    ErrorCode,
    KafkaError,
    KafkaTimeoutError,
)
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = ["AdminClient"]

T = TypeVar("T")
K = TypeVar("K")

CREATE_TOPICS_VERSIONS: Final = VersionRange(2, 7)
DELETE_TOPICS_VERSIONS: Final = VersionRange(1, 6)
CREATE_PARTITIONS_VERSIONS: Final = VersionRange(0, 3)
DESCRIBE_CONFIGS_VERSIONS: Final = VersionRange(1, 4)
INCREMENTAL_ALTER_CONFIGS_VERSIONS: Final = VersionRange(0, 1)
LIST_OFFSETS_VERSIONS: Final = VersionRange(1, 7)
DELETE_RECORDS_VERSIONS: Final = VersionRange(0, 2)
DESCRIBE_CLUSTER_VERSIONS: Final = VersionRange(0, 1)
#: Codes that mean "ask again elsewhere or later" for a whole request (controller moved).
_RETRY_REQUEST_CODES: Final = frozenset({ErrorCode.NOT_CONTROLLER})

Spec = OffsetSpec | int


class AdminClient(GroupAdmin):
    """Kafka's admin API, synchronous (see the module docstring); the group calls come from
    ``GroupAdmin`` (``admin_groups``).

    Args:
        config: settings by Kafka name (``bootstrap.servers`` is required); more as keyword
            arguments, underscores for dots.
        clock: the time source.

    Raises:
        ConfigError: an unknown setting (named) or a bad value.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | ClientConfig | None = None,
        /,
        *,
        clock: Clock = SYSTEM_CLOCK,
        **kwargs: Any,
    ) -> None:
        self._config = ClientConfig(config, client_type=ADMIN, **kwargs)
        self._clock = clock
        self._default_timeout_ms = self._config.get_int("default.api.timeout.ms")
        self._retry_backoff_ms = self._config.get_int("retry.backoff.ms")
        self._network = NetworkClient(self._config, clock=clock)
        self._metadata = Metadata.from_config(self._config, allow_auto_topic_creation=False)
        self._updater = MetadataUpdater(self._network, self._metadata)
        self._lock = threading.RLock()

    @property
    def config(self) -> ClientConfig:
        return self._config

    # ------------------------------------------------------------------ topics

    def create_topics(
        self,
        new_topics: Sequence[NewTopic],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> AdminResult[str, None]:
        """Creates topics (CreateTopics to the controller).

        Returns:
            Per topic: ``None``, or TopicAlreadyExistsError, InvalidPartitionsError,
            InvalidReplicationFactorError, InvalidTopicError, ... on lookup.
        """
        deadline = self._deadline(timeout_ms)

        def fields(_version: int) -> dict[str, Any]:
            return {
                "topics": [creatable_topic(topic) for topic in new_topics],
                "timeout": self._remaining(deadline),
                "validate_only": validate_only,
            }

        names = [topic.name for topic in new_topics]
        with self._lock:
            body = self._call(
                self._controller,
                ApiKey.CREATE_TOPICS,
                CREATE_TOPICS_VERSIONS,
                fields,
                deadline,
                retry_items=lambda b: any_code(b["topics"], _RETRY_REQUEST_CODES),
            )
            self._metadata.request_update()
        return item_results(names, body["topics"], lambda entry: entry["name"], lambda _e: None)

    def delete_topics(
        self, topics: Sequence[str], *, timeout_ms: int | None = None
    ) -> AdminResult[str, None]:
        """Deletes topics (DeleteTopics to the controller).

        Returns:
            Per topic: ``None``, or UnknownTopicOrPartitionError, ... on lookup.
        """
        deadline = self._deadline(timeout_ms)

        def fields(version: int) -> dict[str, Any]:
            base: dict[str, Any] = {"timeout": self._remaining(deadline)}
            if version >= 6:
                base["topics"] = [{"name": name, "topic_id": None} for name in topics]
            else:
                base["topic_names"] = list(topics)
            return base

        with self._lock:
            body = self._call(
                self._controller,
                ApiKey.DELETE_TOPICS,
                DELETE_TOPICS_VERSIONS,
                fields,
                deadline,
                retry_items=lambda b: any_code(b["responses"], _RETRY_REQUEST_CODES),
            )
            self._metadata.request_update()
        return item_results(
            list(topics), body["responses"], lambda entry: entry["name"], lambda _e: None
        )

    def create_partitions(
        self,
        new_partitions: Mapping[str, NewPartitions | int],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> AdminResult[str, None]:
        """Raises topics' partition counts to new totals (CreatePartitions to the controller).

        Returns:
            Per topic: ``None``, or InvalidPartitionsError, UnknownTopicOrPartitionError, ...
        """
        deadline = self._deadline(timeout_ms)
        wanted = {
            name: spec if isinstance(spec, NewPartitions) else NewPartitions(spec)
            for name, spec in new_partitions.items()
        }

        def fields(_version: int) -> dict[str, Any]:
            return {
                "topics": [
                    {
                        "name": name,
                        "count": spec.total_count,
                        "assignments": None
                        if spec.assignments is None
                        else [{"broker_ids": list(ids)} for ids in spec.assignments],
                    }
                    for name, spec in wanted.items()
                ],
                "timeout": self._remaining(deadline),
                "validate_only": validate_only,
            }

        with self._lock:
            body = self._call(
                self._controller,
                ApiKey.CREATE_PARTITIONS,
                CREATE_PARTITIONS_VERSIONS,
                fields,
                deadline,
                retry_items=lambda b: any_code(b["results"], _RETRY_REQUEST_CODES),
            )
            self._metadata.request_update()
        return item_results(list(wanted), body["results"], lambda e: e["name"], lambda _e: None)

    def describe_topics(
        self, topics: Sequence[str], *, timeout_ms: int | None = None
    ) -> AdminResult[str, TopicDescription]:
        """Describes topics (partitions, leaders, replicas, ISR) from a Metadata request.

        Returns:
            Per topic: its ``TopicDescription``, or UnknownTopicOrPartitionError, ...
        """
        deadline = self._deadline(timeout_ms)
        with self._lock:
            body = self._call(
                self._any_node,
                ApiKey.METADATA,
                METADATA_VERSIONS,
                metadata_fields([{"name": name} for name in topics]),
                deadline,
            )
        return item_results(list(topics), body["topics"], lambda e: e["name"], topic_description)

    def list_topics(
        self, *, include_internal: bool = False, timeout_ms: int | None = None
    ) -> list[str]:
        """The names of every topic, sorted (internal ones such as ``__consumer_offsets``
        only with ``include_internal``)."""
        deadline = self._deadline(timeout_ms)
        with self._lock:
            body = self._call(
                self._any_node, ApiKey.METADATA, METADATA_VERSIONS, metadata_fields(None), deadline
            )
        return sorted(
            entry["name"]
            for entry in body["topics"]
            if not entry["error_code"] and (include_internal or not entry.get("is_internal"))
        )

    def describe_cluster(self, *, timeout_ms: int | None = None) -> ClusterDescription:
        """The cluster id, the controller and the brokers (DescribeCluster, or Metadata from
        brokers without it)."""
        deadline = self._deadline(timeout_ms)
        with self._lock:
            node = self._any_node()
            if node is not None and self._serves(node, ApiKey.DESCRIBE_CLUSTER, deadline):
                body = self._call(
                    lambda: node,
                    ApiKey.DESCRIBE_CLUSTER,
                    DESCRIBE_CLUSTER_VERSIONS,
                    {"include_cluster_authorized_operations": False, "endpoint_type": 1},
                    deadline,
                )
                raise_for(body, "DescribeCluster")
                brokers = tuple(
                    BrokerMetadata(int(b["broker_id"]), b["host"], int(b["port"]), b.get("rack"))
                    for b in body["brokers"]
                )
            else:
                body = self._call(
                    self._any_node,
                    ApiKey.METADATA,
                    METADATA_VERSIONS,
                    metadata_fields([]),
                    deadline,
                )
                brokers = tuple(
                    BrokerMetadata(int(b["node_id"]), b["host"], int(b["port"]), b.get("rack"))
                    for b in body["brokers"]
                )
        controller = int(body.get("controller_id", -1))
        return ClusterDescription(
            cluster_id=body.get("cluster_id"),
            controller_id=controller if controller >= 0 else None,
            brokers=tuple(sorted(brokers, key=lambda b: b.node_id)),
        )

    # ------------------------------------------------------------------ configs

    def describe_configs(
        self,
        resources: Sequence[ConfigResource],
        *,
        include_synonyms: bool = False,
        include_documentation: bool = False,
        timeout_ms: int | None = None,
    ) -> AdminResult[ConfigResource, dict[str, ConfigEntry]]:
        """Every config of each resource, by name (DescribeConfigs; a broker resource is asked
        of that broker).

        Returns:
            Per resource: its configs, or UnknownTopicOrPartitionError, ... on lookup.
        """
        deadline = self._deadline(timeout_ms)
        values: dict[ConfigResource, dict[str, ConfigEntry]] = {}
        errors: dict[ConfigResource, KafkaError] = {}
        with self._lock:
            for node_choice, group in self._by_config_node(resources).items():
                fields = {
                    "resources": [
                        {
                            "resource_type": int(r.type),
                            "resource_name": r.name,
                            "configuration_keys": None,
                        }
                        for r in group
                    ],
                    "include_synonyms": include_synonyms,
                    "include_documentation": include_documentation,
                }
                body = self._call(
                    node_choice,
                    ApiKey.DESCRIBE_CONFIGS,
                    DESCRIBE_CONFIGS_VERSIONS,
                    fields,
                    deadline,
                )
                for entry in body["results"]:
                    resource = ConfigResource(
                        ConfigResourceType(int(entry["resource_type"])), entry["resource_name"]
                    )
                    if entry["error_code"]:
                        errors[resource] = item_error(entry, resource.name)
                    else:
                        values[resource] = {
                            c["name"]: config_entry(c) for c in entry.get("configs") or ()
                        }
        return AdminResult(list(resources), values, errors)

    def alter_configs(
        self,
        changes: Mapping[ConfigResource, Sequence[AlterConfigOp] | Mapping[str, str | None]],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> AdminResult[ConfigResource, None]:
        """Changes configs incrementally (IncrementalAlterConfigs, KIP-339).

        Each resource takes a list of ``AlterConfigOp``, or a mapping ``name -> value`` (SET;
        a ``None`` value DELETEs the override).

        Returns:
            Per resource: ``None``, or InvalidConfigError-coded ``KafkaError``, ... on lookup.
        """
        deadline = self._deadline(timeout_ms)
        ops = {resource: alter_config_ops(spec) for resource, spec in changes.items()}
        values: dict[ConfigResource, None] = {}
        errors: dict[ConfigResource, KafkaError] = {}
        with self._lock:
            for node_choice, group in self._by_config_node(list(ops), controller=True).items():
                fields = {
                    "resources": [
                        {
                            "resource_type": int(r.type),
                            "resource_name": r.name,
                            "configs": [
                                {
                                    "name": op.name,
                                    "config_operation": int(op.op_type),
                                    "value": op.value,
                                }
                                for op in ops[r]
                            ],
                        }
                        for r in group
                    ],
                    "validate_only": validate_only,
                }
                body = self._call(
                    node_choice,
                    ApiKey.INCREMENTAL_ALTER_CONFIGS,
                    INCREMENTAL_ALTER_CONFIGS_VERSIONS,
                    fields,
                    deadline,
                )
                for entry in body["responses"]:
                    resource = ConfigResource(
                        ConfigResourceType(int(entry["resource_type"])), entry["resource_name"]
                    )
                    if entry["error_code"]:
                        errors[resource] = item_error(entry, resource.name)
                    else:
                        values[resource] = None
        return AdminResult(list(ops), values, errors)

    # ------------------------------------------------------------------ offsets and records

    def list_offsets(
        self,
        specs: Mapping[TopicPartition, Spec],
        *,
        isolation_level: int = 0,
        timeout_ms: int | None = None,
    ) -> AdminResult[TopicPartition, ListOffsetsResultInfo]:
        """Looks up offsets by spec (``OffsetSpec`` or its timestamp value: -2 earliest,
        -1 latest, -3 max timestamp, or a time in ms), asking each partition's leader.

        Returns:
            Per partition: a ``ListOffsetsResultInfo``, or UnknownTopicOrPartitionError, ...
        """
        wanted = {
            tp: spec.timestamp if isinstance(spec, OffsetSpec) else int(spec)
            for tp, spec in specs.items()
        }

        def fields(group: Mapping[TopicPartition, int]) -> Callable[[int], dict[str, Any]]:
            def build(_version: int) -> dict[str, Any]:
                return {
                    "replica_id": -1,
                    "isolation_level": isolation_level,
                    "topics": by_topic(
                        group,
                        lambda tp, ts: {
                            "partition_index": tp.partition,
                            "current_leader_epoch": -1,
                            "timestamp": ts,
                        },
                    ),
                }

            return build

        def parse(entry: Mapping[str, Any]) -> ListOffsetsResultInfo:
            epoch = int(entry.get("leader_epoch", -1))
            return ListOffsetsResultInfo(
                offset=int(entry["offset"]),
                timestamp=int(entry["timestamp"]),
                leader_epoch=epoch if epoch >= 0 else None,
            )

        return self._per_leader(
            wanted, ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSIONS, fields, parse, timeout_ms
        )

    def delete_records(
        self,
        before_offsets: Mapping[TopicPartition, int],
        *,
        timeout_ms: int | None = None,
    ) -> AdminResult[TopicPartition, DeletedRecords]:
        """Deletes every record before the given offsets (-1: the high watermark), asking each
        partition's leader; the log start offset moves there.

        Returns:
            Per partition: the new low watermark, or OffsetOutOfRangeError, ... on lookup.
        """
        deadline_for_fields = self._deadline(timeout_ms)

        def fields(group: Mapping[TopicPartition, int]) -> Callable[[int], dict[str, Any]]:
            def build(_version: int) -> dict[str, Any]:
                return {
                    "topics": by_topic(
                        group,
                        lambda tp, offset: {"partition_index": tp.partition, "offset": offset},
                    ),
                    "timeout": self._remaining(deadline_for_fields),
                }

            return build

        return self._per_leader(
            dict(before_offsets),
            ApiKey.DELETE_RECORDS,
            DELETE_RECORDS_VERSIONS,
            fields,
            lambda entry: DeletedRecords(int(entry["low_watermark"])),
            timeout_ms,
        )

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Closes the connections; later calls fail. Idempotent."""
        with self._lock:
            self._metadata.close()
            self._network.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing

    def _deadline(self, timeout_ms: int | None) -> int:
        timeout = self._default_timeout_ms if timeout_ms is None else timeout_ms
        return self._clock.monotonic_ms() + timeout

    def _remaining(self, deadline: int) -> int:
        return max(0, deadline - self._clock.monotonic_ms())

    def _cluster(self, deadline: int) -> Cluster:
        cluster = self._metadata.cluster
        if cluster.brokers:
            return cluster
        return self._refresh(deadline)

    def _refresh(self, deadline: int) -> Cluster:
        try:
            return self._updater.update_now(self._remaining(deadline))
        except KafkaTimeoutError:
            raise KafkaTimeoutError("timed out waiting for cluster metadata") from None

    def _controller(self) -> int | None:
        cluster = self._metadata.cluster
        if cluster.controller_id in cluster.brokers:
            return cluster.controller_id
        return None

    def _any_node(self) -> int | None:
        return self._network.least_loaded_node()

    def _serves(self, node: int, api_key: int, deadline: int) -> bool:
        """Whether ``node`` serves ``api_key`` at all (connects first, within the deadline)."""
        while not self._network.is_connected(node):
            if self._remaining(deadline) <= 0 or self._network.ready(node):
                break
            if self._network.is_blacked_out(node):
                return True  # let the call's retry loop report the failure
            self._network.poll(min(50, self._remaining(deadline)))
        return self._network.api_version(node, api_key, VersionRange(0, 100)) is not None

    def _by_config_node(
        self, resources: Sequence[ConfigResource], *, controller: bool = False
    ) -> dict[Callable[[], int | None], list[ConfigResource]]:
        """Groups resources by where to send them: brokers to themselves, others elsewhere."""
        shared: Callable[[], int | None] = self._controller if controller else self._any_node
        groups: dict[Callable[[], int | None], list[ConfigResource]] = {}
        per_broker: dict[int, Callable[[], int | None]] = {}
        for resource in resources:
            choice = shared
            if resource.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER):
                broker_id = int(resource.name) if resource.name.isdigit() else None
                if broker_id is not None:
                    choice = per_broker.setdefault(broker_id, constant_node(broker_id))
            groups.setdefault(choice, []).append(resource)
        return groups

    def _call(
        self,
        choose_node: Callable[[], int | None],
        api_key: int,
        versions: VersionRange,
        fields: Mapping[str, Any] | Callable[[int], Mapping[str, Any]],
        deadline: int,
        *,
        retry_items: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> dict[str, Any]:
        """Sends one request and returns its body, retrying failures that may pass.

        Raises:
            KafkaError: the last failure once the deadline passed, or a non-retriable one.
        """
        if self._network.closed:
            raise KafkaError("the admin client is closed", code=ErrorCode.NETWORK_EXCEPTION)
        last_error: KafkaError | None = None
        while True:
            remaining = self._remaining(deadline)
            if remaining <= 0:
                raise timed_out(api_key, last_error)
            try:
                self._cluster(deadline)
            except KafkaTimeoutError as error:
                raise timed_out(api_key, last_error or error) from None
            node = choose_node()
            if node is None:
                # No controller known, or every broker in backoff: refresh, then ask again.
                self._metadata.request_update()
                self._network.poll(min(self._retry_backoff_ms, remaining))
                continue
            future = self._network.send(
                node, api_key, fields, versions=versions, timeout_ms=remaining
            )
            self._network.wait([future], deadline)
            if not future.done():
                raise timed_out(api_key, last_error)
            failure = future.exception()
            if failure is None:
                body = future.result()
                if retry_items is None or not retry_items(body):
                    return body
                last_error = KafkaError(
                    f"{ApiKey(api_key).name}: not the controller", code=ErrorCode.NOT_CONTROLLER
                )
            elif isinstance(failure, KafkaError) and failure.retriable:
                last_error = failure
            else:
                raise failure
            self._metadata.request_update()
            self._pause(deadline)

    def _pause(self, deadline: int) -> None:
        wait_until = min(deadline, self._clock.monotonic_ms() + self._retry_backoff_ms)
        while (remaining := wait_until - self._clock.monotonic_ms()) > 0:
            self._network.poll(remaining)

    def _per_leader(
        self,
        wanted: dict[TopicPartition, int],
        api_key: int,
        versions: VersionRange,
        fields: Callable[[Mapping[TopicPartition, int]], Callable[[int], dict[str, Any]]],
        parse: Callable[[Mapping[str, Any]], T],
        timeout_ms: int | None,
    ) -> AdminResult[TopicPartition, T]:
        """Sends per-partition requests to the partitions' leaders, retrying leader errors."""
        deadline = self._deadline(timeout_ms)

        def send(leader: int, group: Mapping[TopicPartition, int]) -> dict[str, Any]:
            return self._call(constant_node(leader), api_key, versions, fields(group), deadline)

        with self._lock:
            # The call's topics are of interest only during the call.
            self._metadata.set_topics({tp.topic for tp in wanted})
            try:
                values, errors = self._leader_rounds(wanted, send, parse, deadline)
            finally:
                self._metadata.set_topics((), refresh=False)
        return AdminResult(list(wanted), values, errors)

    def _leader_rounds(
        self,
        pending: dict[TopicPartition, int],
        send: Callable[[int, Mapping[TopicPartition, int]], dict[str, Any]],
        parse: Callable[[Mapping[str, Any]], T],
        deadline: int,
    ) -> tuple[dict[TopicPartition, T], dict[TopicPartition, KafkaError]]:
        values: dict[TopicPartition, T] = {}
        errors: dict[TopicPartition, KafkaError] = {}
        cluster = self._refresh(deadline)
        while pending:
            by_leader: dict[int, dict[TopicPartition, int]] = {}
            for tp, value in pending.items():
                leader = cluster.leader_for(tp)
                if leader is None:
                    errors[tp] = no_leader(cluster, tp)
                else:
                    by_leader.setdefault(leader, {})[tp] = value
            retry: dict[TopicPartition, int] = {}
            for leader, group in by_leader.items():
                body = send(leader, group)
                answered: set[TopicPartition] = set()
                for topic in body["topics"]:
                    for entry in topic["partitions"]:
                        tp = TopicPartition(topic["name"], int(entry["partition_index"]))
                        if tp not in group:
                            continue
                        answered.add(tp)
                        code = int(entry["error_code"])
                        if not code:
                            values[tp] = parse(entry)
                            errors.pop(tp, None)
                            continue
                        errors[tp] = item_error(entry, str(tp))
                        if needs_metadata_refresh(code) and cluster.partition(tp) is not None:
                            retry[tp] = group[tp]  # a stale leader: ask the new one
                for tp in group.keys() - answered:
                    errors[tp] = KafkaError(f"{tp}: no answer from broker {leader}")
            pending = retry
            if pending:
                if self._remaining(deadline) <= 0:
                    break
                self._pause(deadline)
                cluster = self._refresh(deadline)
        return values, errors
