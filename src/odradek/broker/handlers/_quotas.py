"""What the client quota API handlers (DescribeClientQuotas, AlterClientQuotas) share: quota
entities as the wire names them — components ``user`` and ``client-id``, a null name for the
default — and Kafka's authorization (DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from odradek.broker.auth.quotas import DEFAULT, QuotaEntity

USER = "user"
CLIENT_ID = "client-id"


def entity_of(components: Iterable[Any]) -> QuotaEntity:
    """The entity of a request's ``(entity_type, entity_name)`` list.

    Raises:
        ValueError: an unknown or repeated entity type, or none at all.
    """
    user: str | None = None
    client_id: str | None = None
    seen: set[str] = set()
    for component in components:
        kind = str(component.entity_type)
        if kind in seen:
            raise ValueError(f"entity type {kind!r} appears twice")
        seen.add(kind)
        name = DEFAULT if component.entity_name is None else str(component.entity_name)
        if kind == USER:
            user = name
        elif kind == CLIENT_ID:
            client_id = name
        else:
            raise ValueError(f"unsupported quota entity type {kind!r} (user, client-id)")
    if user is None and client_id is None:
        raise ValueError("a quota entity names a user, a client id, or both")
    return QuotaEntity(user, client_id)


def wire_entity(entity: QuotaEntity) -> list[dict[str, Any]]:
    """An entity as the response's list of ``entity_type`` / ``entity_name``."""
    parts = []
    if entity.user is not None:
        parts.append({"entity_type": USER, "entity_name": _name(entity.user)})
    if entity.client_id is not None:
        parts.append({"entity_type": CLIENT_ID, "entity_name": _name(entity.client_id)})
    return parts


def _name(name: str) -> str | None:
    return None if name == DEFAULT else name
