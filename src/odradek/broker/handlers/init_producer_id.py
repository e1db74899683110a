"""InitProducerId: a producer id and epoch for an idempotent producer (KIP-98).

Ids come from the broker's ``ProducerIdsPort``: blocks of 1000 reserved cluster-wide in the
metadata store's ``/latest_producer_id_block`` (ZooKeeper in a cluster, the persisted local
store on a single broker), so no two brokers and no restart hand out the same id; each comes
with epoch 0. Answering from the current block never blocks; reserving the next block reads
and writes the store, so it runs on a worker thread and the answer follows. A store that
cannot be reached answers COORDINATOR_NOT_AVAILABLE (retriable). Without a port (handler
tests) ids come from a process-local counter at a random 31-bit start.

v3+ (KIP-360) may name the producer's current id and epoch to ask for an epoch bump. For a
producer without a ``transactional_id`` Kafka ignores them and hands out a new id (epoch 0),
after refusing a request that names only one of the two (INVALID_REQUEST); odradek does the same.

The partitions enforce idempotence (``storage.producer_state``). A request with a
``transactional_id`` goes to the transaction coordinator (``broker.txn``), which keeps one
producer id per transactional id and bumps its epoch at each call, fencing older producers.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
from collections.abc import Awaitable
from typing import Any

from odradek.broker.auth.checks import (
    CLUSTER_DENIED,
    idempotent_write_allowed,
    require_transactional_id,
)
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._txn import body_of, optional, transactions
from odradek.broker.ports import ProducerIdsPort
from odradek.errors import ErrorCode, KafkaError, MetadataStoreError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.admin_requests import init_producer_id_body
from odradek.protocol.builder import build_response, request_value

API_KEY = ApiKey.INIT_PRODUCER_ID

logger = logging.getLogger(__name__)

# ``next`` on an itertools.count is atomic under the GIL (the fallback without a port).
_producer_ids = itertools.count(random.randrange(2**31))


def handle(ctx: BrokerContext, request: Request) -> ResponsePayload | Awaitable[ResponsePayload]:
    body = init_producer_id_body(request)
    if body.transactional_id is None and not idempotent_write_allowed(ctx):
        # Kafka (KIP-679): IDEMPOTENT_WRITE on the cluster or WRITE on some topic
        return _answer(request, CLUSTER_DENIED, -1)
    current: Any = request.body  # producer_id and producer_epoch exist from v3
    if (int(getattr(current, "producer_id", -1)) == -1) != (
        int(getattr(current, "producer_epoch", -1)) == -1
    ):
        return _answer(request, ErrorCode.INVALID_REQUEST, -1)
    if body.transactional_id is not None:
        return _transactional(ctx, request, str(body.transactional_id))
    ids = ctx.producer_ids
    if ids is None:
        return _answer(request, ErrorCode.NONE, next(_producer_ids))
    producer_id = ids.try_next_id()
    if producer_id is not None:
        return _answer(request, ErrorCode.NONE, producer_id)
    return _reserve_and_answer(ids, request)


async def _reserve_and_answer(ids: ProducerIdsPort, request: Request) -> ResponsePayload:
    try:
        producer_id = await asyncio.to_thread(ids.next_id)
    except MetadataStoreError as error:
        logger.warning("cannot reserve producer ids: %s", error)
        return _answer(request, ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
    return _answer(request, ErrorCode.NONE, producer_id)


async def _transactional(
    ctx: BrokerContext, request: Request, transactional_id: str
) -> ResponsePayload:
    body = body_of(request)
    try:
        require_transactional_id(ctx, transactional_id)
        result = await transactions(ctx).init_producer_id(
            transactional_id,
            int(request_value(body.transaction_timeout)),
            int(optional(body, "producer_id", -1)),
            int(optional(body, "producer_epoch", -1)),
        )
    except KafkaError as error:
        return _answer(request, error.error_code, -1)
    return _answer(request, result.error, result.producer_id, result.producer_epoch)


def _answer(
    request: Request, error: ErrorCode, producer_id: int, producer_epoch: int | None = None
) -> ResponsePayload:
    if producer_epoch is None:
        producer_epoch = 0 if producer_id >= 0 else -1
    fields: dict[str, Any] = {
        "throttle_time": 0,
        "error_code": error,
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
    }
    return build_response(API_KEY, request.api_version, fields)
