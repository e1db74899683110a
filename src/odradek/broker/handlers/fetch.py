"""Fetch: read each partition from its fetch offset, long-polling until ``min_bytes``.

Limits (KIP-74): ``partition_max_bytes`` per partition and ``max_bytes`` for the whole
response, except that the first partition with data always returns at least one whole batch
so a consumer makes progress. Consumers read up to the high watermark. A fetch from a follower
(``replica_id`` ≥ 0) also tells the leader the follower's log end offset (its fetch offset):
``Partition.update_follower_fetch`` moves the ISR and the high watermark; a broker that is not
a replica of the partition gets NOT_LEADER_OR_FOLLOWER. When the first read
finds fewer than ``min_bytes`` the fetch waits in the purgatory for an append to one of its
partitions, or for ``max_wait_ms``, and reads again. The response carries file slices that
the server sends with ``os.sendfile``; records are empty, never null.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from odradek._types import TopicPartition
from odradek.broker.context import BrokerContext
from odradek.broker.ports import PartitionPort
from odradek.errors import ErrorCode, KafkaError, OffsetOutOfRangeError
from odradek.net.sendfile import FileRegion
from odradek.protocol import (
    ApiKey,
    FetchableTopicResponse,
    FetchPartitionData,
    FetchResponseFrame,
    Request,
    encode_fetch_response,
)
from odradek.protocol.requests import duration_ms, fetch_body

API_KEY = ApiKey.FETCH
READ_COMMITTED = 1


def handle(
    ctx: BrokerContext, request: Request
) -> FetchResponseFrame[FileRegion] | Awaitable[FetchResponseFrame[FileRegion]]:
    body = fetch_body(request)
    responses, total = _read(ctx, request)
    max_wait_ms = duration_ms(body.max_wait)
    if total >= body.min_bytes or max_wait_ms <= 0 or _has_errors(responses):
        return _frame(request, responses)
    return _long_poll(ctx, request, max_wait_ms)


async def _long_poll(
    ctx: BrokerContext, request: Request, max_wait_ms: int
) -> FetchResponseFrame[FileRegion]:
    deadline = ctx.clock.monotonic_ms() + max_wait_ms
    body = fetch_body(request)
    partitions = [
        TopicPartition(str(topic.topic), p.partition)
        for topic in body.topics
        for p in topic.partitions
    ]
    while True:
        remaining = deadline - ctx.clock.monotonic_ms()
        woken = await ctx.purgatory.wait(partitions, remaining)
        responses, total = _read(ctx, request)
        if not woken or total >= body.min_bytes or _has_errors(responses):
            return _frame(request, responses)


def _frame(
    request: Request, responses: list[FetchableTopicResponse[FileRegion]]
) -> FetchResponseFrame[FileRegion]:
    return encode_fetch_response(request.api_version, request.correlation_id, responses)


def _has_errors(responses: list[FetchableTopicResponse[FileRegion]]) -> bool:
    return any(p.error_code for topic in responses for p in topic.partitions)


def _read(
    ctx: BrokerContext, request: Request
) -> tuple[list[FetchableTopicResponse[FileRegion]], int]:
    body = fetch_body(request)
    remaining = body.max_bytes
    read_committed = body.isolation_level == READ_COMMITTED
    total = 0
    responses: list[FetchableTopicResponse[FileRegion]] = []
    for topic in body.topics:
        name = str(topic.topic)
        partitions: list[FetchPartitionData[FileRegion]] = []
        for fetch_partition in topic.partitions:
            index = fetch_partition.partition
            partition = ctx.replicas.get(TopicPartition(name, index))
            if partition is None or not partition.is_leader:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if partition is not None:
                    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                partitions.append(FetchPartitionData(index, code))
                continue
            if body.replica_id >= 0:
                code = _follower_fetched(ctx, partition, body.replica_id, fetch_partition)
                if code is not ErrorCode.NONE:
                    partitions.append(FetchPartitionData(index, code))
                    continue
            aborted = () if read_committed else None
            try:
                info = partition.read(
                    fetch_partition.fetch_offset,
                    min(fetch_partition.partition_max_bytes, max(remaining, 0)),
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


def _follower_fetched(
    ctx: BrokerContext, partition: PartitionPort, replica_id: int, fetch_partition: Any
) -> ErrorCode:
    """A follower's fetch offset is its log end offset: the leader records it."""
    try:
        partition.update_follower_fetch(
            replica_id, fetch_partition.fetch_offset, ctx.clock.monotonic_ms()
        )
    except KafkaError as error:
        return error.error_code
    return ErrorCode.NONE
