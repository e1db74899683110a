"""``ClusterAdmin``: the partition reassignment calls of ``AdminClient`` (KIP-455), and
``list_config_resources`` (ListConfigResources, KIP-1142).

The reassignment calls go to the controller (from metadata), as Kafka's admin client sends
them; a NOT_CONTROLLER answer (the controller moved) is retried elsewhere within the call's
deadline. ListConfigResources goes to any broker.
Per-partition errors of AlterPartitionReassignments come back in the call's ``AdminResult``
as ``KafkaError`` subclasses.
Thread safety: each call holds the client's lock (``AdminRequests.lock``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from odradek._types import TopicPartition
from odradek.client.admin_requests import RETRY_REQUEST_CODES, AdminRequests
from odradek.client.admin_types import (
    AdminResult,
    ConfigResource,
    ConfigResourceType,
    PartitionReassignment,
)
from odradek.client.admin_wire import item_error, raise_for
from odradek.errors import KafkaError
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = ["ClusterAdmin"]

#: v1 (KIP-860) added ``allow_replication_factor_change``; v0 always allows it.
ALTER_PARTITION_REASSIGNMENTS_VERSIONS: Final = VersionRange(0, 1)
ALTER_KEEPING_REPLICATION_FACTOR_VERSIONS: Final = VersionRange(1, 1)
LIST_PARTITION_REASSIGNMENTS_VERSIONS: Final = VersionRange(0, 0)
#: v0 was ListClientMetricsResources (client-metrics resources only); v1 takes the types.
LIST_CONFIG_RESOURCES_VERSIONS: Final = VersionRange(1, 1)
LIST_CLIENT_METRICS_RESOURCES_VERSIONS: Final = VersionRange(0, 1)


class ClusterAdmin:
    """Partition reassignments (see the module docstring)."""

    def __init__(self, requests: AdminRequests) -> None:
        self._requests = requests

    def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        allow_replication_factor_change: bool = True,
        timeout_ms: int | None = None,
    ) -> AdminResult[TopicPartition, None]:
        """Moves partitions to new replicas, or (``None``) cancels their reassignment in
        progress (AlterPartitionReassignments to the controller). The call returns once the
        controller started them; ``list_partition_reassignments`` shows their progress.

        Args:
            reassignments: partition → target replicas (the preferred leader first), or
                ``None`` to cancel.
            allow_replication_factor_change: ``False`` refuses targets whose size differs
                from the partition's replica count (needs a broker serving v1).

        Returns:
            Per partition: ``None`` (started), or on lookup InvalidReplicaAssignmentError,
            UnknownTopicOrPartitionError, NO_REASSIGNMENT_IN_PROGRESS-coded ``KafkaError``...

        Raises:
            KafkaError: the whole request failed (its top-level error, or the deadline).
        """
        order = list(reassignments)
        deadline = self._requests.deadline(timeout_ms)
        versions = (
            ALTER_PARTITION_REASSIGNMENTS_VERSIONS
            if allow_replication_factor_change
            else ALTER_KEEPING_REPLICATION_FACTOR_VERSIONS
        )

        def fields(_version: int) -> dict[str, Any]:
            topics: dict[str, list[dict[str, Any]]] = {}
            for tp, target in reassignments.items():
                topics.setdefault(tp.topic, []).append(
                    {
                        "partition_index": tp.partition,
                        "replicas": None if target is None else list(target),
                    }
                )
            return {
                "timeout": self._requests.remaining(deadline),
                "allow_replication_factor_change": allow_replication_factor_change,
                "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
            }

        with self._requests.lock:
            body = self._requests.call(
                self._requests.controller,
                ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                versions,
                fields,
                deadline,
                retry_items=_top_level_retriable,
            )
            self._requests.metadata.request_update()
        raise_for(body, "AlterPartitionReassignments")
        errors: dict[TopicPartition, KafkaError] = {}
        answered: set[TopicPartition] = set()
        for topic in body["responses"]:
            for entry in topic["partitions"]:
                tp = TopicPartition(topic["name"], int(entry["partition_index"]))
                answered.add(tp)
                if entry["error_code"]:
                    errors[tp] = item_error(entry, str(tp))
        for tp in order:
            if tp not in answered:
                errors[tp] = KafkaError(f"{tp}: not in the response")
        return AdminResult(order, {tp: None for tp in order if tp not in errors}, errors)

    def list_partition_reassignments(
        self,
        partitions: Sequence[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The reassignments in progress, of ``partitions`` or (``None``) all, sorted
        (ListPartitionReassignments to the controller). Partitions not being reassigned, and
        unknown ones, are not in the answer.

        Raises:
            KafkaError: the request failed (its top-level error, or the deadline).
        """
        deadline = self._requests.deadline(timeout_ms)
        topics: dict[str, list[int]] | None = None
        if partitions is not None:
            topics = {}
            for tp in partitions:
                topics.setdefault(tp.topic, []).append(tp.partition)

        def fields(_version: int) -> dict[str, Any]:
            return {
                "timeout": self._requests.remaining(deadline),
                "topics": None
                if topics is None
                else [{"name": t, "partition_indexes": p} for t, p in topics.items()],
            }

        with self._requests.lock:
            body = self._requests.call(
                self._requests.controller,
                ApiKey.LIST_PARTITION_REASSIGNMENTS,
                LIST_PARTITION_REASSIGNMENTS_VERSIONS,
                fields,
                deadline,
                retry_items=_top_level_retriable,
            )
        raise_for(body, "ListPartitionReassignments")
        ongoing = {
            TopicPartition(topic["name"], int(entry["partition_index"])): PartitionReassignment(
                tuple(int(r) for r in entry["replicas"]),
                tuple(int(r) for r in entry["adding_replicas"]),
                tuple(int(r) for r in entry["removing_replicas"]),
            )
            for topic in body["topics"]
            for entry in topic["partitions"]
        }
        return dict(sorted(ongoing.items()))

    def list_config_resources(
        self,
        resource_types: Sequence[ConfigResourceType | int] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> list[ConfigResource]:
        """The resources that have configs, of ``resource_types`` or (``None`` or empty)
        every type the broker lists: topics, brokers, broker loggers, client metrics and
        groups (ListConfigResources v1, Kafka 4.1+). Asking for client metrics only works
        with brokers that serve just v0 (ListClientMetricsResources) too.

        Raises:
            KafkaError: the request failed (UNSUPPORTED_VERSION: a type the broker does not
                list, or a broker without the API; CLUSTER_AUTHORIZATION_FAILED), or the
                deadline passed.
        """
        types = list(dict.fromkeys(int(t) for t in resource_types or ()))
        versions = LIST_CONFIG_RESOURCES_VERSIONS
        if types == [ConfigResourceType.CLIENT_METRICS]:
            versions = LIST_CLIENT_METRICS_RESOURCES_VERSIONS
        deadline = self._requests.deadline(timeout_ms)
        with self._requests.lock:
            body = self._requests.call(
                self._requests.any_node,
                ApiKey.LIST_CONFIG_RESOURCES,
                versions,
                {"resource_types": types},
                deadline,
                retry_items=_top_level_retriable,
            )
        raise_for(body, "ListConfigResources")
        return [
            ConfigResource(
                _resource_type(int(entry.get("resource_type", ConfigResourceType.CLIENT_METRICS))),
                str(entry["resource_name"]),
            )
            for entry in body["config_resources"]
        ]


def _resource_type(value: int) -> ConfigResourceType:
    try:
        return ConfigResourceType(value)
    except ValueError:
        return ConfigResourceType.UNKNOWN


def _top_level_retriable(body: Mapping[str, Any]) -> bool:
    return int(body.get("error_code", 0)) in RETRY_REQUEST_CODES
