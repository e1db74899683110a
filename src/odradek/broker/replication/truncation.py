"""Where a follower truncates its log before fetching from a (new) leader (KIP-101, KIP-279):
a pure decision over the leader's OffsetForLeaderEpoch answer and the follower's own
leader-epoch cache.

The follower asks the leader where the follower's latest epoch ends in the leader's log. The
leader answers with the largest epoch it has at or below the one asked and that epoch's end
offset. Then (Kafka's ``AbstractFetcherThread`` rules):

- the leader has that very epoch too, or answers the one asked: the logs agree below
  min(leader's end offset, the follower's end of that epoch), so truncate to that (and never
  past the follower's log end offset) — done;
- the leader answers an older epoch the follower does not have: truncate to where the
  follower's largest epoch at or below it ends, and ask again about that epoch of the
  follower's (KIP-279: logs that diverged over several leader changes converge in a few
  rounds; each round asks about a strictly older epoch, so the rounds end);
- the leader knows no such epoch (-1, -1: the follower's epoch is newer than any the leader
  wrote, or the leader keeps no epochs): nothing safer is known, so truncate to the high
  watermark as Kafka does — the only case where the high watermark decides;
- the follower has no epochs at all: an empty log needs nothing; otherwise the high
  watermark, as above.

Every function is pure: values in, a ``Truncation`` out.
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.storage.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

__all__ = ["Truncation", "decide_truncation", "truncation_without_epochs"]


@dataclass(frozen=True, slots=True)
class Truncation:
    """Truncate the log to ``offset`` (a no-op at or past its end); ``done`` False: then ask
    the leader again about ``next_epoch``."""

    offset: int
    done: bool
    next_epoch: int = UNDEFINED_EPOCH


def truncation_without_epochs(log_end_offset: int, high_watermark: int) -> Truncation:
    """The follower's log holds no leader epochs: nothing to ask the leader."""
    return Truncation(min(high_watermark, log_end_offset), True)


def decide_truncation(
    *,
    leader_epoch: int,
    leader_end_offset: int,
    follower_end: tuple[int, int],
    log_end_offset: int,
    high_watermark: int,
) -> Truncation:
    """The decision for one OffsetForLeaderEpoch answer.

    Args:
        leader_epoch, leader_end_offset: the leader's answer.
        follower_end: the follower's own ``(epoch, end offset)`` for ``leader_epoch``
            (``Log.end_offset_for_epoch``; -1, -1 when unknown).
        log_end_offset, high_watermark: the follower's.
    """
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        return Truncation(min(high_watermark, log_end_offset), True)
    if leader_epoch == UNDEFINED_EPOCH:
        return Truncation(min(leader_end_offset, log_end_offset), True)
    follower_epoch, follower_end_offset = follower_end
    if follower_end_offset == UNDEFINED_EPOCH_OFFSET:
        # The follower kept no epoch at or below the leader's: the leader answered an epoch
        # older than the one asked, so its end offset is safe (Kafka's fallback).
        return Truncation(min(leader_end_offset, log_end_offset), True)
    if follower_epoch != leader_epoch:
        return Truncation(min(follower_end_offset, log_end_offset), False, follower_epoch)
    return Truncation(min(follower_end_offset, leader_end_offset, log_end_offset), True)
