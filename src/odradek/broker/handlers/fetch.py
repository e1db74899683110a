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
or for ``max_wait_ms``, and reads again (a consumer's partition already at the high watermark
is answered without a read). The response carries file slices that
the server sends with ``os.sendfile``; records are empty, never null.

Leader epochs (KIP-320, v9+): a partition's ``current_leader_epoch`` (≥ 0) older than this
broker's answers FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (the fetcher's
metadata is stale, or this broker's is), before leadership is checked, as Kafka does.

Fetch sessions (KIP-227, v7+; ``broker.fetch_session``): the request's ``session_id`` and
``session_epoch`` pick what is read — the request's partitions, or every partition of an
incremental fetch's session — and an incremental fetch's answer keeps only the partitions with
news. A session error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) is the
response's top-level error, with no partitions. The session is resolved once per request, before
any long poll.

Newer versions: v12+ are flexible; a partition's ``last_fetched_epoch`` (≥ 0) is checked
against the leader's epochs as Kafka's ``Partition.fetchRecords`` does — a fetcher whose log
diverged gets ``diverging_epoch`` (the largest epoch at or below its own, and where it ends)
and no records, a fetch offset below the log start offset OFFSET_OUT_OF_RANGE. v13+ name
topics by id (KIP-516): an id no topic has answers UNKNOWN_TOPIC_ID for its partitions (the
topic is carried under a name no topic can have, so sessions keep it apart). v15+ carry the
replica id inside ``replica_state``. v16+ (KIP-951) name the current leader of a partition
answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, and that broker's endpoint.

Follower fetching (KIP-392, v11+): a consumer's fetch at the leader carrying a ``rack_id`` is
answered, when ``replica.selector.class`` prefers another in-sync replica
(``broker.replica_selector``), with that ``preferred_read_replica`` and no records; a follower
serves consumers up to its own high watermark (learnt from its fetches from the leader), a
fetch offset past it answers OFFSET_NOT_AVAILABLE (the client retries), and a partition the
cluster has but this broker holds no replica of answers NOT_LEADER_OR_FOLLOWER (the client
goes back to the leader).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Sequence
from typing import Any

from odradek._types import TopicPartition
from odradek.broker.auth.checks import TOPIC_DENIED, fetch_denied
from odradek.broker.auth.throttle import fetch_throttle_ms
from odradek.broker.context import BrokerContext
from odradek.broker.fetch_session import (
    FINAL_EPOCH,
    FetchContext,
    SessionError,
)
from odradek.broker.handlers._leader_discovery import LeaderDiscovery
from odradek.broker.handlers._leader_epochs import check_leader_epoch, current_leader_epoch
from odradek.broker.handlers._topic_metadata import find_topic, topic_id_of
from odradek.broker.ports import PartitionPort
from odradek.broker.replica_selector import LEADER_SELECTOR, ReplicaView, select_read_replica
from odradek.errors import ErrorCode, KafkaError, OffsetOutOfRangeError
from odradek.net.sendfile import FileRegion
from odradek.protocol import (
    AbortedTransaction,
    ApiKey,
    FetchableTopicResponse,
    FetchPartitionData,
    FetchResponseFrame,
    Request,
    encode_fetch_response,
)
from odradek.protocol.requests import duration_ms, fetch_body, fetch_replica_id

logger = logging.getLogger(__name__)
API_KEY = ApiKey.FETCH
READ_COMMITTED = 1
#: The first version with ``last_fetched_epoch`` (diverging epochs); by topic id; KIP-951.
#: The first version with the client's ``rack_id`` and ``preferred_read_replica`` (KIP-392).
_FIRST_RACK_ID_VERSION = 11
_FIRST_FLEXIBLE_VERSION = 12
_FIRST_TOPIC_ID_VERSION = 13
_FIRST_LEADER_DISCOVERY_VERSION = 16
#: Names no topic can have (NUL is not a legal topic character): an unknown id's topic.
_UNKNOWN_ID_PREFIX = "\x00"
_ZERO_ID = uuid.UUID(int=0)


