"""ACLs end to end with confluent-kafka (librdkafka): the ACL admin APIs, and a principal
(every PLAINTEXT connection is ``User:ANONYMOUS``) that may not write, join or see what no ACL
grants it; super users may do everything."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from odradek import Broker
from odradek.broker.auth import acls

from .conftest import wait_until

pytestmark = pytest.mark.interop

TIMEOUT_S = 10.0
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ANONYMOUS = "User:ANONYMOUS"


def grant(
    broker: Broker,
    resource_type: acls.ResourceType,
    name: str,
    operation: acls.AclOperation,
    pattern: acls.PatternType = acls.PatternType.LITERAL,
    permission: acls.AclPermissionType = acls.AclPermissionType.ALLOW,
) -> None:
    """Adds an ACL for ANONYMOUS through the broker's ACL store (as kafka-acls.sh with
    ``--authorizer-properties`` writes to ZooKeeper, without asking a broker)."""
    store = broker.app.ctx.acl_store if broker.app.ctx is not None else None
    assert store is not None
    binding = acls.AclBinding(
        acls.ResourcePattern(resource_type, name, pattern),
        acls.AccessControlEntry(ANONYMOUS, "*", operation, permission),
    )
    assert store.create([binding]) == [None]


@pytest.fixture(scope="module")
def secured() -> Iterator[Broker]:
    """A broker with the authorizer on, no super user, nothing allowed without an ACL."""
    config = {"authorizer.class.name": AUTHORIZER, "num.partitions": "1"}
    with Broker(config=config) as running:
        grant(running, acls.ResourceType.CLUSTER, acls.CLUSTER_NAME, acls.AclOperation.CREATE)
        admin = AdminClient({"bootstrap.servers": running.bootstrap_servers})
        for topic in ("open-events", "secret"):
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT_S)
        # Only what the tests need: the "open-" topics by prefix, the group "members".
        grant(
            running,
            acls.ResourceType.TOPIC,
            "open-",
            acls.AclOperation.ALL,
            acls.PatternType.PREFIXED,
        )
        grant(running, acls.ResourceType.GROUP, "members", acls.AclOperation.READ)
        yield running


def test_a_principal_without_write_cannot_produce(secured: Broker) -> None:
    results: dict[str, KafkaError | None] = {}

    def delivered(error: KafkaError | None, message: object) -> None:
        results[message.topic()] = error  # type: ignore[attr-defined]

    producer = Producer(
        {"bootstrap.servers": secured.bootstrap_servers, "message.timeout.ms": 10_000}
    )
    producer.produce("open-events", b"yes", on_delivery=delivered)
    producer.produce("secret", b"no", on_delivery=delivered)
    producer.flush(TIMEOUT_S)
    assert results["open-events"] is None
    error = results["secret"]
    assert error is not None
    assert error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_topics_the_principal_may_not_describe_are_hidden(secured: Broker) -> None:
    admin = AdminClient({"bootstrap.servers": secured.bootstrap_servers})
    listed = admin.list_topics(timeout=TIMEOUT_S).topics
    assert "open-events" in listed
    assert "secret" not in listed
    named = admin.list_topics("secret", timeout=TIMEOUT_S).topics["secret"]
    assert named.error is not None
    assert named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_a_principal_without_read_on_the_group_cannot_join(secured: Broker) -> None:
    def consumer(group: str) -> Consumer:
        return Consumer(
            {
                "bootstrap.servers": secured.bootstrap_servers,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000,
            }
        )

    denied = consumer("strangers")
    denied.subscribe(["open-events"])
    errors: list[int] = []
    try:
        wait_until(
            lambda: _poll_error(denied, errors) == KafkaError.GROUP_AUTHORIZATION_FAILED,
            what="GROUP_AUTHORIZATION_FAILED",
        )
    finally:
        denied.close()
    member = consumer("members")
    member.subscribe(["open-events"])
    try:
        values: list[bytes] = []
        wait_until(lambda: _poll_value(member, values), what="a record through the group")
        assert [tp.topic for tp in member.assignment()] == ["open-events"]
    finally:
        member.close()


def _poll_error(consumer: Consumer, errors: list[int]) -> int | None:
    try:
        message = consumer.poll(0.2)
    except KafkaException as error:
        errors.append(error.args[0].code())
        return errors[-1]
    if message is not None and message.error() is not None:
        errors.append(message.error().code())
        return errors[-1]
    return None


def _poll_value(consumer: Consumer, values: list[bytes]) -> bool:
    message = consumer.poll(0.2)
    if message is not None and message.error() is None:
        values.append(message.value())
    return bool(values)


def test_the_acl_apis_need_alter_on_the_cluster(secured: Broker) -> None:
    admin = AdminClient({"bootstrap.servers": secured.bootstrap_servers})
    binding = AclBinding(
        ResourceType.TOPIC,
        "x",
        ResourcePatternType.LITERAL,
        ANONYMOUS,
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    with pytest.raises(KafkaException) as raised:
        admin.create_acls([binding])[binding].result(TIMEOUT_S)
    assert raised.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


@pytest.fixture(scope="module")
def superuser() -> Iterator[Broker]:
    config = {"authorizer.class.name": AUTHORIZER, "super.users": ANONYMOUS}
    with Broker(config=config) as running:
        yield running


def test_acls_created_described_and_deleted_through_the_admin_api(superuser: Broker) -> None:
    admin = AdminClient({"bootstrap.servers": superuser.bootstrap_servers})
    read = AclBinding(
        ResourceType.TOPIC,
        "pay-",
        ResourcePatternType.PREFIXED,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    deny = AclBinding(
        ResourceType.GROUP,
        "g",
        ResourcePatternType.LITERAL,
        "User:bob",
        "10.0.0.1",
        AclOperation.ALL,
        AclPermissionType.DENY,
    )
    for future in admin.create_acls([read, deny]).values():
        future.result(TIMEOUT_S)
    everything = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    described = admin.describe_acls(everything).result(TIMEOUT_S)
    assert set(described) == {read, deny}
    matching = AclBindingFilter(
        ResourceType.TOPIC,
        "pay-orders",
        ResourcePatternType.MATCH,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert admin.describe_acls(matching).result(TIMEOUT_S) == [read]
    deleted = admin.delete_acls([matching])[matching].result(TIMEOUT_S)
    assert deleted == [read]
    assert admin.describe_acls(everything).result(TIMEOUT_S) == [deny]


def test_super_users_may_do_everything(superuser: Broker) -> None:
    grant(
        superuser,
        acls.ResourceType.TOPIC,
        "*",
        acls.AclOperation.ALL,
        permission=acls.AclPermissionType.DENY,
    )
    producer = Producer({"bootstrap.servers": superuser.bootstrap_servers})
    results: list[KafkaError | None] = []
    producer.produce("anything", b"v", on_delivery=lambda error, _m: results.append(error))
    producer.flush(TIMEOUT_S)
    assert results == [None]
