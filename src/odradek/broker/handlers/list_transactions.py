"""ListTransactions: the transactional ids this broker coordinates (KIP-664), filtered by
state (Kafka's names: ``Ongoing``, ``CompleteCommit``, ...; unknown names are reported back),
by producer id, and (v1, KIP-994) by having run longer than ``duration_filter`` ms."""

from __future__ import annotations

from odradek.broker.context import BrokerContext
from odradek.broker.handlers._txn import body_of, optional, transactions
from odradek.broker.txn.records import TxnState
from odradek.errors import KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.LIST_TRANSACTIONS
_STATE_NAMES = {state.kafka_name: state for state in TxnState}


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = body_of(request)
    wanted = [str(name) for name in body.state_filters]
    unknown = [name for name in wanted if name not in _STATE_NAMES]
    states = {_STATE_NAMES[name] for name in wanted if name in _STATE_NAMES}
    producer_ids = {int(pid) for pid in body.producer_id_filters}
    duration_ms = int(optional(body, "duration_filter", -1))
    now_ms = ctx.clock.now_ms()
    try:
        error, found = transactions(ctx).transactions()
    except KafkaError as failure:
        error, found = failure.error_code, []
    listed = [
        {
            "transactional_id": meta.transactional_id,
            "producer_id": meta.producer_id,
            "transaction_state": meta.state.kafka_name,
        }
        for meta in found
        if (not wanted or meta.state in states)
        and (not producer_ids or meta.producer_id in producer_ids)
        and (duration_ms < 0 or (meta.start_ms >= 0 and now_ms - meta.start_ms >= duration_ms))
    ]
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": error,
            "unknown_state_filters": unknown,
            "transaction_states": listed,
        },
    )
