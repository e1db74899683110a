"""``console.views``: the pages' values built from admin answers."""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.client.admin_groups import ConsumerGroupDescription, GroupListing, MemberDescription
from odradek.client.admin_types import (
    ClusterDescription,
    ConfigEntry,
    ConfigSource,
    LogDirDescription,
    PartitionDescription,
    ReplicaInfo,
    TopicDescription,
)
from odradek.client.cluster import BrokerMetadata
from odradek.client.simple_consumer import Message
from odradek.console.inputs import ResetSpec
from odradek.console.lag import GroupLag, PartitionLag
from odradek.console.views import (
    HIDDEN,
    cluster_view,
    config_rows,
    group_rows,
    group_view,
    message_rows,
    partition_sizes,
    reset_plan,
    topic_rows,
    topic_view,
)
from odradek.records.batch import TimestampType

A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)
B0 = TopicPartition("b", 0)

TOPIC_A = TopicDescription(
    "a",
    False,
    (
        PartitionDescription(1, 2, (2, 1), (2,)),  # under-replicated
        PartitionDescription(0, 1, (1, 2), (1, 2)),
    ),
)
TOPIC_B = TopicDescription("b", True, (PartitionDescription(0, None, (1,), ()),))  # offline


def _dir(replicas: dict[TopicPartition, ReplicaInfo]) -> dict[str, LogDirDescription]:
    return {"/d": LogDirDescription("/d", None, replicas)}


def test_cluster_view_sorts_brokers_and_marks_the_controller() -> None:
    view = cluster_view(
        ClusterDescription(
            "cid", 2, (BrokerMetadata(2, "h2", 9093, "r1"), BrokerMetadata(1, "h1", 9092))
        )
    )
    assert (view.cluster_id, view.controller_id) == ("cid", 2)
    assert [(b.broker_id, b.address, b.rack, b.is_controller) for b in view.brokers] == [
        (1, "h1:9092", None, False),
        (2, "h2:9093", "r1", True),
    ]


def test_partition_sizes_prefer_the_leader_then_the_largest_replica() -> None:
    dirs = {
        1: _dir({A0: ReplicaInfo(100, 0, False), A1: ReplicaInfo(70, 0, False)}),
        2: _dir({A0: ReplicaInfo(90, 0, False), A1: ReplicaInfo(80, 0, False)}),
        3: _dir({B0: ReplicaInfo(5, 0, False), A0: ReplicaInfo(999, 0, True)}),  # future: no
    }
    sizes = partition_sizes(dirs, {A0: 2, A1: 9, B0: None})
    assert sizes == {A0: 90, A1: 80, B0: 5}


def test_topic_rows_count_records_sizes_and_bad_partitions() -> None:
    rows = topic_rows(
        [TOPIC_B, TOPIC_A],
        {A0: 10, A1: 0, B0: 0},
        {A0: 15, A1: 7, B0: 0},
        {A0: 100, A1: 50},
    )
    assert [(r.name, r.partition_count, r.records, r.size_bytes) for r in rows] == [
        ("a", 2, 12, 150),
        ("b", 1, 0, None),
    ]
    assert [(r.under_replicated, r.offline, r.is_internal) for r in rows] == [
        (1, 0, False),
        (0, 1, True),
    ]


