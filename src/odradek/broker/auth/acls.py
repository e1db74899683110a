"""Kafka's ACL model: operations, permissions, resource and pattern types, bindings, filters,
and the JSON of an ACL node as Kafka's ZooKeeper authorizer stored it.

Values only (no I/O, no clock). The enum values are Kafka's wire codes (``AclOperation``,
``AclPermissionType``, ``ResourceType``, ``PatternType`` in Kafka's clients), so requests and
responses carry them unchanged; the names are the ones kafka-acls.sh and the ZooKeeper nodes
use (``Read``, ``ClusterAction``, ``Topic``, ``TransactionalId``).

An ACL node (``/kafka-acl/Topic/orders``) holds::

    {"version": 1, "acls": [{"principal": "User:alice", "permissionType": "Allow",
                             "operation": "Read", "host": "*"}]}

Rules kept:

- a binding names a concrete resource pattern (type not ANY/UNKNOWN, pattern LITERAL or
  PREFIXED) and a concrete entry (operation and permission not ANY/UNKNOWN); a filter may use
  ANY (and MATCH for the pattern type: what would apply to that resource name);
- ``*`` is the wildcard resource name (literal patterns only), ``User:*`` the wildcard
  principal and ``*`` the wildcard host.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AccessControlEntry",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourcePattern",
    "ResourceType",
    "decode_acl_node",
    "encode_acl_node",
]

#: The only name of the cluster resource.
CLUSTER_NAME = "kafka-cluster"
#: The wildcard resource name and host.
WILDCARD = "*"
#: The principal every principal matches.
WILDCARD_PRINCIPAL = "User:*"


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class _Named(enum.IntEnum):
    """An enum with Kafka's CamelCase names (``CLUSTER_ACTION`` ↔ ``ClusterAction``)."""

    @property
    def kafka_name(self) -> str:
        return _camel(self.name)

    @classmethod
    def parse(cls, text: str) -> Any:
        """Reads a name in any case, with or without underscores (``clusteraction``,
        ``Cluster_Action``, ``ClusterAction``).

        Raises:
            ValueError: an unknown name; the message lists the known ones.
        """
        wanted = text.replace("_", "").replace("-", "").lower()
        for member in cls:
            if member.name.replace("_", "").lower() == wanted:
                return member
        known = ", ".join(m.kafka_name for m in cls if m.name not in ("UNKNOWN", "ANY", "MATCH"))
        raise ValueError(f"unknown {cls.__name__} {text!r} (known: {known})")


class AclOperation(_Named):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(_Named):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class ResourceType(_Named):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Named):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


