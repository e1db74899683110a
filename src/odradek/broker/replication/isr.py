"""A partition leader's in-sync replica decisions, pure: what a follower's fetch tells the
leader, who may join or must leave the ISR, and where the high watermark is.

Plain values in, plain values out; ``partition.Partition`` keeps the state and acts on it.

Rules (Kafka's ``Replica`` / ``Partition``, ZooKeeper era with AlterPartition):

- A follower's fetch offset is its log end offset (LEO): it asks for the first record it
  does not have.
- A follower is *caught up* at a fetch that asks at or past the leader's LEO at the time of
  the fetch. A fetch at or past the leader's LEO of the follower's previous fetch shows the
  follower was caught up at that previous fetch. ``last_caught_up_ms`` keeps the latest such
  time.
- ISR expansion: a follower outside the ISR joins once its LEO reaches the high watermark
  and the start of the current leader epoch (the leader's LEO when it became leader), so it
  holds every record the leader may have committed in this epoch.
- ISR shrink: a follower in the ISR leaves when its LEO differs from the leader's and it has
  not been caught up for more than ``replica.lag.time.max.ms``. An idle partition (no new
  records) keeps its followers in sync.
- The high watermark is the smallest LEO over the ISR (the leader's own included). While an
  ISR change is in flight the *maximal* ISR counts: the committed ISR plus any replica
  proposed to join, so the high watermark never gets ahead of a replica that may be in the
  ISR either way.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

#: A follower's LEO before its first fetch (Kafka's ``UnifiedLog.UnknownOffset``).
UNKNOWN_OFFSET = -1
#: Kafka's ``replica.lag.time.max.ms`` default.
DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000


@dataclass(frozen=True, slots=True)
class FollowerState:
    """What the leader knows of one follower.

    Attributes:
        replica_id: the follower's broker id.
        log_end_offset: its LEO, from its latest fetch (``UNKNOWN_OFFSET`` before any).
        last_fetch_leader_log_end_offset: the leader's LEO at that fetch.
        last_fetch_ms: when that fetch came (-1: none yet).
        last_caught_up_ms: the latest time it was known to be caught up (0: never).
    """

    replica_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_ms: int = -1
    last_caught_up_ms: int = 0


def reset_follower(replica_id: int, *, in_sync: bool, now_ms: int) -> FollowerState:
    """A follower's state when this broker becomes leader: an ISR member counts as caught
    up now (it gets ``replica.lag.time.max.ms`` to fetch), the others never were."""
    return FollowerState(replica_id, last_caught_up_ms=now_ms if in_sync else 0)


def follower_fetched(
    state: FollowerState, fetch_offset: int, leader_log_end_offset: int, now_ms: int
) -> FollowerState:
    """The follower's state after a fetch at ``fetch_offset`` while the leader's LEO is
    ``leader_log_end_offset``."""
    caught_up = state.last_caught_up_ms
    if fetch_offset >= leader_log_end_offset:
        caught_up = max(caught_up, now_ms)
    elif fetch_offset >= state.last_fetch_leader_log_end_offset >= 0:
        caught_up = max(caught_up, state.last_fetch_ms)
    return FollowerState(state.replica_id, fetch_offset, leader_log_end_offset, now_ms, caught_up)


def can_join_isr(
    state: FollowerState,
    isr: Collection[int],
    high_watermark: int,
    leader_epoch_start_offset: int,
) -> bool:
    """Whether a follower outside ``isr`` may join it now."""
    return (
        state.replica_id not in isr
        and state.log_end_offset >= high_watermark
        and state.log_end_offset >= leader_epoch_start_offset
    )


def out_of_sync_replicas(
    followers: Mapping[int, FollowerState],
    isr: Iterable[int],
    leader_log_end_offset: int,
    now_ms: int,
    max_lag_ms: int,
) -> tuple[int, ...]:
    """The ISR members (followers only) that must leave the ISR, in ISR order."""
    out = []
    for replica in isr:
        state = followers.get(replica)
        if state is None:
            continue  # the leader itself
        lagging = now_ms - state.last_caught_up_ms > max_lag_ms
        if state.log_end_offset != leader_log_end_offset and lagging:
            out.append(replica)
    return tuple(out)


def maximal_isr(committed: Iterable[int], pending: Iterable[int] | None) -> tuple[int, ...]:
    """The committed ISR plus the replicas a pending change would add (committed order
    first)."""
    isr = tuple(committed)
    if pending is None:
        return isr
    return isr + tuple(replica for replica in pending if replica not in isr)


def high_watermark(
    leader_id: int,
    leader_log_end_offset: int,
    followers: Mapping[int, FollowerState],
    isr: Iterable[int],
) -> int:
    """The smallest LEO over ``isr`` (a member the leader has no state for counts as
    ``UNKNOWN_OFFSET``: nothing can be committed until it fetched)."""
    lowest = leader_log_end_offset
    for replica in isr:
        if replica == leader_id:
            continue
        state = followers.get(replica)
        offset = UNKNOWN_OFFSET if state is None else state.log_end_offset
        lowest = min(lowest, offset)
    return lowest


@dataclass(frozen=True, slots=True)
class IsrChange:
    """An ISR the leader proposes to the controller (AlterPartition): valid only while the
    partition's leader epoch and partition epoch (the state node's version) are these."""

    topic: str
    partition: int
    leader_epoch: int
    new_isr: tuple[int, ...]
    partition_epoch: int
