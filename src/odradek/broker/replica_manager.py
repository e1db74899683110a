"""The partitions this broker holds, keyed by topic-partition, over the log manager.

Owns the ``Partition`` objects: creating them (and their logs) when the broker becomes a
replica, finding them for produce and fetch, applying new topic configs to their logs, and
removing them with their logs when a topic is deleted, and describing them per log dir
(DescribeLogDirs). It installs every Partition's listeners: ``on_leader_append`` wakes the
followers' fetches long-polling in the fetch purgatory, whatever wrote to the leader (a
producer, a transaction marker, a group or transaction coordinator); ``on_high_watermark``
wakes the acks=all produces waiting in ``delayed_produce`` and the consumers' fetches
long-polling in the fetch purgatory (consumers read up to the high watermark, so they must
wake when it moves). A partition that stops being led here (become_follower, removal) wakes
its delayed produces and every fetch waiting on it, which then answer
NOT_LEADER_OR_FOLLOWER.

Topic ids (KIP-516): a partition made a replica with its topic's id gets ``partition.metadata``
in its log directory when it has none; one that names another id (a directory left from a
deleted topic of the same name) is refused with INCONSISTENT_TOPIC_ID and its state is left
as it was, as Kafka's LeaderAndIsr does. The id checked is kept per partition, so the file is
read once.

Thread safety: used from the broker's event loop thread only (the log manager underneath is
thread-safe for its background work).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Sequence

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.broker.ports import LogDirDescription, ReplicaLogDescription
from odradek.broker.purgatory import FetchPurgatory
from odradek.broker.replication.delayed_produce import DelayedProducePurgatory
from odradek.broker.replication.fetcher_manager import ReplicaFetcherManager
from odradek.broker.replication.isr import IsrChange
from odradek.broker.replication.partition import DEFAULT_PRODUCER_ID_EXPIRATION_MS, Partition
from odradek.errors import ErrorCode, KafkaError
from odradek.storage.config import LogConfig
from odradek.storage.manager import LogManager
from odradek.storage.partition_metadata import read_partition_metadata, write_partition_metadata

logger = logging.getLogger(__name__)


class ReplicaManager:
    """Partitions of this broker.

    Args:
        broker_id: this broker.
        log_manager: owner of the logs (already started).
        log_config_for: the log configuration of a topic (broker defaults + topic overrides).
        clock: the time of follower fetches and ISR checks.
        fetch_purgatory: woken when a partition's high watermark moves (None: no fetches
            long-poll, as in tests of the partitions alone).
        delayed_produce: where acks=all produces wait (default: a new one on the running
            loop's timers).
        producer_id_expiration_ms: ``producer.id.expiration.ms`` of the partitions' producer
            state.
    """

    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        log_config_for: Callable[[str], LogConfig],
        *,
        clock: Clock = SYSTEM_CLOCK,
        fetch_purgatory: FetchPurgatory | None = None,
        delayed_produce: DelayedProducePurgatory | None = None,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ) -> None:
        self.broker_id = broker_id
        self._producer_id_expiration_ms = producer_id_expiration_ms
        self.log_manager = log_manager
        self._log_config_for = log_config_for
        self.clock = clock
        self._partitions: dict[TopicPartition, Partition] = {}
        #: The topic id each partition's ``partition.metadata`` holds (read or written once).
        self._topic_ids: dict[TopicPartition, str] = {}
        #: Where the partitions' ISR changes go (the AlterPartition sender, in a cluster);
        #: None: a change commits at once (a single broker has no controller to ask).
        self.on_isr_change: Callable[[IsrChange], None] | None = None
        #: The follower fetchers (a cluster's brokers; None on a single broker, which never
        #: follows). Installed by the broker's assembly before any LeaderAndIsr.
        self.fetchers: ReplicaFetcherManager | None = None
        self._fetch_purgatory = fetch_purgatory
        #: acks=all produces (and ``__consumer_offsets`` writes) waiting for the HW.
        self.delayed_produce = delayed_produce or DelayedProducePurgatory()
        # The listeners below run on every append: with nobody waiting on the partition
        # each costs one dict lookup per kind of waiter (the purgatories' live views).
        self._produces_waiting = self.delayed_produce.partitions_waiting
        nobody: dict[TopicPartition, object] = {}
        self._consumers_waiting = (
            nobody if fetch_purgatory is None else fetch_purgatory.consumers_waiting
        )
        self._replicas_waiting = (
            nobody if fetch_purgatory is None else fetch_purgatory.replicas_waiting
        )

    def _on_high_watermark(self, partition: Partition) -> None:
        """Every Partition's listener: its high watermark moved (consumers may read more)."""
        key = partition.topic_partition
        if key in self._produces_waiting:
            self.delayed_produce.check(partition)
        if key in self._consumers_waiting and self._fetch_purgatory is not None:
            self._fetch_purgatory.notify_high_watermark(key)

    def _on_leader_append(self, partition: Partition) -> None:
        """Every Partition's append listener: a leader's append (produce, transaction
        marker, coordinator write) wakes the followers' long-polling fetches."""
        key = partition.topic_partition
        if key in self._replicas_waiting and self._fetch_purgatory is not None:
            self._fetch_purgatory.notify_appended(key)

    def _on_leadership_change(self, partition: Partition) -> None:
        """A partition stopped being led here: its waiters (delayed produces, fetches of
        both kinds) are answered now (NOT_LEADER_OR_FOLLOWER)."""
        self.delayed_produce.check(partition)
        if self._fetch_purgatory is not None:
            self._fetch_purgatory.notify(partition.topic_partition)

    def get(self, topic_partition: TopicPartition) -> Partition | None:
        return self._partitions.get(topic_partition)

    def partitions(self) -> dict[TopicPartition, Partition]:
        return dict(self._partitions)

    def describe_log_dirs(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> list[LogDirDescription]:
        """Every log dir (in ``log.dirs`` order) with the logs of ``partitions`` it holds
        (None: every partition here; one not here is left out).

        A log's ``offset_lag`` is Kafka's for a current log: how far its log end offset is
        behind the high watermark, so 0 on a leader (and on a follower until replication
        moves its high watermark). A dir whose volume cannot be read answers
        KAFKA_STORAGE_ERROR with no logs.
        """
        wanted = self._partitions.keys() if partitions is None else set(partitions)
        by_dir: dict[str, list[ReplicaLogDescription]] = {d: [] for d in self.log_manager.log_dirs}
        for topic_partition in sorted(wanted, key=lambda tp: (tp.topic, tp.partition)):
            partition = self._partitions.get(topic_partition)
            if partition is None:
                continue
            log = partition.log
            directory = os.path.dirname(os.path.abspath(log.directory))
            by_dir.setdefault(directory, []).append(
                ReplicaLogDescription(
                    topic_partition,
                    size=log.size_bytes,
                    offset_lag=max(0, partition.high_watermark - log.log_end_offset),
                )
            )
        described = []
        for directory, replicas in by_dir.items():
            try:
                volume = os.statvfs(directory)
            except OSError as error:
                logger.warning("cannot read the volume of log dir %s: %s", directory, error)
                described.append(LogDirDescription(directory, ErrorCode.KAFKA_STORAGE_ERROR, []))
                continue
            described.append(
                LogDirDescription(
                    directory,
                    ErrorCode.NONE,
                    replicas,
                    total_bytes=volume.f_blocks * volume.f_frsize,
                    usable_bytes=volume.f_bavail * volume.f_frsize,
                )
            )
        return described

    def become_leader(
        self,
        topic_partition: TopicPartition,
        replicas: list[int],
        leader_epoch: int = 0,
        *,
        isr: Sequence[int] | None = None,
        partition_epoch: int = -1,
        topic_id: str | None = None,
    ) -> Partition:
        """Makes this broker the leader of a partition, creating its log when missing; stops
        fetching it.

        Args:
            isr: the controller's ISR (None: this broker alone).
            partition_epoch: the partition state's version at the controller.
            topic_id: the topic's id (None: not known yet), checked against or written to
                the log's ``partition.metadata``.

        Raises:
            KafkaError: INCONSISTENT_TOPIC_ID (nothing changed but the log being opened).
        """
        partition = self._partition(topic_partition, replicas, leader_epoch, topic_id)
        if self.fetchers is not None:
            self.fetchers.remove_partition(topic_partition)
        partition.make_leader(
            leader_epoch, replicas, isr, partition_epoch, self.clock.monotonic_ms()
        )
        # The new epoch starts at the log end offset in the leader-epoch cache (Kafka's
        # makeLeader): a follower asking where its older epoch ends gets this offset even
        # before the first append.
        partition.log.assign_epoch_start(leader_epoch)
        return partition

    def _partition(
        self,
        topic_partition: TopicPartition,
        replicas: list[int],
        leader_epoch: int,
        topic_id: str | None = None,
    ) -> Partition:
        partition = self._partitions.get(topic_partition)
        created = partition is None
        if partition is None:
            log = self.log_manager.get_or_create_log(
                topic_partition, self._log_config_for(topic_partition.topic)
            )
            partition = Partition(
                topic_partition,
                log,
                broker_id=self.broker_id,
                replicas=replicas,
                leader_epoch=leader_epoch,
                on_high_watermark=self._on_high_watermark,
                on_leader_append=self._on_leader_append,
                on_isr_change=self._isr_changed,
                clock=self.clock,
                producer_id_expiration_ms=self._producer_id_expiration_ms,
            )
            self._partitions[topic_partition] = partition
        if topic_id is not None:
            try:
                self._check_topic_id(partition, topic_id)
            except KafkaError:
                if created:  # not served: no state of this topic's applies to that log
                    del self._partitions[topic_partition]
                raise
        return partition

    def _check_topic_id(self, partition: Partition, topic_id: str) -> None:
        """Writes ``partition.metadata`` when the log has none, else compares its id.

        Raises:
            KafkaError: INCONSISTENT_TOPIC_ID.
        """
        key = partition.topic_partition
        stored = self._topic_ids.get(key)
        if stored is None:
            directory = partition.log.directory
            try:
                stored = read_partition_metadata(directory)
                if stored is None:
                    write_partition_metadata(directory, topic_id)
                    stored = topic_id
            except (OSError, ValueError) as error:
                # Kafka fails the log dir here; odradek keeps serving and tries again on
                # the next LeaderAndIsr.
                logger.warning("partition %s: cannot check partition.metadata: %s", key, error)
                return
            self._topic_ids[key] = stored
        if stored != topic_id:
            logger.error(
                "partition %s: its log's partition.metadata names topic id %s, the topic's id "
                "is %s (a log left from a deleted topic of the same name?)",
                key,
                stored,
                topic_id,
            )
            raise KafkaError(
                f"partition {key.topic}-{key.partition}: the log's topic id {stored} is not "
                f"the topic's id {topic_id}",
                code=ErrorCode.INCONSISTENT_TOPIC_ID,
            )

    def note_topic_id(self, topic: str, topic_id: str) -> None:
        """The id of ``topic`` became known (read after its partitions were made replicas
        here): each partition of it here is checked (an inconsistent one is logged; the next
        LeaderAndIsr answers INCONSISTENT_TOPIC_ID for it)."""
        for topic_partition, partition in list(self._partitions.items()):
            if topic_partition.topic == topic:
                with contextlib.suppress(KafkaError):  # logged
                    self._check_topic_id(partition, topic_id)

    def logs_to_create(
        self, topic_partitions: Iterable[TopicPartition]
    ) -> list[tuple[TopicPartition, LogConfig]]:
        """The partitions of ``topic_partitions`` with no log yet, each with its topic's log
        configuration: what ``create_logs`` is to make. Call on the event loop (a topic's
        configuration is read there)."""
        get_log = self.log_manager.get_log
        return [
            (tp, self._log_config_for(tp.topic))
            for tp in topic_partitions
            if tp not in self._partitions and get_log(tp) is None
        ]

    def create_logs(
        self, wanted: Sequence[tuple[TopicPartition, LogConfig]]
    ) -> dict[TopicPartition, str]:
        """Makes the logs ``logs_to_create`` listed, one batch per topic (one directory fsync
        per log dir, not one per log); returns the partitions whose log could not be made,
        with the reason. Thread-safe (the log manager's lock): runs on the admin worker, off
        the event loop, for a LeaderAndIsr of many new partitions."""
        by_topic: dict[str, tuple[LogConfig, list[TopicPartition]]] = {}
        for tp, config in wanted:
            by_topic.setdefault(tp.topic, (config, []))[1].append(tp)
        failed: dict[TopicPartition, str] = {}
        for topic, (config, partitions) in by_topic.items():
            try:
                self.log_manager.get_or_create_logs(partitions, config)
            except Exception as error:  # a full disk, a stopped manager: these partitions fail
                logger.error("cannot create the logs of topic %s: %s", topic, error)
                failed.update(
                    (tp, str(error)) for tp in partitions if self.log_manager.get_log(tp) is None
                )
        return failed

    def _isr_changed(self, change: IsrChange) -> None:
        sender = self.on_isr_change
        if sender is not None:
            sender(change)
            return
        partition = self._partitions.get(TopicPartition(change.topic, change.partition))
        if partition is not None:
            partition.on_alter_partition_result(
                change,
                ErrorCode.NONE,
                change.leader_epoch,
                change.new_isr,
                change.partition_epoch + 1,
            )

    def become_follower(
        self,
        topic_partition: TopicPartition,
        replicas: list[int],
        leader_epoch: int,
        leader: int,
        *,
        topic_id: str | None = None,
    ) -> Partition:
        """Makes this broker a follower of ``leader`` (-1: none), creating the log when
        missing, and (in a cluster) hands it to the fetchers: they truncate it to the
        divergence point with the leader (OffsetForLeaderEpoch) and then copy from there.
        The same leader at the same epoch changes nothing: fetching goes on. An ISR change
        in flight is dropped (the partition no longer leads). ``topic_id`` as for
        ``become_leader``.

        Raises:
            KafkaError: INCONSISTENT_TOPIC_ID (nothing changed but the log being opened).
        """
        partition = self._partition(topic_partition, replicas, leader_epoch, topic_id)
        unchanged = partition.leader_id == leader and partition.leader_epoch == leader_epoch
        partition.leader_epoch = leader_epoch
        partition.replicas = list(replicas)
        partition.leader_id = leader
        partition.drop_pending_isr()
        if self.fetchers is not None:
            if leader < 0 or leader == self.broker_id:
                self.fetchers.remove_partition(topic_partition)
            elif not (unchanged and self.fetchers.is_fetching(topic_partition)):
                self.fetchers.add_partition(partition)
        self._on_leadership_change(partition)  # waiters answer NOT_LEADER_OR_FOLLOWER
        return partition

    def shrink_isrs(self, max_lag_ms: int) -> int:
        """Proposes ISR shrinks for every partition led here whose followers lag more than
        ``max_lag_ms`` (``replica.lag.time.max.ms``); returns how many partitions."""
        now_ms = self.clock.monotonic_ms()
        return sum(
            1
            for partition in self._partitions.values()
            if partition.maybe_shrink_isr(now_ms, max_lag_ms)
        )

    def remove_partition(
        self, topic_partition: TopicPartition, *, delete: bool, checkpoint: bool = True
    ) -> bool:
        """Stops serving a partition, deleting its log with ``delete``; whether it was here.
        ``checkpoint=False`` leaves the checkpoint files to the caller (one
        ``log_manager.checkpoint_logs`` after many deletions, not one per log). Fetching
        it stops too."""
        if self.fetchers is not None:
            self.fetchers.remove_partition(topic_partition)
        partition = self._partitions.pop(topic_partition, None)
        self._topic_ids.pop(topic_partition, None)
        if partition is None:
            return False
        self._stop_leading(partition)
        if delete:
            self.log_manager.delete_log(topic_partition, checkpoint=checkpoint)
        return True

    def write_producer_snapshots(self) -> None:
        """Writes every partition's producer-state snapshot (at shutdown, before the logs
        close: the next start then scans no log for it)."""
        for partition in self._partitions.values():
            partition.write_producer_snapshot()

    def update_topic_config(self, topic: str) -> None:
        """Re-reads a topic's log configuration into its partitions' logs."""
        config = self._log_config_for(topic)
        for topic_partition, partition in self._partitions.items():
            if topic_partition.topic == topic:
                partition.log.update_config(config)

    def detach_topic(self, topic: str) -> list[TopicPartition]:
        """Stops serving a topic's partitions (their logs stay: the caller deletes them, on
        another thread if it likes, with ``log_manager.delete_log``); returns them."""
        doomed = [tp for tp in self._partitions if tp.topic == topic]
        for topic_partition in doomed:
            if self.fetchers is not None:
                self.fetchers.remove_partition(topic_partition)
            self._stop_leading(self._partitions.pop(topic_partition))
            self._topic_ids.pop(topic_partition, None)
        return doomed

    def _stop_leading(self, partition: Partition) -> None:
        """A partition that leaves this broker: no leader here any more, and its waiters
        are told so."""
        partition.leader_id = -1
        self._on_leadership_change(partition)

    def remove_topic(self, topic: str) -> int:
        """Stops serving a topic's partitions and deletes their logs; returns how many."""
        doomed = self.detach_topic(topic)
        for topic_partition in doomed:
            self.log_manager.delete_log(topic_partition)
        if doomed:
            logger.info("deleted %d partitions of topic %s", len(doomed), topic)
        return len(doomed)