def handle(
    ctx: BrokerContext, request: Request
) -> FetchResponseFrame[FileRegion] | Awaitable[FetchResponseFrame[FileRegion]]:
    body = fetch_body(request)
    context = _context(ctx, request)
    if isinstance(context, SessionError):
        return encode_fetch_response(
            request.api_version, request.correlation_id, [], error_code=context.error_code
        )
    responses, total = _read(ctx, request, context)
    max_wait_ms = duration_ms(body.max_wait)
    if total >= body.min_bytes or max_wait_ms <= 0 or _has_errors(responses):
        return _frame(ctx, request, context, responses)
    # Watched now, in the step that read: the long poll's first step runs later, and an
    # append in between (another connection's Produce) would otherwise wake no one.
    replica = fetch_replica_id(request) >= 0
    partitions = _partitions(context)
    watch = ctx.purgatory.watch(partitions, max_wait_ms, replica=replica)
    return _long_poll(ctx, request, context, max_wait_ms, partitions, watch)


def _partitions(context: FetchContext) -> list[TopicPartition]:
    return [
        TopicPartition(topic, p.partition) for topic, requests in context.topics for p in requests
    ]


def _topic_name(ctx: BrokerContext, topic: Any, by_id: bool) -> str:
    """A request topic's name: its ``topic`` (v12-), or the name of the topic with its
    ``topic_id`` (v13+; a name no topic has when none has that id)."""
    if not by_id:
        return str(topic.topic)
    topic_id: uuid.UUID | None = topic.topic_id
    name = None if topic_id is None else find_topic(ctx, topic_id)
    # A null id (a malformed request) is answered as the zero id: UNKNOWN_TOPIC_ID.
    return name if name is not None else f"{_UNKNOWN_ID_PREFIX}{topic_id or _ZERO_ID}"


def _context(ctx: BrokerContext, request: Request) -> FetchContext | SessionError:
    body = fetch_body(request)
    by_id = request.api_version >= _FIRST_TOPIC_ID_VERSION
    topics = [(_topic_name(ctx, topic, by_id), topic.partitions) for topic in body.topics]
    session_epoch = int(getattr(body, "session_epoch", FINAL_EPOCH))
    session_id = int(getattr(body, "session_id", 0))
    if session_epoch == FINAL_EPOCH and session_id == 0:
        return FetchContext(topics)  # sessionless: the common consumer's fetch
    forgotten = [
        (_topic_name(ctx, topic, by_id), topic.partitions)
        for topic in getattr(body, "forgotten_topics_data", ())
    ]
    return ctx.fetch_sessions.new_context(
        session_id,
        session_epoch,
        topics,
        forgotten,
        privileged=fetch_replica_id(request) >= 0,
        now_ms=ctx.clock.monotonic_ms(),
    )


async def _long_poll(
    ctx: BrokerContext,
    request: Request,
    context: FetchContext,
    max_wait_ms: int,
    partitions: list[TopicPartition],
    watch: Any,
) -> FetchResponseFrame[FileRegion]:
    deadline = ctx.clock.monotonic_ms() + max_wait_ms
    body = fetch_body(request)
    replica = fetch_replica_id(request) >= 0
    while True:
        woken = await ctx.purgatory.wait_watched(watch)
        responses, total = _read(ctx, request, context)
        if not woken or total >= body.min_bytes or _has_errors(responses):
            return _frame(ctx, request, context, responses)
        # Watched again before anything else runs: no await between the read and this.
        remaining = deadline - ctx.clock.monotonic_ms()
        watch = ctx.purgatory.watch(partitions, remaining, replica=replica)


def _frame(
    ctx: BrokerContext,
    request: Request,
    context: FetchContext,
    responses: list[FetchableTopicResponse[FileRegion]],
) -> FetchResponseFrame[FileRegion]:
    throttle_ms = 0
    quotas = ctx.quotas
    if quotas is not None and quotas.active and fetch_replica_id(request) < 0:
        size = sum(p.records_size for topic in responses for p in topic.partitions)
        throttle_ms = fetch_throttle_ms(ctx, request, size)
    if context.session is not None:
        responses = _session_answer(context, responses)
    version = request.api_version
    if version < _FIRST_FLEXIBLE_VERSION:
        return encode_fetch_response(
            version,
            request.correlation_id,
            responses,
            session_id=context.session_id,
            throttle_time_ms=throttle_ms,
        )
    discovery = LeaderDiscovery(ctx)
    if version >= _FIRST_TOPIC_ID_VERSION or version >= _FIRST_LEADER_DISCOVERY_VERSION:
        responses = [
            _newer_fields(ctx, version, discovery, topic, partitions)
            for topic, partitions, _ in responses
        ]
    return encode_fetch_response(
        version,
        request.correlation_id,
        responses,
        session_id=context.session_id,
        throttle_time_ms=throttle_ms,
        node_endpoints=discovery.node_endpoints,
    )