def test_topic_view_orders_partitions_and_flags_them() -> None:
    configs = {
        "retention.ms": ConfigEntry("retention.ms", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        "cleanup.policy": ConfigEntry("cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG),
    }
    view = topic_view(TOPIC_A, {A0: 10}, {A0: 15, A1: 7}, {A1: 50}, configs)
    assert [p.partition for p in view.partitions] == [0, 1]
    first, second = view.partitions
    assert (first.log_start_offset, first.log_end_offset, first.size_bytes) == (10, 15, None)
    assert (first.under_replicated, second.under_replicated) == (False, True)
    assert (view.records, view.size_bytes) == (12, 50)
    assert [(c.name, c.is_default) for c in view.configs] == [
        ("cleanup.policy", True),
        ("retention.ms", False),
    ]


def test_config_rows_hide_sensitive_values() -> None:
    rows = config_rows(
        {
            "sasl.jaas.config": ConfigEntry("sasl.jaas.config", "secret", is_sensitive=True),
            "x": ConfigEntry("x", None),
        }
    )
    assert [(r.name, r.value) for r in rows] == [("sasl.jaas.config", HIDDEN), ("x", "")]


def test_message_rows_render_keys_values_and_headers() -> None:
    message = Message(
        "a", 0, 7, None, b'{"k": 1}', (("h", b"\xff"), ("n", None)), 1_700_000_000_000,
        TimestampType.LOG_APPEND_TIME,
    )  # fmt: skip
    [row] = message_rows([message])
    assert (row.offset, row.timestamp, row.timestamp_type) == (
        7,
        "2023-11-14T22:13:20.000Z",
        "LOG_APPEND_TIME",
    )
    assert (row.key.kind, row.value.kind) == ("null", "json")
    assert [(name, value.kind) for name, value in row.headers] == [("h", "binary"), ("n", "null")]


def test_group_rows_take_the_state_from_the_description_when_listing_has_none() -> None:
    description = ConsumerGroupDescription("g1", "Stable", "consumer", "range", (), None)
    rows = group_rows(
        [GroupListing("g2", "consumer", "Empty"), GroupListing("g1", "consumer")],
        {"g1": description},
    )
    assert [(r.group_id, r.state, r.members) for r in rows] == [
        ("g1", "Stable", 0),
        ("g2", "Empty", None),
    ]


def test_group_view_puts_each_partition_with_its_owner() -> None:
    member = MemberDescription("m-1", None, "client-1", "/10.0.0.1", (A0,))
    description = ConsumerGroupDescription(
        "g", "Stable", "consumer", "range", (member,), BrokerMetadata(1, "h", 9092)
    )
    lag = GroupLag(
        "g",
        (
            PartitionLag("a", 0, 5, 10, 5, 1_700_000_000_000, 3_000),
            PartitionLag("a", 1, 10, 10, 0, None, 0),
        ),
    )
    view = group_view(description, lag)
    assert (view.lag, view.lag_ms, view.coordinator, view.is_inactive) == (
        5,
        3_000,
        "1 (h:9092)",
        False,
    )
    assert [(r.partition, r.member_id, r.client_id, r.host) for r in view.lags] == [
        (0, "m-1", "client-1", "/10.0.0.1"),
        (1, None, None, None),
    ]
    assert view.lags[0].next_timestamp == "2023-11-14T22:13:20.000Z"


def test_reset_plan_strategies_clamp_to_the_log() -> None:
    parts = [A1, A0]
    committed = {A0: 12}
    starts = {A0: 10, A1: 0}
    ends = {A0: 20, A1: 5}

    def plan(spec: ResetSpec, by_time: dict[TopicPartition, int] | None = None) -> list[int]:
        return [r.new_offset for r in reset_plan(spec, parts, committed, starts, ends, by_time)]

    assert plan(ResetSpec("earliest")) == [10, 0]
    assert plan(ResetSpec("latest")) == [20, 5]
    assert plan(ResetSpec("offset", 3)) == [10, 3]  # clamped up to the log start of a-0
    assert plan(ResetSpec("shift", -5)) == [10, 0]  # 12-5=7 -> 10; no commit: from 0, -5 -> 0
    assert plan(ResetSpec("shift", 4)) == [16, 4]
    assert plan(ResetSpec("timestamp", 1), {A0: 14}) == [14, 5]  # a-1: nothing that recent
    rows = reset_plan(ResetSpec("latest"), [A0, B0], committed, starts, ends)
    assert [(r.topic, r.partition, r.current) for r in rows] == [("a", 0, 12)]  # b-0 unknown
