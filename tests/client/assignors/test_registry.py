"""``client.assignors.registry``: Kafka's names and Java class names to assignors, duck-typed
user assignors, and ``partition.assignment.strategy`` lists."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from odradek.client.assignors import (
    DEFAULT_PARTITION_ASSIGNMENT_STRATEGY,
    Assignment,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    resolve,
    resolve_all,
)
from odradek.errors import ConfigError


@pytest.mark.parametrize(
    ("name", "java_class", "cls"),
    [
        ("range", "RangeAssignor", RangeAssignor),
        ("roundrobin", "RoundRobinAssignor", RoundRobinAssignor),
        ("sticky", "StickyAssignor", StickyAssignor),
        ("cooperative-sticky", "CooperativeStickyAssignor", CooperativeStickyAssignor),
    ],
)
def test_names_and_java_class_names(name: str, java_class: str, cls: type) -> None:
    assert isinstance(resolve(name), cls)
    assert resolve(name).name() == name
    assert isinstance(resolve(f"org.apache.kafka.clients.consumer.{java_class}"), cls)
    assert isinstance(resolve(f" {name} "), cls)


class EverythingToTheFirst:
    """A user assignor: no base class, just the two methods."""

    def name(self) -> str:
        return "first"

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> dict[str, Assignment]:
        return {member: Assignment([]) for member in subscriptions}


def test_user_assignors_are_returned_as_they_are() -> None:
    mine = EverythingToTheFirst()
    assert resolve(mine) is mine
    kinds = [type(a) for a in resolve_all(["range", mine])]
    assert kinds == [RangeAssignor, EverythingToTheFirst]


@pytest.mark.parametrize("bad", ["Range", "org.apache.kafka.clients.consumer.Nope", ""])
def test_unknown_names(bad: str) -> None:
    with pytest.raises(ConfigError, match="unknown assignor"):
        resolve(bad)


def test_assignor_classes_are_instantiated() -> None:
    assert isinstance(resolve(EverythingToTheFirst), EverythingToTheFirst)
    assert isinstance(resolve(StickyAssignor), StickyAssignor)


class NeedsArguments(EverythingToTheFirst):
    def __init__(self, setting: int) -> None:
        self.setting = setting


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (object(), "is not an assignor"),
        (42, "is not an assignor"),
        (int, "is not an assignor"),
        (NeedsArguments, "cannot create NeedsArguments"),
    ],
)
def test_things_that_are_not_assignors(bad: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve(bad)  # type: ignore[arg-type]


def test_strategy_lists() -> None:
    assert [a.name() for a in resolve_all("range, cooperative-sticky")] == [
        "range",
        "cooperative-sticky",
    ]
    assert [a.name() for a in resolve_all(DEFAULT_PARTITION_ASSIGNMENT_STRATEGY)] == [
        "range",
        "cooperative-sticky",
    ]
    assert [a.name() for a in resolve_all(StickyAssignor())] == ["sticky"]
    with pytest.raises(ConfigError, match="at least one"):
        resolve_all(" , ")
    with pytest.raises(ConfigError, match="'range' is used more than once"):
        resolve_all(["range", "org.apache.kafka.clients.consumer.RangeAssignor"])