def _newer_fields(
    ctx: BrokerContext,
    version: int,
    discovery: LeaderDiscovery,
    topic: str,
    partitions: Sequence[FetchPartitionData[FileRegion]],
) -> FetchableTopicResponse[FileRegion]:
    """A topic's answer with its id (v13+), UNKNOWN_TOPIC_ID for an id no topic has, and the
    current leader of each partition led elsewhere (v16+, KIP-951)."""
    topic_id: uuid.UUID | None = None
    if version >= _FIRST_TOPIC_ID_VERSION:
        if topic.startswith(_UNKNOWN_ID_PREFIX):
            topic_id = uuid.UUID(topic[len(_UNKNOWN_ID_PREFIX) :])
            partitions = [p._replace(error_code=ErrorCode.UNKNOWN_TOPIC_ID) for p in partitions]
        else:
            topic_id = topic_id_of(ctx, topic)
    if version >= _FIRST_LEADER_DISCOVERY_VERSION:
        partitions = [
            p._replace(
                current_leader=discovery.current_leader(TopicPartition(topic, p.partition_index))
            )
            if p.error_code in _LED_ELSEWHERE
            else p
            for p in partitions
        ]
    return FetchableTopicResponse(topic, partitions, topic_id)


_LED_ELSEWHERE = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


def _session_answer(
    context: FetchContext, responses: list[FetchableTopicResponse[FileRegion]]
) -> list[FetchableTopicResponse[FileRegion]]:
    """What the session's client is told: remembered per partition; an incremental fetch
    keeps only the partitions with news."""
    answer: list[FetchableTopicResponse[FileRegion]] = []
    incremental = context.incremental
    # ``_read`` answers each partition of the context once, in its order.
    for (topic, partitions, _), entries in zip(responses, context.cached, strict=True):
        kept: list[FetchPartitionData[FileRegion]] = []
        for data, cached in zip(partitions, entries, strict=True):
            if not incremental:
                cached.remember(data.high_watermark, data.log_start_offset)
                kept.append(data)
            elif (
                data.diverging_epoch[0] >= 0 or data.preferred_read_replica >= 0
            ) or cached.has_news(
                data.error_code, data.high_watermark, data.log_start_offset, data.records_size
            ):
                kept.append(data)
        if kept:
            answer.append(FetchableTopicResponse(topic, kept))
    return answer


def _has_errors(responses: list[FetchableTopicResponse[FileRegion]]) -> bool:
    """Whether some partition must be answered now: an error, a diverging epoch, or a
    preferred read replica (the client moves to it at once, as Kafka answers)."""
    return any(
        p.error_code or p.diverging_epoch[0] >= 0 or p.preferred_read_replica >= 0
        for topic in responses
        for p in topic.partitions
    )


