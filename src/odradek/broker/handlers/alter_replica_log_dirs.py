"""AlterReplicaLogDirs (API 34, v1-v2): asks this broker to keep replicas in another of its
``log.dirs`` directories.

odradek does not move a live replica between directories (Kafka copies it into a *future*
log, catches it up and swaps; that machinery does not exist here), so each partition gets a
clear answer instead of a move:

- the directory is not one of this broker's ``log.dirs`` (compared as absolute paths):
  LOG_DIR_NOT_FOUND, as Kafka answers;
- the replica is already in that directory: NONE (nothing to do, as in Kafka);
- this broker holds no replica of the partition: REPLICA_NOT_AVAILABLE (Kafka would remember
  the directory for a replica created later; odradek places new logs itself);
- the replica lives in another of the directories: POLICY_VIOLATION — moving it is refused
  by this broker (not a storage failure: KAFKA_STORAGE_ERROR would tell the client a disk
  went bad).

``describe_log_dirs`` (DescribeLogDirs) says which directory holds each replica;
``is_future_key`` there is always false, since no move is ever under way.
"""

from __future__ import annotations

import os
from typing import Any

from odradek._types import TopicPartition
from odradek.broker.auth.checks import CLUSTER_DENIED, Op, cluster_allowed
from odradek.broker.context import BrokerContext
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.ALTER_REPLICA_LOG_DIRS


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body: Any = request.body
    described = ctx.replicas.describe_log_dirs(None)
    known = {os.path.abspath(log_dir.path) for log_dir in described}
    where = {
        replica.topic_partition: os.path.abspath(log_dir.path)
        for log_dir in described
        for replica in log_dir.replicas
    }
    results: dict[str, list[dict[str, Any]]] = {}
    for entry in body.dirs:
        path = os.path.abspath(str(entry.path))
        for topic in entry.topics:
            name = str(topic.name)
            for partition in topic.partitions:
                code = _decide(path, known, where.get(TopicPartition(name, int(partition))))
                if not cluster_allowed(ctx, Op.ALTER):  # Kafka: ALTER on the cluster
                    code = CLUSTER_DENIED
                results.setdefault(name, []).append(
                    {"partition_index": int(partition), "error_code": code}
                )
    fields = {
        "throttle_time": 0,
        "results": [
            {"topic_name": name, "partitions": partitions} for name, partitions in results.items()
        ],
    }
    return build_response(API_KEY, request.api_version, fields)


def _decide(path: str, known: set[str], current: str | None) -> ErrorCode:
    if path not in known:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if current is None:
        return ErrorCode.REPLICA_NOT_AVAILABLE
    if current == path:
        return ErrorCode.NONE
    return ErrorCode.POLICY_VIOLATION
