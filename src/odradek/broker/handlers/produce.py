"""Produce: validate and append each partition's record batch, answer with base offsets.

Rules kept (Kafka's): each partition's data is exactly one v2 record batch (INVALID_RECORD
otherwise), except in Produce v0-v2, whose message sets (format v0/v1) are up-converted to
one v2 batch before the append, as Kafka 3 did (a corrupt one is CORRUPT_MESSAGE); a batch
is validated (size, magic, CRC32C, max.message.bytes) and appended with offsets assigned in
place; an unknown partition gets UNKNOWN_TOPIC_OR_PARTITION. What ``acks`` asks for is
``broker.acks``'s: acks=0 requests get no response, and when one of their partitions fails
the connection is closed so the producer notices; acks=all is refused per partition with
NOT_ENOUGH_REPLICAS before the append when the ISR is below ``min.insync.replicas``, and
answered once the high watermark passed every appended partition — at once when the append
moved it (an ISR of one), otherwise through the delayed-produce purgatory, whose outcome
(REQUEST_TIMED_OUT after the request's ``timeout_ms``, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
NOT_LEADER_OR_FOLLOWER) replaces the partition's error code. The response is encoded by the
hand-written encoder (hot path).

A batch refused for some of its records — keyless records on a compacted topic — answers
INVALID_RECORD with those records named in ``record_errors`` (v8+, KIP-467) and the reason in
``error_message``, so the producer fails only them. From v10 (KIP-951) a partition answered
NOT_LEADER_OR_FOLLOWER names its current leader and the response carries that broker's
endpoint (``_leader_discovery``). From v13 (KIP-516, Kafka 4.1) topics are named by id, in the
request and the answer: each id is resolved to its topic's name once per request
(``_names_by_id``), and an id this broker does not know answers UNKNOWN_TOPIC_ID for each of
its partitions (nothing of it is appended or verified) while the request's other topics go on.

Transaction verification (KIP-890 part 1, ``transaction.partition.verification.enable``): a
transactional batch to a partition where its producer has no transaction open is appended only
once the transactional id's coordinator confirmed the partition is in the producer's ongoing
transaction (``txn.verification``; the request waits, the connection's other requests do
not). Otherwise the partition answers INVALID_TXN_STATE (not in the transaction, or no
transactional id in the request), INVALID_PRODUCER_EPOCH (fenced) or NOT_ENOUGH_REPLICAS
(the coordinator could not answer: retry), and nothing is appended — so the late batch of an
aborted transaction cannot open a transaction no coordinator will ever end.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import uuid
from collections.abc import Awaitable, Sequence
from typing import cast

from odradek._types import TopicPartition
from odradek.broker.acks import Acks, check_enough_replicas, parse_acks
from odradek.broker.auth.checks import TOPIC_DENIED, Op, topic_allowed
from odradek.broker.auth.throttle import produce_throttle_ms
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._leader_discovery import LeaderDiscovery
from odradek.broker.handlers._topic_metadata import find_topic
from odradek.broker.ports import PartitionPort
from odradek.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    KafkaError,
    UnsupportedForMessageFormatError,
)
from odradek.protocol import (
    ApiKey,
    BatchIndexAndErrorMessage,
    PartitionProduceResponse,
    Request,
    TopicProduceResponse,
    encode_produce_response,
)
from odradek.protocol.requests import (
    NamedProduceTopicData,
    ProduceRequestBody,
    ProduceTopicData,
    ProduceTopicDataById,
    duration_ms,
    produce_body,
)
from odradek.records.batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_BIT,
    HEADER_SIZE,
    MAGIC_OFFSET,
    MAGIC_V2,
    PRODUCER_ID_OFFSET,
    TRANSACTIONAL_BIT,
    read_prefix,
)
from odradek.records.legacy import is_legacy_message_set, upconvert_message_set

logger = logging.getLogger(__name__)

API_KEY = ApiKey.PRODUCE
#: Produce v3 (KIP-98) is the first version that carries v2 record batches only.
_FIRST_V2_ONLY_VERSION = 3
#: Produce v10 is the first with KIP-951's leader-discovery fields.
_FIRST_LEADER_DISCOVERY_VERSION = 10
#: Produce v13 is the first naming topics by id (KIP-516).
_FIRST_TOPIC_ID_VERSION = 13

#: An acks=all partition that appended: its partition, the offset its high watermark must
#: reach, and where its answer sits (the topic's list of answers, the index in it).
_Waiting = tuple[PartitionPort, int, list[PartitionProduceResponse], int]
_NONE = ErrorCode.NONE
#: A partition answer that names no other leader (KIP-951 fields unset).
_NO_LEADER = (-1, -1)
#: Where a v2 batch keeps its attributes' low byte and its producer id and epoch.
_ATTRIBUTES_LOW = ATTRIBUTES_OFFSET + 1
_PRODUCER = struct.Struct(">qh")
_TXN_OR_CONTROL = TRANSACTIONAL_BIT | CONTROL_BIT


def _upconverted(records: bytes) -> bytes | CorruptRecordError:
    try:
        return upconvert_message_set(records)
    except CorruptRecordError as error:
        return error


def handle(ctx: BrokerContext, request: Request) -> bytes | Awaitable[bytes | None] | None:
    body = produce_body(request)
    throttle_ms = produce_throttle_ms(ctx, request)  # producer_byte_rate (KIP-219)
    try:
        acks = parse_acks(int(body.acks))
    except KafkaError as error:
        return _refuse_all(request, body, error.error_code)
    names = _names_by_id(ctx, body) if request.api_version >= _FIRST_TOPIC_ID_VERSION else None
    if ctx.txn_verifier is not None:
        unverified = _to_verify(ctx, body, names)
        if unverified:
            return _verified_produce(ctx, request, body, names, acks, throttle_ms, unverified)
    return _produce(ctx, request, body, names, acks, throttle_ms)


def _named(body: ProduceRequestBody) -> Sequence[NamedProduceTopicData]:
    """A v0-v12 request's topics, which carry their names (no copy: a typed view)."""
    return cast("Sequence[NamedProduceTopicData]", body.topic_data)


