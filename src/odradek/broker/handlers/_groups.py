"""What the group API handlers share: the coordinator runtime of the broker and the reading
of request fields that only some versions have.

Group handlers never let a coordinator error escape: the runtime raises ``KafkaError`` with
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE, and each handler
puts that code where its response version carries errors.
"""

from __future__ import annotations

from typing import Any

from odradek.broker.context import BrokerContext
from odradek.broker.ports import GroupsPort
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol.builder import has_field, request_value


def runtime(ctx: BrokerContext) -> GroupsPort:
    """The broker's coordinator runtime.

    Raises:
        KafkaError: COORDINATOR_NOT_AVAILABLE when the broker runs none.
    """
    if ctx.groups is None:
        raise KafkaError("no group coordinator", code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return ctx.groups


def optional(body: Any, name: str, default: Any = None) -> Any:
    """A request field as plain Python, or ``default`` when this version lacks it."""
    return request_value(getattr(body, name)) if has_field(body, name) else default
