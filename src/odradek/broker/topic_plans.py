"""``TopicPlanner``: a single broker's checks of a topic change before anything is written —
a creation, a growth, an auto-creation turned into a ``TopicPlan`` — and the partition counts
that ``max.partitions`` / ``max.broker.partitions`` (``broker.limits``) are checked against.

The rules it keeps:

- A change is checked whole before any write: the name, the configs (against ``LogConfig``:
  a bad one answers INVALID_CONFIG naming the setting), the assignment's shape, the topic's
  replication factor, the brokers named, and the partition limits. So ``validate_only`` sees
  exactly the errors the change itself would.
- A change under way counts against the limits from its plan (``reserve``) until it is
  published (``count_published``) or undone (``unreserve``), so two creations running at
  once cannot both pass a limit that only one fits.
- The counts are totals kept as changes come and go, so a check costs the same with 100,000
  partitions as with 10.

Why apart from ``TopicManager``: the manager sequences a change (store, logs, partitions
served, published; off the event loop) and this only decides whether and what — a planner
reads the manager's published topics and its changes under way (``known``, ``published``,
``busy``: the manager's own collections, which only the manager changes) and writes nothing
but its counts.

Thread safety: event loop thread only (as ``TopicManager``'s public methods).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass

from odradek.broker.config import BrokerConfig
from odradek.broker.limits import check_partition_totals
from odradek.broker.ports import TopicPlan
from odradek.controller.assignment import (
    assign_replicas,
    validate_assignment,
    validate_topic_name,
)
from odradek.controller.topics import ClusterMetadata
from odradek.errors import (
    ConfigError,
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    KafkaError,
    UnknownTopicOrPartitionError,
)
from odradek.storage.config import LogConfig


@dataclass(slots=True)
class _Totals:
    """Partition counts for the limits (mutable: the planner's own bookkeeping)."""

    published: int = 0
    published_here: int = 0
    reserved: int = 0
    reserved_here: int = 0


class TopicPlanner:
    """See the module docstring.

    Args:
        config: the broker's defaults, limits and log config.
        metadata: the store (the registered brokers, for manual assignments).
        known: the published topics.
        published: each published topic's partitions → replicas.
        busy: the topics with a change under way.
    """

    def __init__(
        self,
        config: BrokerConfig,
        metadata: ClusterMetadata,
        *,
        known: Container[str],
        published: Mapping[str, Mapping[int, Sequence[int]]],
        busy: Container[str],
    ) -> None:
        self.config = config
        self.metadata = metadata
        self.broker_id = config.broker_id
        self._known = known
        self._published = published
        self._busy = busy
        #: Partitions counted against the limits while their creation is under way.
        self._reserved: dict[str, TopicPlan] = {}
        #: Partitions (in the cluster, with a replica here) published and reserved.
        self._totals = _Totals()

    @property
    def reserved_partitions(self) -> int:
        return self._totals.reserved

    def plan_topic(
        self,
        topic: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        *,
        assignment: Mapping[int, Sequence[int]] | None = None,
        configs: Mapping[str, str] | None = None,
    ) -> TopicPlan:
        """Checks a topic creation (partitions -1 and replication factor -1 mean the broker
        defaults) and returns what it would do. Writes nothing.

        Raises:
            KafkaError: TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS,
                INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG,
                POLICY_VIOLATION (``max.partitions``, ``max.broker.partitions``).
        """
        validate_topic_name(topic)
        overrides = dict(configs or {})
        self.log_config(overrides)
        if assignment is None:
            partitions = self.config.num_partitions if num_partitions == -1 else num_partitions
            factor = (
                self.config.default_replication_factor
                if replication_factor == -1
                else replication_factor
            )
            if partitions < 1:
                raise InvalidPartitionsError(f"number of partitions must be ≥ 1, not {partitions}")
            self.check_capacity(partitions, partitions)  # before a dict of that many is built
            assignment = assign_replicas(partitions, factor, [self.broker_id])
        else:
            self.check_capacity(len(assignment), self.held_here(assignment))
            self._check_assignment(assignment)
        if topic in self._known or topic in self._busy:
            state = "is being deleted or created" if topic in self._busy else "already exists"
            raise KafkaError(f"topic {topic!r} {state}", code=ErrorCode.TOPIC_ALREADY_EXISTS)
        plan_assignment = {p: list(r) for p, r in assignment.items()}
        return TopicPlan(topic, True, plan_assignment, overrides)

    def plan_partitions(
        self,
        topic: str,
        total_count: int,
        *,
        assignment: Sequence[Sequence[int]] | None = None,
    ) -> TopicPlan:
        """Checks growing ``topic`` to ``total_count`` partitions. Writes nothing.

        Raises:
            KafkaError: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS (not more than now),
                INVALID_REPLICA_ASSIGNMENT, POLICY_VIOLATION (the partition limits).
        """
        current = self._published.get(topic) if topic in self._known else None
        if current is None:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        if total_count <= len(current):
            raise InvalidPartitionsError(
                f"topic {topic!r} has {len(current)} partitions; the new count "
                f"{total_count} must be larger"
            )
        first = len(current)
        factor = len(next(iter(current.values()))) if current else 1
        adding = total_count - first
        self.check_capacity(adding, adding if assignment is None else 0)
        if assignment is not None:
            if len(assignment) != total_count - first:
                raise KafkaError(
                    f"{len(assignment)} assignments for {total_count - first} new partitions",
                    code=ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                )
            new = {first + i: list(replicas) for i, replicas in enumerate(assignment)}
            self.check_capacity(0, self.held_here(new))
            self._check_assignment(new, first_partition=first, existing=current)
        else:
            new = assign_replicas(
                total_count - first, factor, [self.broker_id], start_partition=first
            )
        return TopicPlan(topic, False, new, {})

    def log_config(self, overrides: Mapping[str, str]) -> LogConfig:
        """The broker's log config with ``overrides`` applied.

        Raises:
            KafkaError: INVALID_CONFIG, naming the setting.
        """
        try:
            return self.config.log_config.with_overrides(overrides)
        except ConfigError as error:
            raise KafkaError(str(error), code=ErrorCode.INVALID_CONFIG) from None

    # --- the partition counts ---------------------------------------------------------------

    def check_capacity(self, adding: int, adding_here: int) -> None:
        """Refuses ``adding`` partitions, ``adding_here`` of them with a replica on this
        broker, over ``max.partitions`` / ``max.broker.partitions`` (creations under way
        count too).

        Raises:
            KafkaError: POLICY_VIOLATION.
        """
        totals = self._totals
        check_partition_totals(
            adding=adding,
            adding_here=adding_here,
            cluster_partitions=totals.published + totals.reserved,
            broker_replicas=totals.published_here + totals.reserved_here,
            limits=self.config.limits,
        )

    def held_here(self, assignment: Mapping[int, Sequence[int]]) -> int:
        """How many of ``assignment``'s partitions have a replica on this broker."""
        return sum(self.broker_id in replicas for replicas in assignment.values())

    def count_published(self, assignment: Mapping[int, Sequence[int]]) -> None:
        """Counts partitions just published (or found at start-up)."""
        self._totals.published += len(assignment)
        self._totals.published_here += self.held_here(assignment)

    def uncount_published(self, assignment: Mapping[int, Sequence[int]]) -> None:
        """Stops counting partitions of a topic being deleted."""
        self._totals.published -= len(assignment)
        self._totals.published_here -= self.held_here(assignment)

    def reserve(self, plan: TopicPlan) -> None:
        """Counts a change under way until ``unreserve``."""
        self._reserved[plan.topic] = plan
        self._totals.reserved += len(plan.assignment)
        self._totals.reserved_here += self.held_here(plan.assignment)

    def unreserve(self, topic: str) -> None:
        """Stops counting ``topic``'s change under way (published or undone)."""
        plan = self._reserved.pop(topic, None)
        if plan is not None:
            self._totals.reserved -= len(plan.assignment)
            self._totals.reserved_here -= self.held_here(plan.assignment)

    # --- manual assignments -------------------------------------------------------------------

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
