"""Topics on a single broker: creation, deletion, partitions, configs — the controller's
work for a one-node cluster, over the metadata store and the replica manager.

Every change goes to the metadata store first (Kafka's ZooKeeper layout, see
``controller.topics``) and then to the partitions this broker serves, so a restart rebuilds
the same state from the store (``startup``). Topic configs are validated against
``LogConfig`` before they are stored; a bad one answers INVALID_CONFIG naming the setting.

Thread safety: the event loop thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from odradek._types import TopicPartition
from odradek.broker.config import BrokerConfig
from odradek.broker.replica_manager import ReplicaManager
from odradek.controller.topics import (
    ClusterMetadata,
    assign_replicas,
    validate_assignment,
    validate_topic_name,
)
from odradek.errors import (
    ConfigError,
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    KafkaError,
    UnknownTopicOrPartitionError,
)
from odradek.storage.config import TOPIC_NAMES, LogConfig

logger = logging.getLogger(__name__)

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
CONTROLLER_EPOCH = 1


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition as Metadata describes it."""

    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicConfigEntry:
    """One topic config as DescribeConfigs reports it."""

    name: str
    value: str
    is_default: bool


class TopicManager:
    """Creates, deletes and describes topics. See the module docstring."""

    def __init__(
        self, config: BrokerConfig, metadata: ClusterMetadata, replicas: ReplicaManager
    ) -> None:
        self.config = config
        self.metadata = metadata
        self.replicas = replicas
        self.broker_id = config.broker_id
        self._log_configs: dict[str, LogConfig] = {}
        self._known: set[str] = set()

    # ----------------------------------------------------------------- start-up

    def startup(self, *, serve: bool = True) -> None:
        """Serves every partition the store assigns to this broker (in a cluster, ``serve``
        false: the controller's LeaderAndIsr requests say which)."""
        self._known = set(self.metadata.topics())
        if not serve:
            return
        with self.metadata.store.batched():
            for topic in sorted(self._known):
                self._serve(topic)

    def _serve(self, topic: str, partitions: Sequence[int] | None = None) -> None:
        assignment = self.metadata.assignment(topic)
        for index, replicas in sorted(assignment.items()):
            if partitions is not None and index not in partitions:
                continue
            if self.broker_id not in replicas:
                continue
            state = self.metadata.partition_state(topic, index)
            if state is None:
                state = self.metadata.set_partition_state(
                    topic,
                    index,
                    leader=self.broker_id,
                    leader_epoch=0,
                    isr=[self.broker_id],
                    controller_epoch=CONTROLLER_EPOCH,
                )
            self.replicas.become_leader(
                TopicPartition(topic, index), list(replicas), state.leader_epoch
            )

    # ----------------------------------------------------------------- queries

    def log_config_for(self, topic: str) -> LogConfig:
        """The broker's log defaults with the topic's overrides applied."""
        config = self._log_configs.get(topic)
        if config is None:
            overrides = self.metadata.topic_configs(topic) if topic in self._known else {}
            config = self.config.log_config.with_overrides(overrides)
            self._log_configs[topic] = config
        return config

    def exists(self, topic: str) -> bool:
        return topic in self._known

    def note_topic(self, topic: str) -> None:
        """Records a topic the controller created (cluster mode)."""
        if topic not in self._known:
            self._known.add(topic)
            self._log_configs.pop(topic, None)

    def forget_topic(self, topic: str) -> None:
        """Forgets a topic the controller deleted (cluster mode)."""
        self._known.discard(topic)
        self._log_configs.pop(topic, None)

    def topic_names(self) -> list[str]:
        return sorted(self._known)

    def is_internal(self, topic: str) -> bool:
        return topic in INTERNAL_TOPICS

    def describe(self, topic: str) -> list[PartitionInfo]:
        """The topic's partitions, in order."""
        result = []
        for index, replicas in sorted(self.metadata.assignment(topic).items()):
            partition = self.replicas.get(TopicPartition(topic, index))
            leader_epoch = partition.leader_epoch if partition is not None else 0
            isr = tuple(partition.isr) if partition is not None else ()
            leader = self.broker_id if partition is not None else -1
            result.append(PartitionInfo(index, leader, leader_epoch, tuple(replicas), isr))
        return result

    def partition_count(self, topic: str) -> int:
        return len(self.metadata.assignment(topic))

    def topic_config_entries(self, topic: str) -> list[TopicConfigEntry]:
        """Every topic config with its effective value and whether it is the default."""
        if topic not in self._known:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        overrides = self.metadata.topic_configs(topic)
        effective = self.log_config_for(topic).topic_configs()
        return [
            TopicConfigEntry(name, value, name not in overrides)
            for name, value in sorted(effective.items())
        ]

    # ----------------------------------------------------------------- changes

    def maybe_auto_create(self, topic: str) -> bool:
        """Creates ``topic`` with the defaults when ``auto.create.topics.enable`` allows;
        returns whether it exists now. Raises InvalidTopicError for an illegal name."""
        if not self.config.auto_create_topics_enable or topic in INTERNAL_TOPICS:
            return False  # internal topics are created by their coordinators, with their configs
        validate_topic_name(topic)
        self.create_topic(topic)
        logger.info("auto-created topic %s", topic)
        return True

    def create_topic(
        self,
        topic: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        *,
        assignment: Mapping[int, Sequence[int]] | None = None,
        configs: Mapping[str, str] | None = None,
        validate_only: bool = False,
    ) -> None:
        """Creates a topic (partitions -1 and replication factor -1 mean the broker
        defaults).

        Raises:
            KafkaError: TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS,
                INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG.
        """
        validate_topic_name(topic)
        overrides = dict(configs or {})
        self._validate_configs(overrides)
        if assignment is None:
            partitions = self.config.num_partitions if num_partitions == -1 else num_partitions
            factor = (
                self.config.default_replication_factor
                if replication_factor == -1
                else replication_factor
            )
            if partitions < 1:
                raise InvalidPartitionsError(f"number of partitions must be ≥ 1, not {partitions}")
            assignment = assign_replicas(partitions, factor, [self.broker_id])
        else:
            self._check_assignment(assignment)
        if topic in self._known:
            raise KafkaError(f"topic {topic!r} already exists", code=ErrorCode.TOPIC_ALREADY_EXISTS)
        if validate_only:
            return
        with self.metadata.store.batched():  # one metadata write for the whole topic
            self.metadata.create_topic(topic, assignment, overrides)
            self._known.add(topic)
            self._log_configs.pop(topic, None)
            self._serve(topic)
        logger.info("created topic %s with %d partitions", topic, len(assignment))

    def delete_topic(self, topic: str) -> None:
        """Deletes a topic and its partitions' logs.

        Raises:
            KafkaError: UNKNOWN_TOPIC_OR_PARTITION, TOPIC_DELETION_DISABLED.
        """
        if topic not in self._known:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        if not self.config.delete_topic_enable:
            raise KafkaError("delete.topic.enable is false", code=ErrorCode.TOPIC_DELETION_DISABLED)
        self.metadata.delete_topic(topic)
        self._known.discard(topic)
        self._log_configs.pop(topic, None)
        self.replicas.remove_topic(topic)
        logger.info("deleted topic %s", topic)

    def create_partitions(
        self,
        topic: str,
        total_count: int,
        *,
        assignment: Sequence[Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> None:
        """Grows a topic to ``total_count`` partitions.

        Raises:
            KafkaError: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS (not more than now),
                INVALID_REPLICA_ASSIGNMENT.
        """
        if topic not in self._known:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        current = self.metadata.assignment(topic)
        if total_count <= len(current):
            raise InvalidPartitionsError(
                f"topic {topic!r} has {len(current)} partitions; the new count "
                f"{total_count} must be larger"
            )
        first = len(current)
        if assignment is not None:
            if len(assignment) != total_count - first:
                raise KafkaError(
                    f"{len(assignment)} assignments for {total_count - first} new partitions",
                    code=ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                )
            new = {first + i: list(replicas) for i, replicas in enumerate(assignment)}
            self._check_assignment(new, first_partition=first, existing=current)
        else:
            factor = len(next(iter(current.values()))) if current else 1
            new = assign_replicas(
                total_count - first, factor, [self.broker_id], start_partition=first
            )
        if validate_only:
            return
        with self.metadata.store.batched():
            self.metadata.add_partitions(topic, new)
            self._serve(topic, list(new))
        logger.info("topic %s now has %d partitions", topic, total_count)

    def alter_topic_configs(
        self,
        topic: str,
        set_configs: Mapping[str, str],
        delete_configs: Sequence[str] = (),
        *,
        validate_only: bool = False,
    ) -> None:
        """Sets and removes topic config overrides (IncrementalAlterConfigs).

        Raises:
            KafkaError: UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG.
        """
        if topic not in self._known:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        overrides = dict(self.metadata.topic_configs(topic))
        overrides.update(set_configs)
        for name in delete_configs:
            if name not in TOPIC_NAMES:
                raise KafkaError(f"unknown topic config {name!r}", code=ErrorCode.INVALID_CONFIG)
            overrides.pop(name, None)
        self._validate_configs(overrides)
        if validate_only:
            return
        self.metadata.set_topic_configs(topic, overrides)
        self._log_configs.pop(topic, None)
        self.replicas.update_topic_config(topic)

    def _check_assignment(
        self,
        assignment: Mapping[int, Sequence[int]],
        *,
        first_partition: int = 0,
        existing: Mapping[int, Sequence[int]] | None = None,
    ) -> None:
        """Checks a manual assignment before anything is written (so ``validate_only``
        sees the same errors): its shape, the topic's replication factor, live brokers.

        Raises:
            KafkaError: INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT.
        """
        validate_assignment(assignment, first_partition=first_partition)
        if existing:
            factor = len(next(iter(existing.values())))
            if any(len(replicas) != factor for replicas in assignment.values()):
                raise InvalidReplicaAssignmentError(
                    f"new partitions must keep the topic's replication factor {factor}"
                )
        live = {broker.broker_id for broker in self.metadata.registered_brokers()}
        live.add(self.broker_id)
        unknown = sorted({b for replicas in assignment.values() for b in replicas} - live)
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"unknown broker(s) {unknown} in the replica assignment; live: {sorted(live)}"
            )

    def validate_configs(self, overrides: Mapping[str, str]) -> None:
        """Raises KafkaError (INVALID_CONFIG) for topic config overrides the broker refuses."""
        self._validate_configs(overrides)

    def _validate_configs(self, overrides: Mapping[str, str]) -> None:
        try:
            self.config.log_config.with_overrides(overrides)
        except ConfigError as error:
            raise KafkaError(str(error), code=ErrorCode.INVALID_CONFIG) from None
