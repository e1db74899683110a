"""Automatic preferred-leader rebalance, pure: which partitions the controller's periodic check
moves back to their preferred replica (Kafka's ``auto.leader.rebalance.enable``,
``leader.imbalance.check.interval.seconds``, ``leader.imbalance.per.broker.percentage``).

Why: after a broker fails and returns, the partitions it led are led by others; they stay so
until someone asks for a preferred-replica election, and the cluster's load is skewed. Kafka's
controller checks every ``leader.imbalance.check.interval.seconds`` (300) and, per broker, does
the election itself when the broker's imbalance passes the percentage.

Rules (Kafka's ``KafkaController.checkAndTriggerAutoLeaderRebalance``):

- The *preferred replica* of a partition is the first of its assignment. Partitions are grouped
  by their preferred replica.
- A broker's *imbalance ratio* is the share of its group whose leader is another broker (or no
  broker: an offline partition counts as not led by its preferred replica).
- A broker whose ratio is above ``percentage / 100`` gets an election for each partition of
  its group not led by it, but only where it can lead now: it is live (not shutting down) and
  in the partition's ISR; the other partitions wait for the next check.
- Partitions the caller excludes (being deleted or reassigned) are neither counted as
  imbalanced nor elected.

Everything here takes plain values and returns plain values; the controller's timer and the
election itself (``partition_states.elect_leader_on_request``) live in ``controller.cluster``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from odradek._types import TopicPartition
from odradek.controller.partition_states import PartitionRecord

#: Kafka's defaults.
DEFAULT_CHECK_INTERVAL_SECONDS = 300
DEFAULT_IMBALANCE_PERCENTAGE = 10


@dataclass(frozen=True, slots=True)
class RebalanceSettings:
    """The three broker settings of the automatic rebalance."""

    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = DEFAULT_CHECK_INTERVAL_SECONDS
    leader_imbalance_per_broker_percentage: int = DEFAULT_IMBALANCE_PERCENTAGE

    def __post_init__(self) -> None:
        if self.leader_imbalance_check_interval_seconds < 1:
            raise ValueError(
                "leader.imbalance.check.interval.seconds must be at least 1, got "
                f"{self.leader_imbalance_check_interval_seconds}"
            )
        if not 0 <= self.leader_imbalance_per_broker_percentage <= 100:
            raise ValueError(
                "leader.imbalance.per.broker.percentage must be within 0..100, got "
                f"{self.leader_imbalance_per_broker_percentage}"
            )


@dataclass(frozen=True, slots=True)
class RebalanceDecision:
    """One check's outcome.

    ``imbalance`` holds each preferred broker's ratio (0.0..1.0); ``elect`` the partitions to
    move back to their preferred replica, sorted; ``waiting`` those of an imbalanced broker
    that cannot move yet (the preferred replica is not live or not in the ISR).
    """

    imbalance: Mapping[int, float]
    elect: tuple[TopicPartition, ...]
    waiting: tuple[TopicPartition, ...] = ()


def imbalance_ratios(
    partitions: Mapping[TopicPartition, PartitionRecord],
    *,
    excluded: Collection[TopicPartition] = (),
) -> dict[int, tuple[int, list[TopicPartition]]]:
    """Per preferred broker: how many partitions prefer it, and those another broker leads."""
    groups: dict[int, tuple[int, list[TopicPartition]]] = {}
    for tp, record in partitions.items():
        if not record.replicas or tp in excluded:
            continue
        preferred = record.replicas[0]
        total, not_led = groups.get(preferred, (0, []))
        if record.state.leader != preferred:
            not_led.append(tp)
        groups[preferred] = (total + 1, not_led)
    return groups


def plan_rebalance(
    partitions: Mapping[TopicPartition, PartitionRecord],
    live: Collection[int],
    percentage: int,
    *,
    excluded: Collection[TopicPartition] = (),
) -> RebalanceDecision:
    """What one periodic check does (see the module docstring).

    Args:
        partitions: every partition the controller holds.
        live: the brokers that may lead (live and not shutting down).
        percentage: ``leader.imbalance.per.broker.percentage``.
        excluded: partitions left alone (being deleted or reassigned).
    """
    threshold = percentage / 100
    imbalance: dict[int, float] = {}
    elect: list[TopicPartition] = []
    waiting: list[TopicPartition] = []
    for broker, (total, not_led) in sorted(imbalance_ratios(partitions, excluded=excluded).items()):
        ratio = len(not_led) / total
        imbalance[broker] = ratio
        if ratio <= threshold:
            continue
        for tp in not_led:
            if broker in live and broker in partitions[tp].state.isr:
                elect.append(tp)
            else:
                waiting.append(tp)
    return RebalanceDecision(imbalance, tuple(sorted(elect)), tuple(sorted(waiting)))
