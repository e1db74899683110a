"""EndTxn: a transactional producer commits or aborts its transaction (KIP-98). Answered
once the coordinator's PrepareCommit / PrepareAbort is replicated; the markers follow, and
requests of the id answer CONCURRENT_TRANSACTIONS until they are all written."""

from __future__ import annotations

from odradek.broker.auth.checks import require_transactional_id
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._txn import body_of, transactions
from odradek.errors import KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.END_TXN


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = body_of(request)
    transactional_id = str(body.transactional_id)
    producer_id = int(body.producer_id)
    epoch = int(body.producer_epoch)
    try:
        require_transactional_id(ctx, transactional_id)
        code = await transactions(ctx).run(
            transactional_id,
            lambda coordinator, now_ms: coordinator.end_txn(
                now_ms, transactional_id, producer_id, epoch, bool(body.committed)
            ),
        )
    except KafkaError as error:
        code = error.error_code
    return build_response(
        API_KEY,
        request.api_version,
        {
            "throttle_time": 0,
            "error_code": code,
            "producer_id": producer_id,
            "producer_epoch": epoch,
        },
    )
