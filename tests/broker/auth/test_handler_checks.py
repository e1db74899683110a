"""The handlers' authorization checks with named principals (the authentication side sets
``CLIENT_PRINCIPAL`` per dispatch; these tests set it directly), over in-memory fakes."""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import importlib
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from kio.serial import entity_reader
from kio.static.primitive import i32Timedelta
from tests.broker.fakes import FakePartition, FakeTopics, context, request
from tests.broker.handlers.test_fetch import decoded, fetch_request, filled
from tests.broker.handlers.test_produce import answers, batch, produce_request

from odradek._types import TopicPartition
from odradek.broker.auth.acls import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.broker.auth.authorizer import AclAuthorizer, AuthorizerConfig
from odradek.broker.auth.quotas import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    ClientQuotas,
    QuotaEntity,
)
from odradek.broker.context import BrokerContext
from odradek.broker.handlers import (
    consumer_group_heartbeat,
    describe_cluster,
    describe_log_dirs,
    elect_leaders,
    end_txn,
    fetch,
    heartbeat,
    init_producer_id,
    leader_and_isr,
    metadata,
    produce,
)
from odradek.broker.principal import CLIENT_PRINCIPAL, KafkaPrincipal
from odradek.errors import ErrorCode
from odradek.protocol import FetchResponseFrame, response_class
from odradek.protocol.inter_broker import LeaderAndIsrRequest

ALICE = KafkaPrincipal("User", "alice")
MALLORY = KafkaPrincipal("User", "mallory")
ADMIN = KafkaPrincipal("User", "admin")
Op = AclOperation
_T = TypeVar("_T")


def as_principal(principal: KafkaPrincipal, call: Callable[[], _T]) -> _T:
    """Runs ``call`` as the server runs a dispatch: with the connection's principal set."""

    def run() -> _T:
        CLIENT_PRINCIPAL.set(principal)
        return call()

    return contextvars.copy_context().run(run)


def secured(ctx: BrokerContext, *grants: tuple[ResourceType, str, AclOperation]) -> BrokerContext:
    authorizer = AclAuthorizer(
        AuthorizerConfig(enabled=True, super_users=frozenset({"User:admin"}))
    )
    for resource_type, name, operation in grants:
        pattern_type = PatternType.PREFIXED if name.endswith("-") else PatternType.LITERAL
        pattern = ResourcePattern(resource_type, name, pattern_type)
        entry = AccessControlEntry("User:alice", "*", operation, AclPermissionType.ALLOW)
        authorizer.set_acls(pattern, authorizer.entries(pattern) | {entry})
    ctx.authorizer = authorizer
    return ctx


