"""Why a group rebalanced: the last rebalances of each group, with their cause.

Kafka logs a rebalance's reason on the coordinator and forgets it; an operator asking "why did
my group rebalance at 03:12?" has to grep broker logs. Each ``ClassicGroup`` keeps a
``RebalanceHistory`` instead: every ``rebalance.prepare_rebalance`` records a
``RebalanceCause`` (what happened, to which member, and for a session timeout that member's
last heartbeat) and the join phase that ends it records the generation it produced.

A KIP-848 ``ConsumerGroup`` keeps one too: there a rebalance is a bump of the group epoch
(a member joined, left, was fenced at its session or revocation timeout, changed its
subscription, or the subscribed topics' metadata changed — partitions added, a topic created or
deleted), and it completes when the target assignment of the new epoch is computed, in the
same step; ``generation_id`` is then the new group epoch.

Soft state, like sessions: it is not written to ``__consumer_offsets`` and starts empty when a
coordinator loads the group (so a coordinator move forgets it). Pure: ``now_ms`` in, no clock.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, replace

#: How many rebalances a group remembers.
MAX_REBALANCES = 20


class CauseKind(enum.StrEnum):
    """What started a rebalance."""

    MEMBER_JOINED = "member_joined"
    #: A known member sent JoinGroup again with the same subscription (a leader that saw
    #: partitions added or topics created under its pattern does this, saying why in v8+).
    MEMBER_REJOINED = "member_rejoined"
    #: A known member rejoined with different protocol metadata (its subscription changed).
    SUBSCRIPTION_CHANGED = "subscription_changed"
    STATIC_MEMBER_RESTARTED = "static_member_restarted"
    MEMBER_LEFT = "member_left"
    SESSION_TIMEOUT = "session_timeout"
    SYNC_TIMEOUT = "sync_timeout"
    #: A KIP-848 member did not revoke its partitions within its rebalance timeout: fenced.
    REVOCATION_TIMEOUT = "revocation_timeout"
    #: The subscribed topics changed under the group: partitions added, a topic created or
    #: deleted (``detail`` names them).
    METADATA_CHANGED = "metadata_changed"


@dataclass(frozen=True, slots=True)
class RebalanceCause:
    """Why a rebalance started. ``member_id`` is the member concerned (empty when several);
    ``last_heartbeat_ms`` is set for a session timeout; ``client_reason`` is the reason the
    client gave in JoinGroup / LeaveGroup (v8+/v5+), when it gave one; ``detail`` says more
    where the coordinator knows more (which topics' metadata changed)."""

    kind: CauseKind
    member_id: str = ""
    last_heartbeat_ms: int | None = None
    client_reason: str | None = None
    detail: str | None = None

    def __str__(self) -> str:
        text = {
            CauseKind.MEMBER_JOINED: "member {} joined",
            CauseKind.MEMBER_REJOINED: "member {} rejoined",
            CauseKind.SUBSCRIPTION_CHANGED: "member {} rejoined with a changed subscription",
            CauseKind.STATIC_MEMBER_RESTARTED: "static member {} restarted",
            CauseKind.MEMBER_LEFT: "member {} left",
            CauseKind.SESSION_TIMEOUT: "member {} session expired",
            CauseKind.SYNC_TIMEOUT: "members did not sync in time{}",
            CauseKind.REVOCATION_TIMEOUT: "member {} did not revoke its partitions in time",
            CauseKind.METADATA_CHANGED: "the subscribed topics changed{}",
        }[self.kind].format(self.member_id)
        if self.detail:
            text += f" ({self.detail})"
        if self.last_heartbeat_ms is not None:
            text += f" (last heartbeat at {self.last_heartbeat_ms} ms)"
        if self.client_reason:
            text += f": {self.client_reason}"
        return text


@dataclass(frozen=True, slots=True)
class RebalanceRecord:
    """One rebalance: started at ``started_ms`` from generation ``from_generation`` because of
    ``cause``; ``completed_ms`` / ``generation_id`` / ``members`` are set once its join phase
    ended (None while it runs, or if another cause restarted nothing and it never ended)."""

    started_ms: int
    from_generation: int
    cause: RebalanceCause
    completed_ms: int | None = None
    generation_id: int | None = None
    members: int | None = None

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (the broker's ``/groups/<group>/rebalances`` endpoint)."""
        return {
            "started_ms": self.started_ms,
            "from_generation": self.from_generation,
            "cause": self.cause.kind.value,
            "member_id": self.cause.member_id or None,
            "last_heartbeat_ms": self.cause.last_heartbeat_ms,
            "client_reason": self.cause.client_reason,
            "detail": self.cause.detail,
            "description": str(self.cause),
            "completed_ms": self.completed_ms,
            "generation_id": self.generation_id,
            "members": self.members,
        }


class RebalanceHistory:
    """The last ``MAX_REBALANCES`` rebalances of one group, oldest first, and how many it had
    since it was loaded (``total``)."""

    __slots__ = ("_records", "total")

    def __init__(self, size: int = MAX_REBALANCES) -> None:
        self._records: deque[RebalanceRecord] = deque(maxlen=size)
        self.total = 0

    def started(self, now_ms: int, generation_id: int, cause: RebalanceCause) -> None:
        """A join phase started (``prepare_rebalance``)."""
        self.total += 1
        self._records.append(RebalanceRecord(now_ms, generation_id, cause))

    def completed(self, now_ms: int, generation_id: int, members: int) -> None:
        """The running join phase ended with ``generation_id`` (``complete_join``)."""
        if self._records and self._records[-1].completed_ms is None:
            last = self._records.pop()
            self._records.append(
                replace(last, completed_ms=now_ms, generation_id=generation_id, members=members)
            )

    def records(self) -> tuple[RebalanceRecord, ...]:
        return tuple(self._records)
