"""``AclAdmin``: the ACL calls of ``AdminClient`` (CreateAcls, DescribeAcls, DeleteAcls).

Bindings and filters travel as ``AclSpec`` values holding Kafka's wire codes (resource type,
pattern type, operation, permission type as Kafka's ``ResourceType``, ``PatternType``,
``AclOperation``, ``AclPermissionType`` codes), so the client needs no enum of the broker's.
A filter uses ``None`` for "any" name, principal or host, and the ANY codes (1) for the enums.
Each call goes to any broker (the least loaded). Thread safety: each call holds the client's
lock (``AdminRequests.lock``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from odradek.client.admin_requests import AdminRequests
from odradek.client.admin_wire import item_error, raise_for
from odradek.errors import KafkaError
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = ["AclAdmin", "AclSpec"]

ACL_VERSIONS: Final = VersionRange(1, 3)


@dataclass(frozen=True, slots=True)
class AclSpec:
    """An ACL binding (every field set) or filter (``None`` / ANY codes match anything)."""

    resource_type: int
    name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int


class AclAdmin:
    """The ACL calls (see the module docstring)."""

    def __init__(self, requests: AdminRequests) -> None:
        self._requests = requests

    def create_acls(
        self, bindings: Sequence[AclSpec], *, timeout_ms: int | None = None
    ) -> list[KafkaError | None]:
        """Creates the bindings; per binding, the error that refused it or ``None``.

        Raises:
            KafkaError: the request failed as a whole (the deadline, no broker).
        """
        creations = [
            {
                "resource_type": b.resource_type,
                "resource_name": b.name,
                "resource_pattern_type": b.pattern_type,
                "principal": b.principal,
                "host": b.host,
                "operation": b.operation,
                "permission_type": b.permission_type,
            }
            for b in bindings
        ]
        body = self._call(ApiKey.CREATE_ACLS, {"creations": creations}, timeout_ms)
        return [
            item_error(result, "CreateAcls") if int(result["error_code"]) else None
            for result in body["results"]
        ]

    def describe_acls(self, acl_filter: AclSpec, *, timeout_ms: int | None = None) -> list[AclSpec]:
        """The bindings the filter selects.

        Raises:
            KafkaError: the broker's error (SECURITY_DISABLED without an authorizer,
                CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST), or the deadline.
        """
        body = self._call(ApiKey.DESCRIBE_ACLS, _filter_fields(acl_filter), timeout_ms)
        raise_for(body, "DescribeAcls")
        return [
            AclSpec(
                int(resource["resource_type"]),
                str(resource["resource_name"]),
                int(resource.get("pattern_type", 3)),
                str(acl["principal"]),
                str(acl["host"]),
                int(acl["operation"]),
                int(acl["permission_type"]),
            )
            for resource in body["resources"]
            for acl in resource["acls"]
        ]

    def delete_acls(
        self, filters: Sequence[AclSpec], *, timeout_ms: int | None = None
    ) -> list[list[AclSpec] | KafkaError]:
        """Deletes what each filter selects; per filter, the bindings deleted or its error."""
        fields = {"filters": [_filter_fields(f) for f in filters]}
        body = self._call(ApiKey.DELETE_ACLS, fields, timeout_ms)
        results: list[list[AclSpec] | KafkaError] = []
        for result in body["filter_results"]:
            if int(result["error_code"]):
                results.append(item_error(result, "DeleteAcls"))
                continue
            results.append(
                [
                    AclSpec(
                        int(acl["resource_type"]),
                        str(acl["resource_name"]),
                        int(acl.get("pattern_type", 3)),
                        str(acl["principal"]),
                        str(acl["host"]),
                        int(acl["operation"]),
                        int(acl["permission_type"]),
                    )
                    for acl in result["matching_acls"]
                ]
            )
        return results

    def _call(
        self, api_key: ApiKey, fields: Mapping[str, Any], timeout_ms: int | None
    ) -> dict[str, Any]:
        deadline = self._requests.deadline(timeout_ms)
        with self._requests.lock:
            return self._requests.call(
                self._requests.any_node, api_key, ACL_VERSIONS, fields, deadline
            )


def _filter_fields(acl_filter: AclSpec) -> dict[str, Any]:
    return {
        "resource_type_filter": acl_filter.resource_type,
        "resource_name_filter": acl_filter.name,
        "pattern_type_filter": acl_filter.pattern_type,
        "principal_filter": acl_filter.principal,
        "host_filter": acl_filter.host,
        "operation": acl_filter.operation,
        "permission_type": acl_filter.permission_type,
    }
