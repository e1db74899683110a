"""``AclAuthorizer``: Kafka's ACL decision, pure and fast, over the ACLs it is given.

Settings (Kafka's names): ``authorizer.class.name`` enables it when it names Kafka's ACL
authorizer (``kafka.security.authorizer.AclAuthorizer``, the older
``kafka.security.auth.SimpleAclAuthorizer``, KRaft's
``org.apache.kafka.metadata.authorizer.StandardAuthorizer``) or odradek's
(``odradek.AclAuthorizer``); empty leaves every request authorized. ``super.users`` is a
``;``-separated list of principals allowed everything; ``allow.everyone.if.no.acl.found``
(default false) allows an operation on a resource no ACL applies to at all.

The decision for (principal, host, operation, resource), as Kafka's AclAuthorizer makes it:

1. a super user is allowed;
2. the ACLs that apply to the resource are those of its literal name, of the wildcard ``*``
   and of every prefixed pattern the name starts with; none at all: allowed only with
   ``allow.everyone.if.no.acl.found``;
3. a DENY entry for the principal (or ``User:*``), from the host (or ``*``), of the operation
   or ALL denies — DENY wins;
4. otherwise an ALLOW entry of the operation, of ALL, or of an operation that implies it
   (DESCRIBE is implied by READ, WRITE, DELETE and ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS)
   allows; nothing else does.

``authorize_any`` answers whether the principal may do an operation on at least one resource of
a type, as Kafka's ``authorizeByResourceType`` (KIP-679: an idempotent producer needs WRITE on
some topic or IDEMPOTENT_WRITE on the cluster): a super user may; a DENY on the wildcard name
denies; an ALLOW on some name or prefix that no DENY on the same name or on a prefix of it takes
back allows; with no ACL of that type at all, ``allow.everyone.if.no.acl.found`` decides.

Decisions are cached by (principal, host, operation, resource type, name) until the ACLs
change (the cache is bounded: full, it starts over). Thread safety: ``set_acls`` may run on
any thread (the metadata store's watch thread) while ``authorize`` runs on the event loop: a
change publishes a new index, then a new cache, so a decision is never cached against ACLs
older than the cache it lands in.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from odradek.broker.auth.acls import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.broker.principal import KafkaPrincipal
from odradek.errors import ConfigError

__all__ = ["AUTHORIZER_CLASS_NAMES", "AclAuthorizer", "AuthorizerConfig"]

#: The ``authorizer.class.name`` values that enable the ACL authorizer.
AUTHORIZER_CLASS_NAMES = frozenset(
    {
        "kafka.security.authorizer.AclAuthorizer",
        "kafka.security.auth.SimpleAclAuthorizer",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "odradek.AclAuthorizer",
    }
)

#: Operations an ALLOW of another operation grants too (Kafka's implied operations).
_IMPLIED_BY: Mapping[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}
#: Decisions kept before the cache starts over.
CACHE_MAX_ENTRIES = 100_000

_Entries = frozenset[AccessControlEntry]
_DecisionKey = tuple[str, str, str, AclOperation, ResourceType, str]


@dataclass(frozen=True, slots=True)
class AuthorizerConfig:
    """The authorizer's settings; ``enabled`` false: no authorizer at all."""

    enabled: bool = False
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> AuthorizerConfig:
        """Reads ``authorizer.class.name``, ``super.users``, ``allow.everyone.if.no.acl.found``.

        Raises:
            ConfigError: an authorizer class odradek does not have, a super user not written
                ``Type:name``, or an allow-everyone value that is not true/false.
        """
        class_name = settings.get("authorizer.class.name", "").strip()
        if class_name and class_name not in AUTHORIZER_CLASS_NAMES:
            known = ", ".join(sorted(AUTHORIZER_CLASS_NAMES))
            raise ConfigError(
                f"authorizer.class.name {class_name!r} is not an authorizer odradek has "
                f"(one of: {known})"
            )
        supers: set[str] = set()
        for raw in settings.get("super.users", "").split(";"):
            text = raw.strip()
            if not text:
                continue
            try:
                supers.add(str(KafkaPrincipal.parse(text)))
            except ValueError as error:
                raise ConfigError(f"super.users: {error}") from None
        allow = settings.get("allow.everyone.if.no.acl.found", "false").strip().lower()
        if allow not in ("true", "false"):
            raise ConfigError(f"allow.everyone.if.no.acl.found {allow!r}: expected true or false")
        return cls(bool(class_name), frozenset(supers), allow == "true")


