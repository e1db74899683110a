"""The states of a classic group and the transitions between them.

Owns the legal-transition table; a group changes state only through ``check_transition``.

::

    Empty ──join──► PreparingRebalance ──all joined / timeout──► CompletingRebalance
      ▲                 ▲        │                                   │      │
      │                 │        └──no member left──► Empty          │      │
      │                 └──member joins, leaves or expires───────────┘      │
      │                 ▲                                         leader syncs
      │                 └──────member joins, leaves or expires── Stable ◄───┘
      any state ──group deleted, or Empty without offsets expires──► Dead

A Dead group is gone from the coordinator: it exists only on its way out.
"""

from __future__ import annotations

import enum

from odradek.errors import IllegalGroupStateTransitionError


class GroupState(enum.Enum):
    """A classic group's state; the value is Kafka's name (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    @classmethod
    def parse(cls, name: str) -> GroupState | None:
        """The state of a Kafka state name, case-insensitively (ListGroups filters); None if
        it names no classic state."""
        return _BY_LOWER_NAME.get(name.lower())


_BY_LOWER_NAME = {state.value.lower(): state for state in GroupState}

#: The states a group may enter each state from.
_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


def can_transition(old: GroupState, new: GroupState) -> bool:
    """Whether a group in ``old`` may move to ``new``."""
    return old in _VALID_PREVIOUS[new]


def check_transition(group_id: str, old: GroupState, new: GroupState) -> None:
    """Raises IllegalGroupStateTransitionError unless ``old`` → ``new`` is legal."""
    if not can_transition(old, new):
        raise IllegalGroupStateTransitionError(
            f"group {group_id!r} cannot move from {old.value} to {new.value}"
        )
