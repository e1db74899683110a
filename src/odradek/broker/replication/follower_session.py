"""``FollowerFetchSession``: a replica fetcher's incremental fetch session (KIP-227) with its
leader — Kafka's ``FetchSessionHandler``, for one fetcher.

The fetcher says which partitions it wants fetched now (``plan``); this decides what the
request carries:

- no session: a full fetch (epoch 0) naming them all, asking the leader for a session (and
  closing the previous one, if any, by naming its id);
- a session: an incremental fetch at the next epoch naming only the partitions that are new
  or whose fetch offset, leader epoch or max bytes changed since the leader last heard them,
  and forgetting the ones no longer wanted (removed, delayed, truncating).

``answered`` then reads the response's top-level error and session id: a full fetch whose
answer names a session starts it at epoch 1; an incremental one advances the epoch; any error
(FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, …) or an answer that does not
match drops the session, so the next fetch is full. ``failed`` (no answer: the connection
was lost) drops it too — whether the leader took the request is unknown.

Sans-I/O, values only; the fetcher's task only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from odradek.broker.fetch_session import INITIAL_EPOCH, next_epoch
from odradek.protocol.replica_fetch import ReplicaFetchPartition

__all__ = ["FetchPlan", "FollowerFetchSession"]


@dataclass(frozen=True, slots=True)
class FetchPlan:
    """One request's session fields and what it names."""

    session_id: int
    session_epoch: int
    partitions: Sequence[ReplicaFetchPartition]
    forgotten: Sequence[tuple[str, Sequence[int]]]
    #: Every partition wanted (what the leader's session holds once this is answered).
    wanted: frozenset[ReplicaFetchPartition]

    @property
    def full(self) -> bool:
        return self.session_epoch == INITIAL_EPOCH


class FollowerFetchSession:
    """See the module docstring."""

    def __init__(self) -> None:
        self.session_id = 0
        #: The epoch of the next incremental fetch (0: the next fetch is full).
        self.epoch = INITIAL_EPOCH
        #: What the leader's session holds for each partition.
        #: What the leader's session holds (the partitions as last named: fetch offset,
        #: leader epoch and max bytes included, so an unchanged one is found by equality).
        self._leader_has: frozenset[ReplicaFetchPartition] = frozenset()
        #: A session to close with the next full fetch.
        self._stale_id = 0
        self.full_fetches = 0
        self.incremental_fetches = 0
        self.resets = 0

    def statistics(self) -> dict[str, int]:
        return {
            "session_id": self.session_id,
            "full_fetches": self.full_fetches,
            "incremental_fetches": self.incremental_fetches,
            "session_resets": self.resets,
        }

    def plan(self, partitions: Sequence[ReplicaFetchPartition]) -> FetchPlan:
        # Once per fetch over every partition followed from this leader: set operations on
        # the NamedTuples (hashed in C), no per-partition key objects.
        wanted = frozenset(partitions)
        if self.session_id == 0:
            self.full_fetches += 1
            return FetchPlan(self._stale_id, INITIAL_EPOCH, partitions, (), wanted)
        leader_has = self._leader_has
        changed = [p for p in partitions if p not in leader_has]
        forgotten: dict[str, list[int]] = {}
        stale = leader_has - wanted  # forgotten, or named again with new values
        if stale:
            renamed = {(p.topic, p.partition) for p in changed}
            for p in stale:
                if (p.topic, p.partition) not in renamed:
                    forgotten.setdefault(p.topic, []).append(p.partition)
        self.incremental_fetches += 1
        return FetchPlan(self.session_id, self.epoch, changed, list(forgotten.items()), wanted)

    def answered(self, plan: FetchPlan, error_code: int, session_id: int) -> None:
        """The leader answered ``plan`` with this top-level error and session id."""
        if error_code != 0:
            self._reset()
        elif plan.full:
            self._stale_id = 0
            if session_id == 0:
                self._reset()  # no session to be had: the next fetch is full again
            else:
                self.session_id = session_id
                self.epoch = next_epoch(INITIAL_EPOCH)
                self._leader_has = plan.wanted
        elif session_id != self.session_id or plan.session_id != self.session_id:
            self._reset()
        else:
            self.epoch = next_epoch(plan.session_epoch)
            self._leader_has = plan.wanted

    def failed(self) -> None:
        """No answer came: start over with a full fetch."""
        self._reset()

    def _reset(self) -> None:
        if self.session_id != 0:
            self.resets += 1
            self._stale_id = self.session_id
        self.session_id = 0
        self.epoch = INITIAL_EPOCH
        self._leader_has = frozenset()