def test_produce_needs_write_on_each_topic() -> None:
    a, b = FakePartition(TopicPartition("a", 0)), FakePartition(TopicPartition("b", 0))
    ctx = secured(context(a, b), (ResourceType.TOPIC, "a", Op.WRITE))
    data = {("a", 0): batch(), ("b", 0): batch()}
    alice = answers(as_principal(ALICE, lambda: produce.handle(ctx, produce_request(1, data))))
    assert alice == {("a", 0): (0, 0), ("b", 0): (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)}
    mallory = answers(as_principal(MALLORY, lambda: produce.handle(ctx, produce_request(1, data))))
    assert {code for code, _ in mallory.values()} == {ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    admin = answers(as_principal(ADMIN, lambda: produce.handle(ctx, produce_request(1, data))))
    assert admin == {("a", 0): (0, 1), ("b", 0): (0, 0)}
    assert len(a.appends) == 2
    assert len(b.appends) == 1


def test_an_acks_0_produce_to_a_denied_topic_closes_the_connection() -> None:
    ctx = secured(context(FakePartition(TopicPartition("a", 0))))
    with pytest.raises(Exception, match="acks=0"):
        as_principal(ALICE, lambda: produce.handle(ctx, produce_request(0, {("a", 0): batch()})))


def test_fetch_needs_read_and_a_follower_cluster_action() -> None:
    tp_a, tp_b = TopicPartition("a", 0), TopicPartition("b", 0)
    ctx = secured(
        context(filled(tp_a, 1), filled(tp_b, 1)),
        (ResourceType.TOPIC, "a", Op.READ),
    )
    offsets = {tp_a: 0, tp_b: 0}
    answer = decoded(as_principal(ALICE, lambda: fetch.handle(ctx, fetch_request(offsets))))
    assert answer[tp_a].error_code == ErrorCode.NONE
    assert answer[tp_b].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    # READ on the topics does not make a follower: replica fetches need CLUSTER_ACTION.
    follower = fetch_request(offsets, replica_id=2)
    denied = decoded(as_principal(ALICE, lambda: fetch.handle(ctx, follower)))
    assert {p.error_code for p in denied.values()} == {ErrorCode.TOPIC_AUTHORIZATION_FAILED}


def metadata_answer(
    ctx: BrokerContext,
    principal: KafkaPrincipal,
    topics: list[str] | None,
    operations: dict[str, int] | None = None,
) -> dict[str, int]:
    m = importlib.import_module("kio.schema.metadata.v12.request")
    body = m.MetadataRequest(
        topics=None
        if topics is None
        else tuple(m.MetadataRequestTopic(topic_id=None, name=t) for t in topics),
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=operations is not None,
    )
    frame = as_principal(principal, lambda: metadata.handle(ctx, request(body)))
    response_type: Any = response_class(3, 12)
    _, size = entity_reader(response_type.__header_schema__)(frame[4:], 0)
    response, _ = entity_reader(response_type)(frame[4:], size)
    if operations is not None:
        operations.update(
            {str(t.name): int(t.topic_authorized_operations) for t in response.topics}
        )
    return {str(t.name): int(t.error_code) for t in response.topics}


def test_metadata_hides_topics_and_auto_creation_needs_create() -> None:
    topics = FakeTopics({"pay-orders", "secret"}, auto_create=True)
    ctx = secured(context(topics=topics), (ResourceType.TOPIC, "pay-", Op.READ))
    assert metadata_answer(ctx, ALICE, None) == {"pay-orders": 0}
    operations: dict[str, int] = {}
    metadata_answer(ctx, ALICE, None, operations)
    assert operations == {"pay-orders": 1 << Op.READ | 1 << Op.DESCRIBE}  # DESCRIBE implied
    named = metadata_answer(ctx, ALICE, ["secret", "pay-new"])
    # Existing or not, a topic it may not describe is answered the same way.
    assert named["secret"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert named["pay-new"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # DESCRIBE but no CREATE
    assert topics.created == []
    assert set(metadata_answer(ctx, ADMIN, None)) == {"pay-orders", "secret"}
    secured_ctx = secured(
        ctx, (ResourceType.TOPIC, "pay-", Op.READ), (ResourceType.TOPIC, "pay-", Op.CREATE)
    )
    metadata_answer(secured_ctx, ALICE, ["pay-new"])
    assert topics.created == ["pay-new"]


def test_group_apis_need_read_on_the_group() -> None:
    m = importlib.import_module("kio.schema.heartbeat.v1.request")
    body = m.HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    ctx = secured(context(), (ResourceType.GROUP, "other", Op.READ))
    response = asyncio.run(as_principal(ALICE, lambda: heartbeat.handle(ctx, request(body))))
    assert response.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_idempotent_producers_need_idempotent_write_on_the_cluster() -> None:
    m = importlib.import_module("kio.schema.init_producer_id.v0.request")
    body = m.InitProducerIdRequest(transactional_id=None, transaction_timeout=_ms(1000))
    ctx = secured(context(), (ResourceType.CLUSTER, CLUSTER_NAME, Op.IDEMPOTENT_WRITE))
    allowed = as_principal(ALICE, lambda: init_producer_id.handle(ctx, request(body)))
    assert allowed.error_code == ErrorCode.NONE
    denied = as_principal(MALLORY, lambda: init_producer_id.handle(ctx, request(body)))
    assert denied.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


@pytest.mark.parametrize(
    ("grant", "allowed"),
    [
        ((ResourceType.TOPIC, "orders", Op.WRITE), True),  # KIP-679: WRITE on some topic
        ((ResourceType.TOPIC, "orders-", Op.WRITE), True),  # a prefixed one too
        ((ResourceType.TOPIC, "orders", Op.READ), False),
        ((ResourceType.GROUP, "orders", Op.WRITE), False),
    ],
)
def test_idempotent_producers_may_instead_have_write_on_some_topic(
    grant: tuple[ResourceType, str, AclOperation], allowed: bool
) -> None:
    m = importlib.import_module("kio.schema.init_producer_id.v0.request")
    body = m.InitProducerIdRequest(transactional_id=None, transaction_timeout=_ms(1000))
    ctx = secured(context(), grant)
    response = as_principal(ALICE, lambda: init_producer_id.handle(ctx, request(body)))
    expected = ErrorCode.NONE if allowed else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert response.error_code == expected


def test_inter_broker_apis_need_cluster_action() -> None:
    body = LeaderAndIsrRequest(
        controller_id=0, controller_epoch=1, ungrouped_partition_states=(), live_leaders=()
    )
    ctx = secured(context())
    denied = as_principal(ALICE, lambda: leader_and_isr.handle(ctx, request(body)))
    assert denied.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    by_broker = as_principal(ADMIN, lambda: leader_and_isr.handle(ctx, request(body)))
    assert by_broker.error_code == ErrorCode.NOT_CONTROLLER  # allowed; a lone broker


def _ms(value: int) -> Any:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def test_cluster_admin_apis_need_their_cluster_operation() -> None:
    ctx = secured(context(), (ResourceType.CLUSTER, CLUSTER_NAME, Op.DESCRIBE))
    log_dirs = importlib.import_module("kio.schema.describe_log_dirs.v4.request")
    body = log_dirs.DescribeLogDirsRequest(topics=None)
    assert as_principal(
        MALLORY, lambda: describe_log_dirs.handle(ctx, request(body))
    ).error_code == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    described = as_principal(ALICE, lambda: describe_log_dirs.handle(ctx, request(body)))
    assert described.error_code == ErrorCode.NONE
    cluster_m = importlib.import_module("kio.schema.describe_cluster.v0.request")
    ask = cluster_m.DescribeClusterRequest(include_cluster_authorized_operations=True)
    answer = as_principal(ALICE, lambda: describe_cluster.handle(ctx, request(ask)))
    assert answer.cluster_authorized_operations == 1 << Op.DESCRIBE
    elect = importlib.import_module("kio.schema.elect_leaders.v1.request")
    body_e = elect.ElectLeadersRequest(election_type=0, topic_partitions=None, timeout=_ms(100))
    refused = as_principal(ALICE, lambda: elect_leaders.handle(ctx, request(body_e)))
    assert refused.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_produce_answers_its_throttle_time_once_over_the_quota() -> None:
    partition = FakePartition(TopicPartition("a", 0))
    ctx = context(partition)
    ctx.quotas = ClientQuotas()
    ctx.quotas.set_quotas(QuotaEntity(None, "fake"), {PRODUCER_BYTE_RATE: 1000})
    throttles = []
    for _ in range(20):
        frame = produce.handle(ctx, produce_request(1, {("a", 0): batch()}))
        assert isinstance(frame, bytes)
        response_type: Any = response_class(0, 7)
        _, size = entity_reader(response_type.__header_schema__)(frame[4:], 0)
        response, _ = entity_reader(response_type)(frame[4:], size)
        throttles.append(int(response.throttle_time.total_seconds() * 1000))
    assert throttles[0] == 0
    assert throttles[-1] > throttles[-2] > 0  # the debt grows with each request
    assert len(partition.appends) == 20  # KIP-219: answered at once, not refused


def test_a_consumer_fetch_answers_its_throttle_time_a_follower_is_not_counted() -> None:
    tp = TopicPartition("a", 0)
    ctx = context(filled(tp, 3))
    ctx.quotas = ClientQuotas()
    ctx.quotas.set_quotas(QuotaEntity(None, "fake"), {CONSUMER_BYTE_RATE: 10})

    def throttle_of(replica_id: int) -> int:
        frame = fetch.handle(ctx, fetch_request({tp: 0}, replica_id=replica_id))
        assert isinstance(frame, FetchResponseFrame)
        head = b"".join(p for p in frame.parts if isinstance(p, bytes))
        return int.from_bytes(head[8:12], "big")  # size, correlation id, throttle_time_ms

    assert throttle_of(2) == 0  # replication is not a client's consumption
    first = throttle_of(-1)  # the records are more than the 10-byte burst
    assert first > 0
    assert throttle_of(-1) > first


def test_transaction_apis_need_write_on_the_transactional_id() -> None:
    ctx = secured(context(), (ResourceType.TRANSACTIONAL_ID, "txn-", Op.WRITE))
    init = importlib.import_module("kio.schema.init_producer_id.v0.request")
    end = importlib.import_module("kio.schema.end_txn.v0.request")

    def init_as(principal: KafkaPrincipal, transactional_id: str) -> Any:
        body = init.InitProducerIdRequest(
            transactional_id=transactional_id, transaction_timeout=_ms(1000)
        )

        async def call() -> Any:
            return await init_producer_id.handle(ctx, request(body))  # type: ignore[misc]

        return as_principal(principal, lambda: asyncio.run(call()))

    def end_as(principal: KafkaPrincipal, transactional_id: str) -> Any:
        body = end.EndTxnRequest(
            transactional_id=transactional_id, producer_id=1, producer_epoch=0, committed=True
        )
        return as_principal(principal, lambda: asyncio.run(end_txn.handle(ctx, request(body))))

    denied = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert init_as(MALLORY, "txn-1").error_code == denied
    assert init_as(ALICE, "other").error_code == denied
    assert end_as(ALICE, "other").error_code == denied
    # Allowed: past the check, on to the coordinator (which this lone fake broker lacks).
    assert init_as(ALICE, "txn-1").error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert end_as(ALICE, "txn-1").error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_consumer_group_heartbeat_needs_read_on_the_group() -> None:
    m = importlib.import_module("kio.schema.consumer_group_heartbeat.v1.request")
    body = m.ConsumerGroupHeartbeatRequest(
        group_id="orders-app",
        member_id="m-1",
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout=_ms(1000),
        subscribed_topic_names=("orders",),
        subscribed_topic_regex=None,
        server_assignor=None,
        topic_partitions=None,
    )
    ctx = secured(context(), (ResourceType.GROUP, "orders-", Op.READ))

    def heartbeat_as(principal: KafkaPrincipal) -> Any:
        return as_principal(
            principal, lambda: asyncio.run(consumer_group_heartbeat.handle(ctx, request(body)))
        )

    assert heartbeat_as(MALLORY).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    # Allowed: on to the coordinator, which this lone fake broker lacks.
    assert heartbeat_as(ALICE).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
