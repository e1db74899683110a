"""``client.assignors.roundrobin``: Kafka's documented RoundRobinAssignor examples."""

from __future__ import annotations

from odradek._types import TopicPartition
from odradek.client.assignors import Assignment, RoundRobinAssignor, Subscription


def tps(spec: str) -> list[TopicPartition]:
    out = []
    for item in spec.split():
        topic, _, number = item.rpartition("p")
        out.append(TopicPartition(topic, int(number)))
    return out


def test_kafka_example_two_members_two_topics() -> None:
    subscriptions = {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0", "t1"])}
    result = RoundRobinAssignor().assign({"t0": 3, "t1": 3}, subscriptions)
    assert result == {
        "C0": Assignment(tps("t0p0 t0p2 t1p1")),
        "C1": Assignment(tps("t0p1 t1p0 t1p2")),
    }


def test_kafka_example_uneven_subscriptions() -> None:
    # RoundRobinAssignor's javadoc: members not subscribed to a topic are skipped, which can
    # leave the assignment unbalanced.
    subscriptions = {
        "C0": Subscription(["t0"]),
        "C1": Subscription(["t0", "t1"]),
        "C2": Subscription(["t0", "t1", "t2"]),
    }
    result = RoundRobinAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, subscriptions)
    assert result == {
        "C0": Assignment(tps("t0p0")),
        "C1": Assignment(tps("t1p0")),
        "C2": Assignment(tps("t1p1 t2p0 t2p1 t2p2")),
    }
    # StickyAssignor's javadoc continues: C0 leaves; round robin reshuffles.
    del subscriptions["C0"]
    result = RoundRobinAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, subscriptions)
    assert result == {
        "C1": Assignment(tps("t0p0 t1p1")),
        "C2": Assignment(tps("t1p0 t2p0 t2p1 t2p2")),
    }


def test_kafka_sticky_javadoc_round_robin_baseline() -> None:
    # Three members, four topics of two partitions; then C1 leaves and everything moves.
    topics = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}
    subscriptions = {f"C{i}": Subscription(list(topics)) for i in range(3)}
    result = RoundRobinAssignor().assign(topics, subscriptions)
    assert result == {
        "C0": Assignment(tps("t0p0 t1p1 t3p0")),
        "C1": Assignment(tps("t0p1 t2p0 t3p1")),
        "C2": Assignment(tps("t1p0 t2p1")),
    }
    del subscriptions["C1"]
    result = RoundRobinAssignor().assign(topics, subscriptions)
    assert result == {
        "C0": Assignment(tps("t0p0 t1p0 t2p0 t3p0")),
        "C2": Assignment(tps("t0p1 t1p1 t2p1 t3p1")),
    }


def test_topics_and_members_in_java_string_order() -> None:
    # Java compares UTF-16 code units: U+FF21 (fullwidth A) sorts after U+1F600 (a surrogate
    # pair starting 0xD83D) in Java, before it in Python's code point order.
    fullwidth, emoji = "\uff21", "\U0001f600"
    subscriptions = {fullwidth: Subscription(["t"]), emoji: Subscription(["t"])}
    result = RoundRobinAssignor().assign({"t": 2}, subscriptions)
    assert list(result) == [emoji, fullwidth]
    assert result[emoji].partitions == tps("tp0")
    result = RoundRobinAssignor().assign(
        {fullwidth: 1, emoji: 1}, {"m": Subscription([fullwidth, emoji])}
    )
    assert result["m"].partitions == [TopicPartition(emoji, 0), TopicPartition(fullwidth, 0)]


def test_no_members_or_no_partitions() -> None:
    assert RoundRobinAssignor().assign({"t": 3}, {}) == {}
    assert RoundRobinAssignor().assign({}, {"C0": Subscription(["t"])}) == {"C0": Assignment([])}
