"""The follower's truncation decision (KIP-101/279) on plain values."""

from __future__ import annotations

import pytest

from odradek.broker.replication.truncation import (
    Truncation,
    decide_truncation,
    truncation_without_epochs,
)


def decide(leader: tuple[int, int], follower_end: tuple[int, int], leo: int, hw: int) -> Truncation:
    return decide_truncation(
        leader_epoch=leader[0],
        leader_end_offset=leader[1],
        follower_end=follower_end,
        log_end_offset=leo,
        high_watermark=hw,
    )


@pytest.mark.parametrize(
    ("leader", "follower_end", "leo", "hw", "expected"),
    [
        # Both have the epoch: the smaller end, never past the follower's LEO, whatever the HW.
        ((1, 5), (1, 12), 12, 8, Truncation(5, True)),
        ((1, 20), (1, 12), 12, 3, Truncation(12, True)),
        ((3, 9), (3, 9), 15, 15, Truncation(9, True)),
        # The leader answers an epoch the follower lacks: to the follower's end of its largest
        # epoch below, then ask about that epoch.
        ((1, 6), (0, 3), 7, 7, Truncation(3, False, 0)),
        # The leader knows no such epoch: the high watermark is all there is.
        ((-1, -1), (2, 10), 10, 4, Truncation(4, True)),
        # A leader without epochs but with an end offset.
        ((-1, 7), (-1, -1), 10, 2, Truncation(7, True)),
        # The follower kept no epoch at or below the leader's answer.
        ((0, 4), (-1, -1), 10, 9, Truncation(4, True)),
    ],
)
def test_decisions(
    leader: tuple[int, int],
    follower_end: tuple[int, int],
    leo: int,
    hw: int,
    expected: Truncation,
) -> None:
    assert decide(leader, follower_end, leo, hw) == expected


def test_each_further_round_asks_about_an_older_epoch() -> None:
    decision = decide((4, 30), (2, 20), 40, 40)
    assert not decision.done
    assert decision.next_epoch < 4


def test_a_log_without_epochs_keeps_what_is_committed() -> None:
    assert truncation_without_epochs(10, 6) == Truncation(6, True)
    assert truncation_without_epochs(0, 0) == Truncation(0, True)