def _read(
    ctx: BrokerContext, request: Request, context: FetchContext
) -> tuple[list[FetchableTopicResponse[FileRegion]], int]:
    body = fetch_body(request)
    remaining = body.max_bytes
    replica_id = fetch_replica_id(request)
    from_replica = replica_id >= 0
    with_epochs = request.api_version >= _FIRST_FLEXIBLE_VERSION
    # Once per request: a follower's fetch reads every partition it follows from here, idle
    # ones included (a session's unchanged partitions are read, not decoded), and each costs
    # this loop's body: an idle one the caught-up branch only.
    now_ms = ctx.clock.monotonic_ms() if from_replica else 0
    replicas = ctx.replicas
    read_committed = body.isolation_level == READ_COMMITTED and not from_replica
    aborted = () if read_committed else None
    total = 0
    responses: list[FetchableTopicResponse[FileRegion]] = []
    denied = None if ctx.authorizer is None else fetch_denied(ctx, from_replica, context.topics)
    # KIP-392 (v11+): a consumer may read from a follower, and the leader may send it to one.
    follower_fetching = not from_replica and request.api_version >= _FIRST_RACK_ID_VERSION
    client_rack = str(getattr(body, "rack_id", None) or "")
    for name, requests in context.topics:
        partitions: list[FetchPartitionData[FileRegion]] = []
        if denied and name in denied:
            partitions.extend(FetchPartitionData(p.partition, TOPIC_DENIED) for p in requests)
            responses.append(FetchableTopicResponse(name, partitions))
            continue
        for fetch_partition in requests:
            index = fetch_partition.partition
            topic_partition = TopicPartition(name, index)
            partition = replicas.get(topic_partition)
            if partition is None:
                code = _not_here(ctx, topic_partition)
            else:
                code = check_leader_epoch(partition, current_leader_epoch(fetch_partition))
                if (
                    code is ErrorCode.NONE
                    and not partition.is_leader
                    and not (follower_fetching and _follows(ctx, partition))
                ):
                    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            if partition is None or code is not ErrorCode.NONE:
                partitions.append(FetchPartitionData(index, code))
                continue
            fetch_offset = fetch_partition.fetch_offset
            if follower_fetching:
                redirect = _closest_replica(ctx, partition, client_rack, fetch_offset, aborted)
                if redirect is not None:
                    partitions.append(redirect)
                    continue
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
            if with_epochs:
                diverged = _diverging_epoch(partition, fetch_partition, aborted)
                if diverged is not None:
                    partitions.append(diverged)
                    continue
            if (
                not from_replica
                and fetch_offset > partition.high_watermark
                and not partition.is_leader
            ):
                # Past this follower's high watermark (it lags the leader's): the client
                # backs off and retries, as Kafka answers a follower fetch (KIP-392).
                partitions.append(_offset_not_available(partition, index, aborted))
                continue
            if not from_replica and fetch_offset == partition.high_watermark:
                # A consumer caught up: nothing to read below the high watermark (nor the last
                # stable offset, which is never above it). Tailing consumers ask for such
                # partitions on most fetches, and a long poll reads them twice.
                partitions.append(_caught_up(partition, index, read_committed, aborted))
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
                    read_committed=read_committed,
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
            if size and not from_replica and not partition.is_leader:
                _count_follower_read(ctx, partition)
            total += size
            remaining -= size
            stable = partition.high_watermark
            found: tuple[AbortedTransaction, ...] | None = aborted
            if read_committed:
                stable = partition.last_stable_offset
                found = _aborted(partition, fetch_offset, stable) if size else ()
            partitions.append(
                FetchPartitionData(
                    index,
                    ErrorCode.NONE,
                    partition.high_watermark,
                    stable,
                    info.log_start_offset,
                    found,
                    -1,
                    records,
                    size,
                )
            )
        responses.append(FetchableTopicResponse(name, partitions))
    return responses, total


def _caught_up(
    partition: PartitionPort,
    index: int,
    read_committed: bool,
    aborted: tuple[AbortedTransaction, ...] | None,
) -> FetchPartitionData[FileRegion]:
    """The answer for a consumer's partition read at its high watermark: no records, the
    offsets as a read would report them."""
    high_watermark = partition.high_watermark
    if read_committed:
        stable, aborted = partition.last_stable_offset, ()
    else:
        stable = high_watermark
    return FetchPartitionData(
        index, ErrorCode.NONE, high_watermark, stable, partition.log_start_offset, aborted
    )


def _aborted(
    partition: PartitionPort, fetch_offset: int, last_stable_offset: int
) -> tuple[AbortedTransaction, ...]:
    """The aborted transactions a read_committed reader needs to drop records of what was
    read from ``fetch_offset`` (below the last stable offset)."""
    return tuple(
        AbortedTransaction(entry.producer_id, entry.first_offset)
        for entry in partition.aborted_transactions(fetch_offset, last_stable_offset)
    )


