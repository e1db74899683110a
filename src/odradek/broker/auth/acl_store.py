"""``AclStore``: the ACLs in the metadata store, laid out as Kafka's ZooKeeper authorizer laid
them out, and the change notifications that keep every broker's ``AclAuthorizer`` current.

Layout (Kafka's)::

    /kafka-acl/<ResourceType>/<name>                    literal patterns (Topic, Group,
                                                        Cluster, TransactionalId,
                                                        DelegationToken, User)
    /kafka-acl-extended/prefixed/<ResourceType>/<name>  prefixed patterns
    /kafka-acl-changes/acl_changes_<10 digits>          "Topic:orders" (a literal pattern
                                                        changed)
    /kafka-acl-extended-changes/acl_changes_<10 digits> {"version":1,"resourceType":"TOPIC",
                                                        "name":"ord","patternType":"PREFIXED"}

Each ACL node holds the entries of one pattern (``acls.encode_acl_node``). A writer changes a
node with a compare-and-set on its version (retrying on a race), deletes it when its last
entry goes, then adds a change notification; every broker watches the two change paths and
reloads the patterns named by the notifications it has not seen. A notification sequence the
reader finds a gap in (its predecessors were pruned) makes it reload every ACL. The writer
keeps the newest ``NOTIFICATIONS_KEPT`` notifications and prunes the rest (Kafka deletes them
after 15 minutes).

All methods block on the store (ZooKeeper round trips): handlers call them off the event
loop. Thread safety: notifications are processed under one lock, on the store's watch thread.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import threading
from collections.abc import Callable, Sequence

from odradek.broker.auth.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    PatternType,
    ResourcePattern,
    ResourceType,
    decode_acl_node,
    encode_acl_node,
)
from odradek.broker.auth.authorizer import AclAuthorizer
from odradek.controller.store import MetadataStore, join_path
from odradek.errors import BadVersionError, MetadataStoreError, NodeExistsError, NoNodeError

__all__ = ["AclStore", "pattern_path"]

logger = logging.getLogger(__name__)

LITERAL_ROOT = "/kafka-acl"
PREFIXED_ROOT = "/kafka-acl-extended/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"
NOTIFICATIONS_KEPT = 1000
_RETRIES = 20

_Change = Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]]


def pattern_path(pattern: ResourcePattern) -> str:
    """The node of a literal or prefixed pattern (its name checked by ``pattern.check``)."""
    root = PREFIXED_ROOT if pattern.pattern_type is PatternType.PREFIXED else LITERAL_ROOT
    return join_path(root, pattern.resource_type.kafka_name, pattern.name)


def _encode_change(pattern: ResourcePattern) -> tuple[str, bytes]:
    if pattern.pattern_type is PatternType.LITERAL:
        return LITERAL_CHANGES, f"{pattern.resource_type.kafka_name}:{pattern.name}".encode()
    event = {
        "version": 1,
        "resourceType": pattern.resource_type.name,
        "name": pattern.name,
        "patternType": pattern.pattern_type.name,
    }
    return EXTENDED_CHANGES, json.dumps(event, separators=(",", ":")).encode()


def _decode_change(root: str, data: bytes) -> ResourcePattern:
    """Raises ValueError for a notification that names no pattern."""
    if root == LITERAL_CHANGES:
        kind, sep, name = data.decode().partition(":")
        if not sep:
            raise ValueError(f"not Type:name: {data!r}")
        return ResourcePattern(ResourceType.parse(kind), name, PatternType.LITERAL)
    try:
        event = json.loads(data)
        return ResourcePattern(
            ResourceType.parse(str(event["resourceType"])),
            str(event["name"]),
            PatternType.parse(str(event["patternType"])),
        )
    except (KeyError, TypeError, json.JSONDecodeError) as error:
        raise ValueError(f"malformed ACL change event: {error}") from None


def _union(
    add: frozenset[AccessControlEntry], current: frozenset[AccessControlEntry]
) -> frozenset[AccessControlEntry]:
    return current | add


def _difference(
    drop: frozenset[AccessControlEntry], current: frozenset[AccessControlEntry]
) -> frozenset[AccessControlEntry]:
    return current - drop


def _sequence(child: str) -> int:
    suffix = child.removeprefix(CHANGE_PREFIX)
    return int(suffix) if suffix.isdigit() else -1


class AclStore:
    """Reads and writes ACLs in ``store`` and keeps ``authorizer`` current."""

    def __init__(self, store: MetadataStore, authorizer: AclAuthorizer) -> None:
        self.store = store
        self.authorizer = authorizer
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {LITERAL_CHANGES: -1, EXTENDED_CHANGES: -1}
        self.reloads = 0

    def start(self) -> None:
        """Creates the top-level paths, loads every ACL, and watches for changes."""
        for path in (LITERAL_ROOT, PREFIXED_ROOT, LITERAL_CHANGES, EXTENDED_CHANGES):
            if not self.store.exists(path):
                with contextlib.suppress(NodeExistsError):
                    self.store.create(path, make_parents=True)
        with self._lock:
            for root in (LITERAL_CHANGES, EXTENDED_CHANGES):
                children = self.store.children(root)
                self._seen[root] = max((_sequence(c) for c in children), default=-1)
            self._reload_all()
        for root in (LITERAL_CHANGES, EXTENDED_CHANGES):
            self.store.watch_children(root, self._on_change)

    # ----------------------------------------------------------------- reading

    def _reload_all(self) -> None:
        acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        for root, pattern_type in (
            (LITERAL_ROOT, PatternType.LITERAL),
            (PREFIXED_ROOT, PatternType.PREFIXED),
        ):
            for kind in self.store.children(root):
                try:
                    resource_type = ResourceType.parse(kind)
                except ValueError:
                    logger.warning("ignoring ACLs of unknown resource type %s/%s", root, kind)
                    continue
                for name in self.store.children(join_path(root, kind)):
                    pattern = ResourcePattern(resource_type, name, pattern_type)
                    acls[pattern] = self._read(pattern)
        self.authorizer.replace_all(acls)
        self.reloads += 1

    def _read(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        try:
            data, _ = self.store.get(pattern_path(pattern))
        except NoNodeError:
            return frozenset()
        try:
            return decode_acl_node(data)
        except ValueError as error:
            logger.warning("ignoring the ACLs of %s: %s", pattern, error)
            return frozenset()

    def _on_change(self, root: str) -> None:
        try:
            with self._lock:
                self._process(root)
        except MetadataStoreError as error:
            logger.warning("cannot read ACL changes under %s: %s", root, error)

    def _process(self, root: str) -> None:
        try:
            children = self.store.children(root)
        except NoNodeError:
            return
        seen = self._seen[root]
        new = sorted((s, c) for c in children if (s := _sequence(c)) > seen)
        if not new:
            return
        if new[0][0] != seen + 1:
            # Notifications we never read were pruned: reload everything.
            self._seen[root] = new[-1][0]
            self._reload_all()
            return
        for sequence, child in new:
            try:
                data, _ = self.store.get(join_path(root, child))
                pattern = _decode_change(root, data)
            except NoNodeError:
                continue
            except ValueError as error:
                logger.warning("ignoring ACL change %s/%s: %s", root, child, error)
                continue
            finally:
                self._seen[root] = sequence
            self.authorizer.set_acls(pattern, self._read(pattern))

    # ----------------------------------------------------------------- writing

    def create(self, bindings: Sequence[AclBinding]) -> list[str | None]:
        """Stores each binding; per binding, why it was refused, or None.

        Raises:
            MetadataStoreError: the store failed (nothing about that binding's pattern is
                known to have been written).
        """
        results: list[str | None] = [binding.check() for binding in bindings]
        by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for binding, problem in zip(bindings, results, strict=True):
            if problem is None:
                by_pattern.setdefault(binding.pattern, set()).add(binding.entry)
        for pattern, entries in by_pattern.items():
            self._update(pattern, functools.partial(_union, frozenset(entries)))
        return results

    def delete(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding] | str]:
        """Deletes what each filter selects; per filter, the bindings deleted or why the
        filter was refused."""
        results: list[list[AclBinding] | str] = []
        for acl_filter in filters:
            problem = acl_filter.check()
            if problem is not None:
                results.append(problem)
                continue
            selected = self.authorizer.acls(acl_filter)
            by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
            for binding in selected:
                by_pattern.setdefault(binding.pattern, set()).add(binding.entry)
            deleted: list[AclBinding] = []
            for pattern, entries in by_pattern.items():
                removed = self._update(pattern, functools.partial(_difference, frozenset(entries)))
                deleted.extend(AclBinding(pattern, e) for e in sorted(removed, key=str))
            results.append(deleted)
        return results

    def _update(self, pattern: ResourcePattern, change: _Change) -> frozenset[AccessControlEntry]:
        """Applies ``change`` (entries → entries) to the pattern's node with compare-and-set;
        returns the entries it removed. Notifies the change and updates the authorizer."""
        path = pattern_path(pattern)
        for _ in range(_RETRIES):
            try:
                data, version = self.store.get(path)
                current = decode_acl_node(data)
            except NoNodeError:
                current, version = frozenset(), -2
            except ValueError:
                current, version = frozenset(), self.store.get(path)[1]
            wanted: frozenset[AccessControlEntry] = change(current)
            if wanted == current:
                return frozenset()
            try:
                if version == -2:
                    self.store.create(path, encode_acl_node(wanted), make_parents=True)
                elif wanted:
                    self.store.set(path, encode_acl_node(wanted), version)
                else:
                    self.store.delete(path, version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # another writer got there first: read again
            self.authorizer.set_acls(pattern, wanted)
            self._notify(pattern)
            return current - wanted
        raise BadVersionError(f"{path}: too many concurrent ACL changes, try again")

    def _notify(self, pattern: ResourcePattern) -> None:
        root, data = _encode_change(pattern)
        for _ in range(_RETRIES):
            children = self.store.children(root)
            sequences = sorted(_sequence(c) for c in children)
            following = (sequences[-1] if sequences else -1) + 1
            try:
                self.store.create(join_path(root, f"{CHANGE_PREFIX}{following:010d}"), data)
            except NodeExistsError:
                continue
            for old in sequences[: max(0, len(sequences) + 1 - NOTIFICATIONS_KEPT)]:
                with contextlib.suppress(NoNodeError):
                    self.store.delete(join_path(root, f"{CHANGE_PREFIX}{old:010d}"))
            return
        logger.warning("could not write the ACL change notification of %s", pattern)