def _by_id(body: ProduceRequestBody) -> Sequence[ProduceTopicDataById]:
    """A v13+ request's topics, which carry their ids instead."""
    return cast("Sequence[ProduceTopicDataById]", body.topic_data)


#: v13's topics: each requested id's topic name (``None``: no topic has that id here).
_Names = dict[uuid.UUID | None, str | None]


def _names_by_id(ctx: BrokerContext, body: ProduceRequestBody) -> _Names:
    """Each topic id of a v13 request resolved to its name, once per request (v0-v12 name
    their topics: the handler reads ``name`` and builds no such map)."""
    names: _Names = {}
    for topic_data in _by_id(body):
        topic_id = topic_data.topic_id
        if topic_id not in names:
            names[topic_id] = None if topic_id is None else find_topic(ctx, topic_id)
    return names


def _produce(
    ctx: BrokerContext,
    request: Request,
    body: ProduceRequestBody,
    names: _Names | None,
    acks: Acks,
    throttle_ms: int,
    refusals: dict[TopicPartition, ErrorCode] | None = None,
) -> bytes | Awaitable[bytes] | None:
    """Appends each partition's batch and answers (``names``: a v13 request's topic names by
    id, ``None`` before v13; ``refusals``: partitions answered with the error given, nothing
    appended — those transaction verification refused)."""
    legacy = request.api_version < _FIRST_V2_ONLY_VERSION
    waits = acks.waits_for_replication
    responses = []
    failed = None
    waiting: list[_Waiting] = []
    replicated = True  # every acks=all append already passed by the high watermark
    # v0-v12 topics carry names; v13's ids are read through a cast (a typed view, no copy).
    for topic_data in _named(body):
        if names is None:
            name = str(topic_data.name)
            topic_id = None
        else:
            topic_id = cast("ProduceTopicDataById", topic_data).topic_id
            found = names[topic_id]
            if found is None:  # Kafka's: every partition of an unknown id
                responses.append(_refused(topic_data, ErrorCode.UNKNOWN_TOPIC_ID, "", topic_id))
                failed = failed or PartitionProduceResponse(-1, ErrorCode.UNKNOWN_TOPIC_ID)
                continue
            name = found
        # Read once per topic, not per partition.
        internal = ctx.topics.is_internal(name)
        partitions: list[PartitionProduceResponse] = []
        if ctx.authorizer is not None and not topic_allowed(ctx, Op.WRITE, name):  # Kafka's
            responses.append(_refused(topic_data, TOPIC_DENIED, name, topic_id))
            failed = failed or PartitionProduceResponse(-1, TOPIC_DENIED)
            continue
        for partition_data in topic_data.partition_data:
            raw = partition_data.records
            records: bytes | CorruptRecordError | None = raw
            if legacy and raw and is_legacy_message_set(raw):
                records = _upconverted(raw)
            index = int(partition_data.index)
            refused = refusals.get(TopicPartition(name, index)) if refusals else None
            if refused is not None:
                result, partition = PartitionProduceResponse(index, refused), None
            else:
                result, partition = _append(ctx, name, index, records, acks, internal)
            if result.error_code:
                if failed is None:
                    failed = result
            elif waits and partition is not None:
                required = partition.log_end_offset
                waiting.append((partition, required, partitions, len(partitions)))
                replicated = replicated and partition.high_watermark >= required
            partitions.append(result)
        responses.append(TopicProduceResponse(name, partitions, topic_id))
    if not acks.responds:
        if failed is not None:
            # Kafka closes the connection: an acks=0 producer has no other way to learn.
            raise KafkaError(
                f"acks=0 produce failed for partition {failed.partition_index}",
                code=ErrorCode(failed.error_code),
            )
        return None
    if not replicated:
        return _when_replicated(
            ctx, request, responses, waiting, duration_ms(body.timeout), throttle_ms
        )
    if failed is not None and request.api_version >= _FIRST_LEADER_DISCOVERY_VERSION:
        return _encode_with_leaders(ctx, request, responses, throttle_ms)
    return encode_produce_response(
        request.api_version, request.correlation_id, responses, throttle_time_ms=throttle_ms
    )


