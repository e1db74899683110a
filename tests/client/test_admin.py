"""``client.admin``: every AdminClient call against a live embedded broker, with its per-item
error paths (as KafkaError subclasses on lookup), call timeouts and a closed client."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from odradek import Broker
from odradek._types import TopicPartition
from odradek.client.admin import AdminClient
from odradek.client.admin_types import (
    AdminResult,
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from odradek.errors import (
    ConfigError,
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    KafkaError,
    KafkaTimeoutError,
    OffsetOutOfRangeError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from odradek.records.record import SimpleRecord

from .conftest import Produce


@pytest.fixture
def admin(broker: Broker) -> Iterator[AdminClient]:
    client = AdminClient({"bootstrap.servers": broker.bootstrap_servers}, client_id="t")
    yield client
    client.close()


def records(*values: bytes, timestamp_ms: int = 1_000) -> list[SimpleRecord]:
    return [SimpleRecord(timestamp_ms + i, None, value) for i, value in enumerate(values)]


# ---------------------------------------------------------------------- configuration


def test_unknown_setting_is_named() -> None:
    with pytest.raises(ConfigError, match=r"'linger\.ms'.*admin"):
        AdminClient({"bootstrap.servers": "127.0.0.1:1", "linger.ms": 5})


def test_bootstrap_servers_required() -> None:
    with pytest.raises(ConfigError, match=r"bootstrap\.servers"):
        AdminClient()


# ---------------------------------------------------------------------- topics


def test_create_describe_list_delete(admin: AdminClient) -> None:
    created = admin.create_topics([NewTopic("a", 3, 1), NewTopic("b", 1, 1)])
    assert isinstance(created, AdminResult)
    assert created.all() == {"a": None, "b": None}
    assert admin.list_topics() == ["a", "b"]
    description = admin.describe_topics(["a"])["a"]
    assert description.name == "a"
    assert [p.partition for p in description.partitions] == [0, 1, 2]
    assert all(
        p.leader == 0 and p.replicas == (0,) and p.isr == (0,) for p in description.partitions
    )
    assert description.topic_partitions[2] == TopicPartition("a", 2)
    assert admin.delete_topics(["a"]).all() == {"a": None}
    assert admin.list_topics() == ["b"]


def test_create_topic_errors_per_item(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("exists", 1, 1)]).all()
    result = admin.create_topics(
        [
            NewTopic("exists", 1, 1),
            NewTopic("zero", 0, 1),
            NewTopic("wide", 1, 2),
            NewTopic("bad/name", 1, 1),
            NewTopic("badconfig", 1, 1, {"no.such.config": "1"}),
            NewTopic("fine", 2, 1),
        ]
    )
    assert list(result) == ["exists", "zero", "wide", "bad/name", "badconfig", "fine"]
    with pytest.raises(TopicAlreadyExistsError, match="exists"):
        result["exists"]
    with pytest.raises(InvalidPartitionsError):
        result["zero"]
    with pytest.raises(InvalidReplicationFactorError):
        result["wide"]
    with pytest.raises(InvalidTopicError):
        result["bad/name"]
    with pytest.raises(KafkaError, match=r"no\.such\.config") as caught:
        result["badconfig"]
    assert caught.value.error_code == ErrorCode.INVALID_CONFIG
    assert result["fine"] is None
    assert set(result.errors) == {"exists", "zero", "wide", "bad/name", "badconfig"}
    with pytest.raises(TopicAlreadyExistsError):
        result.all()
    assert admin.list_topics() == ["exists", "fine"]


def test_create_topics_validate_only(admin: AdminClient) -> None:
    assert admin.create_topics([NewTopic("v", 2, 1)], validate_only=True).all() == {"v": None}
    assert admin.list_topics() == []


def test_create_topic_with_configs_defaults_and_assignment(broker: Broker) -> None:
    with (
        Broker(config={"num.partitions": "4"}) as other,
        AdminClient(bootstrap_servers=other.bootstrap_servers) as admin,
    ):
        admin.create_topics(
            [
                NewTopic("defaults"),
                NewTopic("compacted", 1, 1, {"cleanup.policy": "compact"}),
                NewTopic("assigned", replica_assignment={0: [0], 1: [0]}),
            ]
        ).all()
        described = admin.describe_topics(["defaults", "assigned"])
        assert len(described["defaults"].partitions) == 4  # the broker's num.partitions
        assert len(described["assigned"].partitions) == 2
        configs = admin.describe_configs([ConfigResource.topic("compacted")])
        entry = configs[ConfigResource.topic("compacted")]["cleanup.policy"]
        assert entry.value == "compact"
        assert entry.source is ConfigSource.DYNAMIC_TOPIC_CONFIG


def test_delete_unknown_topic(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("here", 1, 1)]).all()
    result = admin.delete_topics(["here", "nowhere"])
    assert result["here"] is None
    with pytest.raises(UnknownTopicOrPartitionError, match="nowhere"):
        result["nowhere"]


def test_describe_unknown_topic(admin: AdminClient) -> None:
    result = admin.describe_topics(["ghost"])
    with pytest.raises(UnknownTopicOrPartitionError, match="ghost"):
        result["ghost"]
    assert admin.list_topics() == []  # describing does not create it


def test_create_partitions(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("grow", 2, 1), NewTopic("shrink", 3, 1)]).all()
    result = admin.create_partitions(
        {"grow": NewPartitions(5), "shrink": 2, "ghost": NewPartitions(2)}
    )
    assert result["grow"] is None
    with pytest.raises(InvalidPartitionsError):
        result["shrink"]
    with pytest.raises(UnknownTopicOrPartitionError):
        result["ghost"]
    assert len(admin.describe_topics(["grow"])["grow"].partitions) == 5
    assert admin.create_partitions({"grow": 6}, validate_only=True).all() == {"grow": None}
    assert len(admin.describe_topics(["grow"])["grow"].partitions) == 5


def test_list_topics_hides_internal_ones(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("user", 1, 1)]).all()
    assert admin.list_topics() == ["user"]
    assert "user" in admin.list_topics(include_internal=True)


def test_describe_cluster(admin: AdminClient, broker: Broker) -> None:
    cluster = admin.describe_cluster()
    assert cluster.cluster_id
    assert cluster.controller_id == 0
    [only] = cluster.brokers
    assert (only.node_id, only.host, only.port) == (0, "127.0.0.1", broker.port)


# ---------------------------------------------------------------------- configs


def test_describe_and_alter_configs(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("conf", 1, 1)]).all()
    resource = ConfigResource.topic("conf")
    before = admin.describe_configs([resource])[resource]
    assert before["retention.ms"].is_default
    changed = admin.alter_configs(
        {resource: {"retention.ms": "60000", "cleanup.policy": "compact"}}
    )
    assert changed.all() == {resource: None}
    after = admin.describe_configs([resource])[resource]
    assert after["retention.ms"].value == "60000"
    assert after["retention.ms"].source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    # APPEND to a list config, then DELETE an override back to the default.
    admin.alter_configs(
        {
            resource: [
                AlterConfigOp("cleanup.policy", "delete", AlterConfigOpType.APPEND),
                AlterConfigOp("retention.ms", None, AlterConfigOpType.DELETE),
            ]
        }
    ).all()
    final = admin.describe_configs([resource])[resource]
    assert final["cleanup.policy"].value == "compact,delete"
    assert final["retention.ms"].is_default


def test_alter_configs_validate_only_and_errors(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("strict", 1, 1)]).all()
    resource = ConfigResource.topic("strict")
    admin.alter_configs({resource: {"retention.ms": "5"}}, validate_only=True).all()
    assert admin.describe_configs([resource])[resource]["retention.ms"].is_default
    bad = admin.alter_configs(
        {resource: {"no.such.config": "1"}, ConfigResource.topic("ghost"): {"retention.ms": "1"}}
    )
    with pytest.raises(KafkaError, match=r"no\.such\.config") as caught:
        bad[resource]
    assert caught.value.error_code == ErrorCode.INVALID_CONFIG
    with pytest.raises(UnknownTopicOrPartitionError):
        bad[ConfigResource.topic("ghost")]


def test_describe_broker_configs_and_unknown_topic(admin: AdminClient) -> None:
    broker_resource = ConfigResource.broker(0)
    ghost = ConfigResource.topic("ghost")
    result = admin.describe_configs([broker_resource, ghost], include_synonyms=True)
    configs = result[broker_resource]
    assert "log.retention.hours" in configs or "log.retention.ms" in configs
    with pytest.raises(UnknownTopicOrPartitionError):
        result[ghost]


# ---------------------------------------------------------------------- offsets and records


def test_list_offsets(admin: AdminClient, produce: Produce) -> None:
    admin.create_topics([NewTopic("offs", 2, 1)]).all()
    produce("offs", 0, records(b"a", b"b", b"c", timestamp_ms=1_000))
    produce("offs", 0, records(b"d", b"e", timestamp_ms=5_000))
    p0, p1 = TopicPartition("offs", 0), TopicPartition("offs", 1)
    result = admin.list_offsets(
        {
            p0: OffsetSpec.latest(),
            p1: OffsetSpec.earliest(),
            TopicPartition("offs", 7): -1,
            TopicPartition("ghost", 0): -2,
        }
    )
    assert result[p0].offset == 5
    assert result[p1].offset == 0
    with pytest.raises(UnknownTopicOrPartitionError, match="offs-7"):
        result[TopicPartition("offs", 7)]
    with pytest.raises(UnknownTopicOrPartitionError, match="ghost-0"):
        result[TopicPartition("ghost", 0)]
    by_time = admin.list_offsets(
        {p0: OffsetSpec.for_timestamp(1_001), p1: OffsetSpec.for_timestamp(0)}
    )
    assert by_time[p0].offset == 1
    assert by_time[p0].timestamp == 1_001
    assert by_time[p1].offset == -1  # nothing at or after it in an empty partition
    assert admin.list_offsets({p0: OffsetSpec.for_timestamp(4_000)})[p0].offset == 3
    assert admin.list_offsets({p0: OffsetSpec.for_timestamp(9_000)})[p0].offset == -1
    with pytest.raises(ValueError, match="timestamp"):
        OffsetSpec.for_timestamp(-5)


def test_delete_records(admin: AdminClient, produce: Produce) -> None:
    admin.create_topics([NewTopic("del", 2, 1)]).all()
    produce("del", 0, records(*(b"%d" % i for i in range(10))))
    produce("del", 1, records(b"x", b"y"))
    p0, p1 = TopicPartition("del", 0), TopicPartition("del", 1)
    result = admin.delete_records({p0: 4, p1: -1})
    assert result[p0].low_watermark == 4
    assert result[p1].low_watermark == 2  # -1: up to the high watermark
    assert admin.list_offsets({p0: OffsetSpec.earliest()})[p0].offset == 4
    past = admin.delete_records({p0: 99, TopicPartition("del", 5): 1})
    with pytest.raises(OffsetOutOfRangeError):
        past[p0]
    with pytest.raises(UnknownTopicOrPartitionError):
        past[TopicPartition("del", 5)]


# ---------------------------------------------------------------------- failures


def test_call_times_out_without_a_broker() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with AdminClient(bootstrap_servers=f"127.0.0.1:{port}", reconnect_backoff_ms=20) as admin:
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match="timed out"):
            admin.create_topics([NewTopic("x", 1, 1)], timeout_ms=300)
        assert time.monotonic() - started < 3
        with pytest.raises(KafkaTimeoutError):
            admin.list_offsets({TopicPartition("x", 0): -1}, timeout_ms=200)


def test_call_survives_a_broker_restart(tmp_path: object) -> None:
    data_dir = f"{tmp_path}/data"
    first = Broker(data_dir).start()
    port = first.port
    admin = AdminClient(
        bootstrap_servers=first.bootstrap_servers, reconnect_backoff_ms=20, retry_backoff_ms=20
    )
    try:
        admin.create_topics([NewTopic("kept", 1, 1)]).all()
        first.stop()
        with Broker(data_dir, port=port):
            # The first request fails on the dead connection; the call retries and succeeds.
            assert admin.list_topics(timeout_ms=5_000) == ["kept"]
            admin.close()
    finally:
        admin.close()
        first.stop()


def test_closed_client_fails(admin: AdminClient) -> None:
    admin.close()
    with pytest.raises(KafkaError, match="closed"):
        admin.list_topics()
    admin.close()  # idempotent
