"""ACLs in the metadata store: Kafka's layout, compare-and-set writes, and change
notifications that bring every broker's authorizer up to date."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.broker.auth.acl_store import AclStore
from odradek.broker.auth.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.broker.auth.authorizer import AclAuthorizer, AuthorizerConfig
from odradek.broker.principal import KafkaPrincipal
from odradek.controller.local import LocalMetadataStore

ALICE = KafkaPrincipal("User", "alice")
READ = AclOperation.READ
ALLOW = AclPermissionType.ALLOW


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LocalMetadataStore]:
    opened = LocalMetadataStore(tmp_path)
    yield opened
    opened.close()


def acl_store(store: LocalMetadataStore) -> AclStore:
    acls = AclStore(store, AclAuthorizer(AuthorizerConfig(enabled=True)))
    acls.start()
    return acls


def binding(
    name: str, pattern: PatternType = PatternType.LITERAL, principal: str = "User:alice"
) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.TOPIC, name, pattern),
        AccessControlEntry(principal, "*", READ, ALLOW),
    )


def test_acls_are_stored_where_kafka_stored_them(store: LocalMetadataStore) -> None:
    acls = acl_store(store)
    assert acls.create([binding("orders"), binding("pay-", PatternType.PREFIXED)]) == [None, None]
    data, _ = store.get("/kafka-acl/Topic/orders")
    assert json.loads(data) == {
        "version": 1,
        "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}
        ],
    }
    assert store.exists("/kafka-acl-extended/prefixed/Topic/pay-")
    assert store.get("/kafka-acl-changes/acl_changes_0000000000")[0] == b"Topic:orders"
    extended = json.loads(store.get("/kafka-acl-extended-changes/acl_changes_0000000000")[0])
    assert extended == {
        "version": 1,
        "resourceType": "TOPIC",
        "name": "pay-",
        "patternType": "PREFIXED",
    }


def test_a_second_broker_sees_creations_and_deletions(store: LocalMetadataStore) -> None:
    first, second = acl_store(store), acl_store(store)
    first.create([binding("orders"), binding("orders", principal="User:bob")])
    assert second.authorizer.authorize(ALICE, "h", READ, ResourceType.TOPIC, "orders")
    deleted = first.delete([AclBindingFilter(principal="User:alice")])
    assert deleted == [[binding("orders")]]
    assert not second.authorizer.authorize(ALICE, "h", READ, ResourceType.TOPIC, "orders")
    assert len(second.authorizer.acls()) == 1
    first.delete([AclBindingFilter()])
    assert not store.exists("/kafka-acl/Topic/orders")
    assert second.authorizer.acls() == []


def test_a_restarted_broker_loads_every_acl(store: LocalMetadataStore) -> None:
    acl_store(store).create([binding("a"), binding("b-", PatternType.PREFIXED)])
    reloaded = acl_store(store)
    assert {b.pattern.name for b in reloaded.authorizer.acls()} == {"a", "b-"}


def test_pruned_notifications_make_a_reader_reload_everything(
    store: LocalMetadataStore,
) -> None:
    writer = acl_store(store)
    for name in ("x", "y", "z"):
        writer.create([binding(name)])
    reader = acl_store(store)
    # The reader fell behind: it has read notification 0 only and knows no ACL.
    reader._seen["/kafka-acl-changes"] = 0
    reader.authorizer.replace_all({})
    reloads = reader.reloads
    store.delete("/kafka-acl-changes/acl_changes_0000000001")  # pruned (fires the watch)
    assert reader.reloads == reloads + 1
    assert {b.pattern.name for b in reader.authorizer.acls()} == {"x", "y", "z"}


def test_invalid_bindings_are_refused_one_by_one(store: LocalMetadataStore) -> None:
    acls = acl_store(store)
    results = acls.create([binding("a/b"), binding("ok")])
    assert results[0] is not None
    assert "cannot be stored" in results[0]
    assert results[1] is None
    assert [b.pattern.name for b in acls.authorizer.acls()] == ["ok"]


def test_creating_an_existing_acl_again_changes_nothing(store: LocalMetadataStore) -> None:
    acls = acl_store(store)
    acls.create([binding("t")])
    _, version = store.get("/kafka-acl/Topic/t")
    acls.create([binding("t")])
    assert store.get("/kafka-acl/Topic/t")[1] == version
