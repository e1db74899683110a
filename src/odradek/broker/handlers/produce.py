"""Produce: validate and append each partition's record batch, answer with base offsets.

Rules kept (Kafka's): each partition's data is exactly one v2 record batch (INVALID_RECORD
otherwise), except in Produce v0-v2, whose message sets (format v0/v1) are up-converted to
one v2 batch before the append, as Kafka 3 did (a corrupt one is CORRUPT_MESSAGE); a batch
is validated (size, magic, CRC32C, max.message.bytes) and appended with offsets assigned in
place; an unknown partition gets UNKNOWN_TOPIC_OR_PARTITION; acks=0 requests get no
response, and when one of their partitions fails the connection is closed so the producer
notices. The response is encoded by the hand-written encoder (hot path).
"""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.broker.context import BrokerContext
from odradek.errors import (
    CorruptRecordError,
    ErrorCode,
    KafkaError,
    UnsupportedForMessageFormatError,
)
from odradek.protocol import (
    ApiKey,
    PartitionProduceResponse,
    Request,
    TopicProduceResponse,
    encode_produce_response,
)
from odradek.protocol.requests import produce_body
from odradek.records.batch import read_prefix
from odradek.records.legacy import is_legacy_message_set, upconvert_message_set

API_KEY = ApiKey.PRODUCE
#: Produce v3 (KIP-98) is the first version that carries v2 record batches only.
_FIRST_V2_ONLY_VERSION = 3


def _upconverted(records: bytes) -> bytes | CorruptRecordError:
    try:
        return upconvert_message_set(records)
    except CorruptRecordError as error:
        return error


def handle(ctx: BrokerContext, request: Request) -> bytes | None:
    body = produce_body(request)
    acks = int(body.acks)
    legacy = request.api_version < _FIRST_V2_ONLY_VERSION
    responses = []
    failed = None
    for topic_data in body.topic_data:
        name = str(topic_data.name)
        partitions = []
        for partition_data in topic_data.partition_data:
            raw = partition_data.records
            records: bytes | CorruptRecordError | None = raw
            if legacy and raw and is_legacy_message_set(raw):
                records = _upconverted(raw)
            result = _append(ctx, name, int(partition_data.index), records, acks)
            if result.error_code and failed is None:
                failed = result
            partitions.append(result)
        responses.append(TopicProduceResponse(name, partitions))
    if acks == 0:
        if failed is not None:
            # Kafka closes the connection: an acks=0 producer has no other way to learn.
            raise KafkaError(
                f"acks=0 produce failed for partition {failed.partition_index}",
                code=ErrorCode(failed.error_code),
            )
        return None
    return encode_produce_response(request.api_version, request.correlation_id, responses)


def _append(
    ctx: BrokerContext,
    topic: str,
    index: int,
    records: bytes | CorruptRecordError | None,
    acks: int,
) -> PartitionProduceResponse:
    topic_partition = TopicPartition(topic, index)
    partition = ctx.replicas.get(topic_partition)
    if partition is None:
        return PartitionProduceResponse(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if not partition.is_leader:
        return PartitionProduceResponse(index, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    if ctx.topics.is_internal(topic):
        # Kafka's ReplicaManager: clients may not append to internal topics.
        return PartitionProduceResponse(index, ErrorCode.INVALID_TOPIC_EXCEPTION)
    try:
        if isinstance(records, CorruptRecordError):
            raise records  # a v0/v1 message set that did not convert
        if not records:
            raise KafkaError("no record batch", code=ErrorCode.INVALID_RECORD)
        _, size = read_prefix(records)
        if size != len(records):
            raise KafkaError(
                "a produce request must carry exactly one record batch per partition",
                code=ErrorCode.INVALID_RECORD if size < len(records) else ErrorCode.CORRUPT_MESSAGE,
            )
        info = partition.append_as_leader(records, acks)
    except CorruptRecordError:
        return PartitionProduceResponse(index, ErrorCode.CORRUPT_MESSAGE)
    except UnsupportedForMessageFormatError:
        # Kafka's ProduceRequest.validateRecords: v3+ carries magic 2 batches only; anything
        # else is an InvalidRecordException, answered INVALID_RECORD.
        return PartitionProduceResponse(index, ErrorCode.INVALID_RECORD)
    except KafkaError as error:
        return PartitionProduceResponse(index, error.error_code)
    ctx.purgatory.notify(topic_partition)
    return PartitionProduceResponse(
        index,
        ErrorCode.NONE,
        info.first_offset,
        info.log_append_time_ms,
        partition.log_start_offset,
    )
