"""What the transaction API handlers share: the broker's transaction coordinator, and the
reading of request fields (``Any`` at this decode boundary: the views are kio's bodies).

Transaction handlers never let a coordinator error escape: the runtime raises
``KafkaError`` (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE)
and each handler puts its code where its response carries errors.
"""

from __future__ import annotations

from typing import Any

from odradek.broker.context import BrokerContext
from odradek.broker.handlers._groups import optional
from odradek.broker.ports import TransactionsPort
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import Request

__all__ = ["body_of", "optional", "transactions"]


def transactions(ctx: BrokerContext) -> TransactionsPort:
    """The broker's transaction coordinator.

    Raises:
        KafkaError: COORDINATOR_NOT_AVAILABLE when the broker runs none.
    """
    if ctx.transactions is None:
        raise KafkaError("no transaction coordinator", code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return ctx.transactions


def body_of(request: Request) -> Any:
    """The decoded request body (a kio entity; fields read with ``optional``/``int``/``str``)."""
    return request.body
