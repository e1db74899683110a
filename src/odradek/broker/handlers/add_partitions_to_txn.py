"""AddPartitionsToTxn: the partitions a transactional producer is about to write to join its
transaction (KIP-98), or, in the batched form of v4+ with ``verify_only`` (KIP-890 part 1),
whether they are part of it.

v0-v3 carry one transaction and answer per partition; v4+ carry several (a broker's
verification form) with a top-level error. A coordinator error is every partition's error.
"""

from __future__ import annotations

from typing import Any

from odradek._types import TopicPartition
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._topics import by_topic
from odradek.broker.handlers._txn import body_of, optional, transactions
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN
_BATCHED_FROM = 4


def _partitions(topics: Any) -> list[TopicPartition]:
    return [TopicPartition(str(t.name), int(p)) for t in topics for p in t.partitions]


async def _one(
    ctx: BrokerContext,
    transactional_id: str,
    producer_id: int,
    epoch: int,
    partitions: list[TopicPartition],
    verify_only: bool,
) -> dict[TopicPartition, ErrorCode]:
    unknown = [tp for tp in partitions if not ctx.topics.exists(tp.topic)]
    if unknown:
        # Kafka refuses the whole request: unknown ones UNKNOWN_TOPIC_OR_PARTITION, the
        # others OPERATION_NOT_ATTEMPTED.
        return {
            tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if tp in unknown
            else ErrorCode.OPERATION_NOT_ATTEMPTED
            for tp in partitions
        }
    try:
        return await transactions(ctx).run(
            transactional_id,
            lambda coordinator, now_ms: coordinator.add_partitions(
                now_ms, transactional_id, producer_id, epoch, partitions, verify_only=verify_only
            ),
        )
    except KafkaError as error:
        return dict.fromkeys(partitions, error.error_code)


def _results(errors: dict[TopicPartition, ErrorCode]) -> list[dict[str, Any]]:
    topics = by_topic(
        errors.items(),
        lambda index, code: {"partition_index": index, "partition_error_code": code},
    )
    return [{"name": t["name"], "results_by_partition": t["partitions"]} for t in topics]


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = body_of(request)
    if request.api_version < _BATCHED_FROM:
        errors = await _one(
            ctx,
            str(body.v3_and_below_transactional_id),
            int(body.v3_and_below_producer_id),
            int(body.v3_and_below_producer_epoch),
            _partitions(body.v3_and_below_topics),
            False,
        )
        return build_response(
            API_KEY,
            request.api_version,
            {"throttle_time": 0, "results_by_topic_v3_and_below": _results(errors)},
        )
    results = []
    for txn in body.transactions:
        errors = await _one(
            ctx,
            str(txn.transactional_id),
            int(txn.producer_id),
            int(txn.producer_epoch),
            _partitions(txn.topics),
            bool(optional(txn, "verify_only", False)),
        )
        results.append(
            {"transactional_id": str(txn.transactional_id), "topic_results": _results(errors)}
        )
    return build_response(
        API_KEY,
        request.api_version,
        {"throttle_time": 0, "error_code": ErrorCode.NONE, "results_by_transaction": results},
    )
