"""Topic names and replica assignment: Kafka's rules as pure functions.

Owns what a topic may be called (``validate_topic_name``, ``topic_names_collide``) and how
partitions' replicas are laid out over brokers (``assign_replicas``, rack-aware when the
brokers have ``broker.rack``) or checked when given by hand (``validate_assignment``). No
store, no clock, no I/O: ``ClusterMetadata`` (one broker), ``ClusterController`` (a cluster)
and ``odradek reassign-partitions --generate`` call these.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from itertools import zip_longest

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
    racks: Mapping[int, str | None] | None = None,
) -> dict[int, list[int]]:
    """Spreads partitions' replicas over brokers, as Kafka's ``AdminUtils`` does.

    Rack-unaware (no ``racks``, or no broker has one): brokers are sorted. Partition ``p``'s
    first replica is broker ``(p + start_index) % n``, so leaders go round-robin; the other
    replicas follow it at a shift that grows by one every ``n`` partitions, so followers of
    consecutive rounds land on different brokers. With ``start_partition`` > 0 the shift
    continues from partition 0's round, so assigning partitions in two calls gives what one
    call would have.

    Rack-aware (every broker has a rack): the same walk over the brokers interleaved by rack
    (``rack_alternated_brokers``), the followers' shift scaled by the number of racks, and a
    broker skipped while a rack without a replica of the partition remains (or, once every
    rack has one, while a broker without one remains). So each partition's replicas span
    ``min(rf, racks)`` racks and leaders still go round-robin.

    Args:
        partitions: how many partitions to assign (≥ 1).
        replication_factor: replicas per partition (1 ≤ rf ≤ number of brokers).
        broker_ids: the brokers to use.
        start_index: the index of the first partition's leader among the arranged brokers
            (and the initial follower shift); random when ``None``, as in Kafka.
        start_partition: the id of the first partition assigned (the current partition count
            when adding partitions).
        rng: the random source for a ``None`` ``start_index``.
        racks: broker id → its ``broker.rack`` (``None`` or missing: none); ``None`` to
            ignore racks (``--disable-rack-aware``).

    Returns:
        partition id → replica broker ids, leader (preferred replica) first.

    Raises:
        InvalidPartitionsError: ``partitions`` < 1.
        InvalidReplicationFactorError: ``replication_factor`` < 1 or more than the brokers,
            or some brokers have a rack and others not (Kafka refuses to guess).
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
    rack_of = _racks_of(brokers, racks)
    if rack_of:
        brokers = rack_alternated_brokers(rack_of)
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
        if rack_of:
            assignment[partition] = _rack_aware_replicas(
                brokers, rack_of, first, round_shift, replication_factor
            )
            continue
        replicas = [brokers[first]]
        for follower in range(replication_factor - 1):
            replicas.append(brokers[_follower_index(first, round_shift, follower, count)])
        assignment[partition] = replicas
    return assignment


def rack_alternated_brokers(racks: Mapping[int, str]) -> list[int]:
    """The brokers interleaved by rack: the racks sorted, each rack's brokers sorted, then one
    broker of each rack in turn (racks a: 0, 1; b: 2; c: 3 → 0, 2, 3, 1), so that walking the
    list meets every rack before any twice."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(racks.items()):
        by_rack.setdefault(rack, []).append(broker)
    rounds = zip_longest(*(by_rack[rack] for rack in sorted(by_rack)))
    return [broker for row in rounds for broker in row if broker is not None]


def _racks_of(brokers: Sequence[int], racks: Mapping[int, str | None] | None) -> dict[int, str]:
    """broker → rack when every broker has one; {} when none does (or racks are ignored).

    Raises:
        InvalidReplicationFactorError: some brokers have a rack and others not.
    """
    if racks is None:
        return {}
    known = {broker: racks.get(broker) for broker in brokers}
    with_rack = {broker: rack for broker, rack in known.items() if rack is not None}
    if not with_rack:
        return {}
    if len(with_rack) != len(known):
        missing = sorted(broker for broker, rack in known.items() if rack is None)
        raise InvalidReplicationFactorError(
            f"not all brokers have rack information for rack-aware replica assignment: "
            f"broker(s) {missing} have no broker.rack (set it on every broker, or on none)"
        )
    return with_rack


def _follower_index(first: int, shift: int, follower: int, count: int) -> int:
    # Never 0 (the leader itself): a step of 1..n-1 from the leader.
    return (first + 1 + (shift + follower) % (count - 1)) % count


def _rack_aware_replicas(
    arranged: Sequence[int],
    rack_of: Mapping[int, str],
    first: int,
    shift: int,
    replication_factor: int,
) -> list[int]:
    count = len(arranged)
    rack_count = len(set(rack_of.values()))
    leader = arranged[first]
    replicas = [leader]
    racks_used = {rack_of[leader]}
    step = 0
    while len(replicas) < replication_factor:
        broker = arranged[_follower_index(first, shift * rack_count, step, count)]
        step += 1
        rack = rack_of[broker]
        if rack in racks_used and len(racks_used) < rack_count:
            continue  # a rack without a replica of this partition remains
        if broker in replicas and len(replicas) < count:
            continue
        replicas.append(broker)
        racks_used.add(rack)
    return replicas


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
