"""``ConsumerConnector``: the classic high-level consumer — message streams fed by one group
consumer.

Threading model (one owner each):

- the **poll thread** (started by the first ``create_message_streams*`` call) owns the inner
  ``Consumer``: it subscribes, polls, runs the rebalance listener, routes each poll's records
  by partition into the streams' bounded queues, pauses a partition whose stream queue is full
  (holding the refused chunk) and resumes it once the chunk fits, and makes every commit —
  ``commit_offsets`` from other threads is a request it serves between polls;
- **user threads** iterate the streams (``MessageStream``), normally one thread per stream, and
  may call ``commit_offsets`` and ``shutdown``.

Rules it keeps:

- **One stream per partition.** ``StreamRouter`` places each assigned partition on one stream
  of its topic (``create_message_streams``) or of the filter (``..._by_filter``). On a
  revocation or a loss the partition's queued records are dropped from its stream (they were
  not handed out, so the next owner reads them again from the committed offset) before it is
  placed anywhere else; a partition therefore never feeds two streams at once.
- **Commits** cover what the streams handed out: for each partition still assigned, the offset
  after the last record a stream yielded. ``commit_offsets`` waits for the answer. With
  ``enable.auto.commit`` (or the classic ``auto.commit.enable``, default true) the poll thread
  also commits every ``auto.commit.interval.ms``, before giving up revoked partitions, and on
  ``shutdown``; commit failures there are logged.
- **Topic filters** are pattern subscriptions: topics created later that a ``Whitelist`` (or
  ``Blacklist``) selects join on a metadata refresh (``metadata.max.age.ms``).
- **Shutdown** ends every stream at once (queued records are dropped; iterators raise
  ``StopIteration``), then the poll thread commits (auto commit), leaves the group and closes
  the consumer. An error that stops the poll thread is raised once by each stream, then the
  streams end.

**ZooKeeper coordination** (``zookeeper.connect`` given): the group is legacy Kafka's,
coordinated through ZooKeeper by ``zk_coordinator`` on the poll thread instead of by a Kafka
group coordinator. The member registers in ``/consumers/<group>/ids``, claims its range of
each topic's partitions in ``/consumers/<group>/owners`` (its stream ``i`` of a topic reads
what its thread ``i`` owns) and the inner consumer reads them by manual assignment; commits
go to ``/consumers/<group>/offsets`` (``offsets.storage``, ``dual.commit.enabled``). Without
``bootstrap.servers`` the brokers are found in ``/brokers/ids``. The ZooKeeper session is
opened by the constructor (an unreachable ZooKeeper fails it after
``zookeeper.connection.timeout.ms``) and ended by ``shutdown``.

One ``create_message_streams*`` call per connector, as in the classic API.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from types import MappingProxyType
from typing import Any, Final

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.client.closeable import Closeable
from odradek.client.config import ClientConfig
from odradek.client.consumer import Consumer, ConsumerRecord, OffsetAndMetadata
from odradek.client.streams.config import CONSUMER_CONNECTOR, ConnectorSettings
from odradek.client.streams.filters import TopicFilter
from odradek.client.streams.router import StreamRouter
from odradek.client.streams.stream import ConsumedOffsets, MessageStream
from odradek.client.streams.zk_assignment import Registration
from odradek.client.streams.zk_coordinator import ZooKeeperCoordinator
from odradek.errors import KafkaTimeoutError

__all__ = ["ConsumerConnector"]

log = logging.getLogger(__name__)

#: How long one poll waits; bounds how late a commit request or a shutdown is noticed.
_POLL_MS: Final = 50


class ConsumerConnector(Closeable):
    """Message streams over a consumer group (see the module docstring).

    Args:
        config: settings by Kafka name (a mapping or ``ClientConfig``): every consumer key plus
            ``queued.max.message.chunks``, ``auto.commit.enable`` and the ZooKeeper group's
            keys (``streams.config``). ``group.id`` is required.
        clock: the time source.
        **kwargs: more settings, underscores for dots (``group_id="g"``).

    Raises:
        ConfigError: an unknown setting, a bad value, or no ``group.id``; with
            ``zookeeper.connect``, no ``bootstrap.servers`` and no broker registered.
        StoreConnectionError: ``zookeeper.connect`` unreachable within its connection timeout.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | ClientConfig | None = None,
        /,
        *,
        clock: Clock = SYSTEM_CLOCK,
        **kwargs: Any,
    ) -> None:
        checked = ClientConfig(config, client_type=CONSUMER_CONNECTOR, **kwargs)
        self._settings = ConnectorSettings.from_config(checked)
        self._clock = clock
        self._stopping = threading.Event()
        self._zookeeper: ZooKeeperCoordinator | None = None
        consumer_config = self._settings.consumer_config
        if self._settings.zookeeper is not None:
            self._zookeeper = ZooKeeperCoordinator(
                self._settings.zookeeper, self._settings.group_id, self._stopping, clock
            )
            try:
                consumer_config = self._zookeeper.consumer_config(consumer_config)
                self._consumer = Consumer(consumer_config, clock=clock)
            except BaseException:
                self._zookeeper.close()
                raise
        else:
            self._consumer = Consumer(consumer_config, clock=clock)
        self._consumed = ConsumedOffsets()
        self._streams: list[MessageStream] = []
        self._router: StreamRouter | None = None
        self._subscription: list[str] | re.Pattern[str] = []
        # Poll-thread state.
        self._pending: dict[TopicPartition, deque[list[ConsumerRecord]]] = {}
        self._last_committed: dict[TopicPartition, int] = {}
        # Shared state, guarded by _lock.
        self._lock = threading.Lock()
        self._requests: deque[Future[None]] = deque()
        self._accepting = True
        self._placement: Mapping[TopicPartition, int] = MappingProxyType({})
        self._topic_streams: dict[str, tuple[int, ...]] = {}
        self._filter: TopicFilter | None = None
        self._thread: threading.Thread | None = None
        self._shut_down = False

    # ------------------------------------------------------------------ creating streams

    def create_message_streams(
        self, topic_count: Mapping[str, int]
    ) -> dict[str, list[MessageStream]]:
        """``topic_count[topic]`` streams per topic; each partition of a topic assigned to this
        member feeds exactly one of that topic's streams.

        Raises:
            ValueError: no topics, or a count below 1.
            RuntimeError: streams were created already, or the connector is shut down.
        """
        if not topic_count:
            raise ValueError("create_message_streams needs at least one topic")
        for topic, count in topic_count.items():
            if not isinstance(count, int) or count < 1:
                raise ValueError(f"topic {topic!r}: the stream count must be ≥ 1, got {count!r}")
        out: dict[str, list[MessageStream]] = {}
        indices: dict[str, tuple[int, ...]] = {}
        streams: list[MessageStream] = []
        for topic in sorted(topic_count):
            first = len(streams)
            out[topic] = [self._new_stream(f"{topic}-{i}") for i in range(topic_count[topic])]
            streams.extend(out[topic])
            indices[topic] = tuple(range(first, len(streams)))
        self._start(
            streams, StreamRouter(lambda topic: indices.get(topic, ())), sorted(out), indices
        )
        return out

    def create_message_streams_by_filter(
        self, topic_filter: TopicFilter, num_streams: int = 1
    ) -> list[MessageStream]:
        """``num_streams`` streams fed by every topic ``topic_filter`` selects, including
        topics created later (found on a metadata refresh, ``metadata.max.age.ms``).

        Raises:
            ValueError: a count below 1.
            RuntimeError: streams were created already, or the connector is shut down.
        """
        if not isinstance(num_streams, int) or num_streams < 1:
            raise ValueError(f"the stream count must be ≥ 1, got {num_streams!r}")
        streams = [self._new_stream(f"filter-{i}") for i in range(num_streams)]
        every = tuple(range(num_streams))
        self._start(
            streams, StreamRouter(lambda _topic: every), topic_filter.pattern(), None, topic_filter
        )
        return streams

    def _new_stream(self, name: str) -> MessageStream:
        return MessageStream(
            name,
            self._consumed,
            max_chunks=self._settings.queued_max_message_chunks,
            consumer_timeout_ms=self._settings.consumer_timeout_ms,
            clock=self._clock,
        )

    def _start(
        self,
        streams: list[MessageStream],
        router: StreamRouter,
        subscription: list[str] | re.Pattern[str],
        topic_streams: dict[str, tuple[int, ...]] | None = None,
        topic_filter: TopicFilter | None = None,
    ) -> None:
        with self._lock:
            if self._shut_down:
                raise RuntimeError("the connector is shut down")
            if self._thread is not None:
                raise RuntimeError("streams were already created on this connector")
            self._streams = streams
            self._router = router
            self._subscription = subscription
            self._topic_streams = topic_streams or {}
            self._filter = topic_filter
            self._thread = threading.Thread(
                target=self._run, name=f"odradek-streams-{self._settings.group_id}", daemon=True
            )
        self._thread.start()

    # ------------------------------------------------------------------ user threads

    def commit_offsets(self, timeout_ms: int | None = None) -> None:
        """Commits, for every partition assigned now, the offset after the last record the
        streams handed out; waits for the answer. A no-op before anything was handed out.

        Raises:
            CommitFailedError: the group rebalanced; KafkaError: other failures;
            KafkaTimeoutError: no answer within ``timeout_ms`` (``default.api.timeout.ms``);
            RuntimeError: no streams were created, or the connector is shut down.
        """
        timeout = self._settings.default_api_timeout_ms if timeout_ms is None else timeout_ms
        request: Future[None] = Future()
        with self._lock:
            if self._thread is None:
                raise RuntimeError("commit_offsets() needs streams (create_message_streams)")
            if not self._accepting:
                raise RuntimeError("the connector is shut down")
            self._requests.append(request)
        try:
            request.result(timeout / 1000.0)
        except FutureTimeoutError as exc:
            raise KafkaTimeoutError(f"commit_offsets: no answer within {timeout} ms") from exc

    def shutdown(self, timeout_ms: int = 30_000) -> None:
        """Ends every stream, commits (auto commit), leaves the group and closes the consumer;
        waits up to ``timeout_ms`` for the poll thread. Idempotent; callable from any thread."""
        with self._lock:
            if self._shut_down:
                return
            self._shut_down = True
            thread = self._thread
        for stream in self._streams:
            stream.end()
        self._stopping.set()
        if thread is None:
            if self._zookeeper is not None:
                self._zookeeper.close()
            self._consumer.close(timeout_ms, autocommit=False)
            return
        if thread is not threading.current_thread():
            thread.join(timeout_ms / 1000.0)
            if thread.is_alive():
                log.warning("group %s: the poll thread did not stop", self._settings.group_id)

    def partitions_by_stream(self) -> dict[str, list[TopicPartition]]:
        """Which partitions feed which stream now (by stream name)."""
        with self._lock:
            placement = self._placement
        out: dict[str, list[TopicPartition]] = {stream.name: [] for stream in self._streams}
        for tp, index in sorted(placement.items()):
            out[self._streams[index].name].append(tp)
        return out

    def statistics(self) -> dict[str, Any]:
        """A snapshot: placement, paused partitions, each stream's queue."""
        with self._lock:
            paused = len(self._pending)  # read racily: a gauge, not a contract
        zookeeper = self._zookeeper
        return {
            "group_id": self._settings.group_id,
            "zookeeper": None if zookeeper is None else zookeeper.statistics(),
            "partitions_by_stream": {
                name: [str(tp) for tp in tps] for name, tps in self.partitions_by_stream().items()
            },
            "paused_partitions": paused,
            "streams": {stream.name: stream.statistics() for stream in self._streams},
        }

    # ------------------------------------------------------------------ poll thread

    def _run(self) -> None:
        consumer = self._consumer
        settings = self._settings
        failure: BaseException | None = None
        try:
            listener = _Listener(self)
            zookeeper = self._zookeeper
            if zookeeper is not None:
                zookeeper.start(self._registration())
            elif isinstance(self._subscription, re.Pattern):
                consumer.subscribe(pattern=self._subscription, listener=listener)
            else:
                consumer.subscribe(self._subscription, listener)
            next_auto_commit = self._clock.monotonic_ms() + settings.auto_commit_interval_ms
            while not self._stopping.is_set():
                self._serve_requests()
                self._flush_pending()
                if settings.auto_commit and self._clock.monotonic_ms() >= next_auto_commit:
                    self._commit_quietly()
                    next_auto_commit = self._clock.monotonic_ms() + settings.auto_commit_interval_ms
                if zookeeper is not None:
                    zookeeper.poll(consumer, listener)
                    if not consumer.assignment():  # nothing owned: nothing to poll
                        self._stopping.wait(_POLL_MS / 1000.0)
                        continue
                records = consumer.poll(_POLL_MS)
                if records:
                    self._route(records)
            self._serve_requests()
            if settings.auto_commit:
                self._commit_quietly()
        except BaseException as exc:
            failure = exc
            log.exception("group %s: the streams' poll thread failed", settings.group_id)
        finally:
            with self._lock:
                self._accepting = False
                requests = list(self._requests)
                self._requests.clear()
            for request in requests:
                request.set_exception(failure or RuntimeError("the connector is shut down"))
            for stream in self._streams:
                stream.end(failure)
            if self._zookeeper is not None:
                try:
                    self._zookeeper.close()
                except Exception:
                    log.exception("group %s: leaving ZooKeeper failed", settings.group_id)
            try:
                consumer.close(autocommit=False)
            except Exception:
                log.exception("group %s: closing the consumer failed", settings.group_id)

    def _registration(self) -> Registration:
        """This member's ZooKeeper registration: its topics' stream counts, or its filter."""
        if isinstance(self._subscription, re.Pattern):
            assert self._filter is not None
            return Registration.for_filter(self._filter, len(self._streams))
        return Registration({topic: len(s) for topic, s in self._topic_streams.items()})

    def _serve_requests(self) -> None:
        while True:
            with self._lock:
                if not self._requests:
                    return
                request = self._requests.popleft()
            if not request.set_running_or_notify_cancel():
                continue
            try:
                self._commit(None)
            except Exception as exc:
                request.set_exception(exc)
            else:
                request.set_result(None)

    def _commit(self, partitions: Iterable[TopicPartition] | None) -> None:
        """Commits what was handed out for ``partitions`` (``None``: every placed one)."""
        assert self._router is not None
        placed = self._router.partitions()
        wanted = placed if partitions is None else [tp for tp in partitions if tp in placed]
        consumed = self._consumed.snapshot()
        offsets = {
            tp: consumed[tp]
            for tp in wanted
            if tp in consumed and self._last_committed.get(tp) != consumed[tp]
        }
        if not offsets:
            return
        if self._zookeeper is not None:
            self._zookeeper.commit(self._consumer, offsets)
        else:
            self._consumer.commit_sync({tp: OffsetAndMetadata(o) for tp, o in offsets.items()})
        self._last_committed.update(offsets)

    def _commit_quietly(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        try:
            self._commit(partitions)
        except Exception as exc:
            log.warning("group %s: auto commit failed: %s", self._settings.group_id, exc)

    def _route(self, records: Sequence[ConsumerRecord]) -> None:
        """Queues each partition's records as one chunk on its stream; a refused chunk is held
        and its partition paused (backpressure)."""
        assert self._router is not None
        chunks: dict[tuple[str, int], list[ConsumerRecord]] = {}
        for record in records:
            key = (record.topic, record.partition)
            chunk = chunks.get(key)
            if chunk is None:
                chunks[key] = [record]
            else:
                chunk.append(record)
        for (topic, partition), chunk in chunks.items():
            tp = TopicPartition(topic, partition)
            index = self._router.stream_for(tp)
            if index is None:
                log.warning("%s: records of a partition no stream owns dropped", tp)
                continue
            held = self._pending.get(tp)
            if held is None:
                if self._streams[index].offer(tp, chunk):
                    continue
                held = self._pending[tp] = deque()
                self._consumer.pause(tp)
                log.debug("%s: stream %s full, partition paused", tp, self._streams[index].name)
            held.append(chunk)

    def _flush_pending(self) -> None:
        assert self._router is not None
        for tp in list(self._pending):
            held = self._pending[tp]
            index = self._router.stream_for(tp)
            if index is None:
                del self._pending[tp]
                continue
            stream = self._streams[index]
            while held and stream.offer(tp, held[0]):
                held.popleft()
            if not held:
                del self._pending[tp]
                self._consumer.resume(tp)

    def _publish_placement(self) -> None:
        assert self._router is not None
        placement = MappingProxyType(self._router.partitions())
        with self._lock:
            self._placement = placement

    # -- rebalance listener (poll thread, inside Consumer.poll or ZooKeeperCoordinator.poll)

    def _placed(self, placement: Mapping[TopicPartition, int]) -> None:
        """The ZooKeeper group's assignment: thread ``i`` of a topic feeds its stream ``i``."""
        assert self._router is not None
        streams = self._router.place(placement)
        for tp, index in sorted(streams.items()):
            log.info("%s: feeds stream %s", tp, self._streams[index].name)
        self._publish_placement()

    def _assigned(self, partitions: Iterable[TopicPartition]) -> None:
        assert self._router is not None
        placed = self._router.add(partitions)
        for tp, index in sorted(placed.items()):
            log.info("%s: feeds stream %s", tp, self._streams[index].name)
        self._publish_placement()

    def _revoked(self, partitions: Iterable[TopicPartition], *, lost: bool) -> None:
        assert self._router is not None
        partitions = list(partitions)
        for tp in partitions:
            index = self._router.stream_for(tp)
            if index is not None:
                self._streams[index].purge(tp)
            self._pending.pop(tp, None)
        if self._settings.auto_commit and not lost:
            self._commit_quietly(partitions)
        for tp in partitions:
            self._router.remove(tp)
            self._consumed.discard(tp)
            self._last_committed.pop(tp, None)
        self._publish_placement()

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """``shutdown`` (what ``with connector:`` calls on the way out)."""
        self.shutdown()

    def __repr__(self) -> str:
        return f"<ConsumerConnector group={self._settings.group_id!r} streams={len(self._streams)}>"


class _Listener:
    """The rebalance listener the poll thread's consumer calls (inside ``poll``)."""

    __slots__ = ("_connector",)

    def __init__(self, connector: ConsumerConnector) -> None:
        self._connector = connector

    def on_partitions_assigned(self, partitions: Iterable[TopicPartition]) -> None:
        self._connector._assigned(partitions)

    def on_partitions_revoked(self, partitions: Iterable[TopicPartition]) -> None:
        self._connector._revoked(partitions, lost=False)

    def on_partitions_lost(self, partitions: Iterable[TopicPartition]) -> None:
        self._connector._revoked(partitions, lost=True)

    # -- the ZooKeeper coordinator's listener (zk_coordinator.RebalanceListener)

    def revoked(self, partitions: list[TopicPartition], *, lost: bool) -> None:
        self._connector._revoked(partitions, lost=lost)

    def assigned(self, placement: Mapping[TopicPartition, int]) -> None:
        self._connector._placed(placement)