#: A transactional batch whose producer has no transaction open on its partition: the
#: partition, its producer id and epoch, and the guard it is verified under.
_Unverified = tuple[TopicPartition, PartitionPort, int, int, object]


def _to_verify(
    ctx: BrokerContext, body: ProduceRequestBody, names: _Names | None
) -> list[_Unverified]:
    """The partitions whose batch needs its coordinator's word first (KIP-890 part 1): a
    transactional data batch (magic 2) to a partition led here whose producer has no
    transaction open there (``names``: as ``_produce``'s; an unknown id's partitions are
    skipped). Anything else the append path answers."""
    found: list[_Unverified] = []
    # v0-v12 topics carry names; v13's ids are read through a cast (a typed view, no copy).
    for topic_data in _named(body):
        if names is None:
            name = str(topic_data.name)
        else:
            known = names[cast("ProduceTopicDataById", topic_data).topic_id]
            if known is None:
                continue  # the append path answers UNKNOWN_TOPIC_ID
            name = known
        for partition_data in topic_data.partition_data:
            raw = partition_data.records
            if (
                not raw
                or len(raw) < HEADER_SIZE
                or raw[MAGIC_OFFSET] != MAGIC_V2
                or raw[_ATTRIBUTES_LOW] & _TXN_OR_CONTROL != TRANSACTIONAL_BIT
            ):
                continue
            tp = TopicPartition(name, int(partition_data.index))
            partition = ctx.replicas.get(tp)
            if partition is None or not partition.is_leader:
                continue
            if ctx.authorizer is not None and not topic_allowed(ctx, Op.WRITE, name):
                continue
            producer_id, epoch = _PRODUCER.unpack_from(raw, PRODUCER_ID_OFFSET)
            guard = partition.verification_guard(producer_id)
            if guard is not None:
                found.append((tp, partition, producer_id, epoch, guard))
    return found


