"""The ACL decision (Kafka's AclAuthorizer rules), tested without a broker."""

from __future__ import annotations

import pytest

from odradek.broker.auth.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    decode_acl_node,
    encode_acl_node,
)
from odradek.broker.auth.authorizer import AclAuthorizer, AuthorizerConfig
from odradek.broker.principal import KafkaPrincipal
from odradek.errors import ConfigError

ALICE = KafkaPrincipal("User", "alice")
BOB = KafkaPrincipal("User", "bob")
Op = AclOperation
TOPIC = ResourceType.TOPIC
ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY


def entry(
    principal: str, op: AclOperation, permission: AclPermissionType = ALLOW, host: str = "*"
) -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, permission)


def topic(name: str, pattern: PatternType = PatternType.LITERAL) -> ResourcePattern:
    return ResourcePattern(TOPIC, name, pattern)


def authorizer(**settings: str) -> AclAuthorizer:
    return AclAuthorizer(
        AuthorizerConfig.from_settings(
            {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", **settings}
        )
    )


def test_an_allow_acl_grants_its_operation_to_its_principal_only() -> None:
    auth = authorizer()
    auth.set_acls(topic("orders"), [entry("User:alice", Op.WRITE)])
    assert auth.authorize(ALICE, "10.0.0.1", Op.WRITE, TOPIC, "orders")
    assert not auth.authorize(BOB, "10.0.0.1", Op.WRITE, TOPIC, "orders")
    assert not auth.authorize(ALICE, "10.0.0.1", Op.READ, TOPIC, "orders")
    assert not auth.authorize(ALICE, "10.0.0.1", Op.WRITE, TOPIC, "other")


def test_no_acl_denies_unless_allow_everyone_if_no_acl_found() -> None:
    assert not authorizer().authorize(ALICE, "h", Op.READ, TOPIC, "t")
    open_auth = authorizer(**{"allow.everyone.if.no.acl.found": "true"})
    assert open_auth.authorize(ALICE, "h", Op.READ, TOPIC, "t")
    # An ACL for somebody else on the resource: no longer "no ACL found".
    open_auth.set_acls(topic("t"), [entry("User:bob", Op.READ)])
    assert not open_auth.authorize(ALICE, "h", Op.READ, TOPIC, "t")


def test_deny_wins_over_allow() -> None:
    auth = authorizer()
    auth.set_acls(topic("t"), [entry("User:*", Op.ALL), entry("User:alice", Op.WRITE, DENY)])
    assert auth.authorize(BOB, "h", Op.WRITE, TOPIC, "t")
    assert not auth.authorize(ALICE, "h", Op.WRITE, TOPIC, "t")
    assert auth.authorize(ALICE, "h", Op.READ, TOPIC, "t")


def test_authorize_any_finds_one_allowed_resource_of_the_type() -> None:
    auth = authorizer()
    assert not auth.authorize_any(ALICE, "h", Op.WRITE, TOPIC)  # no ACL, no allow-everyone
    assert authorizer(**{"allow.everyone.if.no.acl.found": "true"}).authorize_any(
        ALICE, "h", Op.WRITE, TOPIC
    )
    auth.set_acls(topic("a-", PatternType.PREFIXED), [entry("User:alice", Op.WRITE)])
    assert auth.authorize_any(ALICE, "h", Op.WRITE, TOPIC)
    assert auth.authorize_any(ALICE, "h", Op.DESCRIBE, TOPIC)  # implied by WRITE
    assert not auth.authorize_any(BOB, "h", Op.WRITE, TOPIC)
    assert not auth.authorize_any(ALICE, "h", Op.READ, TOPIC)
    assert not auth.authorize_any(ALICE, "h", Op.WRITE, ResourceType.GROUP)
    # A DENY on a shorter prefix takes the allow back; one on another name does not.
    auth.set_acls(topic("b"), [entry("User:alice", Op.WRITE, DENY)])
    assert auth.authorize_any(ALICE, "h", Op.WRITE, TOPIC)
    auth.set_acls(topic("a", PatternType.PREFIXED), [entry("User:*", Op.ALL, DENY)])
    assert not auth.authorize_any(ALICE, "h", Op.WRITE, TOPIC)
    auth.set_acls(topic("a", PatternType.PREFIXED), [])
    auth.set_acls(topic("c"), [entry("User:alice", Op.WRITE)])
    auth.set_acls(topic("*"), [entry("User:alice", Op.WRITE, DENY)])  # the wildcard: all
    assert not auth.authorize_any(ALICE, "h", Op.WRITE, TOPIC)
    assert authorizer(**{"super.users": "User:alice"}).authorize_any(ALICE, "h", Op.WRITE, TOPIC)


def test_deny_from_a_prefixed_pattern_beats_a_literal_allow() -> None:
    auth = authorizer()
    auth.set_acls(topic("pay-orders"), [entry("User:alice", Op.READ)])
    auth.set_acls(topic("pay-", PatternType.PREFIXED), [entry("User:alice", Op.READ, DENY)])
    assert not auth.authorize(ALICE, "h", Op.READ, TOPIC, "pay-orders")


@pytest.mark.parametrize(
    ("granted", "asked", "allowed"),
    [
        (Op.READ, Op.DESCRIBE, True),
        (Op.WRITE, Op.DESCRIBE, True),
        (Op.DELETE, Op.DESCRIBE, True),
        (Op.ALTER, Op.DESCRIBE, True),
        (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, True),
        (Op.ALL, Op.IDEMPOTENT_WRITE, True),
        (Op.DESCRIBE, Op.READ, False),
        (Op.CREATE, Op.DESCRIBE, False),
        (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, False),
    ],
)
def test_implied_operations(granted: AclOperation, asked: AclOperation, allowed: bool) -> None:
    auth = authorizer()
    auth.set_acls(topic("t"), [entry("User:alice", granted)])
    assert auth.authorize(ALICE, "h", asked, TOPIC, "t") is allowed


def test_deny_of_read_does_not_deny_describe() -> None:
    auth = authorizer()
    auth.set_acls(
        topic("t"), [entry("User:alice", Op.DESCRIBE), entry("User:alice", Op.READ, DENY)]
    )
    assert auth.authorize(ALICE, "h", Op.DESCRIBE, TOPIC, "t")
    assert not auth.authorize(ALICE, "h", Op.READ, TOPIC, "t")


def test_prefixed_and_wildcard_patterns() -> None:
    auth = authorizer()
    auth.set_acls(topic("logs-", PatternType.PREFIXED), [entry("User:alice", Op.READ)])
    auth.set_acls(topic("*"), [entry("User:bob", Op.DESCRIBE)])
    assert auth.authorize(ALICE, "h", Op.READ, TOPIC, "logs-app")
    assert not auth.authorize(ALICE, "h", Op.READ, TOPIC, "log")
    assert not auth.authorize(ALICE, "h", Op.READ, TOPIC, "app-logs-")
    assert auth.authorize(BOB, "h", Op.DESCRIBE, TOPIC, "anything")
    # The wildcard is a name only for literal patterns and only of its type.
    assert not auth.authorize(BOB, "h", Op.DESCRIBE, ResourceType.GROUP, "anything")


def test_hosts() -> None:
    auth = authorizer()
    auth.set_acls(topic("t"), [entry("User:alice", Op.READ, host="10.0.0.1")])
    assert auth.authorize(ALICE, "10.0.0.1", Op.READ, TOPIC, "t")
    assert not auth.authorize(ALICE, "10.0.0.2", Op.READ, TOPIC, "t")


def test_super_users_may_do_anything_even_when_denied() -> None:
    auth = authorizer(**{"super.users": "User:admin; User:ops"})
    auth.set_acls(topic("t"), [entry("User:*", Op.ALL, DENY)])
    assert auth.authorize(KafkaPrincipal("User", "ops"), "h", Op.DELETE, TOPIC, "t")
    assert not auth.authorize(ALICE, "h", Op.DELETE, TOPIC, "t")


def test_a_change_of_acls_is_seen_by_the_next_decision_despite_the_cache() -> None:
    auth = authorizer()
    assert not auth.authorize(ALICE, "h", Op.READ, TOPIC, "t")
    auth.set_acls(topic("t"), [entry("User:alice", Op.READ)])
    assert auth.authorize(ALICE, "h", Op.READ, TOPIC, "t")
    assert auth.authorize(ALICE, "h", Op.READ, TOPIC, "t")
    auth.set_acls(topic("t"), [])
    assert not auth.authorize(ALICE, "h", Op.READ, TOPIC, "t")
    assert auth.statistics()["cache_misses"] == 3


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"authorizer.class.name": "com.example.Mine"}, "not an authorizer"),
        ({"super.users": "alice"}, "super.users"),
        ({"allow.everyone.if.no.acl.found": "yes"}, "true or false"),
    ],
)
def test_bad_settings_are_refused(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        AuthorizerConfig.from_settings(settings)


def test_kafka_class_names_enable_it_and_none_leaves_it_off() -> None:
    for name in (
        "kafka.security.authorizer.AclAuthorizer",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    ):
        assert AuthorizerConfig.from_settings({"authorizer.class.name": name}).enabled
    assert not AuthorizerConfig.from_settings({}).enabled


def test_filters() -> None:
    auth = authorizer()
    auth.set_acls(topic("orders"), [entry("User:alice", Op.READ), entry("User:bob", Op.WRITE)])
    auth.set_acls(topic("ord", PatternType.PREFIXED), [entry("User:alice", Op.DESCRIBE)])
    auth.set_acls(ResourcePattern(ResourceType.GROUP, "g"), [entry("User:alice", Op.READ)])
    everything = auth.acls()
    assert len(everything) == 4
    by_alice = auth.acls(AclBindingFilter(principal="User:alice"))
    assert {b.entry.operation for b in by_alice} == {Op.READ, Op.DESCRIBE}
    matching = auth.acls(
        AclBindingFilter(TOPIC, "orders", PatternType.MATCH, operation=Op.DESCRIBE)
    )
    assert matching == [
        AclBinding(topic("ord", PatternType.PREFIXED), entry("User:alice", Op.DESCRIBE))
    ]
    literal = auth.acls(AclBindingFilter(TOPIC, "orders", PatternType.LITERAL))
    assert len(literal) == 2


def test_acl_node_json_is_kafkas_and_round_trips() -> None:
    entries = frozenset(
        {entry("User:alice", Op.CLUSTER_ACTION), entry("User:bob", Op.READ, DENY, "10.0.0.1")}
    )
    data = encode_acl_node(entries)
    assert b'"operation":"ClusterAction"' in data
    assert b'"permissionType":"Deny"' in data
    assert decode_acl_node(data) == entries
    kafka_written = (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
        b'"operation":"IdempotentWrite","host":"*"}]}'
    )
    assert decode_acl_node(kafka_written) == {entry("User:alice", Op.IDEMPOTENT_WRITE)}
    with pytest.raises(ValueError, match=r"malformed|version"):
        decode_acl_node(b'{"version":1}')


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (ResourcePattern(ResourceType.ANY, "t"), "not concrete"),
        (ResourcePattern(TOPIC, "a/b"), "cannot be stored"),
        (ResourcePattern(TOPIC, "*", PatternType.PREFIXED), "wildcard"),
        (ResourcePattern(ResourceType.CLUSTER, "c"), "kafka-cluster"),
        (ResourcePattern(TOPIC, "t", PatternType.MATCH), "LITERAL or PREFIXED"),
    ],
)
def test_patterns_that_cannot_be_stored(pattern: ResourcePattern, message: str) -> None:
    problem = AclBinding(pattern, entry("User:a", Op.READ)).check()
    assert problem is not None
    assert message in problem
