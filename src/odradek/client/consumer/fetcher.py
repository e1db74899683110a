"""``Fetcher``: background prefetch of the assigned partitions, and the buffer ``poll`` drains.

It runs on the fetcher's ``NetworkThread`` as a poll hook of its ``NetworkClient`` (so it is
the owner of that client: every Fetch and ListOffsets is sent, and every response handled, on
that thread). Each round it:

1. resolves pending offset resets: one ListOffsets per leader (``EARLIEST`` / ``LATEST``);
2. sends **one Fetch per leader node** that has none in flight, for the assigned partitions
   that are fetchable (a position, not paused, no error) and have fewer than
   ``_MAX_BUFFERED`` responses waiting in the buffer — so the next Fetch is on the wire while
   the application processes the previous one (prefetch). Requests carry ``fetch.min.bytes``,
   ``fetch.max.wait.ms``, ``fetch.max.bytes`` and ``max.partition.fetch.bytes``; the partition
   order rotates each request so a partition that the size limit cuts off comes first next time
   (the broker always sends the first partition's first batch whole, KIP-74);
3. when a response arrives, advances each partition's fetch position past the last whole
   batch (``decoder.scan``, batch headers only), **sends the next Fetch at once**, and only
   then decodes the records (``decoder.decode``, without deserializers) while the broker
   prepares that next response; each partition's records go into the buffer as one
   ``CompletedFetch`` (a decoding error is kept in it, for ``poll`` to raise), and the
   application thread is woken once per response.

Decoding here rather than in ``poll`` is deliberate: with the GIL, a thread that gives it up
in a system call (the fetcher's send, recv, select) and finds the other thread busy in
Python waits up to the interpreter's switch interval (5 ms) to get it back — several times
per response when the application thread decodes. The application thread now only slices
decoded lists (``drain``, at most ``max_records`` at a time) and applies the deserializers,
if any, to what it returns; data fetched under an older partition epoch (a seek, a pause, a
reassignment happened since) is dropped. Errors:
OFFSET_OUT_OF_RANGE resets by ``auto.offset.reset`` or is recorded for ``poll`` to raise;
stale-metadata errors refresh metadata; other partition errors are logged and retried after
``retry.backoff.ms``.

Shared state (the buffer, partition states) is guarded by the ``SubscriptionState`` lock;
``wait`` blocks on a condition of that lock that the fetcher signals when data arrives.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from odradek._types import TopicPartition
from odradek.client.cluster import Metadata, needs_metadata_refresh
from odradek.client.consumer.config import ConsumerSettings
from odradek.client.consumer.decoder import decode, scan
from odradek.client.consumer.record import ConsumerRecord
from odradek.client.consumer.subscription import SubscriptionState
from odradek.client.network import NetworkClient, RequestFuture
from odradek.errors import ErrorCode, OffsetOutOfRangeError, error_for_code
from odradek.protocol.api_keys import ApiKey, VersionRange
from odradek.records.aborted import drop_aborted

__all__ = ["FETCH_VERSIONS", "LIST_OFFSETS_VERSIONS", "CompletedFetch", "Fetcher"]

log = logging.getLogger(__name__)

FETCH_VERSIONS: Final = VersionRange(4, 12)  # v13+ names topics by id
LIST_OFFSETS_VERSIONS: Final = VersionRange(1, 7)
#: Completed fetches one partition may have waiting before it is fetched again.
_MAX_BUFFERED: Final = 2
_MAX_INT32: Final = 2**31 - 1
_new_record = tuple.__new__


@dataclass(slots=True)
class CompletedFetch:
    """One partition's part of a Fetch response, decoded on the fetcher thread: its records
    (deserializers not applied yet) or the error decoding them raised."""

    tp: TopicPartition
    epoch: int
    fetch_offset: int
    next_offset: int
    data: bytes
    records: list[ConsumerRecord] = field(default_factory=list)
    error: BaseException | None = None
    index: int = 0


class Fetcher:
    """Prefetches for ``subscriptions`` through ``network`` (see the module docstring)."""

    def __init__(
        self,
        settings: ConsumerSettings,
        network: NetworkClient,
        metadata: Metadata,
        subscriptions: SubscriptionState,
        key_deserializer: Any,
        value_deserializer: Any,
    ) -> None:
        self._settings = settings
        self._network = network
        self._metadata = metadata
        self._subscriptions = subscriptions
        self._key_deserializer = key_deserializer
        self._value_deserializer = value_deserializer
        self._lock = subscriptions.lock
        self.condition = threading.Condition(subscriptions.lock)
        self._completed: deque[CompletedFetch] = deque()
        self._buffered: dict[TopicPartition, int] = {}
        self._fetching_nodes: set[int] = set()
        self._resetting: set[TopicPartition] = set()
        self._retry_at: dict[TopicPartition, int] = {}
        self._rotation = 0
        self._closed = False
        network.add_poll_hook(self._on_poll)

    # ------------------------------------------------------------ application thread

    def wakeup(self) -> None:
        """Tells the fetcher thread to look at the partitions again (after assign, seek...)."""
        self._network.wakeup()

    def notify(self) -> None:
        """Wakes a ``wait`` in progress (the coordinator needs the application thread)."""
        with self.condition:
            self.condition.notify_all()

    def wait(self, timeout_ms: int) -> None:
        """Blocks until data arrives, ``notify`` is called, or ``timeout_ms`` passes."""
        with self.condition:
            if self._completed:
                return
            self.condition.wait(max(0, timeout_ms) / 1000.0)

    def has_data(self) -> bool:
        return bool(self._completed)

    def drain(self, max_records: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` records from the buffer, advancing positions past them."""
        out: list[ConsumerRecord] = []
        subscriptions = self._subscriptions
        deserialize = self._key_deserializer is not None or self._value_deserializer is not None
        while len(out) < max_records:
            with self._lock:
                if not self._completed:
                    break
                completed = self._completed[0]
                state = subscriptions.assignment.get(completed.tp)
                if state is None or state.epoch != completed.epoch or state.paused:
                    self._pop()
                    continue
                position = state.position
            records = completed.records
            error = completed.error
            index = completed.index
            if position is not None:
                while index < len(records) and records[index].offset < position:
                    index += 1
            chunk = records[index : index + max_records - len(out)]
            if error is None and chunk and deserialize:
                try:
                    chunk = self._deserialize(chunk)
                except BaseException as raised:
                    error = raised
            if error is not None:
                self._drop_failed(completed, state)
                raise error
            with self._lock:
                if state.epoch != completed.epoch or state.position != position:
                    continue  # sought meanwhile: the next round drops it
                index += len(chunk)
                completed.index = index
                if chunk:
                    out.extend(chunk)
                    state.position = chunk[-1].offset + 1
                if index >= len(records):
                    if state.position is None or state.position < completed.next_offset:
                        state.position = completed.next_offset
                    self._pop()
        return out

    def _deserialize(self, chunk: list[ConsumerRecord]) -> list[ConsumerRecord]:
        """The records with the deserializers applied: each rebuilt in one step, as the decoder
        builds it (``_replace`` took several times longer than the rest of ``poll``)."""
        key_deserializer = self._key_deserializer
        value_deserializer = self._value_deserializer
        key_fn = key_deserializer.deserialize if key_deserializer is not None else None
        value_fn = value_deserializer.deserialize if value_deserializer is not None else None
        new = _new_record
        cls = ConsumerRecord
        return [
            new(
                cls,
                (
                    topic,
                    partition,
                    offset,
                    timestamp,
                    timestamp_type,
                    key if key_fn is None else key_fn(topic, key),
                    value if value_fn is None else value_fn(topic, value),
                    headers,
                    key_size,
                    value_size,
                    header_size,
                    epoch,
                ),
            )
            for (
                topic,
                partition,
                offset,
                timestamp,
                timestamp_type,
                key,
                value,
                headers,
                key_size,
                value_size,
                header_size,
                epoch,
            ) in chunk
        ]

    def _drop_failed(self, completed: CompletedFetch, state: Any) -> None:
        """Drops a completed fetch whose records failed (corrupt, or a deserializer raised):
        the partition is fetched again from its position, and fails again unless sought."""
        with self._lock:
            if self._completed and self._completed[0] is completed:
                self._pop()
                if state.epoch == completed.epoch:
                    state.fetch_position = state.position
                    state.epoch += 1

    def _pop(self) -> None:
        completed = self._completed.popleft()
        count = self._buffered.get(completed.tp, 0) - 1
        if count > 0:
            self._buffered[completed.tp] = count
        else:
            self._buffered.pop(completed.tp, None)
            self._network.wakeup()

    def close(self) -> None:
        self._closed = True

    # ------------------------------------------------------------ fetcher thread

    def _on_poll(self, now_ms: int) -> int | None:
        if self._closed:
            return None
        wait: int | None = None
        cluster = self._metadata.cluster
        resets: dict[int, list[tuple[TopicPartition, int, int]]] = {}
        fetches: dict[int, list[tuple[TopicPartition, int, int]]] = {}
        missing_leader = False
        with self._lock:
            assignment = self._subscriptions.assignment
            if not assignment:
                return None
            items = list(assignment.items())
            self._rotation = (self._rotation + 1) % len(items)
            items = items[self._rotation :] + items[: self._rotation]
            for tp, state in items:
                retry_at = self._retry_at.get(tp)
                if retry_at is not None:
                    if retry_at > now_ms:
                        wait = retry_at - now_ms if wait is None else min(wait, retry_at - now_ms)
                        continue
                    del self._retry_at[tp]
                if state.reset is not None:
                    if tp in self._resetting:
                        continue
                    leader = cluster.leader_for(tp)
                    if leader is None:
                        missing_leader = True
                        continue
                    resets.setdefault(leader, []).append((tp, state.reset, state.epoch))
                    continue
                if not state.fetchable or self._buffered.get(tp, 0) >= _MAX_BUFFERED:
                    continue
                leader = cluster.leader_for(tp)
                if leader is None:
                    missing_leader = True
                    continue
                if leader in self._fetching_nodes:
                    continue
                assert state.fetch_position is not None
                fetches.setdefault(leader, []).append((tp, state.fetch_position, state.epoch))
        if missing_leader:
            self._metadata.add_topics({tp.topic for tp, _ in items})
            self._metadata.request_update()
            backoff = self._settings.retry_backoff_ms
            wait = backoff if wait is None else min(wait, backoff)
        for node, partitions in resets.items():
            self._send_list_offsets(node, partitions)
        for node, partitions in fetches.items():
            self._send_fetch(node, partitions)
        return wait

    def _send_list_offsets(
        self, node: int, partitions: list[tuple[TopicPartition, int, int]]
    ) -> None:
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, timestamp, _epoch in partitions:
            self._resetting.add(tp)
            topics.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "current_leader_epoch": -1,
                    "timestamp": timestamp,
                }
            )
        body = {
            "replica_id": -1,
            "isolation_level": self._settings.isolation_level,
            "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
        }
        future = self._network.send(node, ApiKey.LIST_OFFSETS, body, versions=LIST_OFFSETS_VERSIONS)
        future.add_done_callback(
            lambda f: self._on_list_offsets(f, partitions)  # type: ignore[arg-type]
        )

    def _on_list_offsets(
        self, future: RequestFuture, partitions: list[tuple[TopicPartition, int, int]]
    ) -> None:
        error = future.exception()
        found: dict[TopicPartition, Mapping[str, Any]] = {}
        if error is None:
            for topic in future.result().get("topics") or ():
                for entry in topic.get("partitions") or ():
                    found[TopicPartition(topic["name"], int(entry["partition_index"]))] = entry
        now = self._network.clock.monotonic_ms()
        with self._lock:
            for tp, timestamp, epoch in partitions:
                self._resetting.discard(tp)
                state = self._subscriptions.assignment.get(tp)
                if state is None or state.epoch != epoch or state.reset != timestamp:
                    continue
                entry = found.get(tp)
                code = (
                    int(entry["error_code"]) if entry is not None else ErrorCode.NETWORK_EXCEPTION
                )
                if entry is None or code:
                    log.info("offset reset of %s failed: %s", tp, error or ErrorCode(code).name)
                    self._metadata.handle_error_code(code)
                    self._retry_at[tp] = now + self._settings.retry_backoff_ms
                    continue
                offset = int(entry["offset"])
                state.position = state.fetch_position = offset
                state.reset = None
                state.epoch += 1
            self.condition.notify_all()

    def _send_fetch(self, node: int, partitions: list[tuple[TopicPartition, int, int]]) -> None:
        settings = self._settings
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, offset, _epoch in partitions:
            topics.setdefault(tp.topic, []).append(
                {
                    "partition": tp.partition,
                    "current_leader_epoch": -1,
                    "fetch_offset": offset,
                    "log_start_offset": -1,
                    "partition_max_bytes": min(settings.max_partition_fetch_bytes, _MAX_INT32),
                }
            )
        body = {
            "replica_id": -1,
            "max_wait": settings.fetch_max_wait_ms,
            "min_bytes": settings.fetch_min_bytes,
            "max_bytes": min(settings.fetch_max_bytes, _MAX_INT32),
            "isolation_level": settings.isolation_level,
            "session_id": 0,
            "session_epoch": -1,  # no fetch session (KIP-227)
            "topics": [{"topic": name, "partitions": parts} for name, parts in topics.items()],
            "forgotten_topics_data": [],
            "rack_id": settings.client_rack,
        }
        self._fetching_nodes.add(node)
        future = self._network.send(
            node,
            ApiKey.FETCH,
            body,
            versions=FETCH_VERSIONS,
            timeout_ms=settings.request_timeout_ms + settings.fetch_max_wait_ms,
        )
        future.add_done_callback(
            lambda f: self._on_fetch(f, node, partitions)  # type: ignore[arg-type]
        )

    def _on_fetch(
        self,
        future: RequestFuture,
        node: int,
        partitions: list[tuple[TopicPartition, int, int]],
    ) -> None:
        self._fetching_nodes.discard(node)
        error = future.exception()
        now = self._network.clock.monotonic_ms()
        if error is not None:
            log.info("fetch from broker %d failed: %s", node, error)
            for tp, _offset, _epoch in partitions:
                self._retry_at[tp] = now + self._settings.retry_backoff_ms
            return
        found: dict[TopicPartition, Mapping[str, Any]] = {}
        for topic in future.result().get("responses") or ():
            name = topic["topic"]
            for entry in topic.get("partitions") or ():
                found[TopicPartition(name, int(entry["partition_index"]))] = entry
        filed: list[CompletedFetch] = []
        subscriptions = self._subscriptions
        with self._lock:
            for tp, offset, epoch in partitions:
                state = subscriptions.assignment.get(tp)
                if state is None or state.epoch != epoch or state.fetch_position != offset:
                    continue
                entry = found.get(tp)
                if entry is None:
                    continue
                state.high_watermark = int(entry.get("high_watermark", -1))
                code = int(entry["error_code"])
                if code:
                    self._partition_error(tp, offset, epoch, code, entry, now)
                    continue
                data = entry.get("records") or b""
                if not data:
                    continue
                next_offset = scan(data, offset)
                if next_offset <= offset:
                    continue  # cut off before the first whole batch: fetched first next time
                aborted = entry.get("aborted_transactions")
                if aborted:  # read_committed: the broker listed aborted transactions
                    data = drop_aborted(
                        data, [(int(a["producer_id"]), int(a["first_offset"])) for a in aborted]
                    )
                state.fetch_position = next_offset
                filed.append(CompletedFetch(tp, epoch, offset, next_offset, data))
                self._buffered[tp] = self._buffered.get(tp, 0) + 1
        if not filed:
            return
        # The next Fetch goes out before decoding, so the broker works while we decode.
        self._on_poll(now)
        check_crcs = self._settings.check_crcs
        for completed in filed:
            tp = completed.tp
            try:
                completed.records = decode(
                    tp.topic,
                    tp.partition,
                    completed.data,
                    completed.fetch_offset,
                    check_crcs=check_crcs,
                )
            except Exception as error:
                completed.error = error
            completed.data = b""
        with self._lock:
            self._completed.extend(filed)
            self.condition.notify_all()

    def _partition_error(
        self,
        tp: TopicPartition,
        offset: int,
        epoch: int,
        code: int,
        entry: Mapping[str, Any],
        now: int,
    ) -> None:
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            error = OffsetOutOfRangeError(
                f"{tp}: fetch offset {offset} is out of range (log start offset "
                f"{entry.get('log_start_offset', -1)}, high watermark "
                f"{entry.get('high_watermark', -1)})"
            )
            self._subscriptions.fail_or_reset(tp, error, epoch)
            self.condition.notify_all()
            return
        if needs_metadata_refresh(code):
            self._metadata.request_update()
        else:
            log.warning("fetch of %s failed: %s", tp, error_for_code(code, str(tp)))
        self._retry_at[tp] = now + self._settings.retry_backoff_ms
