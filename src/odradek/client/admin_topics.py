"""``TopicAdmin``: the topic, cluster and config calls of ``AdminClient``.

Where requests go (as Kafka's admin client sends them): topic creation and deletion, new
partitions and config changes to the controller (from metadata); describe calls to the least
loaded broker (a broker's configs, and its log dirs, to that broker). Per-item errors (a topic
that exists, a config that is invalid) come back in the call's ``AdminResult`` as
``KafkaError`` subclasses.
Thread safety: each call holds the client's lock (``AdminRequests.lock``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from odradek._types import TopicPartition
from odradek.client.admin_requests import RETRY_REQUEST_CODES, AdminRequests
from odradek.client.admin_types import (
    AdminResult,
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ElectionType,
    LogDirDescription,
    NewPartitions,
    NewTopic,
    ReplicaInfo,
    TopicDescription,
)
from odradek.client.admin_wire import (
    alter_config_ops,
    any_code,
    config_entry,
    constant_node,
    creatable_topic,
    item_error,
    item_results,
    metadata_fields,
    raise_for,
    topic_description,
)
from odradek.client.cluster import METADATA_VERSIONS, BrokerMetadata
from odradek.errors import KafkaError
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = ["TopicAdmin"]

T = TypeVar("T")

CREATE_TOPICS_VERSIONS: Final = VersionRange(2, 7)
DELETE_TOPICS_VERSIONS: Final = VersionRange(1, 6)
CREATE_PARTITIONS_VERSIONS: Final = VersionRange(0, 3)
DESCRIBE_CONFIGS_VERSIONS: Final = VersionRange(1, 4)
INCREMENTAL_ALTER_CONFIGS_VERSIONS: Final = VersionRange(0, 1)
DESCRIBE_CLUSTER_VERSIONS: Final = VersionRange(0, 1)
#: ElectLeaders v0 knows only preferred elections; the election type came with v1.
ELECT_LEADERS_VERSIONS: Final = {
    ElectionType.PREFERRED: VersionRange(0, 1),
    ElectionType.UNCLEAN: VersionRange(1, 1),
}
DESCRIBE_LOG_DIRS_VERSIONS: Final = VersionRange(1, 4)


class TopicAdmin:
    """Topics, the cluster and configs (see the module docstring)."""

    def __init__(self, requests: AdminRequests) -> None:
        self._requests = requests

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
        deadline = self._requests.deadline(timeout_ms)

        def fields(_version: int) -> dict[str, Any]:
            return {
                "topics": [creatable_topic(topic) for topic in new_topics],
                "timeout": self._requests.remaining(deadline),
                "validate_only": validate_only,
            }

        names = [topic.name for topic in new_topics]
        return self._to_controller(
            names, ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSIONS, fields, "topics", deadline
        )

    def delete_topics(
        self, topics: Sequence[str], *, timeout_ms: int | None = None
    ) -> AdminResult[str, None]:
        """Deletes topics (DeleteTopics to the controller).

        Returns:
            Per topic: ``None``, or UnknownTopicOrPartitionError, ... on lookup.
        """
        deadline = self._requests.deadline(timeout_ms)

        def fields(version: int) -> dict[str, Any]:
            base: dict[str, Any] = {"timeout": self._requests.remaining(deadline)}
            if version >= 6:
                base["topics"] = [{"name": name, "topic_id": None} for name in topics]
            else:
                base["topic_names"] = list(topics)
            return base

        return self._to_controller(
            list(topics),
            ApiKey.DELETE_TOPICS,
            DELETE_TOPICS_VERSIONS,
            fields,
            "responses",
            deadline,
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
        deadline = self._requests.deadline(timeout_ms)
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
                "timeout": self._requests.remaining(deadline),
                "validate_only": validate_only,
            }

        return self._to_controller(
            list(wanted),
            ApiKey.CREATE_PARTITIONS,
            CREATE_PARTITIONS_VERSIONS,
            fields,
            "results",
            deadline,
        )

    def describe_topics(
        self, topics: Sequence[str], *, timeout_ms: int | None = None
    ) -> AdminResult[str, TopicDescription]:
        """Describes topics (partitions, leaders, replicas, ISR) from a Metadata request.

        Returns:
            Per topic: its ``TopicDescription``, or UnknownTopicOrPartitionError, ...
        """
        deadline = self._requests.deadline(timeout_ms)
        with self._requests.lock:
            body = self._requests.call(
                self._requests.any_node,
                ApiKey.METADATA,
                METADATA_VERSIONS,
                metadata_fields([{"name": name, "topic_id": None} for name in topics]),
                deadline,
            )
        return item_results(list(topics), body["topics"], lambda e: e["name"], topic_description)

    def list_topics(
        self, *, include_internal: bool = False, timeout_ms: int | None = None
    ) -> list[str]:
        """The names of every topic, sorted (internal ones such as ``__consumer_offsets``
        only with ``include_internal``)."""
        deadline = self._requests.deadline(timeout_ms)
        with self._requests.lock:
            body = self._requests.call(
                self._requests.any_node,
                ApiKey.METADATA,
                METADATA_VERSIONS,
                metadata_fields(None),
                deadline,
            )
        return sorted(
            entry["name"]
            for entry in body["topics"]
            if not entry["error_code"] and (include_internal or not entry.get("is_internal"))
        )

    def describe_cluster(self, *, timeout_ms: int | None = None) -> ClusterDescription:
        """The cluster id, the controller and the brokers (DescribeCluster, or Metadata from
        brokers without it)."""
        deadline = self._requests.deadline(timeout_ms)
        with self._requests.lock:
            node = self._requests.any_node()
            if node is not None and self._requests.serves(node, ApiKey.DESCRIBE_CLUSTER, deadline):
                body = self._requests.call(
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
                body = self._requests.call(
                    self._requests.any_node,
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

    def elect_leaders(
        self,
        election_type: ElectionType,
        partitions: Sequence[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> AdminResult[TopicPartition, None]:
        """Asks the controller for leader elections (ElectLeaders, KIP-460): ``PREFERRED``
        makes each partition's preferred replica its leader again, ``UNCLEAN`` gives a leader
        to partitions that have none; ``partitions`` ``None`` means every partition.

        Returns:
            Per partition (those asked for, or with ``None`` every one the controller
            answered for, sorted): ``None`` for an election made, or on lookup
            ElectionNotNeeded-coded ``KafkaError`` (the right leader leads already),
            PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
            UnknownTopicOrPartitionError, ...

        Raises:
            KafkaError: the whole request failed (its top-level error, or the deadline).
        """
        kind = ElectionType(election_type)
        asked = None if partitions is None else list(dict.fromkeys(partitions))
        deadline = self._requests.deadline(timeout_ms)

        def fields(_version: int) -> dict[str, Any]:
            by_topic: dict[str, list[int]] = {}
            for tp in asked or ():
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            return {
                "election_type": int(kind),
                "topic_partitions": None
                if asked is None
                else [{"topic": t, "partitions": p} for t, p in by_topic.items()],
                "timeout": self._requests.remaining(deadline),
            }

        with self._requests.lock:
            body = self._requests.call(
                self._requests.controller,
                ApiKey.ELECT_LEADERS,
                ELECT_LEADERS_VERSIONS[kind],
                fields,
                deadline,
                retry_items=lambda b: int(b.get("error_code", 0)) in RETRY_REQUEST_CODES,
            )
            self._requests.metadata.request_update()
        raise_for(body, "ElectLeaders")
        errors: dict[TopicPartition, KafkaError] = {}
        answered: list[TopicPartition] = []
        for entry in body["replica_election_results"]:
            for result in entry["partition_result"]:
                tp = TopicPartition(entry["topic"], int(result["partition_id"]))
                answered.append(tp)
                if result["error_code"]:
                    errors[tp] = item_error(result, str(tp))
        order = sorted(answered) if asked is None else asked
        for tp in order:
            if tp not in answered:
                errors[tp] = KafkaError(f"{tp}: not in the response")
        values = {tp: None for tp in order if tp not in errors}
        return AdminResult(order, values, errors)

    def describe_log_dirs(
        self,
        broker_ids: Sequence[int] | None = None,
        topics: Sequence[str] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> AdminResult[int, dict[str, LogDirDescription]]:
        """Each broker's log dirs and the logs they hold (DescribeLogDirs, asked of each
        broker in turn).

        Args:
            broker_ids: the brokers to ask (None: every broker in the metadata).
            topics: the topics whose logs to describe (None: every partition; a topic
                unknown to the metadata describes nothing).

        Returns:
            Per broker id: its log dirs by path, or the error asking it failed with.
        """
        deadline = self._requests.deadline(timeout_ms)
        values: dict[int, dict[str, LogDirDescription]] = {}
        errors: dict[int, KafkaError] = {}
        with self._requests.lock:
            cluster = self._requests.cluster(deadline)
            order = sorted(cluster.brokers) if broker_ids is None else list(broker_ids)
            wanted: list[dict[str, Any]] | None = None
            if topics is not None:
                described = self.describe_topics(
                    topics, timeout_ms=self._requests.remaining(deadline)
                )
                wanted = [
                    {"topic": name, "partitions": [p.partition for p in d.partitions]}
                    for name, d in described.values_by_item.items()
                ]
            for broker_id in order:
                try:
                    body = self._requests.call(
                        constant_node(broker_id),
                        ApiKey.DESCRIBE_LOG_DIRS,
                        DESCRIBE_LOG_DIRS_VERSIONS,
                        {"topics": wanted},
                        deadline,
                    )
                    raise_for(body, f"DescribeLogDirs of broker {broker_id}")
                except KafkaError as error:
                    errors[broker_id] = error
                    continue
                values[broker_id] = {entry["log_dir"]: _log_dir(entry) for entry in body["results"]}
        return AdminResult(order, values, errors)

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

        def fields(group: list[ConfigResource]) -> dict[str, Any]:
            return {
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

        return self._per_config_node(
            list(resources),
            ApiKey.DESCRIBE_CONFIGS,
            DESCRIBE_CONFIGS_VERSIONS,
            fields,
            "results",
            lambda entry: {c["name"]: config_entry(c) for c in entry.get("configs") or ()},
            self._requests.deadline(timeout_ms),
        )

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
        ops = {resource: alter_config_ops(spec) for resource, spec in changes.items()}

        def fields(group: list[ConfigResource]) -> dict[str, Any]:
            return {
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

        return self._per_config_node(
            list(ops),
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            INCREMENTAL_ALTER_CONFIGS_VERSIONS,
            fields,
            "responses",
            lambda _entry: None,
            self._requests.deadline(timeout_ms),
            controller=True,
        )

    def _to_controller(
        self,
        names: list[str],
        api_key: ApiKey,
        versions: VersionRange,
        fields: Callable[[int], dict[str, Any]],
        results: str,
        deadline: int,
    ) -> AdminResult[str, None]:
        """Sends a per-topic request to the controller (asked again elsewhere while a topic's
        answer is NOT_CONTROLLER), asks for fresh metadata, and gathers each topic's outcome
        from the answer's ``results`` entries."""
        with self._requests.lock:
            body = self._requests.call(
                self._requests.controller,
                api_key,
                versions,
                fields,
                deadline,
                retry_items=lambda b: any_code(b[results], RETRY_REQUEST_CODES),
            )
            self._requests.metadata.request_update()
        return item_results(names, body[results], lambda entry: entry["name"], lambda _e: None)

    def _per_config_node(
        self,
        resources: list[ConfigResource],
        api_key: ApiKey,
        versions: VersionRange,
        fields: Callable[[list[ConfigResource]], dict[str, Any]],
        results: str,
        parse: Callable[[Mapping[str, Any]], T],
        deadline: int,
        *,
        controller: bool = False,
    ) -> AdminResult[ConfigResource, T]:
        """Sends one ``api_key`` request per node the resources go to (``_by_config_node``)
        and gathers each resource's result from the answers' ``results`` entries."""
        values: dict[ConfigResource, T] = {}
        errors: dict[ConfigResource, KafkaError] = {}
        with self._requests.lock:
            for choice, group in self._by_config_node(resources, controller=controller).items():
                body = self._requests.call(choice, api_key, versions, fields(group), deadline)
                for entry in body[results]:
                    resource = ConfigResource(
                        ConfigResourceType(int(entry["resource_type"])), entry["resource_name"]
                    )
                    if entry["error_code"]:
                        errors[resource] = item_error(entry, resource.name)
                    else:
                        values[resource] = parse(entry)
        return AdminResult(resources, values, errors)

    def _by_config_node(
        self, resources: Sequence[ConfigResource], *, controller: bool = False
    ) -> dict[Callable[[], int | None], list[ConfigResource]]:
        """Groups resources by where to send them: brokers to themselves, others elsewhere."""
        shared: Callable[[], int | None] = (
            self._requests.controller if controller else self._requests.any_node
        )
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


def _log_dir(entry: Mapping[str, Any]) -> LogDirDescription:
    """A DescribeLogDirs result entry as a ``LogDirDescription`` (-1 bytes: not known)."""
    total = int(entry.get("total_bytes", -1))
    usable = int(entry.get("usable_bytes", -1))
    return LogDirDescription(
        path=entry["log_dir"],
        error=item_error(entry, entry["log_dir"]) if entry["error_code"] else None,
        replicas={
            TopicPartition(topic["name"], int(p["partition_index"])): ReplicaInfo(
                size=int(p["partition_size"]),
                offset_lag=int(p["offset_lag"]),
                is_future=bool(p["is_future_key"]),
            )
            for topic in entry["topics"]
            for p in topic["partitions"]
        },
        total_bytes=total if total >= 0 else None,
        usable_bytes=usable if usable >= 0 else None,
    )
