"""``client.assignors.assignor``: the value types, Kafka's member order, Java string order and
the optional hooks' defaults."""

from __future__ import annotations

from collections.abc import Mapping

from odradek._types import TopicPartition
from odradek.client.assignors import (
    Assignment,
    Assignor,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    sorted_members,
    subscription_user_data,
    supported_protocols,
)
from odradek.client.assignors.assignor import java_string_key, subscribed_partitions


def test_subscription_stores_tuples_and_compares_by_value() -> None:
    subscription = Subscription(["a", "b"], owned_partitions=[TopicPartition("a", 0)])
    assert subscription.topics == ("a", "b")
    assert subscription.owned_partitions == (TopicPartition("a", 0),)
    assert subscription == Subscription(("a", "b"), None, (TopicPartition("a", 0),))
    assert subscription.generation_id == -1
    assert subscription.rack_id is None
    assert subscription.group_instance_id is None


def test_sorted_members_static_first() -> None:
    subscriptions = {
        "b": Subscription([]),
        "a": Subscription([]),
        "y": Subscription([], group_instance_id="2"),
        "x": Subscription([], group_instance_id="1"),
    }
    assert sorted_members(subscriptions) == ["x", "y", "a", "b"]


def test_java_string_order() -> None:
    values = ["\uff21", "\U0001f600", "a", "B", ""]
    # Java: "" < "B" < "a" < U+1F600 (0xD83D...) < U+FF21.
    assert sorted(values, key=java_string_key) == ["", "B", "a", "\U0001f600", "\uff21"]
    assert sorted(values) == ["", "B", "a", "\uff21", "\U0001f600"]


def test_subscribed_partitions() -> None:
    assert subscribed_partitions(["b", "a", "gone", "b"], {"a": 1, "b": 2, "c": 3}) == [
        TopicPartition("a", 0),
        TopicPartition("b", 0),
        TopicPartition("b", 1),
    ]


class Minimal:
    def name(self) -> str:
        return "minimal"

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> dict[str, Assignment]:
        return {}


def test_builtin_and_duck_typed_assignors_satisfy_the_protocol() -> None:
    for assignor in (RangeAssignor(), RoundRobinAssignor(), StickyAssignor(), Minimal()):
        assert isinstance(assignor, Assignor)
    assert not isinstance(object(), Assignor)


def test_hook_defaults() -> None:
    assert supported_protocols(Minimal()) == (RebalanceProtocol.EAGER,)
    assert subscription_user_data(Minimal(), [TopicPartition("t", 0)], 3) is None
    assert supported_protocols(RangeAssignor()) == (RebalanceProtocol.EAGER,)
    assert supported_protocols(StickyAssignor()) == (RebalanceProtocol.EAGER,)
    assert subscription_user_data(RangeAssignor(), [], 1) is None
