"""``QuotaAdmin``: the client quota calls of ``AdminClient`` (DescribeClientQuotas,
AlterClientQuotas, KIP-546).

An entity is a mapping of entity type (``user``, ``client-id``) to a name, ``None`` naming the
default. Each call goes to any broker (the least loaded). Thread safety: each call holds the
client's lock (``AdminRequests.lock``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from odradek.client.admin_requests import AdminRequests
from odradek.client.admin_wire import item_error, raise_for
from odradek.errors import KafkaError
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = ["MATCH_ANY", "MATCH_DEFAULT", "MATCH_EXACT", "QuotaAdmin"]

QUOTA_VERSIONS: Final = VersionRange(0, 1)
#: DescribeClientQuotas match types: a name, the default, any named entity.
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2

Entity = Mapping[str, str | None]


class QuotaAdmin:
    """The client quota calls (see the module docstring)."""

    def __init__(self, requests: AdminRequests) -> None:
        self._requests = requests

    def describe_client_quotas(
        self,
        components: Sequence[tuple[str, int, str | None]],
        *,
        strict: bool = False,
        timeout_ms: int | None = None,
    ) -> list[tuple[dict[str, str | None], dict[str, float]]]:
        """The quotas of the entities matching every ``(entity type, match type, name)``
        component (none: all), as (entity, quotas) pairs.

        Raises:
            KafkaError: the broker's error (CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST),
                or the deadline.
        """
        fields = {
            "components": [
                {"entity_type": kind, "match_type": match_type, "match": name}
                for kind, match_type, name in components
            ],
            "strict": strict,
        }
        body = self._call(ApiKey.DESCRIBE_CLIENT_QUOTAS, fields, timeout_ms)
        raise_for(body, "DescribeClientQuotas")
        return [
            (
                {str(e["entity_type"]): e["entity_name"] for e in entry["entity"]},
                {str(v["key"]): float(v["value"]) for v in entry["values"]},
            )
            for entry in body["entries"] or ()
        ]

    def alter_client_quotas(
        self,
        entity: Entity,
        to_set: Mapping[str, float],
        to_remove: Sequence[str] = (),
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> KafkaError | None:
        """Sets and removes one entity's quotas; the error that refused it, or ``None``."""
        ops: list[dict[str, Any]] = [
            {"key": key, "value": float(value), "remove": False} for key, value in to_set.items()
        ]
        ops += [{"key": key, "value": 0.0, "remove": True} for key in to_remove]
        fields = {
            "entries": [
                {
                    "entity": [
                        {"entity_type": kind, "entity_name": name} for kind, name in entity.items()
                    ],
                    "ops": ops,
                }
            ],
            "validate_only": validate_only,
        }
        body = self._call(ApiKey.ALTER_CLIENT_QUOTAS, fields, timeout_ms)
        [entry] = body["entries"]
        return item_error(entry, "AlterClientQuotas") if int(entry["error_code"]) else None

    def _call(
        self, api_key: ApiKey, fields: Mapping[str, Any], timeout_ms: int | None
    ) -> dict[str, Any]:
        deadline = self._requests.deadline(timeout_ms)
        with self._requests.lock:
            return self._requests.call(
                self._requests.any_node, api_key, QUOTA_VERSIONS, fields, deadline
            )
