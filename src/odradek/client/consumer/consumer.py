"""``Consumer``: Kafka's consumer facade — manual assignment or group subscription, positions,
``poll``, pause/resume, deserializers, commits.

Threading model (three threads, one owner each):

- the **application thread** calls the public methods (the consumer is not thread-safe,
  except ``wakeup``-free ``close`` from the same thread, as in Kafka); records are decoded and
  deserialized here, inside ``poll``, and rebalance listener and commit callbacks run here;
- the **fetcher thread** owns the fetch ``NetworkClient`` and prefetches (``fetcher``);
- with a ``group.id``, the **heartbeat thread** owns the coordinator's ``NetworkClient``
  (``coordinator``): heartbeats, and the group requests the application thread makes.

``poll(timeout_ms)`` returns a **list** of ``ConsumerRecord`` in fetch order (records of one
partition in offset order), at most ``max.poll.records``; it returns as soon as any record is
available, or ``[]`` after ``timeout_ms``. It raises a partition's recorded error
(``NoOffsetForPartitionError`` with ``auto.offset.reset=none``, ``OffsetOutOfRangeError``) until
the partition is sought. Iterating the consumer yields records one by one, forever or until
``consumer.timeout.ms`` passes without one.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.client.closeable import Closeable
from odradek.client.cluster import Metadata, MetadataUpdater
from odradek.client.config import CONSUMER, ClientConfig
from odradek.client.consumer.config import ConsumerSettings
from odradek.client.consumer.coordinator import ConsumerCoordinator, RebalanceListener
from odradek.client.consumer.deserializers import resolve_deserializer
from odradek.client.consumer.fetcher import Fetcher
from odradek.client.consumer.group_membership import ConsumerMembership
from odradek.client.consumer.network_thread import NetworkThread
from odradek.client.consumer.record import ConsumerRecord, OffsetAndMetadata
from odradek.client.consumer.subscription import EARLIEST, LATEST, SubscriptionState
from odradek.client.network import NetworkClient
from odradek.client.producer._plugins import close_quietly
from odradek.errors import ConfigError, ErrorCode, KafkaError, KafkaTimeoutError

__all__ = ["Consumer"]

log = logging.getLogger(__name__)

CommitCallback = Callable[[Mapping[TopicPartition, OffsetAndMetadata], BaseException | None], None]


class Consumer(Closeable):
    """A Kafka consumer (see the module docstring).

    Args:
        config: settings by Kafka name (a mapping or ``ClientConfig``), or the
            ``bootstrap.servers`` string.
        *topics: topics to subscribe to at once (kafka-python's form; needs ``group.id``).
        clock: the time source.
        **kwargs: more settings, underscores for dots (``group_id="g"``).

    Raises:
        ConfigError: an unknown setting (named), a bad value, or a bad deserializer.
    """

    def __init__(
        self,
        config: str | Mapping[str, Any] | ClientConfig | None = None,
        /,
        *topics: str,
        clock: Clock = SYSTEM_CLOCK,
        **kwargs: Any,
    ) -> None:
        settings_in = {"bootstrap.servers": config} if isinstance(config, str) else config
        self._config = ClientConfig(settings_in, client_type=CONSUMER, **kwargs)
        settings = ConsumerSettings.from_config(self._config)
        self._settings = settings
        self._clock = clock
        configs = dict(self._config)
        self._key_deserializer = resolve_deserializer(
            settings.key_deserializer, "key.deserializer", configs
        )
        self._value_deserializer = resolve_deserializer(
            settings.value_deserializer, "value.deserializer", configs
        )
        self._subscriptions = SubscriptionState(settings.auto_offset_reset)
        self._metadata = Metadata.from_config(
            self._config, allow_auto_topic_creation=settings.allow_auto_create_topics
        )
        network = NetworkClient(self._config, clock=clock)
        self._updater = MetadataUpdater(network, self._metadata)
        self._fetcher = Fetcher(
            settings,
            network,
            self._metadata,
            self._subscriptions,
            self._key_deserializer,
            self._value_deserializer,
        )
        self._fetch_thread = NetworkThread(network, "odradek-consumer-fetcher")
        self._coordinator: ConsumerCoordinator | None = None
        if settings.group_id is not None:
            member = (
                ConsumerMembership if settings.group_protocol == "consumer" else ConsumerCoordinator
            )
            self._coordinator = member(
                settings,
                NetworkClient(self._config, clock=clock),
                self._metadata,
                self._subscriptions,
                self._fetcher,
                clock,
            )
        self._closed = False
        self._fetch_thread.start()
        if self._coordinator is not None:
            self._coordinator.start()
        if topics:
            self.subscribe(list(topics))

    @property
    def config(self) -> ClientConfig:
        return self._config

    # ------------------------------------------------------------------ assignment

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Reads exactly these partitions (no group management); ``[]`` unassigns.

        Raises:
            RuntimeError: the consumer is subscribed (``unsubscribe`` first).
        """
        self._check_open()
        partitions = list(partitions)
        self._subscriptions.assign(partitions)
        self._metadata.add_topics({tp.topic for tp in partitions})
        self._fetcher.wakeup()

    def assignment(self) -> set[TopicPartition]:
        """The partitions assigned now (manually or by the group)."""
        with self._subscriptions.lock:
            return set(self._subscriptions.assignment)

    def subscribe(
        self,
        topics: Sequence[str] | str | re.Pattern[str] = (),
        listener: RebalanceListener | None = None,
        *,
        pattern: str | re.Pattern[str] | None = None,
        exclude_pattern: str | re.Pattern[str] | None = None,
        regex: str | None = None,
    ) -> None:
        """Joins the group for ``topics`` (a list, or a compiled ``re.Pattern`` / ``pattern=``
        matched against every topic name, new topics included on metadata refresh).

        ``exclude_pattern`` leaves out the topics it finds (``re.search``) from a pattern
        subscription (the whitelist / blacklist filters of Kafka's old consumer); alone, it
        subscribes to every topic it does not find.

        ``regex`` (``group.protocol=consumer`` only) subscribes to the topics whose whole name
        the *broker* matches with it (KIP-848's RE2/J subscription; topics starting with ``__``
        never match); the other forms are matched here and sent as topic names.

        ``listener`` may have ``on_partitions_revoked(partitions)``,
        ``on_partitions_assigned(partitions)`` and ``on_partitions_lost(partitions)`` (default:
        the revoked callback), called on the application thread inside ``poll``.

        Raises:
            ConfigError: no ``group.id``.
            RuntimeError: the consumer has a manual assignment.
            ValueError: ``exclude_pattern`` with a list of topics.
        """
        self._check_open()
        if self._coordinator is None:
            raise ConfigError("subscribe() needs a group.id (use assign() without a group)")
        membership = self._coordinator
        if regex is not None:
            if not isinstance(membership, ConsumerMembership):
                raise ConfigError("subscribe(regex=...) needs group.protocol=consumer (KIP-848)")
            if topics or pattern is not None or exclude_pattern is not None:
                raise ValueError("regex goes alone, without topics or patterns")
            pattern = re.compile(regex)
        if isinstance(membership, ConsumerMembership):
            membership.set_regex(regex)
        if isinstance(topics, re.Pattern):
            pattern, topics = topics, ()
        elif isinstance(topics, str):
            topics = [topics]
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        excluded = (
            re.compile(exclude_pattern) if isinstance(exclude_pattern, str) else exclude_pattern
        )
        if excluded is not None:
            if topics:
                raise ValueError("exclude_pattern goes with a pattern subscription, not topics")
            compiled = compiled or re.compile("")
        if compiled is None and not topics:
            self.unsubscribe()
            return
        self._subscriptions.subscribe(list(topics), compiled, excluded)
        self._coordinator.set_listener(listener)
        if compiled is not None:
            self._metadata.set_topics(None)
        else:
            self._metadata.add_topics(topics)
        self._coordinator.subscription_changed()

    def subscription(self) -> set[str]:
        """The subscribed topics (for a pattern: the matching ones known so far)."""
        return set(self._subscriptions.topics)

    def unsubscribe(self) -> None:
        """Leaves the group's subscription (revoking what it owns) or drops the assignment."""
        self._check_open()
        if self._coordinator is not None and self._subscriptions.subscribed:
            self._coordinator.unsubscribe()
        self._subscriptions.unsubscribe()

    # ------------------------------------------------------------------ positions

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """The next ``poll`` returns ``partition``'s records from ``offset`` on.

        Raises:
            RuntimeError: the partition is not assigned.
            ValueError: a negative offset.
        """
        self._check_open()
        if offset < 0:
            raise ValueError(f"seek offset must not be negative, got {offset}")
        self._subscriptions.seek(partition, offset)
        self._fetcher.wakeup()

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Moves to the log start offset (evaluated lazily); ``None``: every assigned one."""
        self._seek_to(partitions, EARLIEST)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Moves to the log end offset (evaluated lazily); ``None``: every assigned one."""
        self._seek_to(partitions, LATEST)

    def _seek_to(self, partitions: Iterable[TopicPartition] | None, timestamp: int) -> None:
        self._check_open()
        targets = list(self.assignment() if partitions is None else partitions)
        for tp in targets:
            self._subscriptions.request_reset(tp, timestamp)
        self._fetcher.wakeup()

    def position(self, partition: TopicPartition, timeout_ms: int | None = None) -> int:
        """The offset of the next record ``poll`` returns for ``partition``, looked up
        (committed offset or reset) if not known yet.

        Raises:
            RuntimeError: the partition is not assigned.
            KafkaTimeoutError: not known within ``timeout_ms`` (``default.api.timeout.ms``).
            NoOffsetForPartitionError: no committed offset and ``auto.offset.reset=none``.
        """
        self._check_open()
        timeout = self._settings.default_api_timeout_ms if timeout_ms is None else timeout_ms
        deadline = self._clock.monotonic_ms() + timeout
        while True:
            with self._subscriptions.lock:
                state = self._subscriptions.state(partition)
                if state.error is not None:
                    raise state.error
                if state.position is not None:
                    return state.position
            if self._coordinator is not None:
                self._coordinator.refresh_committed_offsets(deadline)
            self._fetcher.wakeup()
            remaining = deadline - self._clock.monotonic_ms()
            if remaining <= 0:
                raise KafkaTimeoutError(f"{partition}: no position within {timeout} ms")
            self._fetcher.wait(min(remaining, 100))

    def highwater(self, partition: TopicPartition) -> int | None:
        """The partition's high watermark as of the last fetch (``None``: not fetched yet)."""
        with self._subscriptions.lock:
            mark = self._subscriptions.state(partition).high_watermark
        return mark if mark >= 0 else None

    # ------------------------------------------------------------------ pause

    def pause(self, *partitions: TopicPartition | Iterable[TopicPartition]) -> None:
        """Stops returning (and fetching) records of these partitions until ``resume``."""
        with self._subscriptions.lock:
            for tp in _flatten(partitions):
                state = self._subscriptions.state(tp)
                state.paused = True
                state.fetch_position = state.position  # buffered data is fetched again later
                state.epoch += 1

    def resume(self, *partitions: TopicPartition | Iterable[TopicPartition]) -> None:
        """Fetches and returns these partitions' records again."""
        with self._subscriptions.lock:
            for tp in _flatten(partitions):
                self._subscriptions.state(tp).paused = False
        self._fetcher.wakeup()

    def paused(self) -> set[TopicPartition]:
        with self._subscriptions.lock:
            return {tp for tp, s in self._subscriptions.assignment.items() if s.paused}

    # ------------------------------------------------------------------ poll

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> list[ConsumerRecord]:
        """The next records (see the module docstring), waiting up to ``timeout_ms``.

        Raises:
            NoOffsetForPartitionError, OffsetOutOfRangeError: as recorded for a partition.
            CorruptRecordError: a batch failed its checks.
            Exception: a deserializer's error.
            RuntimeError: neither assigned nor subscribed, or closed.
        """
        self._check_open()
        subscriptions = self._subscriptions
        if not subscriptions.assignment and not subscriptions.subscribed:
            raise RuntimeError("poll() needs an assignment or a subscription")
        limit = self._settings.max_poll_records if max_records is None else max_records
        clock = self._clock
        deadline = clock.monotonic_ms() + max(0, timeout_ms)
        coordinator = self._coordinator
        fetcher = self._fetcher
        while True:
            if coordinator is not None:
                coordinator.poll(deadline)
            records = fetcher.drain(limit)
            if records:
                return records
            error = subscriptions.error()
            if error is not None:
                raise error
            remaining = deadline - clock.monotonic_ms()
            if remaining <= 0:
                return []
            fetcher.wait(remaining)

    def __iter__(self) -> Iterator[ConsumerRecord]:
        timeout = self._settings.consumer_timeout_ms
        while not self._closed:
            records = self.poll(timeout if timeout >= 0 else 1_000)
            if not records and timeout >= 0:
                return
            yield from records

    # ------------------------------------------------------------------ commits

    def commit_sync(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        """Commits ``offsets`` (default: every position), waiting for the answer. An offset is
        the **next** one to read.

        Raises:
            CommitFailedError: the group rebalanced; KafkaError: other failures;
            KafkaTimeoutError: no answer within ``timeout_ms`` (``default.api.timeout.ms``).
        """
        coordinator = self._group("commit_sync")
        timeout = self._settings.default_api_timeout_ms if timeout_ms is None else timeout_ms
        coordinator.commit_sync(_offsets(offsets, self._subscriptions), timeout)

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        callback: CommitCallback | None = None,
    ) -> None:
        """Commits without waiting; ``callback(offsets, error)`` runs on this thread in a later
        ``poll``, ``commit_sync`` or ``close``."""
        coordinator = self._group("commit_async")
        coordinator.commit_async(_offsets(offsets, self._subscriptions), callback)

    def committed(
        self, partitions: Iterable[TopicPartition], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets of ``partitions`` (``None``: none committed)."""
        coordinator = self._group("committed")
        timeout = self._settings.default_api_timeout_ms if timeout_ms is None else timeout_ms
        return coordinator.fetch_committed(list(partitions), timeout)

    def _group(self, what: str) -> ConsumerCoordinator:
        self._check_open()
        if self._coordinator is None:
            raise KafkaError(f"{what}() needs a group.id", code=ErrorCode.INVALID_GROUP_ID)
        return self._coordinator

    # ------------------------------------------------------------------ metadata

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The topic's partition ids (``None``: unknown), waiting for metadata if needed."""
        try:
            entry = self._metadata.wait_for_topic(
                topic, self._settings.default_api_timeout_ms, monotonic_ms=self._clock.monotonic_ms
            )
        except KafkaTimeoutError:
            return None
        return {p.partition for p in entry.partitions}

    # ------------------------------------------------------------------ lifecycle

    def close(self, timeout_ms: int | None = None, *, autocommit: bool = True) -> None:
        """Commits (with ``enable.auto.commit``), leaves the group, stops the threads and closes
        the connections; idempotent."""
        if self._closed:
            return
        timeout = 30_000 if timeout_ms is None else timeout_ms
        try:
            if self._coordinator is not None:
                self._coordinator.close(timeout, autocommit=autocommit)
        finally:
            self._closed = True
            self._fetcher.close()
            self._metadata.close()
            self._fetch_thread.close(timeout / 1000.0)
            close_quietly(self._key_deserializer, "key.deserializer", log)
            close_quietly(self._value_deserializer, "value.deserializer", log)

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the consumer is closed")

    def __repr__(self) -> str:
        group = self._settings.group_id
        return f"<Consumer group={group!r} assignment={sorted(self.assignment())}>"


def _flatten(items: Sequence[TopicPartition | Iterable[TopicPartition]]) -> list[TopicPartition]:
    out: list[TopicPartition] = []
    for item in items:
        if isinstance(item, TopicPartition):
            out.append(item)
        else:
            out.extend(item)
    return out


def _offsets(
    offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None,
    subscriptions: SubscriptionState,
) -> dict[TopicPartition, OffsetAndMetadata]:
    if offsets is None:
        return {tp: OffsetAndMetadata(p) for tp, p in subscriptions.positions().items()}
    return {
        tp: value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(int(value))
        for tp, value in offsets.items()
    }
