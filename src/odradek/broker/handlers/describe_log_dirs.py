"""DescribeLogDirs: each ``log.dirs`` directory with the size and lag of the logs it holds.

``topics`` null asks for every partition this broker holds; otherwise for the listed ones (a
partition this broker does not hold is left out, as Kafka leaves it out). Every log dir is
answered, with the logs it holds of those partitions. Per log: ``partition_size`` is the
bytes of its segments, ``offset_lag`` how far its log end offset is behind the high watermark
(0 on a leader), ``is_future_key`` false (no AlterReplicaLogDirs). A dir whose volume cannot
be read answers KAFKA_STORAGE_ERROR. v3+ carries a top-level error code (always NONE); v4+
the volume's total and usable bytes (``os.statvfs``: blocks and blocks available to
unprivileged users).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from odradek._types import TopicPartition
from odradek.broker.auth.checks import CLUSTER_DENIED, Op, cluster_allowed
from odradek.broker.context import BrokerContext
from odradek.broker.ports import LogDirDescription
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.admin_requests import describe_log_dirs_body
from odradek.protocol.builder import build_response

API_KEY = ApiKey.DESCRIBE_LOG_DIRS


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = describe_log_dirs_body(request)
    wanted: list[TopicPartition] | None = None
    if body.topics is not None:
        wanted = [
            TopicPartition(str(topic.topic), int(partition))
            for topic in body.topics
            for partition in topic.partitions
        ]
    if not cluster_allowed(ctx, Op.DESCRIBE):  # Kafka: DESCRIBE on the cluster
        fields = {"throttle_time": 0, "error_code": CLUSTER_DENIED, "results": []}
        return build_response(API_KEY, request.api_version, fields)
    results = [_result(log_dir) for log_dir in ctx.replicas.describe_log_dirs(wanted)]
    fields = {"throttle_time": 0, "error_code": ErrorCode.NONE, "results": results}
    return build_response(API_KEY, request.api_version, fields)


def _result(log_dir: LogDirDescription) -> dict[str, Any]:
    by_topic: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for replica in log_dir.replicas:
        by_topic[replica.topic_partition.topic].append(
            {
                "partition_index": replica.topic_partition.partition,
                "partition_size": replica.size,
                "offset_lag": replica.offset_lag,
                "is_future_key": replica.is_future,
            }
        )
    return {
        "error_code": log_dir.error_code,
        "log_dir": log_dir.path,
        "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
        "total_bytes": log_dir.total_bytes,
        "usable_bytes": log_dir.usable_bytes,
    }
