"""``ConsumerMembership``: the consumer's side of KIP-848's group protocol
(``group.protocol=consumer``), in place of the classic ``ConsumerCoordinator``.

It is a ``ConsumerCoordinator`` for everything but membership: finding the coordinator,
offset lookups and commits (with the member id and **member epoch**, OffsetCommit v9 and
OffsetFetch v9), auto commit and the rebalance listener are shared. Membership is one API,
ConsumerGroupHeartbeat (v1, KIP-1082), and keeps these rules:

- **Member id** is chosen by the client once (a random UUID) and kept for the consumer's
  lifetime, rejoins included.
- **Heartbeats** go from the heartbeat thread (a poll hook there) every
  ``heartbeat_interval`` the broker answered, and at once when there is something to say:
  joining (epoch 0), an assignment taken or given up (the acknowledgement), a subscription
  change. Every heartbeat carries the whole state (subscribed topics or regex, rebalance
  timeout = ``max.poll.interval.ms``, ``group.remote.assignor``, rack, instance id and the
  partitions owned, by topic id): a field the broker already has is simply the same.
- **Reconciliation** runs on the application thread inside ``poll``, never on the heartbeat
  thread: the assignment the broker answered (topic ids, resolved to names from metadata)
  is compared with what the member owns. Partitions no longer assigned are paused, their
  positions committed first (``enable.auto.commit``, asynchronously so ``poll`` keeps to its
  timeout), then ``on_partitions_revoked`` runs and they are dropped; then the new ones are
  taken (``on_partitions_assigned``), and the next heartbeat, sent at once, acknowledges.
- **Fencing**: FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID (from a heartbeat or a commit) means
  the partitions are lost: the next ``poll`` calls ``on_partitions_lost`` (no commit) and
  only then rejoins with epoch 0, so the partitions are never read by two members at once.
  ``max.poll.interval.ms`` exceeded makes the heartbeat thread leave (epoch -1) the same way.
- **Fatal errors** (GROUP_AUTHORIZATION_FAILED, UNSUPPORTED_ASSIGNOR, FENCED_INSTANCE_ID,
  UNRELEASED_INSTANCE_ID, INVALID_REGULAR_EXPRESSION, GROUP_MAX_SIZE_REACHED, INVALID_REQUEST,
  UNSUPPORTED_VERSION: a broker without KIP-848) are raised by the next ``poll``.
- **Leaving** (``close``, ``unsubscribe``): revoke (auto commit first), then a heartbeat with
  epoch -1, or -2 for a static member (``group.instance.id``): its partitions wait for it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any, Final

from odradek._clock import Clock
from odradek._types import TopicPartition
from odradek.client.cluster import Metadata
from odradek.client.consumer.config import ConsumerSettings
from odradek.client.consumer.coordinator import ConsumerCoordinator
from odradek.client.consumer.fetcher import Fetcher
from odradek.client.consumer.group_requests import (
    COORDINATOR_ERRORS,
    committed_offsets,
    log_auto_commit,
)
from odradek.client.consumer.record import CommitFailedError, OffsetAndMetadata
from odradek.client.consumer.subscription import SubscriptionState
from odradek.client.network import NetworkClient, RequestFuture
from odradek.errors import ErrorCode, KafkaError, KafkaTimeoutError, error_for_code
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = ["ConsumerMembership"]

log = logging.getLogger(__name__)

_HEARTBEAT_VERSIONS: Final = VersionRange(1, 1)
_OFFSET_COMMIT: Final = VersionRange(9, 9)
_OFFSET_FETCH: Final = VersionRange(9, 9)
_JOIN_EPOCH: Final = 0
_LEAVE_EPOCH: Final = -1
_STATIC_LEAVE_EPOCH: Final = -2
_NOT_MEMBER: Final = -1
#: Errors after which this consumer cannot go on as a member.
_FATAL: Final = frozenset(
    {
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.UNSUPPORTED_ASSIGNOR,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.UNRELEASED_INSTANCE_ID,
        ErrorCode.INVALID_REGULAR_EXPRESSION,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.INVALID_GROUP_ID,
    }
)
#: Errors that end the membership: lose the partitions, rejoin with epoch 0.
_FENCED: Final = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})

Assignment = Mapping[uuid.UUID, frozenset[int]]


class _StaleEpochError(KafkaError):
    """A commit or fetch sent before the member's epoch moved: retried with the new one."""

    code = ErrorCode.STALE_MEMBER_EPOCH

    @property
    def retriable(self) -> bool:
        return True