class _Index:
    """The ACLs by resource type: literal names (with ``*``) and prefixes."""

    __slots__ = ("literal", "prefixed")

    def __init__(self, acls: Mapping[ResourcePattern, _Entries]) -> None:
        self.literal: dict[tuple[ResourceType, str], _Entries] = {}
        # Prefixes by resource type, then by length: a name looks up each length once.
        self.prefixed: dict[ResourceType, dict[int, dict[str, _Entries]]] = {}
        for pattern, entries in acls.items():
            if pattern.pattern_type is PatternType.PREFIXED:
                by_length = self.prefixed.setdefault(pattern.resource_type, {})
                by_length.setdefault(len(pattern.name), {})[pattern.name] = entries
            else:
                self.literal[(pattern.resource_type, pattern.name)] = entries

    def matching(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        found: list[AccessControlEntry] = []
        literal = self.literal
        found.extend(literal.get((resource_type, name), ()))
        if name != WILDCARD:
            found.extend(literal.get((resource_type, WILDCARD), ()))
        by_length = self.prefixed.get(resource_type)
        if by_length:
            for length, prefixes in by_length.items():
                if length <= len(name):
                    found.extend(prefixes.get(name[:length], ()))
        return found


class AclAuthorizer:
    """Decides requests against the ACLs it holds (see the module docstring)."""

    def __init__(self, config: AuthorizerConfig) -> None:
        self.config = config
        self._super_users = config.super_users
        self._allow_if_none = config.allow_everyone_if_no_acl_found
        self._acls: dict[ResourcePattern, _Entries] = {}
        self._index = _Index({})
        self._cache: dict[_DecisionKey, bool] = {}
        self._lock = threading.Lock()
        self.decisions = 0
        self.cache_misses = 0

    # ----------------------------------------------------------------- the ACLs

    def set_acls(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """Replaces the entries bound to ``pattern`` (none: the pattern is forgotten)."""
        self.replace_all({pattern: frozenset(entries)}, partial=True)

    def replace_all(
        self, acls: Mapping[ResourcePattern, _Entries], *, partial: bool = False
    ) -> None:
        """Replaces every ACL with ``acls`` (``partial``: only the patterns named)."""
        with self._lock:
            current = dict(self._acls) if partial else {}
            for pattern, entries in acls.items():
                if entries:
                    current[pattern] = frozenset(entries)
                else:
                    current.pop(pattern, None)
            self._acls = current
            self._index = _Index(current)  # the index first, then the cache (module docstring)
            self._cache = {}

    def entries(self, pattern: ResourcePattern) -> _Entries:
        """The entries bound to exactly ``pattern``."""
        return self._acls.get(pattern, frozenset())

    def acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """Every binding the filter selects (all without one), in a stable order."""
        found = [
            AclBinding(pattern, entry)
            for pattern, entries in self._acls.items()
            if acl_filter is None or acl_filter.matches_pattern(pattern)
            for entry in entries
            if acl_filter is None or acl_filter.matches_entry(entry)
        ]
        found.sort(key=_binding_key)
        return found

    # ----------------------------------------------------------------- decisions

    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Whether ``principal`` connected from ``host`` (an address, or ``/address`` as the
        server records it) may do ``operation`` on the resource."""
        cache = self._cache  # before the index: see the module docstring
        key = (principal.principal_type, principal.name, host, operation, resource_type, name)
        decision = cache.get(key)
        if decision is None:
            decision = self._decide(principal, host, operation, resource_type, name)
            if len(cache) >= CACHE_MAX_ENTRIES:
                cache.clear()
            cache[key] = decision
            self.cache_misses += 1
        self.decisions += 1
        return decision

    def _decide(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        who = str(principal)
        if who in self._super_users:
            return True
        host = host.removeprefix("/")
        entries = self._index.matching(resource_type, name)
        if not entries:
            return self._allow_if_none
        applicable = [
            entry
            for entry in entries
            if (entry.principal in (who, WILDCARD_PRINCIPAL)) and (entry.host in (host, WILDCARD))
        ]
        for entry in applicable:
            if entry.permission_type is AclPermissionType.DENY and (
                entry.operation is operation or entry.operation is AclOperation.ALL
            ):
                return False
        granting = _IMPLIED_BY.get(operation, frozenset()) | {operation, AclOperation.ALL}
        return any(
            entry.permission_type is AclPermissionType.ALLOW and entry.operation in granting
            for entry in applicable
        )

    def authorize_any(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Whether ``principal`` from ``host`` may do ``operation`` on at least one resource of
        ``resource_type`` (see the module docstring). Not cached: an admin-path call."""
        who = str(principal)
        if who in self._super_users:
            return True
        host = host.removeprefix("/")
        granting = _IMPLIED_BY.get(operation, frozenset()) | {operation, AclOperation.ALL}
        allows: list[ResourcePattern] = []
        denied_literal: set[str] = set()
        denied_prefixes: list[str] = []
        any_acl = False
        for pattern, entries in self._acls.items():
            if pattern.resource_type is not resource_type:
                continue
            any_acl = True
            for entry in entries:
                if entry.principal not in (who, WILDCARD_PRINCIPAL):
                    continue
                if entry.host not in (host, WILDCARD):
                    continue
                if entry.permission_type is AclPermissionType.DENY:
                    if entry.operation is operation or entry.operation is AclOperation.ALL:
                        if pattern.pattern_type is PatternType.PREFIXED:
                            denied_prefixes.append(pattern.name)
                        else:
                            denied_literal.add(pattern.name)
                elif entry.operation in granting:
                    allows.append(pattern)
        if not any_acl:
            return self._allow_if_none
        if WILDCARD in denied_literal:
            return False
        for pattern in allows:
            name = pattern.name
            if any(name.startswith(prefix) for prefix in denied_prefixes):
                continue
            if pattern.pattern_type is not PatternType.PREFIXED and name in denied_literal:
                continue
            return True
        return False

    def statistics(self) -> dict[str, int]:
        return {
            "patterns": len(self._acls),
            "acls": sum(len(entries) for entries in self._acls.values()),
            "decisions": self.decisions,
            "cache_misses": self.cache_misses,
            "cached": len(self._cache),
        }


def _binding_key(binding: AclBinding) -> tuple[int, str, int, str, str, int, int]:
    pattern, entry = binding.pattern, binding.entry
    return (
        int(pattern.resource_type),
        pattern.name,
        int(pattern.pattern_type),
        entry.principal,
        entry.host,
        int(entry.operation),
        int(entry.permission_type),
    )
