"""The state one group coordinator shard holds, and the helpers its operations share.

Owns the groups of one ``__consumer_offsets`` partition, the deadline queue, the ticket
counter of pending requests, and the rules for turning an event's ``Effects`` into an
``Outcome``. ``membership.GroupMembership`` (the group protocol) and
``coordinator.GroupCoordinator`` (offsets, administration, loading, time) build on it.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from typing import NamedTuple, cast

from odradek.broker.group.config import GroupConfig
from odradek.broker.group.consumer_group import ConsumerGroup
from odradek.broker.group.deadlines import DeadlineQueue
from odradek.broker.group.group import ClassicGroup, Member
from odradek.broker.group.rebalance import Effects
from odradek.broker.group.results import Outcome, Pending, R
from odradek.broker.group.state import GroupState
from odradek.broker.group.topic_regex import TopicRegexMatcher
from odradek.errors import ErrorCode


class Timer(NamedTuple):
    """A queued deadline: a member's session, a group's join or sync phase, or the expiry."""

    kind: str  # "session" | "join" | "sync" | "expire" | "consumer-session" | "consumer-revoke"
    group_id: str = ""
    member_id: str = ""


#: The one timer of the periodic offsets expiry.
EXPIRE = Timer("expire")


def _random_uuid() -> str:
    return str(uuid.uuid4())


class CoordinatorShard:
    """The groups of one ``__consumer_offsets`` partition and the timers that drive them.

    Args:
        config: the ``group.*`` / ``offsets.*`` settings.
        new_uuid: where generated member ids get their unique suffix (tests pass a
            deterministic one).
    """

    def __init__(
        self, config: GroupConfig | None = None, *, new_uuid: Callable[[], str] = _random_uuid
    ) -> None:
        self._config = config or GroupConfig()
        self._new_uuid = new_uuid
        self._groups: dict[str, ClassicGroup] = {}
        #: KIP-848 consumer groups; a group id is in at most one of the two maps.
        self._consumer_groups: dict[str, ConsumerGroup] = {}
        self._timers: DeadlineQueue[Timer] = DeadlineQueue()
        self._tickets = itertools.count(1)
        #: The topics each KIP-848 subscription pattern matches, cached per topic set.
        self._regex_matcher = TopicRegexMatcher()

    @property
    def config(self) -> GroupConfig:
        return self._config

    def _check_member(
        self, group: ClassicGroup, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def _schedule_expiry(self, now_ms: int) -> None:
        """Makes sure the periodic offsets expiry is queued."""
        self._timers.schedule(EXPIRE, now_ms + self._config.offsets_retention_check_interval_ms)

    def _schedule_session(self, group: ClassicGroup, member: Member) -> None:
        self._timers.schedule(
            Timer("session", group.group_id, member.member_id), member.session_deadline_ms
        )

    def _schedule_group(self, group: ClassicGroup) -> None:
        """Queues the group's join and sync deadlines, and unqueues those that no longer
        apply (so ``next_deadline_ms`` is not a needless wake-up)."""
        join = Timer("join", group.group_id)
        if group.join_deadline_ms is None:
            self._timers.cancel(join)
        else:
            self._timers.schedule(join, group.join_deadline_ms)
        sync = Timer("sync", group.group_id)
        if not group.pending_sync:
            group.sync_deadline_ms = None  # everyone synced: nothing to wait for
        if group.sync_deadline_ms is None:
            self._timers.cancel(sync)
        else:
            self._timers.schedule(sync, group.sync_deadline_ms)

    def _outcome(
        self, effects: Effects, response: R | None, ticket: int | None, group: ClassicGroup | None
    ) -> Outcome[R]:
        """The outcome of a request: its own answer if it has one (or if this very event
        released it), else ``Pending(ticket)``."""
        if group is not None:
            self._schedule_group(group)
        result: R | Pending
        if response is not None:
            result = response
        else:
            assert ticket is not None
            taken = effects.take(ticket)
            result = Pending(ticket) if taken is None else cast(R, taken)
        return Outcome(tuple(effects.records), result, tuple(effects.completions))
