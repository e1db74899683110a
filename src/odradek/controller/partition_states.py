"""The controller's partition state machine, pure: what changes in which partitions' leader,
leader epoch and ISR when topics are created, brokers fail or return, or a broker shuts down.

Plain values in, plain values out: the controller shell (``controller.cluster``) reads the
states from the store, applies these decisions with epoch-fenced writes and propagates them.
The elections themselves are ``controller.leaders``'; this module decides which partitions
need one and what the partitions without an electable leader become.

Rules (Kafka's ``PartitionStateMachine`` / ``ReplicaStateMachine``, ZooKeeper era):

- A new partition: the live replicas form the ISR and the first of them leads, at leader
  epoch 0. No live replica: leader -1 (offline), the whole assignment as ISR.
- A broker fails: every partition it led elects a new leader from the live ISR (or, with
  ``unclean.leader.election.enable``, from any live replica); every partition it followed in
  the ISR drops it from the ISR. Both bump the leader epoch. A partition with no electable
  leader goes offline (leader -1, epoch + 1) and keeps its last ISR, so the return of one of
  those replicas brings it back cleanly.
- A broker starts: every offline partition that can elect a leader now does.
- Controlled shutdown: every partition the stopping broker leads moves to another live ISR
  member (it stays where it is when there is none); it leaves the ISR of the others.
- ElectLeaders (KIP-460): type 0 moves leadership to the preferred replica when it is live
  and in sync; type 1 (unclean) elects a leader only for a partition without a live one.
- AlterPartition (the leader's ISR change; Kafka's ZooKeeper-era ``processAlterPartition``):
  accepted only from the partition's leader at the current leader epoch (else
  FENCED_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER) and at the current partition epoch — the
  state node's version, the compare-and-set token (else INVALID_UPDATE_VERSION). The new ISR
  must hold the leader, only assigned replicas (INVALID_REQUEST) and only live brokers
  (INELIGIBLE_REPLICA). The leader epoch does not change; a request for the ISR the
  partition has already answers the current state without a write.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from odradek._types import TopicPartition
from odradek.controller.leaders import (
    NO_LEADER,
    LeaderAndIsr,
    elect_controlled_shutdown_leader,
    elect_offline_partition_leader,
    elect_preferred_replica_leader,
    initial_leader_and_isr,
)
from odradek.errors import ErrorCode

#: ElectLeaders' election types.
PREFERRED_ELECTION = 0
UNCLEAN_ELECTION = 1


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """A partition as the controller holds it: its replica assignment (preferred replica
    first), its state and the state node's version (the compare-and-set token)."""

    replicas: tuple[int, ...]
    state: LeaderAndIsr
    zk_version: int


def new_partition_state(replicas: tuple[int, ...], live: Collection[int]) -> LeaderAndIsr:
    """The first state of a new partition (offline when no replica is live)."""
    state = initial_leader_and_isr(replicas, live)
    if state is None:
        return LeaderAndIsr(NO_LEADER, 0, replicas)
    return state


def offline_replicas(replicas: tuple[int, ...], live: Collection[int]) -> tuple[int, ...]:
    """The replicas on brokers that are not live."""
    return tuple(replica for replica in replicas if replica not in live)


def on_brokers_failed(
    partitions: Mapping[TopicPartition, PartitionRecord],
    live: Collection[int],
    *,
    unclean: Callable[[str], bool] = lambda topic: False,
) -> dict[TopicPartition, LeaderAndIsr]:
    """The new states after brokers left ``live``: partitions whose leader is gone elect one;
    the others drop dead replicas from their ISR.

    Args:
        partitions: every partition.
        live: the brokers still live.
        unclean: whether a topic allows unclean leader election.
    """
    changes: dict[TopicPartition, LeaderAndIsr] = {}
    for topic_partition, record in partitions.items():
        state = record.state
        if state.leader == NO_LEADER:
            continue  # already offline: on_brokers_started brings it back
        if state.leader not in live:
            elected = elect_offline_partition_leader(
                record.replicas,
                state,
                live,
                unclean_leader_election_enable=unclean(topic_partition.topic),
            )
            if elected is None:
                elected = LeaderAndIsr(NO_LEADER, state.leader_epoch + 1, state.isr)
            changes[topic_partition] = elected
        elif any(replica not in live for replica in state.isr):
            isr = tuple(replica for replica in state.isr if replica in live)
            changes[topic_partition] = LeaderAndIsr(state.leader, state.leader_epoch + 1, isr)
    return changes


