"""``ConsumerCoordinator``: the consumer's side of the classic group protocol.

It owns the member's group state (coordinator node, member id, generation, owned partitions)
and keeps these rules:

- **Threads.** The coordinator's ``NetworkClient`` belongs to the heartbeat thread (a
  ``NetworkThread``); the heartbeat is a poll hook there. Joining, syncing, offset lookups and
  commits are driven from the application thread (inside ``Consumer.poll``, ``commit_*``,
  ``close``), which sends through that thread and waits on futures. Rebalance listener
  callbacks and commit callbacks run on the application thread only.
- **Joining** (Kafka's ``ConsumerCoordinator``): FindCoordinator, then JoinGroup with one
  protocol per configured assignor (``partition.assignment.strategy`` order) carrying the
  consumer protocol subscription (topics, owned partitions, generation, rack); the leader runs
  the agreed assignor on every member's subscription with partition counts from metadata;
  SyncGroup hands out the assignment. MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID,
  REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION and coordinator moves are retried. A join keeps to
  the timeout of the ``poll`` that runs it: a request in flight then is waited for by the next.
- **Rebalance protocol.** Cooperative (KIP-429) when every configured assignor supports it
  (``cooperative-sticky`` alone), otherwise eager. Eager: before joining, commit (auto commit)
  and revoke everything (``on_partitions_revoked``), then ``on_partitions_assigned`` with the
  new assignment. Cooperative: keep everything while joining; afterwards revoke only the
  partitions the new assignment leaves out, then call ``on_partitions_assigned`` with the
  added ones, and rejoin at once if anything was revoked so its new owner gets it.
- **Lost partitions.** When the generation is gone (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or
  FENCED_INSTANCE_ID from a heartbeat, or ``max.poll.interval.ms`` exceeded, which makes the
  heartbeat thread send LeaveGroup as Kafka does), the next join calls ``on_partitions_lost``
  (default: ``on_partitions_revoked``) and does not commit.
- **Heartbeats** every ``heartbeat.interval.ms`` while stable; REBALANCE_IN_PROGRESS asks the
  application thread to rejoin (and wakes a blocked ``poll``).
- **Positions** of new partitions come from OffsetFetch, else ``auto.offset.reset``.
- **Commits**: OffsetCommit with the member id and generation (the committed offset is the
  next one to read). REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID raise
  ``CommitFailedError``; coordinator errors are retried until the deadline. Auto commit
  (``enable.auto.commit``) commits positions asynchronously every ``auto.commit.interval.ms``
  from ``poll``, synchronously before an eager revocation and on ``close``.
- **Static membership** (KIP-345): ``group.instance.id`` goes in JoinGroup and SyncGroup; no
  LeaveGroup on ``close`` (its partitions wait for it until ``session.timeout.ms``).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from functools import partial
from typing import Any, Final

from odradek._clock import Clock
from odradek._types import TopicPartition
from odradek.client.assignors import (
    CONSUMER_PROTOCOL_TYPE,
    Assignor,
    RebalanceProtocol,
    decode_assignment,
    resolve_all,
    supported_protocols,
)
from odradek.client.cluster import Metadata
from odradek.client.consumer.config import ConsumerSettings
from odradek.client.consumer.fetcher import Fetcher
from odradek.client.consumer.group_requests import (
    COORDINATOR_ERRORS,
    GENERATION_GONE,
    RETRY_JOIN,
    committed_offsets,
    join_protocols,
    log_auto_commit,
    offset_commit_fields,
    sync_group_fields,
)
from odradek.client.consumer.leader import leader_assignments
from odradek.client.consumer.network_thread import NetworkThread
from odradek.client.consumer.record import CommitFailedError, OffsetAndMetadata
from odradek.client.consumer.subscription import SubscriptionState
from odradek.client.network import NetworkClient, RequestFuture
from odradek.errors import ErrorCode, KafkaError, KafkaTimeoutError, error_for_code
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = ["ConsumerCoordinator", "RebalanceListener"]

log = logging.getLogger(__name__)

#: Any object with some of ``on_partitions_revoked/assigned/lost(partitions)``.
RebalanceListener = Any
CommitCallback = Callable[[Mapping[TopicPartition, OffsetAndMetadata], BaseException | None], None]

_FIND_COORDINATOR: Final = VersionRange(0, 3)
_JOIN_GROUP: Final = VersionRange(1, 5)
_SYNC_GROUP: Final = VersionRange(0, 4)
_HEARTBEAT: Final = VersionRange(0, 4)
_LEAVE_GROUP: Final = VersionRange(0, 2)
_OFFSET_COMMIT: Final = VersionRange(2, 7)
_OFFSET_FETCH: Final = VersionRange(1, 7)
_NO_GENERATION: Final = -1
#: How long a leader waits for metadata of subscribed topics it does not know yet (its
#: assignment needs their partition counts, whatever the poll's timeout).
_LEADER_METADATA_WAIT_MS: Final = 10_000


class _JoinInFlight(Exception):  # noqa: N818 (a signal, not an error)
    """The poll's time ran out with the join's JoinGroup or SyncGroup unanswered."""


class ConsumerCoordinator:
    """The group member (see the module docstring)."""

    _commit_versions: VersionRange = _OFFSET_COMMIT  # KIP-848's member: v9+

    def __init__(
        self,
        settings: ConsumerSettings,
        network: NetworkClient,
        metadata: Metadata,
        subscriptions: SubscriptionState,
        fetcher: Fetcher,
        clock: Clock,
    ) -> None:
        assert settings.group_id is not None
        self._settings = settings
        self._group_id: str = settings.group_id
        self._instance_id = settings.group_instance_id
        self._metadata = metadata
        self._subscriptions = subscriptions
        self._fetcher = fetcher
        self._clock = clock
        self._assignors: list[Assignor] = resolve_all(settings.assignment_strategy)
        self._protocol = (
            RebalanceProtocol.COOPERATIVE
            if all(RebalanceProtocol.COOPERATIVE in supported_protocols(a) for a in self._assignors)
            else RebalanceProtocol.EAGER
        )
        self._thread = NetworkThread(network, "odradek-consumer-heartbeat")
        self._network = network
        network.add_poll_hook(self._heartbeat)
        self._lock = threading.Lock()
        self._coordinator: int | None = None
        self._member_id = ""
        self._generation = _NO_GENERATION
        self._protocol_name: str | None = None
        self._joined = False
        self._rejoin_needed = True
        self._lost = False
        self._owned: list[TopicPartition] = []
        self._listener: RebalanceListener = None
        now = clock.monotonic_ms()
        self._last_poll_ms = now
        self._next_heartbeat_ms = now
        self._heartbeat_in_flight = False
        self._next_auto_commit_ms = now + settings.auto_commit_interval_ms
        self._callbacks: deque[tuple[Callable[[], None]]] = deque()
        self._closing = False
        #: The join's request in flight between two polls: ("join" | "sync", its future).
        self._pending_join: tuple[str, Future[dict[str, Any]]] | None = None
        self._join_prepared = False
        self._sync_fields: dict[str, Any] = {}

    def start(self) -> None:
        self._thread.start()

    @property
    def protocol(self) -> RebalanceProtocol:
        return self._protocol

    @property
    def generation(self) -> tuple[int, str]:
        """``(generation_id, member_id)``."""
        with self._lock:
            return self._generation, self._member_id

    def set_listener(self, listener: RebalanceListener) -> None:
        self._listener = listener

    def subscription_changed(self) -> None:
        with self._lock:
            self._rejoin_needed = True
        self._fetcher.notify()

    # ------------------------------------------------------------------ app thread: poll

    def poll(self, deadline_ms: int) -> None:
        """One round of group work before ``Consumer.poll`` drains records."""
        now = self._clock.monotonic_ms()
        self._last_poll_ms = now
        self._run_callbacks()
        subscriptions = self._subscriptions
        if subscriptions.pattern is not None:
            self._match_pattern()
        if subscriptions.subscribed:
            with self._lock:
                need = self._rejoin_needed or not self._joined
            if need:
                # poll(timeout) keeps to its timeout: the next poll resumes the join
                try:
                    self._join(deadline_ms)
                except (_JoinInFlight, KafkaTimeoutError):
                    return
        if subscriptions.awaiting_committed():
            self.refresh_committed_offsets(
                max(deadline_ms, now + self._settings.request_timeout_ms)
            )
        if self._settings.enable_auto_commit and now >= self._next_auto_commit_ms:
            self._next_auto_commit_ms = now + self._settings.auto_commit_interval_ms
            offsets = {tp: OffsetAndMetadata(p) for tp, p in subscriptions.positions().items()}
            if offsets:
                self.commit_async(offsets, log_auto_commit)

    # ------------------------------------------------------------------ requests

    def _wait(self, future: Future[dict[str, Any]], deadline_ms: int) -> dict[str, Any]:
        remaining = max(0, deadline_ms - self._clock.monotonic_ms())
        try:
            return future.result(remaining / 1000.0)
        except FutureTimeoutError:
            raise KafkaTimeoutError("no answer from the group coordinator in time") from None

    def _ensure_coordinator(self, deadline_ms: int) -> int:
        while True:
            node = self._coordinator
            if node is not None:
                return node
            future = self._thread.request(
                self._network.least_loaded_node,
                ApiKey.FIND_COORDINATOR,
                {"key": self._group_id, "key_type": 0, "coordinator_keys": [self._group_id]},
                _FIND_COORDINATOR,
            )
            try:
                body = self._wait(future, deadline_ms)
                code = int(body.get("error_code", 0))
            except KafkaError as error:
                if isinstance(error, KafkaTimeoutError):
                    raise
                code = error.error_code
                body = {}
            if code == ErrorCode.NONE:
                node_id, address = int(body["node_id"]), (str(body["host"]), int(body["port"]))
                self._thread.call(partial(self._network.update_nodes, {node_id: address})).result()
                self._coordinator = node_id
                log.info("group %s: coordinator is broker %d", self._group_id, node_id)
                return node_id
            if not ErrorCode(code).retriable:
                raise error_for_code(code, f"FindCoordinator for group {self._group_id!r}")
            self._backoff(deadline_ms)

    def _backoff(self, deadline_ms: int) -> None:
        remaining = deadline_ms - self._clock.monotonic_ms()
        if remaining <= 0:
            raise KafkaTimeoutError(f"group {self._group_id!r}: out of time")
        # A bounded pause between retries, cut short by close().
        threading.Event().wait(min(remaining, self._settings.retry_backoff_ms) / 1000.0)

    def _send(
        self,
        api_key: int,
        fields: Any,
        versions: VersionRange,
        deadline_ms: int,
        timeout_ms: int | None = None,
    ) -> dict[str, Any]:
        """Sends to the coordinator and waits; a lost coordinator is forgotten (and the
        error, a retriable KafkaError, raised)."""
        node = self._ensure_coordinator(deadline_ms)
        future = self._thread.request(node, api_key, fields, versions, timeout_ms)
        try:
            return self._wait(future, deadline_ms)
        except KafkaError as error:
            if error.error_code in COORDINATOR_ERRORS:
                self._coordinator_lost()
            raise

    def _coordinator_lost(self) -> None:
        if self._coordinator is not None:
            log.info("group %s: coordinator %s lost", self._group_id, self._coordinator)
        self._coordinator = None

    # ------------------------------------------------------------------ joining

    def _send_or_resume(
        self,
        stage: str,
        api_key: int,
        fields: Any,
        versions: VersionRange,
        deadline_ms: int,
        timeout_ms: int | None = None,
    ) -> dict[str, Any]:
        """``_send`` for the join's requests: one unanswered at ``deadline_ms`` stays in flight
        (``_JoinInFlight``) and the next call for the same stage waits for it."""
        pending = self._pending_join
        if pending is not None and pending[0] == stage:
            future = pending[1]
        else:
            node = self._ensure_coordinator(deadline_ms)
            future = self._thread.request(node, api_key, fields, versions, timeout_ms)
            self._pending_join = (stage, future)
        remaining = max(0, deadline_ms - self._clock.monotonic_ms())
        try:
            result = future.result(remaining / 1000.0)
        except FutureTimeoutError:
            raise _JoinInFlight from None
        except KafkaError as error:
            self._pending_join = None
            if error.error_code in COORDINATOR_ERRORS:
                self._coordinator_lost()
            raise
        self._pending_join = None
        return result

    def _join(self, deadline_ms: int) -> None:
        """Joins the group as far as ``deadline_ms`` allows (see ``_send_or_resume``)."""
        if not self._join_prepared:
            self._on_join_prepare(deadline_ms)
            self._join_prepared = True
        while True:
            pending = self._pending_join
            if pending is None or pending[0] == "join":
                with self._lock:  # a change from now on needs another join
                    self._joined = False
                    self._rejoin_needed = self._rejoin_needed and pending is not None
                try:
                    response = self._send_or_resume(
                        "join",
                        ApiKey.JOIN_GROUP,
                        self._join_fields,
                        _JOIN_GROUP,
                        deadline_ms,
                        timeout_ms=self._settings.max_poll_interval_ms + 5_000,
                    )
                except KafkaError as error:
                    if not error.retriable or isinstance(error, KafkaTimeoutError):
                        raise
                    self._backoff(deadline_ms)
                    continue
                code = int(response["error_code"])
                if code == ErrorCode.MEMBER_ID_REQUIRED:
                    with self._lock:
                        self._member_id = str(response["member_id"])
                    continue
                if code in GENERATION_GONE and code != ErrorCode.FENCED_INSTANCE_ID:
                    self._reset_generation()
                    continue
                if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                    self._coordinator_lost()
                    self._backoff(deadline_ms)
                    continue
                if code in RETRY_JOIN:
                    self._backoff(deadline_ms)
                    continue
                if code:
                    raise error_for_code(code, f"JoinGroup of group {self._group_id!r}")
                with self._lock:
                    self._member_id = str(response["member_id"])
                    self._generation = int(response["generation_id"])
                    self._protocol_name = str(response["protocol_name"])
                leader = str(response["leader"]) == self._member_id
                assignments: list[dict[str, Any]] = []
                if leader:
                    assignments = leader_assignments(
                        self._assignors,
                        self._protocol_name,
                        response["members"],
                        self._metadata,
                        _LEADER_METADATA_WAIT_MS,
                        f"group {self._group_id!r} generation {self._generation}",
                    )
                self._sync_fields = sync_group_fields(
                    self._group_id, self._generation, self._member_id, self._instance_id,
                    self._protocol_name, assignments,
                )  # fmt: skip
            try:
                sync = self._send_or_resume(
                    "sync", ApiKey.SYNC_GROUP, self._sync_fields, _SYNC_GROUP, deadline_ms
                )
            except KafkaError as error:
                if not error.retriable or isinstance(error, KafkaTimeoutError):
                    raise
                continue
            code = int(sync["error_code"])
            if code in GENERATION_GONE and code != ErrorCode.FENCED_INSTANCE_ID:
                self._reset_generation()
                continue
            if code in RETRY_JOIN or code in COORDINATOR_ERRORS:
                if code in COORDINATOR_ERRORS:
                    self._coordinator_lost()
                continue
            if code:
                raise error_for_code(code, f"SyncGroup of group {self._group_id!r}")
            assignment = decode_assignment(sync["assignment"] or b"\x00\x00\x00\x00\x00\x00")
            self._join_prepared = False
            self._on_join_complete(assignment.partitions)
            return

    def _join_fields(self, version: int) -> dict[str, Any]:
        with self._lock:
            owned, generation = list(self._owned), self._generation
        return {
            "group_id": self._group_id,
            "session_timeout": self._settings.session_timeout_ms,
            "rebalance_timeout": self._settings.max_poll_interval_ms,
            "member_id": self._member_id,
            "group_instance_id": self._instance_id,
            "protocol_type": CONSUMER_PROTOCOL_TYPE,
            "protocols": join_protocols(
                self._assignors,
                sorted(self._subscriptions.topics),
                owned,
                generation,
                self._settings.client_rack or None,
            ),
            "reason": None,
        }

    def _on_join_prepare(self, deadline_ms: int) -> None:
        with self._lock:
            lost, owned = self._lost, list(self._owned)
            self._lost = False
        if lost:
            if owned:
                self._invoke("on_partitions_lost", owned)
            self._set_owned([])
            return
        if self._protocol is RebalanceProtocol.EAGER:
            self._maybe_auto_commit_sync(deadline_ms)
            if owned:
                self._invoke("on_partitions_revoked", owned)
            self._set_owned([])

    def _on_join_complete(self, partitions: list[TopicPartition]) -> None:
        new = list(dict.fromkeys(partitions))
        with self._lock:
            owned = list(self._owned)
            self._joined = True
            now = self._clock.monotonic_ms()
            self._next_heartbeat_ms = now + self._settings.heartbeat_interval_ms
            self._last_poll_ms = now
        log.info(
            "group %s generation %d: assigned %s",
            self._group_id,
            self._generation,
            [str(tp) for tp in new],
        )
        self._metadata.add_topics({tp.topic for tp in new})
        if self._protocol is RebalanceProtocol.COOPERATIVE:
            revoked = [tp for tp in owned if tp not in new]
            added = [tp for tp in new if tp not in owned]
            if revoked:
                self._maybe_auto_commit_sync(
                    self._clock.monotonic_ms() + self._settings.request_timeout_ms, revoked
                )
                self._set_owned([tp for tp in owned if tp in new])
                self._invoke("on_partitions_revoked", revoked)
            self._set_owned(new)
            self._invoke("on_partitions_assigned", added)
            if revoked:
                with self._lock:
                    self._rejoin_needed = True
        else:
            self._set_owned(new)
            self._invoke("on_partitions_assigned", new)
        self._fetcher.wakeup()

    def _set_owned(self, partitions: list[TopicPartition]) -> None:
        with self._lock:
            self._owned = list(partitions)
        self._subscriptions.assign_from_group(partitions)

    def _invoke(self, name: str, partitions: list[TopicPartition]) -> None:
        listener = self._listener
        if listener is None:
            return
        method = getattr(listener, name, None)
        if method is None and name == "on_partitions_lost":
            method = getattr(listener, "on_partitions_revoked", None)
        if method is None:
            return
        try:
            method(sorted(partitions))
        except Exception:
            log.exception("group %s: rebalance listener %s raised", self._group_id, name)

    def _reset_generation(self) -> None:
        with self._lock:
            self._generation = _NO_GENERATION
            self._member_id = ""
            self._joined = False
            self._rejoin_needed = True
            if self._owned:
                self._lost = True

    # ------------------------------------------------------------------ heartbeat thread

    def _heartbeat(self, now_ms: int) -> int | None:
        with self._lock:
            if self._closing or not self._joined or self._coordinator is None:
                return None
            if now_ms - self._last_poll_ms > self._settings.max_poll_interval_ms:
                log.warning(
                    "group %s: poll() not called within max.poll.interval.ms (%d ms); leaving",
                    self._group_id,
                    self._settings.max_poll_interval_ms,
                )
                member_id = self._member_id
                self._generation = _NO_GENERATION
                self._member_id = ""
                self._joined = False
                self._rejoin_needed = True
                self._lost = bool(self._owned)
                leave = self._instance_id is None
            else:
                leave = None
                member_id = self._member_id
            if self._heartbeat_in_flight and leave is None:
                return None
            due = self._next_heartbeat_ms - now_ms
            generation = self._generation
        node = self._coordinator
        if leave is not None:
            if leave:
                self._network.send(
                    node,
                    ApiKey.LEAVE_GROUP,
                    {"group_id": self._group_id, "member_id": member_id},
                    versions=_LEAVE_GROUP,
                )
            self._fetcher.notify()
            return None
        if due > 0:
            return due
        with self._lock:
            self._heartbeat_in_flight = True
            self._next_heartbeat_ms = now_ms + self._settings.heartbeat_interval_ms
        future = self._network.send(
            node,
            ApiKey.HEARTBEAT,
            {
                "group_id": self._group_id,
                "generation_id": generation,
                "member_id": member_id,
                "group_instance_id": self._instance_id,
            },
            versions=_HEARTBEAT,
        )
        future.add_done_callback(self._on_heartbeat)  # type: ignore[arg-type]
        return self._settings.heartbeat_interval_ms

    def _on_heartbeat(self, future: RequestFuture) -> None:
        with self._lock:
            self._heartbeat_in_flight = False
        error = future.exception()
        code: int
        if error is not None:
            code = (
                error.error_code if isinstance(error, KafkaError) else ErrorCode.NETWORK_EXCEPTION
            )
        else:
            code = int(future.result()["error_code"])
        if code == ErrorCode.NONE:
            return
        log.info("group %s: heartbeat answered %s", self._group_id, ErrorCode(code).name)
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            with self._lock:
                self._rejoin_needed = True
        elif code in GENERATION_GONE:
            self._reset_generation()
        elif code in COORDINATOR_ERRORS:
            self._coordinator_lost()
            with self._lock:
                self._rejoin_needed = True
        self._fetcher.notify()

    # ------------------------------------------------------------------ offsets

    def refresh_committed_offsets(self, deadline_ms: int) -> None:
        """Looks up the committed offsets of partitions waiting for one (app thread)."""
        waiting = self._subscriptions.awaiting_committed()
        if not waiting:
            return
        try:
            committed = self.fetch_committed(
                waiting, max(0, deadline_ms - self._clock.monotonic_ms())
            )
        except KafkaError as error:
            log.info("group %s: committed offsets not fetched yet: %s", self._group_id, error)
            return
        for tp, value in committed.items():
            self._subscriptions.set_committed(tp, value.offset if value is not None else None)
        self._fetcher.wakeup()

    def fetch_committed(
        self, partitions: list[TopicPartition], timeout_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """OffsetFetch for ``partitions``, retried on coordinator errors until the timeout."""
        deadline = self._clock.monotonic_ms() + timeout_ms
        topics: dict[str, list[int]] = {}
        for tp in partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        fields = {
            "group_id": self._group_id,
            "topics": [{"name": t, "partition_indexes": p} for t, p in topics.items()],
            "require_stable": False,
        }
        while True:
            try:
                body = self._send(ApiKey.OFFSET_FETCH, fields, _OFFSET_FETCH, deadline)
                code = int(body.get("error_code", 0))
            except KafkaError as error:
                if not error.retriable or isinstance(error, KafkaTimeoutError):
                    raise
                code = error.error_code
            if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                self._coordinator_lost()
            if code:
                if not ErrorCode(code).retriable:
                    raise error_for_code(code, f"OffsetFetch of group {self._group_id!r}")
                self._backoff(deadline)
                continue
            return committed_offsets(partitions, body)

    def _match_pattern(self) -> None:
        """Subscribes to the known topics the subscription's pattern matches (internal topics
        only without ``exclude.internal.topics``); a changed set means a rebalance."""
        subscriptions, cluster = self._subscriptions, self._metadata.cluster
        matching = [
            name
            for name in cluster.topic_names
            if subscriptions.matches(name)
            and not (self._settings.exclude_internal_topics and cluster.topics[name].is_internal)
        ]
        if subscriptions.set_subscribed_topics(matching):
            self.subscription_changed()

    def _commit_fields(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> dict[str, Any]:
        with self._lock:
            generation, member_id = self._generation, self._member_id
        return offset_commit_fields(
            self._group_id, generation, member_id, self._instance_id, offsets
        )

    def _commit_error(self, body: Mapping[str, Any]) -> KafkaError | None:
        for topic in body.get("topics") or ():
            for entry in topic.get("partitions") or ():
                code = int(entry["error_code"])
                if not code:
                    continue
                what = (
                    f"commit of {topic['name']}-{entry['partition_index']}: {ErrorCode(code).name}"
                )
                if code in GENERATION_GONE or code == ErrorCode.REBALANCE_IN_PROGRESS:
                    if code != ErrorCode.REBALANCE_IN_PROGRESS:
                        self._reset_generation()
                    else:
                        with self._lock:
                            self._rejoin_needed = True
                    return CommitFailedError(
                        what + " (the group rebalanced: poll() again and retry)",
                        code=ErrorCode(code),
                    )
                if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                    self._coordinator_lost()
                return error_for_code(code, what)
        return None

    def commit_sync(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_ms: int
    ) -> None:
        self._run_callbacks()
        if not offsets:
            return
        deadline = self._clock.monotonic_ms() + timeout_ms
        while True:
            try:
                fields = self._commit_fields(offsets)
                body = self._send(ApiKey.OFFSET_COMMIT, fields, self._commit_versions, deadline)
                error = self._commit_error(body)
            except KafkaError as failure:
                error = failure
            if error is None:
                return
            if isinstance(error, CommitFailedError | KafkaTimeoutError) or not error.retriable:
                raise error
            self._backoff(deadline)

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], callback: CommitCallback | None
    ) -> None:
        def finish(error: BaseException | None) -> None:
            if callback is not None:
                self._callbacks.append((lambda: callback(offsets, error),))

        if not offsets:
            finish(None)
            return
        node = self._coordinator
        if node is None:
            try:
                node = self._ensure_coordinator(
                    self._clock.monotonic_ms() + self._settings.request_timeout_ms
                )
            except KafkaError as error:
                finish(error)
                return
        future = self._thread.request(
            node, ApiKey.OFFSET_COMMIT, self._commit_fields(offsets), self._commit_versions
        )

        def done(completed: Future[dict[str, Any]]) -> None:
            failure = completed.exception()
            if failure is None:
                finish(self._commit_error(completed.result()))
            else:
                if isinstance(failure, KafkaError) and failure.error_code in COORDINATOR_ERRORS:
                    self._coordinator_lost()
                finish(failure)

        future.add_done_callback(done)

    def _maybe_auto_commit_sync(
        self, deadline_ms: int, partitions: list[TopicPartition] | None = None
    ) -> None:
        if not self._settings.enable_auto_commit:
            return
        with self._lock:
            if self._generation == _NO_GENERATION:
                return
        positions = self._subscriptions.positions()
        offsets = {
            tp: OffsetAndMetadata(p)
            for tp, p in positions.items()
            if partitions is None or tp in partitions
        }
        try:
            self.commit_sync(offsets, max(1, deadline_ms - self._clock.monotonic_ms()))
        except KafkaError as error:
            log.warning("group %s: auto commit failed: %s", self._group_id, error)

    def _run_callbacks(self) -> None:
        while self._callbacks:
            (call,) = self._callbacks.popleft()
            try:
                call()
            except Exception:
                log.exception("group %s: commit callback raised", self._group_id)

    # ------------------------------------------------------------------ leaving

    def unsubscribe(self) -> None:
        self._leave(self._clock.monotonic_ms() + self._settings.request_timeout_ms)

    def _leave(self, deadline_ms: int) -> None:
        with self._lock:
            owned, member_id, lost = list(self._owned), self._member_id, self._lost
            joined = self._generation != _NO_GENERATION
        if owned:
            self._invoke(
                "on_partitions_lost" if lost or not joined else "on_partitions_revoked", owned
            )
        self._set_owned([])
        if joined and member_id and self._instance_id is None and self._coordinator is not None:
            try:
                self._send(
                    ApiKey.LEAVE_GROUP,
                    {"group_id": self._group_id, "member_id": member_id},
                    _LEAVE_GROUP,
                    deadline_ms,
                )
            except KafkaError as error:
                log.info("group %s: LeaveGroup failed: %s", self._group_id, error)
        with self._lock:
            self._generation = _NO_GENERATION
            self._member_id = ""
            self._joined = False
            self._rejoin_needed = True
            self._lost = False

    def close(self, timeout_ms: int, *, autocommit: bool) -> None:
        deadline = self._clock.monotonic_ms() + timeout_ms
        try:
            if autocommit:
                self._maybe_auto_commit_sync(deadline)
            if self._subscriptions.subscribed:
                self._leave(deadline)
            self._run_callbacks()
        finally:
            with self._lock:
                self._closing = True
            self._thread.close(max(0, deadline - self._clock.monotonic_ms()) / 1000.0)
