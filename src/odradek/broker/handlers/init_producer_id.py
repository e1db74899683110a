"""InitProducerId: a producer id and epoch for an idempotent producer (KIP-98).

kafka-python's producer is idempotent by default and asks for an id before it produces. Ids
are handed out from one counter per broker process that starts at a random 31-bit value, each
with epoch 0, so ids given by one process never repeat and two processes (or a restart) are
unlikely to collide. They are not persisted: Kafka's ``/latest_producer_id_block`` allocation
comes with the transaction coordinator.

The broker does not enforce idempotence yet: Produce neither checks sequence numbers nor
fences epochs, so a retried batch may be appended twice. Transactions are not supported: a
request with a ``transactional_id`` answers INVALID_REQUEST (transactional producers fail at
FindCoordinator before they get here).
"""

from __future__ import annotations

import itertools
import logging
import random
from typing import Any

from odradek.broker.context import BrokerContext
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.admin_requests import init_producer_id_body
from odradek.protocol.builder import build_response

API_KEY = ApiKey.INIT_PRODUCER_ID

logger = logging.getLogger(__name__)

# ``next`` on an itertools.count is atomic under the GIL, so embedded brokers running on
# several threads of one process still get distinct ids.
_producer_ids = itertools.count(random.randrange(2**31))


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body = init_producer_id_body(request)
    fields: dict[str, Any] = {"throttle_time": 0, "error_code": ErrorCode.NONE}
    if body.transactional_id is not None:
        logger.warning(
            "InitProducerId for transactional id %r refused: transactions are not supported",
            body.transactional_id,
        )
        fields.update(error_code=ErrorCode.INVALID_REQUEST, producer_id=-1, producer_epoch=-1)
    else:
        fields.update(producer_id=next(_producer_ids), producer_epoch=0)
    return build_response(API_KEY, request.api_version, fields)