def on_brokers_started(
    partitions: Mapping[TopicPartition, PartitionRecord],
    live: Collection[int],
    *,
    unclean: Callable[[str], bool] = lambda topic: False,
) -> dict[TopicPartition, LeaderAndIsr]:
    """The new states of offline partitions that can elect a leader among ``live``."""
    changes: dict[TopicPartition, LeaderAndIsr] = {}
    for topic_partition, record in partitions.items():
        if record.state.leader != NO_LEADER:
            continue
        elected = elect_offline_partition_leader(
            record.replicas,
            record.state,
            live,
            unclean_leader_election_enable=unclean(topic_partition.topic),
        )
        if elected is not None:
            changes[topic_partition] = elected
    return changes


def on_controlled_shutdown(
    partitions: Mapping[TopicPartition, PartitionRecord],
    live: Collection[int],
    stopping: int,
) -> dict[TopicPartition, LeaderAndIsr]:
    """The new states that move leadership off ``stopping`` and take it out of ISRs (a
    partition without another live ISR member keeps its leader)."""
    changes: dict[TopicPartition, LeaderAndIsr] = {}
    for topic_partition, record in partitions.items():
        state = record.state
        if state.leader == stopping:
            elected = elect_controlled_shutdown_leader(record.replicas, state, live, (stopping,))
            if elected is not None:
                changes[topic_partition] = elected
        elif stopping in state.isr and state.leader != NO_LEADER:
            isr = tuple(replica for replica in state.isr if replica != stopping)
            changes[topic_partition] = LeaderAndIsr(state.leader, state.leader_epoch + 1, isr)
    return changes


def leader_counts(
    partitions: Mapping[TopicPartition, PartitionRecord], brokers: Collection[int]
) -> dict[int, int]:
    """How many partitions each broker leads (0 for brokers leading none)."""
    counts = dict.fromkeys(brokers, 0)
    for record in partitions.values():
        if record.state.leader in counts:
            counts[record.state.leader] += 1
    return counts


def elect_leader_on_request(
    election_type: int, record: PartitionRecord, live: Collection[int]
) -> LeaderAndIsr | tuple[ErrorCode, str]:
    """An ElectLeaders decision for one partition: its new state, or the error to answer."""
    state = record.state
    if election_type == PREFERRED_ELECTION:
        preferred = record.replicas[0] if record.replicas else NO_LEADER
        if state.leader == preferred:
            return ErrorCode.ELECTION_NOT_NEEDED, "the preferred replica leads already"
        elected = elect_preferred_replica_leader(record.replicas, state, live)
        if elected is None:
            return (
                ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                f"preferred replica {preferred} is not live and in sync",
            )
        return elected
    if election_type == UNCLEAN_ELECTION:
        if state.leader != NO_LEADER and state.leader in live:
            return ErrorCode.ELECTION_NOT_NEEDED, "the partition has a live leader"
        unclean = elect_offline_partition_leader(
            record.replicas, state, live, unclean_leader_election_enable=True
        )
        if unclean is None:
            return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no replica is live"
        return unclean
    return ErrorCode.INVALID_REQUEST, f"unknown election type {election_type}"


def alter_partition(
    record: PartitionRecord,
    broker_id: int,
    leader_epoch: int,
    new_isr: tuple[int, ...],
    partition_epoch: int,
    live: Collection[int],
) -> LeaderAndIsr | tuple[ErrorCode, str]:
    """An AlterPartition decision for one partition: the state to write (unchanged when the
    ISR is already ``new_isr``), or the error to answer."""
    state = record.state
    if broker_id != state.leader:
        return (
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
            f"broker {broker_id} does not lead the partition (leader {state.leader})",
        )
    if leader_epoch != state.leader_epoch:
        return (
            ErrorCode.FENCED_LEADER_EPOCH,
            f"leader epoch {leader_epoch}, the controller's is {state.leader_epoch}",
        )
    if partition_epoch != record.zk_version:
        if set(new_isr) == set(state.isr) and partition_epoch < record.zk_version:
            return state  # already applied (a retried request whose answer was lost)
        return (
            ErrorCode.INVALID_UPDATE_VERSION,
            f"partition epoch {partition_epoch}, the controller's is {record.zk_version}",
        )
    if state.leader not in new_isr or len(set(new_isr)) != len(new_isr):
        return ErrorCode.INVALID_REQUEST, f"ISR {list(new_isr)} must hold the leader once"
    unknown = [replica for replica in new_isr if replica not in record.replicas]
    if unknown:
        return ErrorCode.INVALID_REQUEST, f"ISR members {unknown} are not replicas"
    dead = [replica for replica in new_isr if replica not in live]
    if dead:
        return ErrorCode.INELIGIBLE_REPLICA, f"ISR members {dead} are not live brokers"
    return LeaderAndIsr(state.leader, state.leader_epoch, new_isr)
