"""``client.assignors.range``: Kafka's documented RangeAssignor examples and its split rule."""

from __future__ import annotations

import pytest

from odradek._types import TopicPartition
from odradek.client.assignors import Assignment, RangeAssignor, Subscription
from odradek.client.assignors.range import range_ranges


def tps(spec: str) -> list[TopicPartition]:
    """``"t0p0 t1p2"`` -> [TopicPartition("t0", 0), TopicPartition("t1", 2)]."""
    out = []
    for item in spec.split():
        topic, _, number = item.rpartition("p")
        out.append(TopicPartition(topic, int(number)))
    return out


def test_kafka_example_two_members_two_topics() -> None:
    # RangeAssignor's javadoc: C0, C1 subscribed to t0 and t1, 3 partitions each.
    subscriptions = {"C1": Subscription(["t0", "t1"]), "C0": Subscription(["t1", "t0"])}
    result = RangeAssignor().assign({"t0": 3, "t1": 3}, subscriptions)
    assert result == {
        "C0": Assignment(tps("t0p0 t0p1 t1p0 t1p1")),
        "C1": Assignment(tps("t0p2 t1p2")),
    }
    assert list(result) == ["C0", "C1"]


def test_seven_partitions_over_five_members() -> None:
    # 7 // 5 = 1 each, 7 % 5 = 2: the first two members get one more.
    subscriptions = {f"C{i}": Subscription(["t"]) for i in range(5)}
    result = RangeAssignor().assign({"t": 7}, subscriptions)
    assert {member: a.partitions for member, a in result.items()} == {
        "C0": tps("tp0 tp1"),
        "C1": tps("tp2 tp3"),
        "C2": tps("tp4"),
        "C3": tps("tp5"),
        "C4": tps("tp6"),
    }


def test_each_topic_is_split_among_its_own_subscribers() -> None:
    subscriptions = {
        "C0": Subscription(["t0"]),
        "C1": Subscription(["t0", "t1"]),
        "C2": Subscription(["t0", "t1", "t2"]),
    }
    result = RangeAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, subscriptions)
    assert result == {
        "C0": Assignment(tps("t0p0")),
        "C1": Assignment(tps("t1p0")),
        "C2": Assignment(tps("t1p1 t2p0 t2p1 t2p2")),
    }


def test_more_members_than_partitions_and_unknown_topics() -> None:
    subscriptions = {f"C{i}": Subscription(["t", "gone"]) for i in range(3)}
    result = RangeAssignor().assign({"t": 2, "empty": 0}, subscriptions)
    assert result == {
        "C0": Assignment(tps("tp0")),
        "C1": Assignment(tps("tp1")),
        "C2": Assignment([]),
    }
    assert RangeAssignor().assign({"t": 2}, {}) == {}


def test_static_members_come_first_by_instance_id() -> None:
    # Kafka's MemberInfo order: group.instance.id first (so a restarted static member with a
    # new member id keeps its place), then dynamic members by member id.
    subscriptions = {
        "a-dynamic": Subscription(["t"]),
        "z-member": Subscription(["t"], group_instance_id="instance-1"),
        "m-member": Subscription(["t"], group_instance_id="instance-2"),
    }
    result = RangeAssignor().assign({"t": 3}, subscriptions)
    assert list(result) == ["z-member", "m-member", "a-dynamic"]
    assert result["z-member"].partitions == tps("tp0")
    assert result["a-dynamic"].partitions == tps("tp2")


def test_range_ranges() -> None:
    assert range_ranges(7, 5) == [range(0, 2), range(2, 4), range(4, 5), range(5, 6), range(6, 7)]
    assert range_ranges(0, 2) == [range(0, 0), range(0, 0)]
    with pytest.raises(ValueError, match="cannot split"):
        range_ranges(3, 0)
