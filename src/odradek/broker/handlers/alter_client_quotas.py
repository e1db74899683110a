"""AlterClientQuotas: sets and removes quotas per entity (needs ALTER_CONFIGS on the cluster),
stored as Kafka stored them (``broker.auth.quota_store``); each entry answers on its own —
INVALID_REQUEST for an unknown entity type or quota key or a value that is not positive,
UNKNOWN_SERVER_ERROR when the metadata store failed. ``validate_only`` checks and changes
nothing."""

from __future__ import annotations

import asyncio
from typing import Any

from odradek.broker.auth.checks import CLUSTER_DENIED, Op, cluster_allowed
from odradek.broker.auth.quotas import QUOTA_KEYS
from odradek.broker.context import BrokerContext
from odradek.broker.handlers._quotas import entity_of
from odradek.errors import ErrorCode, MetadataStoreError
from odradek.protocol import ApiKey, Request, ResponsePayload
from odradek.protocol.builder import build_response

API_KEY = ApiKey.ALTER_CLIENT_QUOTAS


async def handle(ctx: BrokerContext, request: Request) -> ResponsePayload:
    body: Any = request.body  # the decode boundary
    allowed = cluster_allowed(ctx, Op.ALTER_CONFIGS)
    results = []
    for entry in body.entries:
        entity_field = [
            {"entity_type": str(e.entity_type), "entity_name": e.entity_name} for e in entry.entity
        ]
        code, message = ErrorCode.NONE, None
        try:
            if not allowed:
                code, message = CLUSTER_DENIED, "ALTER_CONFIGS on the cluster is not allowed"
            elif ctx.quota_store is None:
                code, message = ErrorCode.INVALID_REQUEST, "quotas are not enabled"
            else:
                entity = entity_of(entry.entity)
                to_set = {str(op.key): float(op.value) for op in entry.ops if not op.remove}
                to_remove = [str(op.key) for op in entry.ops if op.remove]
                for key in [*to_set, *to_remove]:
                    if key not in QUOTA_KEYS:
                        raise ValueError(f"unknown quota key {key!r}")
                for key, value in to_set.items():
                    if not value > 0:
                        raise ValueError(f"quota {key} must be positive, not {value}")
                if not body.validate_only:
                    store = ctx.quota_store
                    await asyncio.to_thread(store.alter, entity, to_set, to_remove)
        except ValueError as error:
            code, message = ErrorCode.INVALID_REQUEST, str(error)
        except MetadataStoreError as error:
            code, message = ErrorCode.UNKNOWN_SERVER_ERROR, str(error)
        results.append({"error_code": code, "error_message": message, "entity": entity_field})
    return build_response(API_KEY, request.api_version, {"throttle_time": 0, "entries": results})
