"""Topic names and replica assignment: Kafka's rules as pure functions.

Owns what a topic may be called (``validate_topic_name``, ``topic_names_collide``) and how
partitions' replicas are laid out over brokers (``assign_replicas``) or checked when given by
hand (``validate_assignment``). No store, no clock, no I/O: ``ClusterMetadata`` (one broker)
and ``ClusterController`` (a cluster) both call these.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence

from odradek.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
)

#: The longest legal topic name (Kafka's ``Topic.MAX_NAME_LENGTH``).
MAX_TOPIC_NAME_LENGTH = 249
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str) -> None:
    """Checks a topic name as Kafka does (``Topic.validate``).

    Raises:
        InvalidTopicError: empty, ``.`` or ``..``, longer than 249 characters, or a character
            other than ASCII letters, digits, ``.``, ``_`` and ``-``.
    """
    if not name:
        raise InvalidTopicError("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"topic name is {len(name)} characters long, longer than {MAX_TOPIC_NAME_LENGTH}: "
            f"{name[:40]!r}..."
        )
    if not _TOPIC_NAME.fullmatch(name):
        raise InvalidTopicError(
            f"topic name {name!r} contains a character other than ASCII letters, digits, "
            "'.', '_' and '-'"
        )


def topic_names_collide(first: str, second: str) -> bool:
    """Whether two topic names map to the same metric name (``.`` and ``_`` are the same
    there, so Kafka refuses to create one beside the other)."""
    return first.replace(".", "_") == second.replace(".", "_")


def assign_replicas(
    partitions: int,
    replication_factor: int,
    broker_ids: Sequence[int],
    start_index: int | None = None,
    *,
    start_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Spreads partitions' replicas over brokers, as Kafka's rack-unaware assignment does.

    Brokers are sorted. Partition ``p``'s first replica is broker ``(p + start_index) % n``, so
    leaders go round-robin; the other replicas follow it at a shift that grows by one every
    ``n`` partitions, so followers of consecutive rounds land on different brokers. With
    ``start_partition`` > 0 the shift continues from partition 0's round, so assigning
    partitions in two calls gives what one call would have.

    Args:
        partitions: how many partitions to assign (≥ 1).
        replication_factor: replicas per partition (1 ≤ rf ≤ number of brokers).
        broker_ids: the brokers to use.
        start_index: the index of the first partition's leader among the sorted brokers (and
            the initial follower shift); random when ``None``, as in Kafka.
        start_partition: the id of the first partition assigned (the current partition count
            when adding partitions).
        rng: the random source for a ``None`` ``start_index``.

    Returns:
        partition id → replica broker ids, leader (preferred replica) first.

    Raises:
        InvalidPartitionsError: ``partitions`` < 1.
        InvalidReplicationFactorError: ``replication_factor`` < 1 or more than the brokers.
    """
    if partitions < 1:
        raise InvalidPartitionsError(f"number of partitions must be at least 1, got {partitions}")
    if replication_factor < 1:
        raise InvalidReplicationFactorError(
            f"replication factor must be at least 1, got {replication_factor}"
        )
    brokers = sorted(set(broker_ids))
    count = len(brokers)
    if replication_factor > count:
        raise InvalidReplicationFactorError(
            f"replication factor {replication_factor} is larger than the {count} available "
            f"broker(s) {brokers}"
        )
    if start_index is None:
        chooser = rng or random.Random()
        start_index = chooser.randrange(count)
        shift = chooser.randrange(count)
    else:
        shift = start_index
    assignment: dict[int, list[int]] = {}
    for partition in range(start_partition, start_partition + partitions):
        first = (partition + start_index) % count
        # The shift grows by one every round of ``count`` partitions. Counting rounds from
        # partition 0 (Kafka restarts at the initial shift when adding partitions) makes an
        # assignment made in two calls equal to the one made in one call.
        round_shift = shift + partition // count
        replicas = [brokers[first]]
        for follower in range(replication_factor - 1):
            # Never 0 (the leader itself): a step of 1..n-1 from the leader.
            step = 1 + (round_shift + follower) % (count - 1)
            replicas.append(brokers[(first + step) % count])
        assignment[partition] = replicas
    return assignment


def validate_assignment(
    assignment: Mapping[int, Sequence[int]], *, first_partition: int = 0
) -> None:
    """Checks a manual replica assignment.

    Raises:
        InvalidPartitionsError: the assignment is empty.
        InvalidReplicaAssignmentError: partition ids are not ``first_partition`` onwards without
            gaps, a replica list is empty or repeats a broker, or the lists differ in length.
    """
    if not assignment:
        raise InvalidPartitionsError("a replica assignment needs at least one partition")
    expected = list(range(first_partition, first_partition + len(assignment)))
    if sorted(assignment) != expected:
        raise InvalidReplicaAssignmentError(
            f"partitions must be numbered {expected[0]}..{expected[-1]} without gaps, "
            f"got {sorted(assignment)}"
        )
    lengths = {len(replicas) for replicas in assignment.values()}
    if 0 in lengths:
        raise InvalidReplicaAssignmentError("a partition has no replicas")
    if len(lengths) > 1:
        raise InvalidReplicaAssignmentError(
            f"all partitions must have the same number of replicas, got {sorted(lengths)}"
        )
    for partition, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                f"partition {partition} lists a broker twice: {list(replicas)}"
            )
