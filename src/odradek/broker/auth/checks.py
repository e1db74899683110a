"""What handlers call to authorize a request: one small function per kind of check.

Each reads the principal (``principal.CLIENT_PRINCIPAL``) and the client's address
(``context.CLIENT_HOST``) of the request being handled and asks the broker's authorizer. With
no authorizer configured (``authorizer.class.name`` empty) every check allows at the cost of
one attribute read and one comparison, so Produce and Fetch pay nothing noticeable
(bench/request_path_cost.py).

The operations are Kafka's (KafkaApis): handlers pass them with the resource, and put the
matching *_AUTHORIZATION_FAILED code (``TOPIC_DENIED``, ``GROUP_DENIED``, ``CLUSTER_DENIED``)
where their response carries errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from odradek.broker.auth.acls import CLUSTER_NAME, AclOperation, ResourceType
from odradek.broker.context import CLIENT_HOST
from odradek.broker.principal import CLIENT_PRINCIPAL
from odradek.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from odradek.broker.context import BrokerContext

__all__ = [
    "CLUSTER_DENIED",
    "GROUP_DENIED",
    "NOTHING_DENIED",
    "TOPIC_DENIED",
    "Op",
    "allowed",
    "allowed_operations",
    "cluster_allowed",
    "create_allowed",
    "denied_topics",
    "fetch_denied",
    "group_allowed",
    "idempotent_write_allowed",
    "require_config_access",
    "require_group",
    "require_transactional_id",
    "topic_allowed",
]

Op = AclOperation
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
#: What ``denied_topics`` answers when nothing is denied (no authorizer: always this).
NOTHING_DENIED: frozenset[str] = frozenset()


def allowed(
    ctx: BrokerContext, operation: AclOperation, resource_type: ResourceType, name: str
) -> bool:
    """Whether the request being handled may do ``operation`` on the resource."""
    authorizer = ctx.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize(
        CLIENT_PRINCIPAL.get(), CLIENT_HOST.get(), operation, resource_type, name
    )


def topic_allowed(ctx: BrokerContext, operation: AclOperation, topic: str) -> bool:
    return ctx.authorizer is None or allowed(ctx, operation, ResourceType.TOPIC, topic)


def group_allowed(ctx: BrokerContext, operation: AclOperation, group: str) -> bool:
    return ctx.authorizer is None or allowed(ctx, operation, ResourceType.GROUP, group)


def cluster_allowed(ctx: BrokerContext, operation: AclOperation) -> bool:
    return ctx.authorizer is None or allowed(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def idempotent_write_allowed(ctx: BrokerContext) -> bool:
    """An idempotent producer's InitProducerId (KIP-679, Kafka 3.0+): IDEMPOTENT_WRITE on the
    cluster, or WRITE on at least one topic."""
    authorizer = ctx.authorizer
    if authorizer is None or cluster_allowed(ctx, Op.IDEMPOTENT_WRITE):
        return True
    return authorizer.authorize_any(
        CLIENT_PRINCIPAL.get(), CLIENT_HOST.get(), Op.WRITE, ResourceType.TOPIC
    )


def denied_topics(
    ctx: BrokerContext, operation: AclOperation, topics: Iterable[str]
) -> frozenset[str]:
    """The topics among ``topics`` the request may not do ``operation`` on."""
    if ctx.authorizer is None:
        return NOTHING_DENIED
    return frozenset(t for t in topics if not allowed(ctx, operation, ResourceType.TOPIC, t))


def create_allowed(ctx: BrokerContext, topic: str) -> bool:
    """CREATE on the cluster or on the topic (Kafka's rule for creating a topic)."""
    return ctx.authorizer is None or (
        cluster_allowed(ctx, Op.CREATE) or allowed(ctx, Op.CREATE, ResourceType.TOPIC, topic)
    )


def require_group(ctx: BrokerContext, operation: AclOperation, group: str) -> None:
    """For the group APIs, whose handlers turn a ``KafkaError`` into their error code.

    Raises:
        KafkaError: GROUP_AUTHORIZATION_FAILED when ``operation`` on the group is not allowed.
    """
    if ctx.authorizer is not None and not allowed(ctx, operation, ResourceType.GROUP, group):
        raise KafkaError(f"{operation.name} on group {group!r} is not allowed", code=GROUP_DENIED)


def require_transactional_id(ctx: BrokerContext, transactional_id: str) -> None:
    """For the transaction APIs: WRITE on the transactional id, as Kafka checks it for
    InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit.

    Raises:
        KafkaError: TRANSACTIONAL_ID_AUTHORIZATION_FAILED when it is not allowed.
    """
    if ctx.authorizer is not None and not allowed(
        ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        raise KafkaError(
            f"WRITE on transactional id {transactional_id!r} is not allowed",
            code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        )


def fetch_denied(
    ctx: BrokerContext, from_replica: bool, topics: Sequence[tuple[str, object]]
) -> frozenset[str]:
    """The topics of a Fetch (``(name, partitions)`` pairs) answered TOPIC_AUTHORIZATION_FAILED:
    a consumer needs READ on each topic; a follower (``replica_id`` >= 0) CLUSTER_ACTION on
    the cluster, or gets none."""
    if ctx.authorizer is None:
        return NOTHING_DENIED
    names = [name for name, _ in topics]
    if from_replica:
        return NOTHING_DENIED if cluster_allowed(ctx, Op.CLUSTER_ACTION) else frozenset(names)
    return denied_topics(ctx, Op.READ, names)


#: Kafka's ``ConfigResource.Type`` code of a topic (the others — broker, broker logger,
#: client metrics — are checked on the cluster).
_TOPIC_CONFIG_RESOURCE = 2
_GROUP_CONFIG_RESOURCE = 32


def require_config_access(
    ctx: BrokerContext, operation: AclOperation, resource_type: int, name: str
) -> None:
    """For DescribeConfigs (DESCRIBE_CONFIGS) and (Incremental)AlterConfigs (ALTER_CONFIGS):
    the operation on the topic or group, or on the cluster for a broker resource.

    Raises:
        KafkaError: TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED or
            CLUSTER_AUTHORIZATION_FAILED.
    """
    if ctx.authorizer is None:
        return
    if resource_type == _TOPIC_CONFIG_RESOURCE:
        if not allowed(ctx, operation, ResourceType.TOPIC, name):
            raise KafkaError(
                f"{operation.name} on topic {name!r} is not allowed", code=TOPIC_DENIED
            )
    elif resource_type == _GROUP_CONFIG_RESOURCE:
        if not allowed(ctx, operation, ResourceType.GROUP, name):
            raise KafkaError(
                f"{operation.name} on group {name!r} is not allowed", code=GROUP_DENIED
            )
    elif not cluster_allowed(ctx, operation):
        raise KafkaError(f"{operation.name} on the cluster is not allowed", code=CLUSTER_DENIED)


def allowed_operations(
    ctx: BrokerContext, resource_type: ResourceType, name: str, operations: Iterable[int]
) -> int:
    """The ``*_authorized_operations`` bitfield: bit ``op`` set for each operation (Kafka's
    ``AclOperation`` codes) the request may do on the resource."""
    return sum(
        1 << operation
        for operation in operations
        if allowed(ctx, AclOperation(operation), resource_type, name)
    )
