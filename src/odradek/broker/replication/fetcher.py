"""``ReplicaFetcher``: one task that copies the partitions this broker follows from one leader
broker (Kafka's ``ReplicaFetcherThread``; ``fetcher_manager`` runs one per source broker and
fetcher id).

Each partition goes through two states:

1. **truncating** — before its first fetch from a (new) leader, the follower asks the leader
   where the follower's latest leader epoch ends (OffsetForLeaderEpoch v3, ``replica_id`` =
   this broker) and truncates its log to the divergence point (``truncation``; KIP-101/279:
   never by the high watermark alone while both sides keep epochs), asking again about an
   older epoch when the leader's answer calls for it;
2. **fetching** — Fetch v11 (``protocol.replica_fetch``'s hand-written codec: the hot path
   of replication) with ``replica_id`` = this broker (the leader then reads up to its
   log end offset), ``current_leader_epoch`` = the epoch the controller gave this replica (a
   leader at another epoch answers FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH). Whole batches
   are appended as they are (``Partition.append_as_follower``: offsets and epochs kept), the
   follower's high watermark becomes min(leader HW, own LEO), and its log start offset
   follows the leader's.

Fetches go in an incremental fetch session (KIP-227, ``follower_session``): after a full
fetch, a request names only the partitions whose fetch offset (or leader epoch) changed and
the leader answers only the partitions with news; a session error, a lost connection or an
unreadable answer makes the next fetch a full one.

Errors: a lost connection or an unreadable answer backs the whole fetcher off for
``replica.fetch.backoff.ms`` and reconnects; a refused login to the leader (TLS or SASL on
the inter-broker listener: a wrong password, say) is logged once as an error — again only
after a fetch succeeded — and backs off twice as long at each failure, up to
``_AUTH_BACKOFF_MAX_MS``, so the follower stays out of the ISR without flooding the log; a
partition answering NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH (or
any other error) is left out of fetches for ``replica.fetch.backoff.ms`` (the controller's
LeaderAndIsr moves it meanwhile); OFFSET_OUT_OF_RANGE below the
leader's log start offset empties the log and restarts it there, and above it sends the
partition back to truncation. An answer for a partition removed or re-added meanwhile is
dropped.

Thread safety: the event loop thread only (partitions are appended inline, as produce does).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from odradek._clock import Clock
from odradek._types import TopicPartition
from odradek.broker.broker_connection import (
    BrokerAuthenticationError,
    BrokerConnection,
    BrokerUnavailableError,
)
from odradek.broker.config import FetcherSettings
from odradek.broker.replication.follower_session import FollowerFetchSession
from odradek.broker.replication.partition import Partition
from odradek.broker.replication.truncation import (
    Truncation,
    decide_truncation,
    truncation_without_epochs,
)
from odradek.broker.security.inter_broker import PLAINTEXT_INTER_BROKER, InterBrokerSecurity
from odradek.errors import ErrorCode, KafkaError, ProtocolError
from odradek.protocol import ApiKey
from odradek.protocol.replica_fetch import (
    REPLICA_FETCH_VERSION,
    FetchedPartition,
    ReplicaFetchPartition,
    decode_replica_fetch_response,
    encode_replica_fetch_request,
    response_session_id,
)
from odradek.records.batch import LOG_OVERHEAD, read_prefix

__all__ = [
    "FETCH_VERSION",
    "OFFSET_FOR_LEADER_EPOCH_VERSION",
    "ReplicaFetcher",
    "whole_batches_size",
]

logger = logging.getLogger(__name__)

FETCH_VERSION = REPLICA_FETCH_VERSION
OFFSET_FOR_LEADER_EPOCH_VERSION = 3
#: How often a fetcher looks again for its leader's address before UpdateMetadata brings it.
_ENDPOINT_POLL_S = 0.05
_UNDEFINED_EPOCH = -1
#: How often ``stop`` repeats a cancellation the task has not acted on yet.
_STOP_RETRY_S = 0.1
#: The longest pause between logins a leader refuses.
_AUTH_BACKOFF_MAX_MS = 30_000

#: ``(host, port)`` of a broker id, or None while unknown.
EndpointLookup = Callable[[int], tuple[str, int] | None]


@dataclass(slots=True, eq=False)
class PartitionFetchState:
    """One followed partition inside a fetcher (mutable: the fetcher's own bookkeeping)."""

    partition: Partition
    #: The leader epoch this replica follows at (sent as ``current_leader_epoch``).
    leader_epoch: int
    fetch_offset: int
    truncating: bool = True
    #: The epoch to ask about next while truncating (-1: the log's latest).
    ask_epoch: int = _UNDEFINED_EPOCH
    #: Left out of requests until this monotonic time (a partition-level back-off).
    delayed_until_ms: int = 0


def whole_batches_size(data: bytes | memoryview) -> int:
    """How many leading bytes of ``data`` are whole batches (a fetch may end mid-batch)."""
    position = 0
    end = len(data)
    while end - position >= LOG_OVERHEAD:
        _, size = read_prefix(data, position)
        if size <= LOG_OVERHEAD or position + size > end:
            break
        position += size
    return position


class ReplicaFetcher:
    """See the module docstring.

    Args:
        broker_id: this broker (the fetches' ``replica_id``).
        source_id: the leader broker fetched from.
        fetcher_id: which of ``num.replica.fetchers`` this is.
        settings: the ``replica.fetch.*`` settings.
        endpoint_for: the address of a broker id (the metadata cache's live brokers).
        clock: for the back-offs.
        connection: the connection to the leader (default: a ``BrokerConnection``; tests
            pass one that serves the leader's handlers in process).
        security: how to reach the leader (the inter-broker listener's TLS and SASL).
    """

    def __init__(
        self,
        broker_id: int,
        source_id: int,
        fetcher_id: int,
        settings: FetcherSettings,
        endpoint_for: EndpointLookup,
        clock: Clock,
        connection: BrokerConnection | None = None,
        security: InterBrokerSecurity = PLAINTEXT_INTER_BROKER,
    ) -> None:
        self.broker_id = broker_id
        self.source_id = source_id
        self.fetcher_id = fetcher_id
        self.name = f"replica-fetcher-{broker_id}-{source_id}-{fetcher_id}"
        self._settings = settings
        self._endpoint_for = endpoint_for
        self._clock = clock
        self._states: dict[TopicPartition, PartitionFetchState] = {}
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopped = False
        self._connection = connection or BrokerConnection(
            self.name,
            max_response_bytes=settings.replica_fetch_response_max_bytes + (16 << 20),
            security=security,
        )
        self.session = FollowerFetchSession()
        self.fetches = 0
        self.bytes_appended = 0
        self.truncations = 0
        self.failures = 0
        self.authentication_failures = 0
        #: The pause after the last refused login (0: the last login was accepted).
        self._auth_backoff_ms = 0

    # ------------------------------------------------------------------ partitions

    def add_partition(self, partition: Partition) -> None:
        """Starts following ``partition`` at its current leader epoch (truncating first)."""
        self._states[partition.topic_partition] = PartitionFetchState(
            partition, partition.leader_epoch, partition.log_end_offset
        )
        self._changed.set()

    def remove_partition(self, topic_partition: TopicPartition) -> bool:
        """Stops following it; whether it was followed here."""
        removed = self._states.pop(topic_partition, None) is not None
        if removed:
            self._changed.set()
        return removed

    def partitions(self) -> list[TopicPartition]:
        return list(self._states)

    def fetch_state(self, topic_partition: TopicPartition) -> PartitionFetchState | None:
        return self._states.get(topic_partition)

    def statistics(self) -> dict[str, int]:
        return {
            "partitions": len(self._states),
            "truncating": sum(1 for state in self._states.values() if state.truncating),
            "fetches": self.fetches,
            "bytes_appended": self.bytes_appended,
            "truncations": self.truncations,
            "failures": self.failures,
            "authentication_failures": self.authentication_failures,
            **self.session.statistics(),
        }

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Starts the task on the running loop."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        """Cancels the task (a fetch in flight is abandoned) and closes the connection.

        The loop also stops at its next turn by a flag: Python 3.11's ``asyncio.wait_for``
        can swallow a cancellation that arrives as its inner wait completes (gh-86296), and a
        swallowed one must not leave the task fetching and this call waiting forever."""
        self._stopped = True
        task, self._task = self._task, None
        if task is not None:
            while not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=_STOP_RETRY_S)
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        self._connection.close()

    async def _run(self) -> None:
        while not self._stopped:
            try:
                await self.run_once()
                self._auth_backoff_ms = 0
            except BrokerAuthenticationError as error:
                self.failures += 1
                self.authentication_failures += 1
                await self._refused(error)
            except BrokerUnavailableError as error:
                self.failures += 1
                logger.info("%s: %s; backing off", self.name, error)
                await self._back_off()
            except Exception:
                self.failures += 1
                logger.exception("%s: unexpected failure; backing off", self.name)
                await self._back_off()

    async def _refused(self, error: BrokerAuthenticationError) -> None:
        """The leader refused the login: say so once, then retry less and less often."""
        if self._auth_backoff_ms == 0:
            logger.error(
                "%s: cannot fetch from broker %d: %s (the follower stays out of the ISR; "
                "check the inter-broker listener's credentials)",
                self.name,
                self.source_id,
                error,
            )
            self._auth_backoff_ms = max(self._settings.replica_fetch_backoff_ms, 1)
        else:
            logger.debug("%s: login refused again: %s", self.name, error)
            self._auth_backoff_ms = min(2 * self._auth_backoff_ms, _AUTH_BACKOFF_MAX_MS)
        await asyncio.sleep(self._auth_backoff_ms / 1000)

    async def _back_off(self) -> None:
        await asyncio.sleep(self._settings.replica_fetch_backoff_ms / 1000)

    async def run_once(self) -> None:
        """One request: truncation for the partitions that need it, else one fetch; waits
        when there is nothing to do. The task loops over it; tests call it directly.

        Raises:
            BrokerUnavailableError: the leader could not be reached or did not answer.
        """
        self._changed.clear()
        now = self._clock.monotonic_ms()
        ready = [s for s in self._states.values() if s.delayed_until_ms <= now]
        if not ready:
            delays = [s.delayed_until_ms - now for s in self._states.values()]
            timeout = min(delays) / 1000 if delays else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)
            return
        endpoint = self._endpoint_for(self.source_id)
        if endpoint is None:
            await asyncio.sleep(_ENDPOINT_POLL_S)
            return
        truncating = [state for state in ready if state.truncating]
        if truncating and await self._truncate(endpoint, truncating):
            return
        fetching = [state for state in ready if not state.truncating]
        if fetching:
            await self._fetch(endpoint, fetching)

    def _delay(self, state: PartitionFetchState, why: str) -> None:
        backoff_ms = self._settings.replica_fetch_backoff_ms
        state.delayed_until_ms = self._clock.monotonic_ms() + backoff_ms
        logger.info(
            "%s: %s: %s; retrying in %d ms",
            self.name,
            state.partition.topic_partition,
            why,
            backoff_ms,
        )

    # ------------------------------------------------------------------ truncation

    async def _truncate(self, endpoint: tuple[str, int], states: list[PartitionFetchState]) -> bool:
        """Truncates what can be decided locally and asks the leader about the rest; returns
        whether a request went out."""
        asked: dict[TopicPartition, tuple[PartitionFetchState, int]] = {}
        for state in states:
            log = state.partition.log
            epoch = state.ask_epoch if state.ask_epoch >= 0 else log.latest_epoch
            if epoch < 0:
                partition = state.partition
                self._apply_truncation(
                    state,
                    truncation_without_epochs(partition.log_end_offset, partition.high_watermark),
                )
                continue
            asked[state.partition.topic_partition] = (state, epoch)
        if not asked:
            return False
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, (state, epoch) in asked.items():
            topics.setdefault(tp.topic, []).append(
                {
                    "partition": tp.partition,
                    "current_leader_epoch": state.leader_epoch,
                    "leader_epoch": epoch,
                }
            )
        answer = await self._connection.request(
            *endpoint,
            ApiKey.OFFSET_FOR_LEADER_EPOCH,
            OFFSET_FOR_LEADER_EPOCH_VERSION,
            {
                "replica_id": self.broker_id,
                "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
            },
        )
        for topic in answer["topics"]:
            for result in topic["partitions"]:
                tp = TopicPartition(topic["topic"], result["partition"])
                entry = asked.get(tp)
                if entry is None or self._states.get(tp) is not entry[0]:
                    continue  # not asked, or removed / re-added while the request was out
                state = entry[0]
                code = ErrorCode(result["error_code"])
                if code is not ErrorCode.NONE:
                    self._delay(state, f"OffsetForLeaderEpoch answered {code.name}")
                    continue
                partition = state.partition
                found = partition.log.end_offset_for_epoch(result["leader_epoch"])
                decision = decide_truncation(
                    leader_epoch=result["leader_epoch"],
                    leader_end_offset=result["end_offset"],
                    follower_end=(found.epoch, found.end_offset),
                    log_end_offset=partition.log_end_offset,
                    high_watermark=partition.high_watermark,
                )
                self._apply_truncation(state, decision)
        return True

    def _apply_truncation(self, state: PartitionFetchState, decision: Truncation) -> None:
        partition = state.partition
        before = partition.log_end_offset
        if partition.truncate_to(decision.offset):
            self.truncations += 1
            logger.info(
                "%s: %s truncated from %d to %d (leader epoch %d)",
                self.name,
                partition.topic_partition,
                before,
                partition.log_end_offset,
                state.leader_epoch,
            )
        if decision.done:
            state.truncating = False
            state.ask_epoch = _UNDEFINED_EPOCH
            state.fetch_offset = partition.log_end_offset
        else:
            state.ask_epoch = decision.next_epoch

    # ------------------------------------------------------------------ fetch

    async def _fetch(self, endpoint: tuple[str, int], states: list[PartitionFetchState]) -> None:
        settings = self._settings
        sent: dict[TopicPartition, tuple[PartitionFetchState, int]] = {}
        requested: list[ReplicaFetchPartition] = []
        max_bytes = settings.replica_fetch_max_bytes
        for state in states:
            tp = state.partition.topic_partition
            sent[tp] = (state, state.fetch_offset)
            requested.append(
                ReplicaFetchPartition(
                    tp.topic, tp.partition, state.leader_epoch, state.fetch_offset, max_bytes
                )
            )
        wait_ms = settings.replica_fetch_wait_max_ms
        session = self.session
        plan = session.plan(requested)
        try:
            answer = await self._connection.exchange(
                *endpoint,
                lambda correlation_id: encode_replica_fetch_request(
                    correlation_id,
                    self.name,
                    replica_id=self.broker_id,
                    max_wait_ms=wait_ms,
                    min_bytes=settings.replica_fetch_min_bytes,
                    max_bytes=settings.replica_fetch_response_max_bytes,
                    partitions=plan.partitions,
                    session_id=plan.session_id,
                    session_epoch=plan.session_epoch,
                    forgotten=plan.forgotten,
                ),
                wait_ms=wait_ms,
            )
            _, error_code, fetched = decode_replica_fetch_response(answer)
            session.answered(plan, error_code, response_session_id(answer))
        except ProtocolError as error:
            session.failed()
            self._connection.close()
            raise BrokerUnavailableError(f"{self.name}: {error}") from None
        except BaseException:
            session.failed()
            raise
        self.fetches += 1
        for data in fetched:
            tp = TopicPartition(data.topic, data.partition)
            entry = sent.get(tp)
            if entry is None:
                continue
            state, offset = entry
            if self._states.get(tp) is not state or state.truncating:
                continue  # removed, re-added or sent back to truncation meanwhile
            if state.fetch_offset != offset:
                continue
            self._apply_fetched(state, data)

    def _apply_fetched(self, state: PartitionFetchState, data: FetchedPartition) -> None:
        partition = state.partition
        code = ErrorCode(data.error_code)
        if code is ErrorCode.OFFSET_OUT_OF_RANGE:
            leader_start = data.log_start_offset
            if state.fetch_offset < leader_start:
                logger.info(
                    "%s: %s: offset %d is below the leader's log start offset %d: restarting "
                    "the log there",
                    self.name,
                    partition.topic_partition,
                    state.fetch_offset,
                    leader_start,
                )
                partition.truncate_fully_and_start_at(leader_start)
                self.truncations += 1
                state.fetch_offset = leader_start
            else:
                state.truncating = True  # ahead of the leader: find the divergence again
            return
        if code is not ErrorCode.NONE:
            self._delay(state, f"Fetch answered {code.name}")
            return
        records = data.records
        if records:
            size = whole_batches_size(records)
            if size:
                try:
                    partition.append_as_follower(records[:size])
                except KafkaError as error:
                    self._delay(state, f"cannot append fetched batches: {error}")
                    return
                self.bytes_appended += size
                state.fetch_offset = partition.log_end_offset
        partition.update_follower_high_watermark(data.high_watermark)
        leader_start = data.log_start_offset
        if partition.log_start_offset < leader_start <= partition.log_end_offset:
            partition.log.maybe_increment_log_start_offset(leader_start)