#: The resource types an ACL may name.
CONCRETE_RESOURCE_TYPES = frozenset(
    {
        ResourceType.TOPIC,
        ResourceType.GROUP,
        ResourceType.CLUSTER,
        ResourceType.TRANSACTIONAL_ID,
        ResourceType.DELEGATION_TOKEN,
        ResourceType.USER,
    }
)


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    """What an ACL applies to: a resource type, a name (or prefix) and how the name matches."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def check(self) -> str | None:
        """Why this pattern cannot be stored, or None."""
        if self.resource_type not in CONCRETE_RESOURCE_TYPES:
            return f"resource type {self.resource_type.name} is not concrete"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return f"pattern type {self.pattern_type.name} is not LITERAL or PREFIXED"
        if not self.name:
            return "the resource name is empty"
        if "/" in self.name or self.name in (".", ".."):
            return f"the resource name {self.name!r} cannot be stored (no '/', '.' or '..')"
        if self.pattern_type is PatternType.PREFIXED and self.name == WILDCARD:
            return "a prefixed pattern cannot be the wildcard '*'"
        if self.resource_type is ResourceType.CLUSTER and self.name != CLUSTER_NAME:
            return f"the cluster resource is named {CLUSTER_NAME!r}"
        return None

    def matches_name(self, name: str) -> bool:
        """Whether this pattern applies to the resource ``name`` (of its type)."""
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD)

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name})"
        )


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    """Who may (or may not) do what from where: ``User:alice`` ALLOW READ from ``*``."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def check(self) -> str | None:
        """Why this entry cannot be stored, or None."""
        if self.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            return f"operation {self.operation.name} is not concrete"
        if self.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            return f"permission type {self.permission_type.name} is not ALLOW or DENY"
        kind, sep, _ = self.principal.partition(":")
        if not sep or not kind:
            return f"the principal {self.principal!r} is not written Type:name"
        if not self.host:
            return "the host is empty (use '*' for any host)"
        return None

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, "
            f"operation={self.operation.name}, permissionType={self.permission_type.name})"
        )


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: an entry bound to a resource pattern."""

    pattern: ResourcePattern
    entry: AccessControlEntry

    def check(self) -> str | None:
        """Why this binding cannot be stored, or None."""
        return self.pattern.check() or self.entry.check()


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Selects ACLs (DescribeAcls, DeleteAcls): None in a name / principal / host matches any;
    ANY in an enum matches any; pattern type MATCH selects the patterns that apply to the
    resource name (the literal name, the wildcard, and the prefixes of the name)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def check(self) -> str | None:
        """Why this filter is not valid, or None."""
        for value in (self.resource_type, self.pattern_type, self.operation):
            if value.name == "UNKNOWN":
                return f"the filter has an UNKNOWN {type(value).__name__}"
        if self.permission_type is AclPermissionType.UNKNOWN:
            return "the filter has an UNKNOWN AclPermissionType"
        return None

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if (
            self.resource_type is not ResourceType.ANY
            and self.resource_type != pattern.resource_type
        ):
            return False
        kind = self.pattern_type
        if kind is PatternType.MATCH:
            if self.name is None:
                return True
            return pattern.matches_name(self.name)
        if kind is not PatternType.ANY and kind != pattern.pattern_type:
            return False
        return self.name is None or self.name == pattern.name

    def matches_entry(self, entry: AccessControlEntry) -> bool:
        return (
            (self.principal is None or self.principal == entry.principal)
            and (self.host is None or self.host == entry.host)
            and (self.operation is AclOperation.ANY or self.operation == entry.operation)
            and (
                self.permission_type is AclPermissionType.ANY
                or self.permission_type == entry.permission_type
            )
        )

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self.matches_entry(binding.entry)


# --- the ZooKeeper node JSON ------------------------------------------------------------------


def encode_acl_node(entries: set[AccessControlEntry] | frozenset[AccessControlEntry]) -> bytes:
    """The data of an ACL node holding ``entries`` (sorted, so equal sets encode equally)."""
    acls = [
        {
            "principal": entry.principal,
            "permissionType": entry.permission_type.kafka_name,
            "operation": entry.operation.kafka_name,
            "host": entry.host,
        }
        for entry in sorted(entries, key=_entry_key)
    ]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":")).encode()


def decode_acl_node(data: bytes) -> frozenset[AccessControlEntry]:
    """The entries of an ACL node (empty data: none).

    Raises:
        ValueError: data that is not an ACL node of version 1.
    """
    if not data:
        return frozenset()
    try:
        document = json.loads(data)
        if not isinstance(document, dict) or document.get("version") != 1:
            raise ValueError("not an ACL node of version 1")
        return frozenset(
            AccessControlEntry(
                str(item["principal"]),
                str(item["host"]),
                AclOperation.parse(str(item["operation"])),
                AclPermissionType.parse(str(item["permissionType"])),
            )
            for item in document["acls"]
        )
    except (KeyError, TypeError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"malformed ACL node: {error}") from None


def _entry_key(entry: AccessControlEntry) -> tuple[str, str, int, int]:
    return (entry.principal, entry.host, int(entry.operation), int(entry.permission_type))
