"""Partition leader election, pure: Kafka's four algorithms
(``PartitionLeaderElectionAlgorithms``) over plain values, for the controller to apply when a
broker dies, stops, or a leader should move back to its preferred replica.

Every function takes the partition's replica assignment (preferred replica first), its current
ISR and the live brokers, and returns the new ``LeaderAndIsr`` — or ``None`` when no replica
qualifies, leaving the partition offline (leader -1 is the caller's to write). The new leader
epoch is the current one plus one: followers and clients fence stale leaders by it (KIP-101,
KIP-320).

Rules (Kafka's):

- Offline partition (the leader died): the first replica, in assignment order, that is live and
  in the ISR. None such and ``unclean.leader.election.enable``: the first live replica, with
  an ISR of itself alone (data the old ISR had may be lost; ``unclean`` says so).
- Reassignment: the first replica of the *target* assignment that is live and in the ISR.
- Preferred replica: the first replica of the assignment, only if it is live and in the ISR.
- Controlled shutdown: the first replica that is live, in the ISR and not shutting down; the
  brokers shutting down leave the ISR.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

#: The leader of a partition without one (Kafka's ``LeaderAndIsr.NoLeader``).
NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A partition's leader, leader epoch and ISR (what ``.../partitions/<p>/state`` holds).

    ``unclean`` marks a leader elected from outside the ISR.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    unclean: bool = False


def _first(candidates: Sequence[int], isr: Collection[int], live: Collection[int]) -> int | None:
    for replica in candidates:
        if replica in live and replica in isr:
            return replica
    return None


def _keep_order(isr: Sequence[int], leader: int, leaving: Collection[int] = ()) -> tuple[int, ...]:
    """The ISR with ``leaving`` removed and ``leader`` in it (added at the end if missing)."""
    kept = [replica for replica in isr if replica not in leaving]
    if leader not in kept:
        kept.append(leader)
    return tuple(kept)


def initial_leader_and_isr(assignment: Sequence[int], live: Collection[int]) -> LeaderAndIsr | None:
    """A new partition's first state: the live replicas form the ISR and the first of them
    (the preferred replica when it is live) leads, at epoch 0; ``None`` if none is live."""
    isr = tuple(replica for replica in assignment if replica in live)
    if not isr:
        return None
    return LeaderAndIsr(isr[0], 0, isr)


def elect_offline_partition_leader(
    assignment: Sequence[int],
    current: LeaderAndIsr,
    live: Collection[int],
    *,
    unclean_leader_election_enable: bool = False,
) -> LeaderAndIsr | None:
    """The new state of a partition whose leader is gone (see the module docstring)."""
    leader = _first(assignment, current.isr, live)
    epoch = current.leader_epoch + 1
    if leader is not None:
        isr = tuple(replica for replica in current.isr if replica in live)
        return LeaderAndIsr(leader, epoch, _keep_order(isr, leader))
    if not unclean_leader_election_enable:
        return None
    for replica in assignment:
        if replica in live:
            return LeaderAndIsr(replica, epoch, (replica,), unclean=True)
    return None


def elect_reassigned_partition_leader(
    target_replicas: Sequence[int], current: LeaderAndIsr, live: Collection[int]
) -> LeaderAndIsr | None:
    """The leader once a reassignment completes: the first target replica live and in sync."""
    leader = _first(target_replicas, current.isr, live)
    if leader is None:
        return None
    return LeaderAndIsr(leader, current.leader_epoch + 1, _keep_order(current.isr, leader))


def elect_preferred_replica_leader(
    assignment: Sequence[int], current: LeaderAndIsr, live: Collection[int]
) -> LeaderAndIsr | None:
    """Moves leadership back to the preferred replica (the assignment's first) if it is live
    and in sync; ``None`` otherwise, or when it already leads (nothing to do)."""
    if not assignment:
        return None
    preferred = assignment[0]
    if preferred == current.leader or preferred not in live or preferred not in current.isr:
        return None
    return LeaderAndIsr(preferred, current.leader_epoch + 1, current.isr)


def elect_controlled_shutdown_leader(
    assignment: Sequence[int],
    current: LeaderAndIsr,
    live: Collection[int],
    shutting_down: Collection[int],
) -> LeaderAndIsr | None:
    """Moves leadership off brokers that are shutting down: the first replica live, in the
    ISR and staying; the stopping brokers leave the ISR. ``None`` when no replica qualifies
    (the partition keeps its leader until that broker is gone, as Kafka does)."""
    staying = [replica for replica in live if replica not in shutting_down]
    leader = _first(assignment, current.isr, staying)
    if leader is None:
        return None
    return LeaderAndIsr(
        leader, current.leader_epoch + 1, _keep_order(current.isr, leader, shutting_down)
    )


def leader_imbalance_ratio(
    leaders: Sequence[int], preferred: Sequence[int], broker_id: int
) -> float:
    """The share of ``broker_id``'s preferred partitions it does not lead — Kafka's
    ``leader.imbalance.per.broker.percentage`` compares this (×100) to trigger a preferred
    replica election. ``leaders[i]`` and ``preferred[i]`` describe partition i; 0 when the
    broker is preferred nowhere."""
    mine = [i for i, replica in enumerate(preferred) if replica == broker_id]
    if not mine:
        return 0.0
    not_led = sum(1 for i in mine if leaders[i] != broker_id)
    return not_led / len(mine)