def _diverging_epoch(
    partition: PartitionPort, fetch_partition: Any, aborted: tuple[AbortedTransaction, ...] | None
) -> FetchPartitionData[FileRegion] | None:
    """The answer to a fetcher whose ``last_fetched_epoch`` shows a log that diverged from
    this leader's (or a fetch offset below the log start offset), as Kafka's
    ``Partition.readRecords`` gives it; ``None``: read as usual."""
    last_fetched_epoch = int(getattr(fetch_partition, "last_fetched_epoch", -1))
    if last_fetched_epoch < 0:
        return None
    fetch_offset = fetch_partition.fetch_offset
    found = partition.end_offset_for_epoch(last_fetched_epoch)
    high_watermark = partition.high_watermark
    log_start_offset = partition.log_start_offset
    if found.epoch < 0 or found.end_offset < 0 or fetch_offset < log_start_offset:
        return FetchPartitionData(
            fetch_partition.partition,
            ErrorCode.OFFSET_OUT_OF_RANGE,
            high_watermark,
            high_watermark,
            log_start_offset,
            aborted,
        )
    if found.epoch < last_fetched_epoch or found.end_offset < fetch_offset:
        return FetchPartitionData(
            fetch_partition.partition,
            ErrorCode.NONE,
            high_watermark,
            high_watermark,
            log_start_offset,
            aborted,
            diverging_epoch=(found.epoch, found.end_offset),
        )
    return None


def _follower_fetched(
    partition: PartitionPort, replica_id: int, fetch_offset: int, now_ms: int
) -> ErrorCode:
    """A follower's fetch offset is its log end offset: the leader records it."""
    try:
        partition.update_follower_fetch(replica_id, fetch_offset, now_ms)
    except KafkaError as error:
        return error.error_code
    return ErrorCode.NONE


def _not_here(ctx: BrokerContext, topic_partition: TopicPartition) -> ErrorCode:
    """A partition with no replica here: NOT_LEADER_OR_FOLLOWER when the cluster has it (a
    client sent here by an older leader, or to a replica since removed: it goes back to the
    leader, KIP-392), UNKNOWN_TOPIC_OR_PARTITION when it does not exist."""
    cluster = ctx.cluster
    if cluster is not None and cluster.cache.partition(topic_partition) is not None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _follows(ctx: BrokerContext, partition: PartitionPort) -> bool:
    """Whether this broker is a follower of ``partition`` with a live leader: it serves
    consumers up to its own high watermark (KIP-392)."""
    return partition.leader_id >= 0 and ctx.broker_id in partition.replicas


def _closest_replica(
    ctx: BrokerContext,
    partition: PartitionPort,
    client_rack: str,
    fetch_offset: int,
    aborted: tuple[AbortedTransaction, ...] | None,
) -> FetchPartitionData[FileRegion] | None:
    """On the leader: the answer naming the replica ``replica.selector.class`` prefers for a
    consumer in ``client_rack`` (no records, as Kafka's ``findPreferredReadReplica``), or
    ``None`` to read here."""
    selector = ctx.config.replica_selector_class
    cluster = ctx.cluster
    if selector == LEADER_SELECTOR or not client_rack or cluster is None:
        return None
    if not partition.is_leader:
        return None
    leader_id = ctx.broker_id
    views = []
    for replica in partition.replicas:
        broker = cluster.cache.broker(replica)
        rack = ctx.config.broker_rack if replica == leader_id else None
        if replica != leader_id:
            state = partition.follower_state(replica)
            if broker is None or state is None:
                continue
            rack = broker.rack
            views.append(
                ReplicaView(replica, rack, state.log_end_offset, -1, state.last_caught_up_ms)
            )
        else:
            views.append(ReplicaView(replica, rack, partition.log_end_offset))
    chosen = select_read_replica(
        selector,
        client_rack=client_rack,
        leader_id=leader_id,
        replicas=views,
        isr=partition.isr,
        fetch_offset=fetch_offset,
    )
    if chosen == leader_id:
        return None
    high_watermark = partition.high_watermark
    return FetchPartitionData(
        partition.topic_partition.partition,
        ErrorCode.NONE,
        high_watermark,
        high_watermark,
        partition.log_start_offset,
        aborted,
        chosen,
    )


def _offset_not_available(
    partition: PartitionPort, index: int, aborted: tuple[AbortedTransaction, ...] | None
) -> FetchPartitionData[FileRegion]:
    high_watermark = partition.high_watermark
    return FetchPartitionData(
        index,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        high_watermark,
        high_watermark,
        partition.log_start_offset,
        aborted,
    )


def _count_follower_read(ctx: BrokerContext, partition: PartitionPort) -> None:
    partition.follower_reads += 1
    if partition.follower_reads == 1:
        logger.info(
            "broker %d serves consumer fetches of %s as a follower (KIP-392)",
            ctx.broker_id,
            partition.topic_partition,
        )