async def _verified_produce(
    ctx: BrokerContext,
    request: Request,
    body: ProduceRequestBody,
    names: _Names | None,
    acks: Acks,
    throttle_ms: int,
    unverified: list[_Unverified],
) -> bytes | None:
    """The produce once the coordinators answered for ``unverified``: the partitions they
    did not confirm (or whose guard a marker voided meanwhile) are refused."""
    verifier = ctx.txn_verifier
    assert verifier is not None
    transactional_id = body.transactional_id
    answers: dict[TopicPartition, ErrorCode] = {}
    if transactional_id is None:
        # No id to ask about: nothing can vouch for the batch.
        answers = {tp: ErrorCode.INVALID_TXN_STATE for tp, *_ in unverified}
    else:
        by_producer: dict[tuple[int, int], list[TopicPartition]] = {}
        for tp, _, producer_id, epoch, _ in unverified:
            by_producer.setdefault((producer_id, epoch), []).append(tp)
        for found in await asyncio.gather(
            *(
                verifier.verify(str(transactional_id), producer_id, epoch, tps)
                for (producer_id, epoch), tps in by_producer.items()
            )
        ):
            answers.update(found)
    refusals: dict[TopicPartition, ErrorCode] = {}
    for tp, partition, producer_id, _, guard in unverified:
        code = answers.get(tp, ErrorCode.INVALID_TXN_STATE)
        if code is _NONE and not partition.verification_holds(producer_id, guard):
            code = ErrorCode.INVALID_TXN_STATE  # its transaction ended while we asked
        if code is not _NONE:
            logger.debug(
                "%s: transactional batch of producer %d refused: %s", tp, producer_id, code.name
            )
            refusals[tp] = code
    result = _produce(ctx, request, body, names, acks, throttle_ms, refusals)
    if result is None or isinstance(result, bytes):
        return result
    return await result


def _encode_with_leaders(
    ctx: BrokerContext, request: Request, responses: list[TopicProduceResponse], throttle_ms: int
) -> bytes:
    """The response with each NOT_LEADER_OR_FOLLOWER partition's current leader named
    (KIP-951) and those leaders' endpoints."""
    discovery = LeaderDiscovery(ctx)
    named = [
        TopicProduceResponse(
            topic.name,
            [
                answer._replace(
                    current_leader=discovery.current_leader(
                        TopicPartition(topic.name, answer.partition_index)
                    )
                )
                if answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
                else answer
                for answer in topic.partition_responses
            ],
            topic.topic_id,
        )
        for topic in responses
    ]
    return encode_produce_response(
        request.api_version,
        request.correlation_id,
        named,
        throttle_time_ms=throttle_ms,
        node_endpoints=discovery.node_endpoints,
    )


async def _when_replicated(
    ctx: BrokerContext,
    request: Request,
    responses: list[TopicProduceResponse],
    waiting: list[_Waiting],
    timeout_ms: int,
    throttle_ms: int,
) -> bytes:
    """The response once the delayed produce settled each waiting partition."""
    errors = await ctx.replicas.delayed_produce.wait(
        [(partition, required) for partition, required, _, _ in waiting], timeout_ms
    )
    for (_, _, answers, index), error in zip(waiting, errors, strict=True):
        if error:
            answers[index] = answers[index]._replace(error_code=error)
    if any(errors) and request.api_version >= _FIRST_LEADER_DISCOVERY_VERSION:
        return _encode_with_leaders(ctx, request, responses, throttle_ms)
    return encode_produce_response(
        request.api_version, request.correlation_id, responses, throttle_time_ms=throttle_ms
    )


