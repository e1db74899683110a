"""Fetch: read each partition from its fetch offset, long-polling until ``min_bytes``.

Limits (KIP-74): ``partition_max_bytes`` per partition and ``max_bytes`` for the whole
response, except that the first partition with data always returns at least one whole batch
so a consumer makes progress. Consumers read up to the high watermark. When the first read
finds fewer than ``min_bytes`` the fetch waits in the purgatory for an append to one of its
partitions, or for ``max_wait_ms``, and reads again. The response carries file slices that
the server sends with ``os.sendfile``; records are empty, never null.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from odradek._types import TopicPartition
from odradek.broker.context import BrokerContext
from odradek.errors import ErrorCode, OffsetOutOfRangeError
from odradek.protocol import (
    ApiKey,
    FetchableTopicResponse,
    FetchPartitionData,
    FetchResponseFrame,
    Request,
    encode_fetch_response,
)
from odradek.protocol.builder import request_value
from odradek.storage.file_records import FileSlice

API_KEY = ApiKey.FETCH
_MAX_INT32 = 2**31 - 1
READ_COMMITTED = 1


def handle(
    ctx: BrokerContext, request: Request
) -> FetchResponseFrame[FileSlice] | Awaitable[FetchResponseFrame[FileSlice]]:
    body: Any = request.body  # a kio request of any supported version
    responses, total = _read(ctx, request)
    max_wait_ms = int(request_value(body.max_wait))
    if total >= int(body.min_bytes) or max_wait_ms <= 0 or _has_errors(responses):
        return _frame(request, responses)
    return _long_poll(ctx, request, max_wait_ms)


async def _long_poll(
    ctx: BrokerContext, request: Request, max_wait_ms: int
) -> FetchResponseFrame[FileSlice]:
    deadline = ctx.clock.monotonic_ms() + max_wait_ms
    partitions = [
        TopicPartition(str(topic.topic), int(p.partition))
        for topic in _body(request).topics
        for p in topic.partitions
    ]
    while True:
        remaining = deadline - ctx.clock.monotonic_ms()
        woken = await ctx.purgatory.wait(partitions, remaining)
        responses, total = _read(ctx, request)
        if not woken or total >= int(_body(request).min_bytes) or _has_errors(responses):
            return _frame(request, responses)


def _frame(
    request: Request, responses: list[FetchableTopicResponse[FileSlice]]
) -> FetchResponseFrame[FileSlice]:
    return encode_fetch_response(request.api_version, request.correlation_id, responses)


def _has_errors(responses: list[FetchableTopicResponse[FileSlice]]) -> bool:
    return any(p.error_code for topic in responses for p in topic.partitions)


def _read(
    ctx: BrokerContext, request: Request
) -> tuple[list[FetchableTopicResponse[FileSlice]], int]:
    body: Any = request.body  # a kio request of any supported version
    remaining = int(getattr(body, "max_bytes", _MAX_INT32))
    read_committed = int(getattr(body, "isolation_level", 0)) == READ_COMMITTED
    total = 0
    responses: list[FetchableTopicResponse[FileSlice]] = []
    for topic in body.topics:
        name = str(topic.topic)
        partitions: list[FetchPartitionData[FileSlice]] = []
        for fetch_partition in topic.partitions:
            index = int(fetch_partition.partition)
            partition = ctx.replicas.get(TopicPartition(name, index))
            if partition is None or not partition.is_leader:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if partition is not None:
                    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                partitions.append(FetchPartitionData(index, code))
                continue
            aborted = () if read_committed else None
            try:
                info = partition.read(
                    int(fetch_partition.fetch_offset),
                    min(int(fetch_partition.partition_max_bytes), max(remaining, 0)),
                    min_one_message=total == 0,
                )
            except OffsetOutOfRangeError:
                partitions.append(
                    FetchPartitionData(
                        index,
                        ErrorCode.OFFSET_OUT_OF_RANGE,
                        partition.high_watermark,
                        partition.high_watermark,
                        partition.log_start_offset,
                        aborted,
                    )
                )
                continue
            records = info.records
            size = 0 if records is None else records.length
            total += size
            remaining -= size
            partitions.append(
                FetchPartitionData(
                    index,
                    ErrorCode.NONE,
                    partition.high_watermark,
                    partition.high_watermark,
                    info.log_start_offset,
                    aborted,
                    -1,
                    records,
                    size,
                )
            )
        responses.append(FetchableTopicResponse(name, partitions))
    return responses, total


def _body(request: Request) -> Any:
    return request.body  # a kio request of any supported version
