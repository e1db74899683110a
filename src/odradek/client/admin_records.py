"""``RecordAdmin``: the offset and record calls of ``AdminClient`` (ListOffsets, DeleteRecords).

Both go to each partition's leader, grouped per leader (as Kafka's admin client sends them).
Per-partition errors come back in the call's ``AdminResult``; retriable leader errors
(NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE) refresh metadata and are asked of the new
leader within the deadline first. Thread safety: each call holds the client's lock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from odradek._types import TopicPartition
from odradek.client.admin_requests import AdminRequests
from odradek.client.admin_types import (
    AdminResult,
    DeletedRecords,
    ListOffsetsResultInfo,
    OffsetSpec,
)
from odradek.client.admin_wire import by_topic, constant_node, item_error, no_leader
from odradek.client.cluster import needs_metadata_refresh
from odradek.errors import KafkaError
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = ["RecordAdmin", "Spec"]

T = TypeVar("T")

LIST_OFFSETS_VERSIONS: Final = VersionRange(1, 7)
DELETE_RECORDS_VERSIONS: Final = VersionRange(0, 2)

#: What ``list_offsets`` looks up: an ``OffsetSpec`` or its timestamp value.
Spec = OffsetSpec | int


class RecordAdmin:
    """Offsets and records (see the module docstring)."""

    def __init__(self, requests: AdminRequests) -> None:
        self._requests = requests

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
        deadline_for_fields = self._requests.deadline(timeout_ms)

        def fields(group: Mapping[TopicPartition, int]) -> Callable[[int], dict[str, Any]]:
            def build(_version: int) -> dict[str, Any]:
                return {
                    "topics": by_topic(
                        group,
                        lambda tp, offset: {"partition_index": tp.partition, "offset": offset},
                    ),
                    "timeout": self._requests.remaining(deadline_for_fields),
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
        deadline = self._requests.deadline(timeout_ms)

        def send(leader: int, group: Mapping[TopicPartition, int]) -> dict[str, Any]:
            return self._requests.call(
                constant_node(leader), api_key, versions, fields(group), deadline
            )

        with self._requests.lock:
            # The call's topics are of interest only during the call.
            self._requests.metadata.set_topics({tp.topic for tp in wanted})
            try:
                values, errors = self._leader_rounds(wanted, send, parse, deadline)
            finally:
                self._requests.metadata.set_topics((), refresh=False)
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
        cluster = self._requests.refresh(deadline)
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
                if self._requests.remaining(deadline) <= 0:
                    break
                self._requests.pause(deadline)
                cluster = self._requests.refresh(deadline)
        return values, errors
