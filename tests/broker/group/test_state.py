"""The classic group state machine's legal transitions."""

from __future__ import annotations

import pytest

from odradek.broker.group.group import ClassicGroup
from odradek.broker.group.state import GroupState, can_transition, check_transition
from odradek.errors import IllegalGroupStateTransitionError

E, P, C, S, D = (
    GroupState.EMPTY,
    GroupState.PREPARING_REBALANCE,
    GroupState.COMPLETING_REBALANCE,
    GroupState.STABLE,
    GroupState.DEAD,
)
LEGAL = {(E, P), (P, E), (P, C), (C, P), (C, S), (S, P)} | {(x, D) for x in GroupState}


@pytest.mark.parametrize("old", list(GroupState))
@pytest.mark.parametrize("new", list(GroupState))
def test_transition_table(old: GroupState, new: GroupState) -> None:
    assert can_transition(old, new) == ((old, new) in LEGAL)
    if (old, new) in LEGAL:
        check_transition("g", old, new)
    else:
        with pytest.raises(IllegalGroupStateTransitionError, match="cannot move"):
            check_transition("g", old, new)


def test_kafka_state_names() -> None:
    assert [state.value for state in GroupState] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]
    assert GroupState.parse("completingrebalance") is C
    assert GroupState.parse("Assigning") is None


def test_a_transition_stamps_the_state_time() -> None:
    group = ClassicGroup("g", now_ms=5)
    assert group.state is E
    assert group.state_timestamp_ms == 5
    group.transition(P, 9)
    assert group.state_timestamp_ms == 9
    with pytest.raises(IllegalGroupStateTransitionError):
        group.transition(S, 10)