class ConsumerMembership(ConsumerCoordinator):
    """The KIP-848 group member (see the module docstring)."""

    _commit_versions = _OFFSET_COMMIT  # v9: the member epoch, checked by the broker

    def __init__(
        self,
        settings: ConsumerSettings,
        network: NetworkClient,
        metadata: Metadata,
        subscriptions: SubscriptionState,
        fetcher: Fetcher,
        clock: Clock,
    ) -> None:
        super().__init__(settings, network, metadata, subscriptions, fetcher, clock)
        self._member_id = str(uuid.uuid4())
        self._interval_ms = settings.heartbeat_interval_ms
        self._active = False  # subscribed: heartbeats go out
        self._fenced = False  # the membership ended: the app thread loses the partitions
        self._heartbeat_now = False
        self._fatal: KafkaError | None = None
        self._target: Assignment | None = None  # the broker's last answered assignment
        self._owned_ids: dict[uuid.UUID, frozenset[int]] = {}
        self._revoke_commit: set[TopicPartition] | None = None  # in flight for these
        self._revoke_committed: set[TopicPartition] = set()
        self._regex: str | None = None
        self._had_regex = False

    @property
    def member_epoch(self) -> int:
        with self._lock:
            return self._generation

    def set_regex(self, regex: str | None) -> None:
        """A subscription by regular expression the broker matches (KIP-848's
        ``subscribed_topic_regex``, RE2/J, whole topic names), or ``None``."""
        with self._lock:
            self._regex = regex
        self.subscription_changed()

    def subscription_changed(self) -> None:
        with self._lock:
            self._heartbeat_now = True
        self._network.wakeup()
        self._fetcher.notify()

    # ------------------------------------------------------------------ app thread: poll

    def poll(self, deadline_ms: int) -> None:
        now = self._clock.monotonic_ms()
        self._last_poll_ms = now
        self._run_callbacks()
        with self._lock:
            fatal = self._fatal
        if fatal is not None:
            raise fatal
        subscriptions = self._subscriptions
        if subscriptions.pattern is not None and self._regex is None:
            self._match_pattern()
        if not subscriptions.subscribed:
            return
        with self._lock:
            self._active = True
        if self._coordinator is None:
            try:
                self._ensure_coordinator(deadline_ms)
            except KafkaTimeoutError:
                return
            except KafkaError as error:
                if not error.retriable:
                    raise
                return
            self.subscription_changed()
        self._reconcile()
        if subscriptions.awaiting_committed():
            self.refresh_committed_offsets(
                max(deadline_ms, now + self._settings.request_timeout_ms)
            )
        if self._settings.enable_auto_commit and now >= self._next_auto_commit_ms:
            self._next_auto_commit_ms = now + self._settings.auto_commit_interval_ms
            with self._lock:
                member = self._generation > 0
            offsets = {tp: OffsetAndMetadata(p) for tp, p in subscriptions.positions().items()}
            if offsets and member:
                self.commit_async(offsets, log_auto_commit)

    def _reconcile(self) -> None:
        """One step towards the broker's assignment (see the module docstring)."""
        with self._lock:
            fenced, target = self._fenced, self._target
            owned = list(self._owned)
        if fenced:
            log.info("group %s: membership lost; partitions lost: %s", self._group_id, owned)
            self._drop(owned, "on_partitions_lost")
            with self._lock:
                self._fenced = False
                self._revoke_commit = None
                self._revoke_committed = set()
            self.subscription_changed()  # rejoin at once
            return
        if target is None or self._revoke_commit is not None:
            return
        names = self._topic_names(target)
        if names is None:
            return
        new = {TopicPartition(names[tid], p) for tid, parts in target.items() for p in parts}
        revoked = [tp for tp in owned if tp not in new]
        added = sorted(tp for tp in new if tp not in owned)
        if revoked:
            uncommitted = [tp for tp in revoked if tp not in self._revoke_committed]
            if self._settings.enable_auto_commit and uncommitted and self._start_revoke(revoked):
                return
            self._drop(revoked, "on_partitions_revoked")
            self._revoke_committed = set()
        if added or revoked or self._owned_ids != dict(target):
            self._set_owned_ids(sorted(new), target)
            if added:
                log.info(
                    "group %s epoch %d: assigned %s",
                    self._group_id,
                    self._generation,
                    [str(tp) for tp in added],
                )
                self._metadata.add_topics({tp.topic for tp in added})
                self._invoke("on_partitions_assigned", added)
                self._fetcher.wakeup()
            self.subscription_changed()  # acknowledge

    def _topic_names(self, target: Assignment) -> dict[uuid.UUID, str] | None:
        """Names of the assignment's topic ids (None: some not in metadata yet, refreshing)."""
        known = {
            topic.topic_id: name
            for name, topic in self._metadata.cluster.topics.items()
            if topic.topic_id is not None
        }
        if all(tid in known for tid in target):
            return {tid: known[tid] for tid in target}
        self._metadata.request_update()
        return None

    def _start_revoke(self, revoked: list[TopicPartition]) -> bool:
        """Pauses ``revoked`` and commits their positions asynchronously; False when there
        is nothing to commit (or no epoch to commit at)."""
        with self._subscriptions.lock:
            for tp in revoked:
                state = self._subscriptions.state(tp)
                state.paused = True
                state.fetch_position = state.position  # buffered records are not returned
                state.epoch += 1
        positions = self._subscriptions.positions()
        offsets = {tp: OffsetAndMetadata(positions[tp]) for tp in revoked if tp in positions}
        with self._lock:
            member = self._generation > 0
        if not offsets or not member:
            return False
        self._revoke_commit = set(revoked)

        def done(_offsets: object, error: BaseException | None) -> None:
            if error is not None:
                log.warning(
                    "group %s: commit before revoking %s failed: %s", self._group_id, revoked, error
                )
            self._revoke_committed = set(revoked)
            self._revoke_commit = None
            self._fetcher.notify()

        self.commit_async(offsets, done)
        return True

    def _drop(self, partitions: list[TopicPartition], callback: str) -> None:
        keep = [tp for tp in self._owned if tp not in partitions]
        with self._lock:
            ids = self._owned_ids_for(keep)
        self._set_owned(keep)
        with self._lock:
            self._owned_ids = ids
        if partitions:
            self._invoke(callback, partitions)

    def _owned_ids_for(self, partitions: list[TopicPartition]) -> dict[uuid.UUID, frozenset[int]]:
        by_name = {
            name: topic.topic_id
            for name, topic in self._metadata.cluster.topics.items()
            if topic.topic_id is not None
        }
        result: dict[uuid.UUID, set[int]] = {}
        for tp in partitions:
            tid = by_name.get(tp.topic)
            if tid is not None:
                result.setdefault(tid, set()).add(tp.partition)
        return {tid: frozenset(parts) for tid, parts in result.items()}

    def _set_owned_ids(self, partitions: list[TopicPartition], target: Assignment) -> None:
        self._set_owned(partitions)
        with self._lock:
            self._owned_ids = dict(target)

    # ------------------------------------------------------------------ heartbeat thread

    def _heartbeat_fields(self, epoch: int) -> dict[str, Any]:
        subscriptions = self._subscriptions
        regex = self._regex
        if regex is not None:
            self._had_regex = True
        elif self._had_regex:
            regex = ""  # clears the broker's regex (KIP-848)
        return {
            "group_id": self._group_id,
            "member_id": self._member_id,
            "member_epoch": epoch,
            "instance_id": self._instance_id,
            "rack_id": self._settings.client_rack or None,
            "rebalance_timeout": self._settings.max_poll_interval_ms,
            "subscribed_topic_names": None if regex else sorted(subscriptions.topics),
            "subscribed_topic_regex": regex,
            "server_assignor": self._settings.group_remote_assignor,
            "topic_partitions": [
                {"topic_id": tid, "partitions": sorted(parts)}
                for tid, parts in sorted(self._owned_ids.items())
            ],
        }

    def _heartbeat(self, now_ms: int) -> int | None:
        with self._lock:
            if (
                self._closing
                or not self._active
                or self._fenced
                or self._fatal is not None
                or self._coordinator is None
            ):
                return None
            if self._joined and now_ms - self._last_poll_ms > self._settings.max_poll_interval_ms:
                log.warning(
                    "group %s: poll() not called within max.poll.interval.ms (%d ms); leaving",
                    self._group_id,
                    self._settings.max_poll_interval_ms,
                )
                fields = self._heartbeat_fields(self._leave_epoch())
                self._end_membership()
                leave = True
            elif self._heartbeat_in_flight:
                return None
            else:
                leave = False
                due = 0 if self._heartbeat_now else self._next_heartbeat_ms - now_ms
                if due > 0:
                    return due
                epoch = self._generation if self._joined else _JOIN_EPOCH
                fields = self._heartbeat_fields(epoch)
                self._heartbeat_in_flight = True
                self._heartbeat_now = False
                self._next_heartbeat_ms = now_ms + self._interval_ms
        node = self._coordinator
        future = self._network.send(
            node, ApiKey.CONSUMER_GROUP_HEARTBEAT, fields, versions=_HEARTBEAT_VERSIONS
        )
        if leave:
            self._fetcher.notify()
            return None
        future.add_done_callback(self._on_heartbeat)  # type: ignore[arg-type]
        return self._interval_ms

    def _leave_epoch(self) -> int:
        return _STATIC_LEAVE_EPOCH if self._instance_id is not None else _LEAVE_EPOCH

    def _end_membership(self) -> None:
        """Not a member any more (under the lock): the app thread loses the partitions."""
        self._generation = _NOT_MEMBER
        self._joined = False
        self._target = None
        self._fenced = True
        self._heartbeat_in_flight = False

    def _on_heartbeat(self, future: RequestFuture) -> None:
        error = future.exception()
        body: dict[str, Any] = {}
        code: int
        if error is not None:
            code = (
                error.error_code if isinstance(error, KafkaError) else ErrorCode.NETWORK_EXCEPTION
            )
        else:
            body = future.result()
            code = int(body["error_code"])
        with self._lock:
            self._heartbeat_in_flight = False
            if not self._active or self._fenced:
                return  # left meanwhile
            if code == ErrorCode.NONE:
                self._on_member_state(body)
                changed = body.get("assignment") is not None
            else:
                changed = True
                self._on_heartbeat_error(code, body.get("error_message"))
        if changed:
            self._fetcher.notify()

    def _on_member_state(self, body: Mapping[str, Any]) -> None:
        epoch = int(body["member_epoch"])
        if not self._joined:
            log.info("group %s: joined as %s at epoch %d", self._group_id, self._member_id, epoch)
        if body.get("member_id"):
            self._member_id = str(body["member_id"])
        self._generation = epoch
        self._joined = True
        interval = int(body.get("heartbeat_interval", 0))
        if interval > 0 and interval != self._interval_ms:
            self._next_heartbeat_ms += interval - self._interval_ms
            self._interval_ms = interval
        assignment = body.get("assignment")
        if assignment is not None:
            self._target = {
                entry["topic_id"]: frozenset(int(p) for p in entry["partitions"])
                for entry in assignment.get("topic_partitions") or ()
                if entry.get("topic_id") is not None
            }

    def _on_heartbeat_error(self, code: int, message: str | None) -> None:
        name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
        log.info("group %s: heartbeat answered %s (%s)", self._group_id, name, message or "")
        if code in _FENCED:
            self._end_membership()
        elif code in _FATAL:
            what = f"group {self._group_id!r}: ConsumerGroupHeartbeat failed"
            if code == ErrorCode.UNSUPPORTED_VERSION:
                what += " (the broker has no KIP-848 consumer groups: use group.protocol=classic)"
            elif message:
                what += f": {message}"
            self._fatal = error_for_code(code, what)
        elif code in COORDINATOR_ERRORS:
            self._coordinator = None
            self._heartbeat_now = True
        else:  # retriable (COORDINATOR_LOAD_IN_PROGRESS, ...): after the backoff
            self._next_heartbeat_ms = self._clock.monotonic_ms() + self._settings.retry_backoff_ms
            self._heartbeat_now = False

    # ------------------------------------------------------------------ offsets

    def _reset_generation(self) -> None:
        with self._lock:
            if self._active:
                self._end_membership()

    def _commit_fields(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> dict[str, Any]:
        fields = super()._commit_fields(offsets)
        with self._lock:
            fields["generation_id_or_member_epoch"] = self._generation if self._joined else -1
            fields["member_id"] = self._member_id if self._joined else ""
        return fields

    def _commit_error(self, body: Mapping[str, Any]) -> KafkaError | None:
        for topic in body.get("topics") or ():
            for entry in topic.get("partitions") or ():
                if int(entry["error_code"]) == ErrorCode.STALE_MEMBER_EPOCH:
                    return _StaleEpochError("commit at a stale member epoch")
        error = super()._commit_error(body)
        if error is not None and error.error_code in _FENCED:
            return CommitFailedError(
                f"group {self._group_id!r}: the member was fenced ({error}); poll() rejoins",
                code=error.error_code,
            )
        return error

    def fetch_committed(
        self, partitions: list[TopicPartition], timeout_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """OffsetFetch v9 with the member id and epoch, retried until the timeout."""
        deadline = self._clock.monotonic_ms() + timeout_ms
        topics: dict[str, list[int]] = {}
        for tp in partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        while True:
            with self._lock:
                member_id = self._member_id if self._joined else None
                epoch = self._generation if self._joined else -1
            fields = {
                "groups": [
                    {
                        "group_id": self._group_id,
                        "member_id": member_id,
                        "member_epoch": epoch,
                        "topics": [{"name": t, "partition_indexes": p} for t, p in topics.items()],
                    }
                ],
                "require_stable": True,
            }
            try:
                body = self._send(ApiKey.OFFSET_FETCH, fields, _OFFSET_FETCH, deadline)
                [group] = body["groups"]
                code = int(group.get("error_code", 0))
            except KafkaError as error:
                if not error.retriable or isinstance(error, KafkaTimeoutError):
                    raise
                code = error.error_code
            if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                self._coordinator_lost()
            if code == ErrorCode.STALE_MEMBER_EPOCH or (code and ErrorCode(code).retriable):
                self._backoff(deadline)
                continue
            if code:
                raise error_for_code(code, f"OffsetFetch of group {self._group_id!r}")
            return committed_offsets(partitions, group)

    # ------------------------------------------------------------------ leaving

    def _leave(self, deadline_ms: int) -> None:
        with self._lock:
            owned, fenced = list(self._owned), self._fenced
            joined = self._joined
            self._active = False
            fields = self._heartbeat_fields(self._leave_epoch())
        self._drop(owned, "on_partitions_lost" if fenced or not joined else "on_partitions_revoked")
        if joined and self._coordinator is not None:
            try:
                self._send(
                    ApiKey.CONSUMER_GROUP_HEARTBEAT, fields, _HEARTBEAT_VERSIONS, deadline_ms
                )
            except KafkaError as error:
                log.info("group %s: leaving heartbeat failed: %s", self._group_id, error)
        with self._lock:
            self._generation = _NOT_MEMBER
            self._joined = False
            self._fenced = False
            self._target = None
            self._owned_ids = {}
            self._revoke_commit = None
            self._revoke_committed = set()
