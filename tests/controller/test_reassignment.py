"""controller.reassignment: the replica sets, states and stopped replicas of reassignments
started, re-targeted, cancelled and completed (KIP-455), with plain values; and Kafka's
reassignment JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek._types import TopicPartition
from odradek.controller.leaders import NO_LEADER, LeaderAndIsr
from odradek.controller.reassignment import (
    ReassignmentCompletion,
    ReassignmentStart,
    ReplicaAssignment,
    complete_reassignment,
    encode_reassignment_json,
    is_reassignment_complete,
    parse_reassignment_json,
    reassign_to,
    start_reassignment,
)
from odradek.errors import ErrorCode, KafkaError

LIVE = {0, 1, 2, 3, 4}


def test_the_replica_set_is_target_then_the_leaving_originals() -> None:
    moving = reassign_to(ReplicaAssignment((0, 1, 2)), [3, 1, 4])
    assert moving == ReplicaAssignment((3, 1, 4, 0, 2), adding=(3, 4), removing=(0, 2))
    assert moving.target == (3, 1, 4)
    assert moving.origin == (1, 0, 2)
    assert moving.is_reassigning


def test_a_reorder_adds_and_removes_nothing() -> None:
    reordered = reassign_to(ReplicaAssignment((0, 1, 2)), [2, 0, 1])
    assert reordered == ReplicaAssignment((2, 0, 1))
    assert not reordered.is_reassigning


def test_start_bumps_the_leader_epoch_and_keeps_the_leader_and_isr() -> None:
    state = LeaderAndIsr(0, 4, (0, 1, 2))
    start = start_reassignment(ReplicaAssignment((0, 1, 2)), state, [1, 2, 3], LIVE)
    assert start == ReassignmentStart(
        ReplicaAssignment((1, 2, 3, 0), adding=(3,), removing=(0,)),
        LeaderAndIsr(0, 5, (0, 1, 2)),
        stopped=(),
    )


def test_a_new_target_is_measured_from_the_original_replicas() -> None:
    current = ReplicaAssignment((1, 2, 3, 0), adding=(3,), removing=(0,))
    state = LeaderAndIsr(0, 5, (0, 1, 2))
    start = start_reassignment(current, state, [1, 2, 4], LIVE)
    assert isinstance(start, ReassignmentStart)
    assert start.assignment == ReplicaAssignment((1, 2, 4, 0), adding=(4,), removing=(0,))
    assert start.stopped == (3,)  # was being added, is no longer wanted
    assert start.state == LeaderAndIsr(0, 6, (0, 1, 2))


def test_cancel_goes_back_to_the_original_replicas() -> None:
    current = ReplicaAssignment((3, 4, 0, 1), adding=(3, 4), removing=(0, 1))
    state = LeaderAndIsr(0, 2, (0, 1, 3))  # 3 caught up already
    start = start_reassignment(current, state, None, LIVE)
    assert start == ReassignmentStart(
        ReplicaAssignment((0, 1)), LeaderAndIsr(0, 3, (0, 1)), stopped=(3, 4)
    )


def test_cancel_that_stops_the_leader_elects_an_original_replica() -> None:
    current = ReplicaAssignment((3, 0, 1), adding=(3,), removing=(0, 1))
    state = LeaderAndIsr(3, 2, (3, 1))
    start = start_reassignment(current, state, None, LIVE)
    assert isinstance(start, ReassignmentStart)
    assert start.state == LeaderAndIsr(1, 3, (1,))


@pytest.mark.parametrize(
    ("target", "code", "fragment"),
    [
        ([], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "empty"),
        ([1, 1], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "twice"),
        ([1, 9, 8], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "[8, 9]"),
        (None, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "no reassignment"),
    ],
)
def test_refused_targets(target: list[int] | None, code: ErrorCode, fragment: str) -> None:
    refused = start_reassignment(
        ReplicaAssignment((0, 1)), LeaderAndIsr(0, 0, (0, 1)), target, LIVE
    )
    assert isinstance(refused, tuple)
    assert refused[0] is code
    assert fragment in refused[1]


def test_a_replication_factor_change_may_be_refused() -> None:
    current, state = ReplicaAssignment((0, 1)), LeaderAndIsr(0, 0, (0, 1))
    refused = start_reassignment(
        current, state, [2, 3, 4], LIVE, allow_replication_factor_change=False
    )
    assert isinstance(refused, tuple)
    assert refused[0] is ErrorCode.INVALID_REPLICATION_FACTOR
    same_size = start_reassignment(
        current, state, [2, 3], LIVE, allow_replication_factor_change=False
    )
    assert isinstance(same_size, ReassignmentStart)


def test_completion_waits_for_every_target_replica_in_the_isr() -> None:
    moving = ReplicaAssignment((1, 2, 3, 0), adding=(3,), removing=(0,))
    waiting = LeaderAndIsr(0, 5, (0, 1, 2))
    assert not is_reassignment_complete(moving, waiting.isr)
    assert complete_reassignment(moving, waiting, LIVE) is None
    caught_up = LeaderAndIsr(0, 6, (0, 1, 2, 3))
    assert is_reassignment_complete(moving, caught_up.isr)
    assert complete_reassignment(moving, caught_up, LIVE) == ReassignmentCompletion(
        (1, 2, 3), LeaderAndIsr(1, 7, (1, 2, 3)), removed=(0,)
    )


def test_completion_keeps_a_leader_that_stays() -> None:
    moving = ReplicaAssignment((2, 1, 0), removing=(0,))
    completion = complete_reassignment(moving, LeaderAndIsr(1, 3, (0, 1, 2)), LIVE)
    assert completion == ReassignmentCompletion((2, 1), LeaderAndIsr(1, 4, (1, 2)), (0,))


def test_completion_replaces_a_dead_leader_and_waits_without_one() -> None:
    moving = ReplicaAssignment((2, 1, 0), removing=(0,))
    state = LeaderAndIsr(1, 3, (0, 1, 2))
    completion = complete_reassignment(moving, state, LIVE - {1})
    assert completion is not None
    assert completion.state == LeaderAndIsr(2, 4, (1, 2))
    assert complete_reassignment(moving, state, {0}) is None


def test_a_reorder_completes_at_once() -> None:
    completion = complete_reassignment(
        ReplicaAssignment((2, 0, 1)), LeaderAndIsr(0, 1, (0, 1, 2)), LIVE
    )
    assert completion == ReassignmentCompletion((2, 0, 1), LeaderAndIsr(0, 2, (0, 1, 2)), ())


def test_a_forced_completion_without_a_leader_goes_offline() -> None:
    completion = complete_reassignment(ReplicaAssignment((0, 1)), LeaderAndIsr(0, 1, (0,)), {1})
    assert completion is not None
    assert completion.state == LeaderAndIsr(NO_LEADER, 2, (0,))


@given(
    origin=st.lists(st.integers(0, 6), min_size=1, max_size=4, unique=True),
    target=st.lists(st.integers(0, 6), min_size=1, max_size=4, unique=True),
)
def test_start_then_complete_ends_on_the_target(origin: list[int], target: list[int]) -> None:
    live = set(range(7))
    state = LeaderAndIsr(origin[0], 0, tuple(origin))
    start = start_reassignment(ReplicaAssignment(tuple(origin)), state, target, live)
    assert isinstance(start, ReassignmentStart)
    moving = start.assignment
    assert set(moving.replicas) == set(origin) | set(target)
    assert moving.target == tuple(target)
    assert moving.origin == tuple(sorted(origin, key=[*target, *origin].index))
    # Every new replica catches up: the ISR is the whole replica set.
    caught_up = LeaderAndIsr(start.state.leader, start.state.leader_epoch, moving.replicas)
    completion = complete_reassignment(moving, caught_up, live)
    assert completion is not None
    assert completion.replicas == tuple(target)
    assert set(completion.state.isr) == set(target)
    assert completion.state.leader in target
    assert completion.state.leader_epoch == start.state.leader_epoch + 1
    assert set(completion.removed) == set(origin) - set(target)


def test_reassignment_json_round_trip() -> None:
    wanted = {TopicPartition("t", 1): (2, 0), TopicPartition("t", 0): (0, 1)}
    text = encode_reassignment_json(wanted)
    document = json.loads(text)
    assert document["version"] == 1
    assert [(p["topic"], p["partition"], p["replicas"]) for p in document["partitions"]] == [
        ("t", 0, [0, 1]),
        ("t", 1, [2, 0]),
    ]
    assert parse_reassignment_json(text) == wanted


def test_reassignment_json_null_replicas_cancel() -> None:
    text = '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":null}]}'
    assert parse_reassignment_json(text) == {TopicPartition("t", 0): None}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{", "not JSON"),
        ("[]", "expected"),
        ('{"version":2,"partitions":[]}', "unsupported version 2"),
        ('{"partitions":[]}', "no partitions"),
        ('{"partitions":[7]}', "partitions[0] is not an object"),
        ('{"partitions":[{"partition":0,"replicas":[1]}]}', "needs a topic"),
        ('{"partitions":[{"topic":"t","partition":-1,"replicas":[1]}]}', "needs a partition"),
        ('{"partitions":[{"topic":"t","partition":true,"replicas":[1]}]}', "needs a partition"),
        ('{"partitions":[{"topic":"t","partition":0,"replicas":["1"]}]}', "broker ids"),
        (
            '{"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/d"]}]}',
            "log_dirs",
        ),
        (
            '{"partitions":[{"topic":"t","partition":0,"replicas":[1]},'
            '{"topic":"t","partition":0,"replicas":[2]}]}',
            "t-0 is listed twice",
        ),
    ],
)
def test_malformed_reassignment_json(text: str, fragment: str) -> None:
    with pytest.raises(KafkaError) as caught:
        parse_reassignment_json(text)
    assert caught.value.error_code is ErrorCode.INVALID_REQUEST
    assert fragment in str(caught.value)
    assert "\n" not in str(caught.value)
