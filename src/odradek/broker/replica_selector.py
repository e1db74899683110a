"""Which replica a consumer should read a partition from (KIP-392, ``replica.selector.class``).

The leader asks its selector on every consumer Fetch v11+ (the version that carries the
client's ``rack_id``); a replica other than the leader goes back to the client as
``preferred_read_replica`` with no records, and the client fetches from that replica until it
errs or the leader names another. Two selectors, by Kafka's class names:

- ``org.apache.kafka.common.replica.LeaderSelector`` (the default): always the leader, so
  nothing changes for any client.
- ``org.apache.kafka.common.replica.RackAwareReplicaSelector``: among the replicas in the
  client's rack, the leader if it is one of them, else the one furthest ahead (largest log end
  offset, then the most recently caught up); the leader when no replica shares the rack or the
  client names none.

Only in-sync replicas whose log already holds the fetch offset are candidates (Kafka filters
by the offset range too): a client sent to a replica that cannot serve its offset would only
bounce back. Pure: values in, a broker id out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "LEADER_SELECTOR",
    "RACK_AWARE_SELECTOR",
    "REPLICA_SELECTORS",
    "ReplicaView",
    "select_read_replica",
]

LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderSelector"
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
#: The values ``replica.selector.class`` accepts.
REPLICA_SELECTORS = (LEADER_SELECTOR, RACK_AWARE_SELECTOR)


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """What the leader knows of one replica when choosing.

    Attributes:
        broker_id: the replica's broker.
        rack: its ``broker.rack`` (None: none, or the broker is not known to be alive).
        log_end_offset: its log end offset (the leader's own, or the follower's last fetch).
        log_start_offset: the first offset it holds (-1: unknown, taken as 0).
        last_caught_up_ms: when it last reached the leader's log end offset.
    """

    broker_id: int
    rack: str | None
    log_end_offset: int
    log_start_offset: int = -1
    last_caught_up_ms: int = 0


def select_read_replica(
    selector_class: str,
    *,
    client_rack: str | None,
    leader_id: int,
    replicas: Iterable[ReplicaView],
    isr: Iterable[int],
    fetch_offset: int,
) -> int:
    """The broker a consumer in ``client_rack`` should fetch from at ``fetch_offset``.

    Args:
        selector_class: ``replica.selector.class`` (one of ``REPLICA_SELECTORS``).
        client_rack: the Fetch request's ``rack_id`` ("" or None: the client names none).
        leader_id: the partition's leader, this broker; it is always a candidate.
        replicas: every replica, the leader included.
        isr: the in-sync replicas.
        fetch_offset: where the client reads.

    Returns:
        A broker id; ``leader_id`` when the client should stay with the leader.
    """
    if selector_class != RACK_AWARE_SELECTOR or not client_rack:
        return leader_id
    in_sync = set(isr)
    candidates = [
        replica
        for replica in replicas
        if replica.rack == client_rack
        and (
            replica.broker_id == leader_id
            or (
                replica.broker_id in in_sync
                and max(replica.log_start_offset, 0) <= fetch_offset <= replica.log_end_offset
            )
        )
    ]
    if not candidates:
        return leader_id
    if any(replica.broker_id == leader_id for replica in candidates):
        return leader_id
    best = max(candidates, key=lambda r: (r.log_end_offset, r.last_caught_up_ms, -r.broker_id))
    return best.broker_id
