"""``ControllerContext``: what the elected controller holds about the cluster, and the one
place that writes it (Kafka's ``ControllerContext`` plus the controller's ZooKeeper writes).

It holds, for one term (``controller.cluster``'s ``on_elected`` to ``on_resigned``):

- ``partitions``: every partition's replicas, leader, leader epoch, ISR and state node version
  (``PartitionRecord``); the replicas of a partition being reassigned are RS (KIP-455);
- ``brokers``: the live brokers' registrations, as ``LiveBrokers`` last saw them;
- ``shutting_down``: brokers in controlled shutdown, never elected again while they live;
- ``reassignments``: the partitions being reassigned, with their adding / removing replicas;
- ``unclean``: each topic's ``unclean.leader.election.enable`` as last read.

The rule it keeps: a partition's record changes only together with its state node. Every
write here is an epoch-fenced ``multi`` (``Controller.write``) whose ``SetOp`` carries the
record's ``zk_version`` as the compare-and-set token; once the write returns, the record is
replaced by the state written and the node's new version. A write that fails changes nothing
held. The collaborators that decide (``controller.topic_changes``, ``broker_changes``,
``isr_updates``, ``leader_elections``, ``reassigner``) read the held state and call these
writes; none writes partition states on its own.

Why one context object handed to each collaborator rather than a ``ClusterController`` with
mixins: the state is shared by every duty, so it needs one owner whose invariants can be read
in one file; each duty then gets exactly the context and the ``BrokerUpdates`` it uses, and
its module can be read without the others.

Thread safety: none; used on the ``Controller``'s event thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from odradek._types import TopicPartition
from odradek.controller.admission import PartitionLimits
from odradek.controller.brokers import LiveBrokers
from odradek.controller.channel import Connector, plaintext_connect
from odradek.controller.controller import Controller
from odradek.controller.election import ControllerEpoch
from odradek.controller.layout import (
    BrokerRegistration,
    encode_partition_state,
    partition_path,
    partition_state_path,
    topic_partitions_path,
)
from odradek.controller.leaders import LeaderAndIsr
from odradek.controller.partition_states import PartitionRecord, new_partition_state
from odradek.controller.reassignment import ReplicaAssignment
from odradek.controller.rebalance import RebalanceSettings
from odradek.controller.store import CreateOp, Op, SetOp
from odradek.controller.topics import ClusterMetadata
from odradek.errors import KafkaError, MetadataStoreError, NotControllerError

#: Partition states per fenced ``multi`` (ZooKeeper caps a request at ~1 MB).
WRITE_CHUNK = 500
UNCLEAN_CONFIG = "unclean.leader.election.enable"


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """The broker settings the controller applies."""

    listener_name: str
    num_partitions: int
    default_replication_factor: int
    unclean_leader_election_enable: bool
    delete_topic_enable: bool
    #: Raises ``KafkaError`` (INVALID_CONFIG) for topic config overrides the broker refuses.
    validate_configs: Callable[[Mapping[str, str]], None]
    #: ``auto.leader.rebalance.enable`` and ``leader.imbalance.*`` (``controller.rebalance``).
    rebalance: RebalanceSettings = field(default_factory=RebalanceSettings)
    #: ``max.partitions``, ``max.broker.partitions``, ``max.partitions.per.request``.
    limits: PartitionLimits = field(default_factory=PartitionLimits)
    #: How the controller's channel connects to brokers (the inter-broker listener's TLS and
    #: SASL; ``controller.channel``).
    connect: Connector = plaintext_connect


class ControllerContext:
    """See the module docstring.

    Args:
        controller: the election shell: its event thread and its fenced ``write``.
        metadata: the store's Kafka layout (reads; topic nodes).
        live: the registered brokers, kept current by a watch.
        settings: the broker settings the controller applies.
    """

    def __init__(
        self,
        controller: Controller,
        metadata: ClusterMetadata,
        live: LiveBrokers,
        settings: ControllerSettings,
    ) -> None:
        self.controller = controller
        self.metadata = metadata
        self.live = live
        self.settings = settings
        self.broker_id = controller.broker_id
        self.epoch: ControllerEpoch | None = None
        self.partitions: dict[TopicPartition, PartitionRecord] = {}
        self.unclean: dict[str, bool] = {}
        self.brokers: dict[int, BrokerRegistration] = {}
        self.shutting_down: set[int] = set()
        self.reassignments: dict[TopicPartition, ReplicaAssignment] = {}

    @property
    def active(self) -> bool:
        """Whether this broker is the controller (between ``on_elected`` and ``on_resigned``)."""
        return self.epoch is not None

    def require_epoch(self) -> ControllerEpoch:
        """The current controller epoch.

        Raises:
            NotControllerError: this broker is not the controller.
        """
        epoch = self.epoch
        if epoch is None:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        return epoch

    def refresh_brokers(self) -> set[int]:
        """Takes ``LiveBrokers``' snapshot as the live brokers; returns the ids before."""
        before = set(self.brokers)
        self.brokers = {
            registration.broker_id: registration for registration in self.live.snapshot()
        }
        return before

    def live_ids(self) -> set[int]:
        return set(self.brokers)

    def electable(self) -> set[int]:
        """The live brokers that may be elected: those not in controlled shutdown."""
        return set(self.brokers) - self.shutting_down

    def racks(self) -> dict[int, str | None]:
        """Each live broker's ``broker.rack`` (for rack-aware assignment)."""
        return {broker_id: registration.rack for broker_id, registration in self.brokers.items()}

    def clear(self) -> None:
        """Forgets the term's state (on resigning)."""
        self.epoch = None
        self.shutting_down.clear()
        self.reassignments.clear()
        self.partitions.clear()
        self.unclean.clear()

    def unclean_reader(self) -> Callable[[str], bool]:
        """A topic's ``unclean.leader.election.enable`` read from the store, at most once per
        topic per event: as Kafka's controller reads the topic config at election time, so
        an IncrementalAlterConfigs on any broker applies to the next election (the broker's
        value when the topic has no override)."""
        default = self.settings.unclean_leader_election_enable
        seen: dict[str, bool] = {}

        def unclean(topic: str) -> bool:
            value = seen.get(topic)
            if value is None:
                try:
                    configs = self.metadata.topic_configs(topic)
                except (KafkaError, MetadataStoreError):
                    configs = {}
                value = seen[topic] = unclean_of(configs, default)
                self.unclean[topic] = value
            return value

        return unclean

    # --- loading ---------------------------------------------------------------------------

    def load(self) -> None:
        """Reads every topic's assignment, reassignment maps and partition states from the
        store; partitions without a state (a topic written before this controller, or
        half-created) get their first one, written now."""
        self.partitions.clear()
        self.unclean.clear()
        self.reassignments.clear()
        default = self.settings.unclean_leader_election_enable
        live = set(self.brokers)
        missing: dict[str, dict[int, list[int]]] = {}
        for topic in self.metadata.topics():
            try:
                stored = self.metadata.replica_assignments(topic)
                configs = self.metadata.topic_configs(topic)
            except KafkaError:
                continue  # deleted meanwhile
            assignment = {index: list(stored[index].replicas) for index in stored}
            for index, replica_assignment in stored.items():
                if replica_assignment.is_reassigning:
                    self.reassignments[TopicPartition(topic, index)] = replica_assignment
            self.unclean[topic] = unclean_of(configs, default)
            for index, replicas in assignment.items():
                state = self.metadata.partition_state(topic, index)
                tp = TopicPartition(topic, index)
                if state is None:
                    missing.setdefault(topic, {})[index] = replicas
                    continue
                self.partitions[tp] = PartitionRecord(
                    tuple(replicas),
                    LeaderAndIsr(state.leader, state.leader_epoch, state.isr),
                    state.zk_version,
                )
        for topic, assignment in missing.items():
            epoch = self.require_epoch()
            for index, replicas in assignment.items():
                first = new_partition_state(tuple(replicas), live)
                written = self.metadata.set_partition_state(
                    topic,
                    index,
                    leader=first.leader,
                    leader_epoch=first.leader_epoch,
                    isr=first.isr,
                    controller_epoch=epoch.epoch,
                )
                self.partitions[TopicPartition(topic, index)] = PartitionRecord(
                    tuple(replicas), first, written.zk_version
                )

    # --- fenced writes -----------------------------------------------------------------------

    def write_states(self, changes: Mapping[TopicPartition, LeaderAndIsr]) -> None:
        """Writes the partitions' new states (compare-and-set on each record's version, in
        fenced ``multi``s of ``WRITE_CHUNK``), then holds them.

        Raises:
            BadVersionError: a state node moved under the controller (that chunk is not
                written and nothing of it is held).
            NotControllerError: deposed.
        """
        if not changes:
            return
        epoch = self.require_epoch()
        items = sorted(changes.items())
        for start in range(0, len(items), WRITE_CHUNK):
            chunk = items[start : start + WRITE_CHUNK]
            ops: list[Op] = [self._state_op(tp, state, epoch) for tp, state in chunk]
            versions = self.controller.write(ops)
            for (tp, state), version in zip(chunk, versions, strict=True):
                record = self.partitions[tp]
                self.partitions[tp] = PartitionRecord(record.replicas, state, version)

    def write_reassignments(
        self, changes: Mapping[TopicPartition, tuple[ReplicaAssignment, LeaderAndIsr]]
    ) -> None:
        """Writes partitions' replica assignments (their topics' nodes) and states with
        fenced ``multi`` writes (the topics' nodes and the first ``WRITE_CHUNK`` states in
        the first: ZooKeeper caps a request at ~1 MB), then holds them (the record's replicas
        become the assignment's)."""
        epoch = self.require_epoch()
        by_topic: dict[str, dict[int, ReplicaAssignment]] = {}
        for tp, (assignment, _state) in changes.items():
            by_topic.setdefault(tp.topic, {})[tp.partition] = assignment
        topic_ops: list[Op] = [
            self.metadata.reassignment_op(topic, assignments)
            for topic, assignments in sorted(by_topic.items())
        ]
        items = sorted(changes.items())
        for start in range(0, len(items), WRITE_CHUNK):
            chunk = items[start : start + WRITE_CHUNK]
            ops = list(topic_ops) if start == 0 else []
            ops.extend(self._state_op(tp, state, epoch) for tp, (_assignment, state) in chunk)
            versions = self.controller.write(ops)[len(topic_ops) if start == 0 else 0 :]
            for (tp, (assignment, state)), version in zip(chunk, versions, strict=True):
                self.partitions[tp] = PartitionRecord(assignment.replicas, state, version)

    def create_states(
        self, topic: str, assignment: Mapping[int, Sequence[int]]
    ) -> list[TopicPartition]:
        """Creates the first state of each new partition of ``topic`` (its leader the first
        live replica) and holds them; returns the partitions created."""
        epoch = self.require_epoch()
        live = set(self.brokers)
        ops: list[Op] = []
        if not self.metadata.store.exists(topic_partitions_path(topic)):
            ops.append(CreateOp(topic_partitions_path(topic)))
        states: dict[TopicPartition, PartitionRecord] = {}
        for index in sorted(assignment):
            replicas = tuple(assignment[index])
            state = new_partition_state(replicas, live)
            ops.append(CreateOp(partition_path(topic, index)))
            data = encode_partition_state(state.leader, state.leader_epoch, state.isr, epoch.epoch)
            ops.append(CreateOp(partition_state_path(topic, index), data))
            states[TopicPartition(topic, index)] = PartitionRecord(replicas, state, 0)
        for start in range(0, len(ops), WRITE_CHUNK):
            self.controller.write(ops[start : start + WRITE_CHUNK])
        self.partitions.update(states)
        return list(states)

    def _state_op(self, tp: TopicPartition, state: LeaderAndIsr, epoch: ControllerEpoch) -> SetOp:
        data = encode_partition_state(state.leader, state.leader_epoch, state.isr, epoch.epoch)
        return SetOp(
            partition_state_path(tp.topic, tp.partition), data, self.partitions[tp].zk_version
        )


def unclean_of(configs: Mapping[str, str], default: bool) -> bool:
    """``unclean.leader.election.enable`` of a topic's config overrides (``default`` unset)."""
    value = configs.get(UNCLEAN_CONFIG)
    if value is None:
        return default
    return value.strip().lower() == "true"
