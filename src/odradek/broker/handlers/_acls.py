"""What the ACL API handlers (CreateAcls, DescribeAcls, DeleteAcls) share: reading a filter
from a request and running the ACL store's blocking calls off the event loop.

Kafka's rules kept: without an authorizer every ACL API answers SECURITY_DISABLED; CreateAcls
and DeleteAcls need ALTER on the cluster, DescribeAcls DESCRIBE (else
CLUSTER_AUTHORIZATION_FAILED); an unknown enum code in a filter or binding is INVALID_REQUEST
for that filter or binding only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from odradek.broker.auth.acl_store import AclStore
from odradek.broker.auth.acls import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from odradek.broker.auth.checks import CLUSTER_DENIED, cluster_allowed
from odradek.broker.context import BrokerContext
from odradek.errors import ErrorCode

_T = TypeVar("_T")
_E = TypeVar("_E", AclOperation, AclPermissionType, PatternType, ResourceType)


def refusal(ctx: BrokerContext, operation: AclOperation) -> tuple[ErrorCode, str] | None:
    """Why the whole request is refused (no authorizer; not allowed on the cluster), or None."""
    if ctx.acl_store is None:
        return ErrorCode.SECURITY_DISABLED, "no authorizer is configured on this broker"
    if not cluster_allowed(ctx, operation):
        return CLUSTER_DENIED, f"{operation.name} on the cluster is not allowed"
    return None


def code_of(kind: type[_E], value: int) -> _E:
    """The enum member of a wire code; UNKNOWN for a code Kafka does not define."""
    try:
        return kind(value)
    except ValueError:
        return kind(0)


def read_filter(item: Any) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter as an ``AclBindingFilter``."""
    return AclBindingFilter(
        resource_type=code_of(ResourceType, int(item.resource_type_filter)),
        name=None if item.resource_name_filter is None else str(item.resource_name_filter),
        pattern_type=code_of(PatternType, int(getattr(item, "pattern_type_filter", 3))),
        principal=None if item.principal_filter is None else str(item.principal_filter),
        host=None if item.host_filter is None else str(item.host_filter),
        operation=code_of(AclOperation, int(item.operation)),
        permission_type=code_of(AclPermissionType, int(item.permission_type)),
    )


async def off_loop(store: AclStore, call: Callable[[AclStore], _T]) -> _T:
    """Runs a blocking ACL store call on a worker thread."""
    return await asyncio.to_thread(call, store)
