"""The automatic preferred-leader rebalance's decision (controller.rebalance), with plain
values: which brokers are imbalanced, which partitions move back, which wait."""

from __future__ import annotations

import pytest

from odradek._types import TopicPartition
from odradek.controller.leaders import LeaderAndIsr
from odradek.controller.partition_states import PartitionRecord
from odradek.controller.rebalance import RebalanceSettings, plan_rebalance


def _record(replicas: tuple[int, ...], leader: int, isr: tuple[int, ...]) -> PartitionRecord:
    return PartitionRecord(replicas, LeaderAndIsr(leader, 3, isr), 0)


def _tp(partition: int, topic: str = "t") -> TopicPartition:
    return TopicPartition(topic, partition)


def test_a_balanced_cluster_elects_nothing() -> None:
    partitions = {
        _tp(0): _record((0, 1, 2), 0, (0, 1, 2)),
        _tp(1): _record((1, 2, 0), 1, (0, 1, 2)),
        _tp(2): _record((2, 0, 1), 2, (0, 1, 2)),
    }
    decision = plan_rebalance(partitions, {0, 1, 2}, 10)
    assert decision.elect == ()
    assert decision.imbalance == {0: 0.0, 1: 0.0, 2: 0.0}


def test_a_broker_over_the_percentage_gets_its_partitions_back() -> None:
    # Broker 0 prefers 4 partitions and leads 1: 75 % > 10 %.
    partitions = {
        _tp(0): _record((0, 1), 0, (0, 1)),
        _tp(1): _record((0, 1), 1, (1, 0)),
        _tp(2): _record((0, 2), 2, (2, 0)),
        _tp(3): _record((0, 2), 2, (2, 0)),
        _tp(4): _record((1, 0), 1, (1, 0)),
    }
    decision = plan_rebalance(partitions, {0, 1, 2}, 10)
    assert decision.imbalance[0] == pytest.approx(0.75)
    assert decision.imbalance[1] == 0.0
    assert decision.elect == (_tp(1), _tp(2), _tp(3))
    assert decision.waiting == ()


def test_a_ratio_at_the_percentage_is_not_over_it() -> None:
    # 1 of 4 not led: 25 %. Percentage 25 keeps it; 24 triggers.
    partitions = {_tp(p): _record((0, 1), 0, (0, 1)) for p in range(3)}
    partitions[_tp(3)] = _record((0, 1), 1, (0, 1))
    assert plan_rebalance(partitions, {0, 1}, 25).elect == ()
    assert plan_rebalance(partitions, {0, 1}, 24).elect == (_tp(3),)


def test_a_preferred_replica_out_of_the_isr_or_not_live_waits() -> None:
    partitions = {
        _tp(0): _record((0, 1), 1, (1,)),  # 0 is live but out of the ISR
        _tp(1): _record((2, 1), 1, (1, 2)),  # 2 is in the ISR but not live
        _tp(2): _record((0, 1), 1, (1, 0)),  # can move
    }
    decision = plan_rebalance(partitions, {0, 1}, 10)
    assert decision.elect == (_tp(2),)
    assert decision.waiting == (_tp(0), _tp(1))


def test_an_offline_partition_counts_as_imbalance() -> None:
    partitions = {_tp(0): _record((0, 1), -1, (0,)), _tp(1): _record((0, 1), 0, (0, 1))}
    decision = plan_rebalance(partitions, {0, 1}, 10)
    assert decision.imbalance[0] == 0.5
    # The preferred replica is live and in the ISR: it leads again.
    assert decision.elect == (_tp(0),)


def test_excluded_partitions_are_neither_counted_nor_elected() -> None:
    partitions = {
        _tp(0): _record((0, 1), 1, (0, 1)),
        _tp(1): _record((0, 1), 0, (0, 1)),
    }
    decision = plan_rebalance(partitions, {0, 1}, 10, excluded={_tp(0)})
    assert decision.elect == ()
    assert decision.imbalance == {0: 0.0}


def test_a_broker_shutting_down_is_not_a_target() -> None:
    partitions = {_tp(0): _record((0, 1), 1, (0, 1))}
    # The caller leaves brokers in controlled shutdown out of ``live``.
    assert plan_rebalance(partitions, {1}, 0).waiting == (_tp(0),)


def test_percentage_zero_moves_any_single_partition() -> None:
    partitions = {_tp(p): _record((0, 1), 0, (0, 1)) for p in range(99)}
    partitions[_tp(99)] = _record((0, 1), 1, (0, 1))
    assert plan_rebalance(partitions, {0, 1}, 0).elect == (_tp(99),)
    assert plan_rebalance(partitions, {0, 1}, 1).elect == ()


@pytest.mark.parametrize(("interval", "percentage"), [(0, 10), (300, -1), (300, 101)])
def test_settings_out_of_range_are_refused(interval: int, percentage: int) -> None:
    with pytest.raises(ValueError, match=r"leader\.imbalance"):
        RebalanceSettings(True, interval, percentage)
