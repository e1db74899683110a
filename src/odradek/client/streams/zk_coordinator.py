"""``ZooKeeperCoordinator``: the classic connector's group coordination through ZooKeeper —
legacy Kafka's rebalance, run on the connector's poll thread.

Used by ``ConsumerConnector`` when it is given ``zookeeper.connect``; the inner consumer then
reads manually assigned partitions (no Kafka group membership) and this object decides which.

The rebalance (Kafka 0.8's, on every change of the group's members or of a subscribed topic's
partitions, noticed through ZooKeeper watches, and once at start):

1. read every member's registration and every subscribed topic's partitions, and compute this
   member's share with the range assignment (``zk_assignment``); when it equals what this
   member owns, and the owner nodes still say so, nothing happens;
2. **release** everything owned: the listener's ``revoked`` (its streams drop queued records;
   with auto commit, what they handed out is committed), then the owner nodes are deleted;
3. **claim** the share: create each ephemeral owner node holding the thread id. A node another
   thread still owns (a member that has not released yet) fails the attempt: what this attempt
   claimed is released, and after ``rebalance.backoff.ms`` the whole rebalance runs again, at
   most ``rebalance.max.retries`` times; then ``ConsumerRebalanceFailedError``. The backoff
   ends early once the blocking owner node is gone or another change is noticed (Kafka slept
   the whole backoff: a member joining a group waited ~2 s for the others to release);
4. **take** the claimed partitions: assign them to the consumer, start each at its committed
   offset (``offsets.storage``; with ``dual.commit.enabled`` the greater of ZooKeeper's and
   Kafka's) or else where ``auto.offset.reset`` says, and call the listener's ``assigned`` with
   each partition's stream index (thread ``<consumer id>-i`` feeds the topic's stream ``i``).

Commits (``commit``) go to ZooKeeper's offset nodes, to Kafka's group coordinator (the inner
consumer's ``commit_sync``), or both when dual. A session that expires loses every owned
partition (the listener's ``revoked`` with ``lost``); a new session registers again and
rebalances. A rebalance that meets an unreachable ZooKeeper (within the session) is tried
again on the next poll. ``close`` releases the owner nodes and ends the session (the
registration goes).

Not thread-safe: the connector's poll thread is its only user, except the watch callbacks,
which only set an event.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Mapping
from typing import Final, Protocol

from odradek._clock import Clock
from odradek._types import TopicPartition
from odradek.client.config import ClientConfig
from odradek.client.consumer import Consumer, OffsetAndMetadata
from odradek.client.consumer.record import NoOffsetForPartitionError
from odradek.client.streams.config import ZooKeeperSettings
from odradek.client.streams.zk_assignment import (
    Registration,
    consumer_id,
    group_assignment,
    thread_ids,
)
from odradek.client.streams.zookeeper import ZooKeeperGroup
from odradek.errors import (
    ConfigError,
    KafkaError,
    NodeExistsError,
    SessionClosedError,
    StoreConnectionError,
)

__all__ = [
    "ConsumerIdInUseError",
    "ConsumerRebalanceFailedError",
    "RebalanceListener",
    "ZooKeeperCoordinator",
]

log = logging.getLogger(__name__)

#: While backing off, how often the partition that blocked a claim is checked: a member that
#: is releasing frees it within milliseconds, and the backoff (2 s by default) need not pass.
_BLOCKED_CHECK_S: Final = 0.02


class ConsumerRebalanceFailedError(KafkaError):
    """A member could not claim its share within ``rebalance.max.retries`` attempts."""


class ConsumerIdInUseError(KafkaError):
    """Another live member of the group is registered with this member's consumer id."""


class RebalanceListener(Protocol):
    """What the coordinator tells the connector (on the poll thread)."""

    def revoked(self, partitions: list[TopicPartition], *, lost: bool) -> None: ...

    def assigned(self, placement: Mapping[TopicPartition, int]) -> None:
        """``placement``: each new partition's thread index (its stream among the topic's)."""
        ...