def _refuse_all(request: Request, body: ProduceRequestBody, code: ErrorCode) -> bytes:
    """Every partition answered ``code``, nothing appended (an invalid acks)."""
    by_id = request.api_version >= _FIRST_TOPIC_ID_VERSION
    responses = (
        [_refused(topic_data, code, "", topic_data.topic_id) for topic_data in _by_id(body)]
        if by_id
        else [_refused(topic_data, code, str(topic_data.name), None) for topic_data in _named(body)]
    )
    return encode_produce_response(request.api_version, request.correlation_id, responses)


def _refused(
    topic_data: ProduceTopicData, code: ErrorCode, name: str, topic_id: uuid.UUID | None
) -> TopicProduceResponse:
    """Every partition of the topic answered ``code`` (the answer names the topic by
    ``topic_id`` from v13, by ``name`` before)."""
    return TopicProduceResponse(
        name,
        [PartitionProduceResponse(int(p.index), code) for p in topic_data.partition_data],
        topic_id,
    )


def _append(
    ctx: BrokerContext,
    topic: str,
    index: int,
    records: bytes | CorruptRecordError | None,
    acks: Acks,
    internal: bool,
) -> tuple[PartitionProduceResponse, PartitionPort | None]:
    """One partition's answer, and its partition when the batch was appended (``internal``:
    whether ``topic`` is an internal topic)."""
    topic_partition = TopicPartition(topic, index)
    partition = ctx.replicas.get(topic_partition)
    if partition is None:
        return PartitionProduceResponse(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), None
    if not partition.is_leader:
        return PartitionProduceResponse(index, ErrorCode.NOT_LEADER_OR_FOLLOWER), None
    if internal:
        # Kafka's ReplicaManager: clients may not append to internal topics.
        return PartitionProduceResponse(index, ErrorCode.INVALID_TOPIC_EXCEPTION), None
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
        if acks.waits_for_replication:
            check_enough_replicas(acks, partition)
        info = partition.append_as_leader(records)
    except CorruptRecordError:
        return PartitionProduceResponse(index, ErrorCode.CORRUPT_MESSAGE), None
    except InvalidRecordError as error:
        # KIP-467: name the records that made the batch fail, when only some did.
        return (
            PartitionProduceResponse(
                index,
                error.error_code,
                record_errors=tuple(
                    BatchIndexAndErrorMessage(batch_index, message)
                    for batch_index, message in error.record_errors
                ),
                error_message=str(error),
            ),
            None,
        )
    except UnsupportedForMessageFormatError:
        # Kafka's ProduceRequest.validateRecords: v3+ carries magic 2 batches only; anything
        # else is an InvalidRecordException, answered INVALID_RECORD.
        return PartitionProduceResponse(index, ErrorCode.INVALID_RECORD), None
    except KafkaError as error:
        return PartitionProduceResponse(index, error.error_code), None
    except OSError as error:
        # A disk that failed under the log (the storage layer maps the append's own write
        # errors; this is whatever else a full or failing disk raises): the partition
        # answers KAFKA_STORAGE_ERROR, the connection and the other partitions go on.
        logger.warning("%s: produce failed on storage: %s", topic_partition, error)
        return PartitionProduceResponse(index, ErrorCode.KAFKA_STORAGE_ERROR), None
    # No wake-up here: the partition's own listeners wake the followers' fetches on every
    # leader append (``on_leader_append``) and the consumers' on a high-watermark move.
    # tuple.__new__ skips the NamedTuple's Python-level __new__: every field, in order. The
    # log start offset is the append's (read under the log's lock, as the partition's would be).
    answer = (index, _NONE, info.first_offset, info.log_append_time_ms, info.log_start_offset)
    return tuple.__new__(PartitionProduceResponse, (*answer, (), None, _NO_LEADER)), partition
