"""Request bodies and response parsing for the admin client: plain functions from values to
wire mappings and back, so the admin parts (``admin_topics``, ``admin_records``,
``admin_requests``) keep to the calls and their retries."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from odradek._types import TopicPartition
from odradek.client.admin_types import (
    AdminResult,
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigSource,
    NewTopic,
    PartitionDescription,
    TopicDescription,
)
from odradek.client.cluster import (
    Cluster,
)
from odradek.errors import (
    ErrorCode,
    KafkaError,
    KafkaTimeoutError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from odradek.protocol.api_keys import ApiKey

T = TypeVar("T")


def constant_node(node: int) -> Callable[[], int | None]:
    return lambda: node


def timed_out(api_key: int, last: KafkaError | None) -> KafkaTimeoutError:
    name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else str(api_key)
    reason = f" (last error: {last})" if last is not None else ""
    return KafkaTimeoutError(f"{name} call timed out{reason}")


def metadata_fields(topics: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {
        "topics": topics,
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def creatable_topic(topic: NewTopic) -> dict[str, Any]:
    assignment = topic.replica_assignment
    # -1 asks for the broker's defaults (KIP-464, CreateTopics v4+); a broker that does not
    # take -1 at an older version answers with a per-topic error.
    partitions, factor = topic.num_partitions, topic.replication_factor
    return {
        "name": topic.name,
        "num_partitions": -1 if assignment is not None else partitions,
        "replication_factor": -1 if assignment is not None else factor,
        "assignments": [
            {"partition_index": index, "broker_ids": list(brokers)}
            for index, brokers in sorted((assignment or {}).items())
        ],
        "configs": [{"name": name, "value": value} for name, value in topic.configs.items()],
    }


def alter_config_ops(
    spec: Sequence[AlterConfigOp] | Mapping[str, str | None],
) -> list[AlterConfigOp]:
    if isinstance(spec, Mapping):
        return [
            AlterConfigOp(name, value, AlterConfigOpType.DELETE)
            if value is None
            else AlterConfigOp(name, value, AlterConfigOpType.SET)
            for name, value in spec.items()
        ]
    return list(spec)


def by_topic(
    group: Mapping[TopicPartition, int], entry: Callable[[TopicPartition, int], dict[str, Any]]
) -> list[dict[str, Any]]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, value in group.items():
        topics.setdefault(tp.topic, []).append(entry(tp, value))
    return [{"name": name, "partitions": parts} for name, parts in topics.items()]


def any_code(entries: Iterable[Mapping[str, Any]], codes: frozenset[ErrorCode]) -> bool:
    return any(int(entry.get("error_code", 0)) in codes for entry in entries)


def item_error(entry: Mapping[str, Any], item: str) -> KafkaError:
    code = int(entry["error_code"])
    detail = entry.get("error_message")
    name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
    return error_for_code(code, f"{item}: {detail or name}")


def raise_for(body: Mapping[str, Any], what: str) -> None:
    code = int(body.get("error_code", 0))
    if code:
        raise item_error(body, what)


def item_results(
    order: Sequence[str],
    entries: Iterable[Mapping[str, Any]],
    key: Callable[[Mapping[str, Any]], str],
    parse: Callable[[Mapping[str, Any]], T],
) -> AdminResult[str, T]:
    values: dict[str, T] = {}
    errors: dict[str, KafkaError] = {}
    for entry in entries:
        name = key(entry)
        if entry.get("error_code"):
            errors[name] = item_error(entry, name)
        else:
            values[name] = parse(entry)
    for name in order:
        if name not in values and name not in errors:
            errors[name] = KafkaError(f"{name}: not in the response")
    return AdminResult(order, values, errors)


def topic_description(entry: Mapping[str, Any]) -> TopicDescription:
    partitions = tuple(
        sorted(
            (
                PartitionDescription(
                    partition=int(p["partition_index"]),
                    leader=int(p["leader_id"]) if int(p["leader_id"]) >= 0 else None,
                    replicas=tuple(int(n) for n in p.get("replica_nodes") or ()),
                    isr=tuple(int(n) for n in p.get("isr_nodes") or ()),
                )
                for p in entry.get("partitions") or ()
            ),
            key=lambda p: p.partition,
        )
    )
    return TopicDescription(entry["name"], bool(entry.get("is_internal")), partitions)


def config_entry(entry: Mapping[str, Any]) -> ConfigEntry:
    return ConfigEntry(
        name=entry["name"],
        value=entry.get("value"),
        source=config_source(entry.get("config_source", 0)),
        is_read_only=bool(entry.get("read_only")),
        is_sensitive=bool(entry.get("is_sensitive")),
        synonyms=tuple(
            (s["name"], s.get("value"), config_source(s.get("source", 0)))
            for s in entry.get("synonyms") or ()
        ),
        config_type=int(entry.get("config_type", 0)),
        documentation=entry.get("documentation"),
    )


def config_source(value: int) -> ConfigSource:
    try:
        return ConfigSource(int(value))
    except ValueError:
        return ConfigSource.UNKNOWN


def no_leader(cluster: Cluster, tp: TopicPartition) -> KafkaError:
    if cluster.partition(tp) is None:
        return UnknownTopicOrPartitionError(f"{tp}: unknown topic or partition")
    return KafkaError(f"{tp}: no leader", code=ErrorCode.LEADER_NOT_AVAILABLE)