class ZooKeeperCoordinator:
    """This member's ZooKeeper coordination (see the module docstring).

    Args:
        settings: the ZooKeeper settings.
        group_id: the group.
        stopping: set when the connector shuts down (ends a backoff early).
        clock: the time source (registration timestamps, the consumer id).

    Raises:
        StoreConnectionError: no ZooKeeper session within ``zookeeper.connection.timeout.ms``.
        InvalidPathError: a malformed ``zookeeper.connect``.
    """

    def __init__(
        self,
        settings: ZooKeeperSettings,
        group_id: str,
        stopping: threading.Event,
        clock: Clock,
    ) -> None:
        self.settings = settings
        self.group_id = group_id
        self.member = consumer_id(
            group_id, settings.consumer_id, socket.gethostname(), clock.now_ms()
        )
        self._stopping = stopping
        self._clock = clock
        self._needed = threading.Event()
        self._session_lost = threading.Event()
        self._registration = Registration({})
        self._owned: dict[TopicPartition, str] = {}
        self._rebalances = 0  # completed: partitions released and claimed
        self._failed_attempts = 0  # attempts that found a partition still owned
        self.group = self._open()

    def _open(self) -> ZooKeeperGroup:
        group = ZooKeeperGroup(
            self.settings.connect,
            self.group_id,
            self.member,
            self._needed.set,
            session_timeout_ms=self.settings.session_timeout_ms,
            connection_timeout_ms=self.settings.connection_timeout_ms,
        )
        group.add_session_lost_listener(self._session_lost.set)
        return group

    def consumer_config(self, config: ClientConfig) -> ClientConfig:
        """``config`` with ``bootstrap.servers`` from ZooKeeper's broker registrations when
        it has none (the classic connector needed ZooKeeper only).

        Raises:
            ConfigError: no ``bootstrap.servers`` and no broker registered.
        """
        if "bootstrap.servers" in config.given:
            return config
        addresses = self.group.broker_addresses()
        if not addresses:
            raise ConfigError(
                f"no broker is registered in ZooKeeper ({self.settings.connect}) "
                "and no bootstrap.servers is given"
            )
        return config.with_overrides({"bootstrap.servers": addresses})

    # ------------------------------------------------------------------ poll thread

    def start(self, registration: Registration) -> None:
        """Registers this member (its topics and stream counts, or its topic filter) and
        watches the group and the topics; the first ``poll`` rebalances."""
        self._registration = registration
        self._register()

    def _register(self) -> None:
        """Registers, waiting out a registration of the same consumer id left by a session
        that has not expired yet (a restarted member with a fixed ``consumer.id``).

        Raises:
            ConsumerIdInUseError: the id stayed registered for a whole session timeout.
        """
        registration = self._registration
        patience_ms = self.settings.session_timeout_ms + self.settings.connection_timeout_ms
        deadline = self._clock.monotonic_ms() + patience_ms
        while True:
            try:
                self.group.register(registration, self._clock.now_ms())
                break
            except NodeExistsError:
                if self._clock.monotonic_ms() >= deadline:
                    raise ConsumerIdInUseError(
                        f"consumer id {self.member} stays registered in group {self.group_id} "
                        "(another live member has this consumer.id)"
                    ) from None
                if self._stopping.wait(min(0.1, self.settings.session_timeout_ms / 10_000)):
                    return
        if registration.is_wildcard:
            self.group.watch_topic_list()
        else:
            self.group.watch_topics(registration.subscription)
        self._needed.set()
        log.info(
            "group %s: %s registered in ZooKeeper for %s (%s)",
            self.group_id,
            self.member,
            dict(registration.subscription),
            registration.pattern,
        )

    def poll(self, consumer: Consumer, listener: RebalanceListener) -> None:
        """Rebalances when a change was noticed (see the module docstring).

        Raises:
            ConsumerRebalanceFailedError: every attempt found a partition still owned.
            NoOffsetForPartitionError: no committed offset and ``auto.offset.reset=none``.
        """
        if self._session_lost.is_set():
            self._renew(consumer, listener)
        if not self._needed.is_set():
            return
        try:
            self._rebalance(consumer, listener)
        except SessionClosedError:
            self._session_lost.set()  # the next poll registers in a new session
        except StoreConnectionError as error:
            # ZooKeeper is unreachable for now (within the session): try again next poll.
            log.warning("group %s: rebalance postponed: %s", self.group_id, error)
            self._needed.set()

    def _rebalance(self, consumer: Consumer, listener: RebalanceListener) -> None:
        attempts = self.settings.rebalance_max_retries
        for attempt in range(1, attempts + 1):
            self._needed.clear()
            wanted = self._share()
            if wanted == self._owned and self._still_owned():
                return
            self._release(consumer, listener)
            blocked = self._claim(wanted)
            if blocked is None:
                self._take(consumer, listener, wanted)
                self._rebalances += 1
                return
            self._failed_attempts += 1
            log.info(
                "group %s: %s rebalance attempt %d/%d found partitions still owned",
                self.group_id,
                self.member,
                attempt,
                attempts,
            )
            if attempt < attempts and self._back_off(blocked):
                return
        raise ConsumerRebalanceFailedError(
            f"group {self.group_id}: {self.member} could not claim its partitions after "
            f"{attempts} attempts (rebalance.max.retries)"
        )

    def statistics(self) -> dict[str, object]:
        """A snapshot (read racily from other threads: gauges, not a contract)."""
        return {
            "member": self.member,
            "owned": {str(tp): thread for tp, thread in sorted(dict(self._owned).items())},
            "rebalances": self._rebalances,
            "failed_attempts": self._failed_attempts,
        }

    def commit(self, consumer: Consumer, offsets: Mapping[TopicPartition, int]) -> None:
        """Commits next offsets where ``offsets.storage`` (and dual commit) say."""
        if not offsets:
            return
        if self.settings.commits_to_kafka:
            consumer.commit_sync({tp: OffsetAndMetadata(offset) for tp, offset in offsets.items()})
        if self.settings.commits_to_zookeeper:
            self.group.commit(offsets)

    def close(self) -> None:
        """Releases the owner nodes and ends the session. Idempotent."""
        if not self.group.closed:
            for tp, thread in sorted(self._owned.items()):
                try:
                    self.group.release(tp, thread)
                except Exception as error:
                    log.warning("group %s: releasing %s failed: %s", self.group_id, tp, error)
        self._owned.clear()
        self.group.close()

    # ------------------------------------------------------------------ the rebalance

    def _share(self) -> dict[TopicPartition, str]:
        registrations = self.group.members()
        registrations[self.member] = self._registration
        wildcard = any(r.is_wildcard for r in registrations.values())
        cluster_topics = self.group.topics() if wildcard else []
        exclude = self.settings.exclude_internal_topics
        counts = {
            name: r.topic_counts(cluster_topics, exclude_internal=exclude)
            for name, r in registrations.items()
        }
        mine = counts[self.member]
        self.group.watch_topics(mine)  # a topic a filter selects: its partitions may grow
        partitions = {topic: self.group.partitions(topic) for topic in mine}
        return {
            tp: thread
            for tp, thread in group_assignment(partitions, counts).items()
            if thread in thread_ids(self.member, mine[tp.topic])
        }

    def _still_owned(self) -> bool:
        return all(self.group.owner(tp) == thread for tp, thread in self._owned.items())

    def _release(self, consumer: Consumer, listener: RebalanceListener) -> None:
        if not self._owned:
            return
        listener.revoked(sorted(self._owned), lost=False)
        for tp, thread in sorted(self._owned.items()):
            self.group.release(tp, thread)
        self._owned.clear()
        consumer.assign([])

    def _claim(self, wanted: Mapping[TopicPartition, str]) -> TopicPartition | None:
        """Claims every wanted partition, or none: returns the first one another thread
        owns (``None``: all claimed)."""
        claimed: list[TopicPartition] = []
        for tp, thread in sorted(wanted.items()):
            if not self.group.claim(tp, thread):
                log.debug("group %s: %s still owned by %s", self.group_id, tp, self.group.owner(tp))
                for done in claimed:
                    self.group.release(done, wanted[done])
                return tp
            claimed.append(tp)
        return None

    def _back_off(self, blocked: TopicPartition) -> bool:
        """Waits ``rebalance.backoff.ms``, or less: until ``blocked`` has no owner or another
        change is noticed (checked every ``_BLOCKED_CHECK_S``). True: the connector stops."""
        deadline = self._clock.monotonic_ms() + self.settings.rebalance_backoff_ms
        while True:
            remaining_ms = deadline - self._clock.monotonic_ms()
            if remaining_ms <= 0:
                return False
            if self._stopping.wait(min(_BLOCKED_CHECK_S, remaining_ms / 1000.0)):
                return True
            if self._needed.is_set() or self.group.owner(blocked) is None:
                return False

    def _take(
        self, consumer: Consumer, listener: RebalanceListener, wanted: Mapping[TopicPartition, str]
    ) -> None:
        self._owned = dict(wanted)
        partitions = sorted(wanted)
        consumer.assign(partitions)
        committed = self._committed(consumer, partitions)
        for tp in partitions:
            offset = committed.get(tp)
            if offset is not None:
                consumer.seek(tp, offset)
            elif self.settings.auto_offset_reset == "earliest":
                consumer.seek_to_beginning([tp])
            elif self.settings.auto_offset_reset == "latest":
                consumer.seek_to_end([tp])
            else:
                raise NoOffsetForPartitionError(
                    f"{tp}: no committed offset in group {self.group_id} and "
                    "auto.offset.reset is none"
                )
        log.info(
            "group %s: %s owns %s",
            self.group_id,
            self.member,
            ", ".join(f"{tp}→{thread}" for tp, thread in sorted(wanted.items())) or "nothing",
        )
        listener.assigned({tp: int(thread.rpartition("-")[2]) for tp, thread in wanted.items()})

    def _committed(
        self, consumer: Consumer, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """The committed offsets (the greater of both stores when committing to both)."""
        found: dict[TopicPartition, int] = {}
        if not partitions:
            return found
        if self.settings.commits_to_zookeeper:
            for tp in partitions:
                offset = self.group.committed(tp)
                if offset is not None:
                    found[tp] = offset
        if self.settings.commits_to_kafka:
            for tp, value in consumer.committed(partitions).items():
                if value is not None and value.offset > found.get(tp, -1):
                    found[tp] = value.offset
        return found

    def _renew(self, consumer: Consumer, listener: RebalanceListener) -> None:
        """After a session expiry: every owned partition is lost; register in a new session."""
        log.warning("group %s: %s lost its ZooKeeper session", self.group_id, self.member)
        self._session_lost.clear()
        if self._owned:
            listener.revoked(sorted(self._owned), lost=True)
            self._owned.clear()
            consumer.assign([])
        self.group.close()
        self.group = self._open()
        self._register()
