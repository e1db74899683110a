"""Partition reassignment (KIP-455), pure: what a reassignment writes when it starts, when it
is complete, and what completing it writes. Plus Kafka's reassignment JSON, shared by
``/admin/reassign_partitions`` and ``odradek reassign-partitions``.

Plain values in, plain values out; the controller shell (``controller.cluster``) reads and
writes the store and tells the brokers.

Model (Kafka's ``ReplicaAssignment``): while partition p moves from its original replicas OR
to a target TR, its replica set is RS = TR + (OR − TR) (target first, order kept), with
``adding`` = TR − OR and ``removing`` = OR − TR recorded beside it (``/brokers/topics/<t>``
holds ``adding_replicas`` / ``removing_replicas`` maps). So TR = RS − removing and
OR = RS − adding can always be rebuilt from what is stored: a new controller resumes.

Rules:

- Start (``start_reassignment``): a target is a non-empty list of distinct live brokers; the
  partition's replicas become RS, its leader epoch goes up by one so every replica takes the
  new replica set, and the new replicas start as followers. A new target while a
  reassignment runs is measured from the *original* replicas (as Kafka does); replicas of the
  old RS not in the new one stop (``stopped``: StopReplica with delete) and leave the ISR.
  Cancelling (``None``) is a reassignment back to OR — as Kafka's, the OR rebuilt from RS:
  the same replicas, in the order RS holds them (the stored layout does not keep OR's own
  order, so a cancelled move can change the preferred replica; ``odradek reassign-partitions
  --execute`` prints the rollback file that restores it). ``allow_replication_factor_change``
  false (KIP-860) refuses a target whose length differs from OR's.
- Complete (``complete_reassignment``): once every target replica is in the ISR (or at once
  when nothing is being added or removed: a reorder, a cancel); the replicas become TR and
  the ISR ISR ∩ TR; a leader outside TR, or not live, gives way to the first target replica
  live and in sync; the leader epoch goes up by one; the removed replicas stop (delete).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from odradek._types import TopicPartition
from odradek.controller.leaders import NO_LEADER, LeaderAndIsr
from odradek.errors import ErrorCode, KafkaError

#: The version of Kafka's reassignment JSON (``/admin/reassign_partitions``, the tool's files).
REASSIGNMENT_JSON_VERSION = 1


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A partition's replica set and, while it is reassigned, the replicas being added and
    removed (Kafka's ``ReplicaAssignment``; see the module docstring)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target(self) -> tuple[int, ...]:
        """TR: where the partition is going (RS − removing)."""
        return tuple(replica for replica in self.replicas if replica not in self.removing)

    @property
    def origin(self) -> tuple[int, ...]:
        """OR: where the partition was before the reassignment (RS − adding)."""
        return tuple(replica for replica in self.replicas if replica not in self.adding)


def reassign_to(current: ReplicaAssignment, target: Sequence[int]) -> ReplicaAssignment:
    """The replica assignment of a reassignment from ``current``'s original replicas to
    ``target``: RS = TR + (OR − TR)."""
    origin = current.origin
    full = tuple(dict.fromkeys([*target, *origin]))
    return ReplicaAssignment(
        full,
        tuple(replica for replica in full if replica not in origin),
        tuple(replica for replica in full if replica not in target),
    )


@dataclass(frozen=True, slots=True)
class ReassignmentStart:
    """What starting (or re-targeting, or cancelling) a reassignment writes and stops."""

    assignment: ReplicaAssignment
    state: LeaderAndIsr
    #: Replicas of the previous replica set that are not in the new one.
    stopped: tuple[int, ...]


def check_target(
    current: ReplicaAssignment,
    target: Sequence[int] | None,
    live: Collection[int],
    *,
    allow_replication_factor_change: bool = True,
) -> tuple[ErrorCode, str] | None:
    """Why ``target`` cannot be a reassignment of ``current`` (``None``: it can)."""
    if target is None:
        if not current.is_reassigning:
            return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "no reassignment is in progress"
        return None
    if not target:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "the target replica list is empty"
    if len(set(target)) != len(target):
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"the target replica list {list(target)} names a broker twice",
        )
    missing = sorted({replica for replica in target if replica not in live})
    if missing:
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"broker(s) {missing} of the target replicas are not live; live: {sorted(live)}",
        )
    if not allow_replication_factor_change and len(target) != len(current.origin):
        return (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"the target has {len(target)} replicas, the partition {len(current.origin)}, "
            "and the request does not allow a replication factor change",
        )
    return None


def start_reassignment(
    current: ReplicaAssignment,
    state: LeaderAndIsr,
    target: Sequence[int] | None,
    live: Collection[int],
    *,
    allow_replication_factor_change: bool = True,
) -> ReassignmentStart | tuple[ErrorCode, str]:
    """The start of a reassignment of a partition (``target`` ``None``: cancel), or the
    error to answer for it (``check_target``)."""
    refused = check_target(
        current, target, live, allow_replication_factor_change=allow_replication_factor_change
    )
    if refused is not None:
        return refused
    new = reassign_to(current, current.origin if target is None else target)
    stopped = tuple(replica for replica in current.replicas if replica not in new.replicas)
    isr = tuple(replica for replica in state.isr if replica not in stopped)
    leader = state.leader
    if leader in stopped:
        # No eligible replica: the partition goes offline, keeping what is left of its ISR.
        leader = _first_eligible(new.replicas, isr, live)
    return ReassignmentStart(new, LeaderAndIsr(leader, state.leader_epoch + 1, isr), stopped)


@dataclass(frozen=True, slots=True)
class ReassignmentCompletion:
    """What completing a reassignment writes and stops."""

    replicas: tuple[int, ...]
    state: LeaderAndIsr
    #: The replicas leaving the partition (StopReplica with delete).
    removed: tuple[int, ...]


def is_reassignment_complete(assignment: ReplicaAssignment, isr: Collection[int]) -> bool:
    """Whether the reassignment may complete: nothing is being added or removed, or every
    target replica is in the ISR."""
    if not assignment.is_reassigning:
        return True
    return all(replica in isr for replica in assignment.target)


def complete_reassignment(
    assignment: ReplicaAssignment, state: LeaderAndIsr, live: Collection[int]
) -> ReassignmentCompletion | None:
    """The completion of a reassignment, or ``None`` while it must wait (a target replica
    out of the ISR, or no target replica live and in sync to lead)."""
    if not is_reassignment_complete(assignment, state.isr):
        return None
    target = assignment.target
    isr = tuple(replica for replica in state.isr if replica in target)
    leader = state.leader
    if leader not in target or leader not in live:
        leader = _first_eligible(target, isr, live)
        if leader == NO_LEADER and assignment.is_reassigning:
            return None  # nobody in the target can lead yet: wait
    removed = tuple(replica for replica in assignment.replicas if replica not in target)
    return ReassignmentCompletion(
        target, LeaderAndIsr(leader, state.leader_epoch + 1, isr), removed
    )


def _first_eligible(candidates: Sequence[int], isr: Collection[int], live: Collection[int]) -> int:
    for replica in candidates:
        if replica in isr and replica in live:
            return replica
    return NO_LEADER


# --- Kafka's reassignment JSON ---------------------------------------------------------------


def parse_reassignment_json(text: str | bytes) -> dict[TopicPartition, tuple[int, ...] | None]:
    """The partitions and target replicas of Kafka's reassignment JSON
    (``{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}, ...]}``;
    ``log_dirs`` is accepted and ignored unless it names a directory: odradek places replicas
    in its own log dirs). A ``null`` ``replicas`` means cancel (as in the API).

    Raises:
        KafkaError: (INVALID_REQUEST) not JSON, not that layout, a partition listed twice or
            no partitions, with a one-line message naming the faulty entry.
    """
    try:
        document: Any = json.loads(text)
    except (UnicodeDecodeError, ValueError) as error:
        raise _invalid(f"not JSON: {error}") from None
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise _invalid('expected {"version": 1, "partitions": [...]}')
    version = document.get("version", REASSIGNMENT_JSON_VERSION)
    if version != REASSIGNMENT_JSON_VERSION:
        raise _invalid(f"unsupported version {version!r} (expected {REASSIGNMENT_JSON_VERSION})")
    result: dict[TopicPartition, tuple[int, ...] | None] = {}
    for index, entry in enumerate(entries):
        where = f"partitions[{index}]"
        if not isinstance(entry, dict):
            raise _invalid(f"{where} is not an object")
        topic = entry.get("topic")
        partition = entry.get("partition")
        if not isinstance(topic, str) or not topic:
            raise _invalid(f"{where} needs a topic (a non-empty string)")
        if not _is_int(partition) or not 0 <= partition < 2**31:
            raise _invalid(f"{where} needs a partition (an int >= 0)")
        replicas = entry.get("replicas")
        if replicas is not None and (
            not isinstance(replicas, list)
            or not all(_is_int(r) and 0 <= r < 2**31 for r in replicas)
        ):
            raise _invalid(f"{where}: replicas must be a list of broker ids (ints >= 0)")
        log_dirs = entry.get("log_dirs")
        if log_dirs is not None and (
            not isinstance(log_dirs, list) or any(d != "any" for d in log_dirs)
        ):
            raise _invalid(f'{where}: log_dirs other than "any" are not supported')
        tp = TopicPartition(topic, partition)
        if tp in result:
            raise _invalid(f"{tp} is listed twice")
        result[tp] = None if replicas is None else tuple(replicas)
    if not result:
        raise _invalid("no partitions listed")
    return result


def encode_reassignment_json(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's reassignment JSON of ``assignment`` (partitions sorted; ``log_dirs`` "any", as
    kafka-reassign-partitions.sh writes it)."""
    return json.dumps(
        {
            "version": REASSIGNMENT_JSON_VERSION,
            "partitions": [
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "replicas": list(assignment[tp]),
                    "log_dirs": ["any"] * len(assignment[tp]),
                }
                for tp in sorted(assignment)
            ],
        },
        separators=(",", ":"),
    )


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _invalid(message: str) -> KafkaError:
    return KafkaError(f"reassignment JSON: {message}", code=ErrorCode.INVALID_REQUEST)
