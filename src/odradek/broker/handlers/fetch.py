"""Fetch: read each partition from its fetch offset, long-polling until ``min_bytes``.

Limits (KIP-74): ``partition_max_bytes`` per partition and ``max_bytes`` for the whole
response, except that the first partition with data always returns at least one whole batch
so a consumer makes progress. Consumers read up to the high watermark; a follower (a request
with ``replica_id`` ≥ 0) reads up to the log end offset, and its fetch
offset, its log end offset, tells the leader how far it has come:
``Partition.update_follower_fetch`` moves the ISR and the high watermark; a broker that is not
a replica of the partition gets NOT_LEADER_OR_FOLLOWER. When the first read
finds fewer than ``min_bytes`` the fetch waits in the purgatory until one of its partitions
may have more for it (a follower's: an append; a consumer's: a move of the high watermark),
or for ``max_wait_ms``, and reads again. The response carries file slices that
the server sends with ``os.sendfile``; records are empty, never null.

Leader epochs (KIP-320, v9+): a partition's ``current_leader_epoch`` (≥ 0) older than this
broker's answers FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (the fetcher's
metadata is stale, or this broker's is), before leadership is checked, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Awaitable

from odradek._types import TopicPartition
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._leader_epochs import check_leader_epoch, current_leader_epoch
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
        woken = await ctx.purgatory.wait(partitions, remaining, replica=body.replica_id >= 0)
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
    replica_id = body.replica_id
    from_replica = replica_id >= 0
    # Once per request: a follower's fetch names every partition it follows from here, idle
    # ones included (no fetch sessions), and each costs this loop's body.
    now_ms = ctx.clock.monotonic_ms() if from_replica else 0
    replicas = ctx.replicas
    aborted = () if body.isolation_level == READ_COMMITTED else None
    total = 0
    responses: list[FetchableTopicResponse[FileRegion]] = []
    for topic in body.topics:
        name = str(topic.topic)
        partitions: list[FetchPartitionData[FileRegion]] = []
        for fetch_partition in topic.partitions:
            index = fetch_partition.partition
            partition = replicas.get(TopicPartition(name, index))
            if partition is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                code = check_leader_epoch(partition, current_leader_epoch(fetch_partition))
                if code is ErrorCode.NONE and not partition.is_leader:
                    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            if partition is None or code is not ErrorCode.NONE:
                partitions.append(FetchPartitionData(index, code))
                continue
            fetch_offset = fetch_partition.fetch_offset
            if from_replica:
                code = _follower_fetched(partition, replica_id, fetch_offset, now_ms)
                if code is not ErrorCode.NONE:
                    partitions.append(FetchPartitionData(index, code))
                    continue
                if fetch_offset == partition.log_end_offset:
                    # Caught up: nothing to read (the common case of an idle partition).
                    high_watermark = partition.high_watermark
                    partitions.append(
                        FetchPartitionData(
                            index,
                            ErrorCode.NONE,
                            high_watermark,
                            high_watermark,
                            partition.log_start_offset,
                            aborted,
                        )
                    )
                    continue
            max_bytes = min(fetch_partition.partition_max_bytes, max(remaining, 0))
            try:
                # A follower reads up to the log end offset, not the high watermark: it
                # copies what the leader has, committed or not (its fetch offset, recorded
                # above, is its log end offset).
                info = partition.read(
                    fetch_offset,
                    max_bytes,
                    min_one_message=total == 0,
                    committed_only=not from_replica,
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
    partition: PartitionPort, replica_id: int, fetch_offset: int, now_ms: int
) -> ErrorCode:
    """A follower's fetch offset is its log end offset: the leader records it."""
    try:
        partition.update_follower_fetch(replica_id, fetch_offset, now_ms)
    except KafkaError as error:
        return error.error_code
    return ErrorCode.NONE
