"""AddOffsetsToTxn: a transactional producer will commit a group's offsets in its transaction
(``send_offsets_to_transaction``): the group's ``__consumer_offsets`` partition joins the
transaction, so the transaction's marker reaches the group coordinator (KIP-98)."""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.broker.auth.checks import Op, require_group, require_transactional_id
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._txn import body_of, transactions
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN
OFFSETS_TOPIC = "__consumer_offsets"


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = body_of(request)
    transactional_id = str(body.transactional_id)
    code = ErrorCode.NONE
    try:
        require_transactional_id(ctx, transactional_id)
        require_group(ctx, Op.READ, str(body.group_id))
        groups = ctx.groups
        if groups is None or not groups.ensure_offsets_topic():
            raise KafkaError("no offsets topic", code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
        tp = TopicPartition(OFFSETS_TOPIC, groups.partition_for(str(body.group_id)))
        errors = await transactions(ctx).run(
            transactional_id,
            lambda coordinator, now_ms: coordinator.add_partitions(
                now_ms, transactional_id, int(body.producer_id), int(body.producer_epoch), [tp]
            ),
        )
        code = errors[tp]
    except KafkaError as error:
        code = error.error_code
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, "error_code": code})
