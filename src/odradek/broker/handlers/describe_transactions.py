"""DescribeTransactions: the state of transactional ids this broker coordinates (KIP-664):
its producer id and epoch, timeout, start time and partitions. An id of another coordinator
answers NOT_COORDINATOR, an unknown one TRANSACTIONAL_ID_NOT_FOUND."""

from __future__ import annotations

import itertools
from typing import Any

from odradek.broker.context import BrokerContext
from odradek.broker.handlers._txn import body_of, transactions
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS


def _state(ctx: BrokerContext, transactional_id: str) -> dict[str, Any]:
    try:
        meta = transactions(ctx).describe(transactional_id)
    except KafkaError as error:
        return {
            "error_code": error.error_code,
            "transactional_id": transactional_id,
            "transaction_state": "",
            "transaction_timeout": 0,
            "transaction_start_time": 0,  # Kafka's default (-1 is unreadable to kio clients)
            "producer_id": -1,
            "producer_epoch": -1,
            "topics": [],
        }
    ordered = sorted(meta.partitions)
    return {
        "error_code": ErrorCode.NONE,
        "transactional_id": transactional_id,
        "transaction_state": meta.state.kafka_name,
        "transaction_timeout": meta.timeout_ms,
        "transaction_start_time": meta.start_ms,
        "producer_id": meta.producer_id,
        "producer_epoch": meta.producer_epoch,
        "topics": [
            {"topic": topic, "partitions": [tp.partition for tp in tps]}
            for topic, tps in itertools.groupby(ordered, key=lambda tp: tp.topic)
        ],
    }


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = body_of(request)
    states = [_state(ctx, str(transactional_id)) for transactional_id in body.transactional_ids]
    return build_response(
        API_KEY, request.api_version, {"throttle_time": 0, "transaction_states": states}
    )
