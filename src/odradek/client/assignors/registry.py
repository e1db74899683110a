"""``partition.assignment.strategy`` values to assignors: Kafka's names and class names.

This module owns the mapping from what a user configures to an ``Assignor``. It accepts the
protocol names (``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``, as librdkafka
and kafka-python do), the Java class names (``org.apache.kafka.clients.consumer.RangeAssignor``
and so on, as the Java consumer does), and any object that already is an assignor (has
``name()`` and ``assign(...)``), which is returned as is. A comma-separated string or a list
configures several, preferred first; Kafka refuses two assignors with the same name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from odradek.client.assignors.assignor import Assignor
from odradek.client.assignors.cooperative_sticky import CooperativeStickyAssignor
from odradek.client.assignors.range import RangeAssignor
from odradek.client.assignors.roundrobin import RoundRobinAssignor
from odradek.client.assignors.sticky import StickyAssignor
from odradek.errors import ConfigError

__all__ = ["DEFAULT_PARTITION_ASSIGNMENT_STRATEGY", "resolve", "resolve_all"]

#: The Java consumer's default since Kafka 3.0: range, with cooperative-sticky offered so that a
#: group can later drop range and go cooperative in one rolling bounce.
DEFAULT_PARTITION_ASSIGNMENT_STRATEGY: Final = ("range", "cooperative-sticky")

_JAVA_PACKAGE: Final = "org.apache.kafka.clients.consumer."

_FACTORIES: Final[dict[str, Callable[[], Assignor]]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}
_CLASS_NAMES: Final = {
    _JAVA_PACKAGE + "RangeAssignor": "range",
    _JAVA_PACKAGE + "RoundRobinAssignor": "roundrobin",
    _JAVA_PACKAGE + "StickyAssignor": "sticky",
    _JAVA_PACKAGE + "CooperativeStickyAssignor": "cooperative-sticky",
}


def resolve(strategy: str | Assignor) -> Assignor:
    """The assignor a strategy names, or ``strategy`` itself if it is an assignor.

    Raises:
        ConfigError: an unknown name, or an object without ``name()`` and ``assign()``.
    """
    if isinstance(strategy, str):
        name = strategy.strip()
        factory = _FACTORIES.get(_CLASS_NAMES.get(name, name))
        if factory is None:
            known = ", ".join([*_FACTORIES, *_CLASS_NAMES])
            raise ConfigError(
                f"partition.assignment.strategy: unknown assignor {strategy!r} (known: {known})"
            )
        return factory()
    if isinstance(strategy, type) or not isinstance(strategy, Assignor):
        raise ConfigError(
            f"partition.assignment.strategy: {strategy!r} is not an assignor instance "
            "(an object with name() and assign(partitions_per_topic, subscriptions))"
        )
    return strategy


def resolve_all(strategies: str | Assignor | Sequence[str | Assignor]) -> list[Assignor]:
    """The assignors of a ``partition.assignment.strategy`` value, preferred first.

    Raises:
        ConfigError: an unknown or invalid entry, no entry, or two assignors with one name.
    """
    if isinstance(strategies, str):
        entries: list[str | Assignor] = [part for part in strategies.split(",") if part.strip()]
    elif isinstance(strategies, Sequence):
        entries = list(strategies)
    else:
        entries = [strategies]
    if not entries:
        raise ConfigError("partition.assignment.strategy: at least one assignor is required")
    assignors = [resolve(entry) for entry in entries]
    seen: set[str] = set()
    for assignor in assignors:
        name = assignor.name()
        if name in seen:
            raise ConfigError(
                f"partition.assignment.strategy: the assignor name {name!r} is used more than once"
            )
        seen.add(name)
    return assignors
