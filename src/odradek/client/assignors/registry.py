"""``partition.assignment.strategy`` values to assignors: Kafka's names and class names.

This module owns the mapping from what a user configures to an ``Assignor``. It accepts the
protocol names (``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``, as librdkafka
and kafka-python do), the Java class names (``org.apache.kafka.clients.consumer.RangeAssignor``
and so on, as the Java consumer does), and any object that already is an assignor (has
``name()`` and ``assign(...)``), which is returned as is, or such a class, which is
instantiated with no arguments. A comma-separated string or a list
configures several, preferred first; Kafka refuses two assignors with the same name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

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


def resolve(strategy: str | Assignor | type[Any]) -> Assignor:
    """The assignor a strategy names, ``strategy`` itself if it is an assignor, or a new
    instance if it is an assignor class (as kafka-python and aiokafka configure them).

    Raises:
        ConfigError: an unknown name, or something that is not an assignor.
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
    candidate: object = strategy
    if isinstance(strategy, type):
        try:
            candidate = strategy()
        except TypeError as exc:
            raise ConfigError(
                f"partition.assignment.strategy: cannot create {strategy.__qualname__}() ({exc})"
            ) from exc
    if not isinstance(candidate, Assignor):
        raise ConfigError(
            f"partition.assignment.strategy: {strategy!r} is not an assignor "
            "(an object with name() and assign(partitions_per_topic, subscriptions))"
        )
    return candidate


def resolve_all(
    strategies: str | Assignor | type[Any] | Sequence[str | Assignor | type[Any]],
) -> list[Assignor]:
    """The assignors of a ``partition.assignment.strategy`` value, preferred first.

    Raises:
        ConfigError: an unknown or invalid entry, no entry, or two assignors with one name.
    """
    if isinstance(strategies, str):
        entries: list[str | Assignor | type[Any]] = [
            part for part in strategies.split(",") if part.strip()
        ]
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
