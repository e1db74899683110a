"""``ClusterController``: what the elected controller does — it owns every partition's state
(leader, leader epoch, ISR), writes it with epoch-fenced ``multi`` writes, and tells the
brokers with LeaderAndIsr / UpdateMetadata / StopReplica requests (Kafka's ZooKeeper-era
``KafkaController``; the decisions are ``controller.partition_states``' and
``controller.leaders``', pure).

Why requests rather than ZooKeeper watches on every broker: a ZooKeeper read from Python
costs ~0.5 ms, so re-reading 1,000 partition states on every broker after each failover would
cost ~0.5 s per broker; one batched request per broker carries the change in the controller's
order and lets each broker check the controller epoch itself (STALE_CONTROLLER_EPOCH for a
deposed controller's request) and the leader epochs. The only watches are ``/controller``
(``controller.controller``) and ``/brokers/ids`` (``controller.brokers``).

Events (all on the ``Controller``'s thread, in order):

- elected: load the topics, assignments and partition states from the store; give partitions
  without a state their first one; elect leaders for partitions led by brokers that are gone;
  then send every live broker LeaderAndIsr for its replicas and the full UpdateMetadata.
- live brokers changed: brokers gone → new leaders from the ISR (``unclean.leader.election
  .enable`` per topic, the broker's value by default), dead replicas out of ISRs; brokers
  back → offline partitions elect again, and a new broker gets LeaderAndIsr for its replicas;
  every live broker gets UpdateMetadata.
- topic requests (CreateTopics, CreatePartitions, DeleteTopics forwarded by any broker):
  assignments spread over the live brokers (``assign_replicas``), states written, brokers told;
  the result is returned once every live broker answered, so a client that gets it finds the
  topic on any broker.
- controlled shutdown of a broker: its leaderships move to other ISR members first.
- AlterPartition from a partition leader: its new ISR, accepted at the current leader epoch
  and partition epoch (``partition_states.alter_partition``), written with the state node's
  version as the compare-and-set token inside the epoch-fenced ``multi``; the answer carries
  the new state (its partition epoch is the node's new version) and every live broker gets
  UpdateMetadata right after (the next event). The leader epoch does not change, so no
  LeaderAndIsr is sent.
- partition reassignment (KIP-455; AlterPartitionReassignments, ``/admin/reassign_partitions``):
  the replicas become RS = TR + (OR − TR) with the adding / removing replicas stored beside
  the assignment, every replica is told (the new ones start as followers); once the target
  replicas are in the ISR (``_on_isr_changed``, called when the ISR grows) the replicas
  become TR, a leader outside TR gives way, and the removed replicas are stopped and deleted.
  A new controller resumes from the stored adding / removing replicas. Decisions:
  ``controller.reassignment``.

Thread safety: the public methods may be called from any thread; they queue an event and
return a ``concurrent.futures.Future``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from odradek._types import TopicPartition
from odradek.controller.admission import (
    PartitionAdmission,
    PartitionLimits,
    check_request_partitions,
)
from odradek.controller.assignment import (
    assign_replicas,
    validate_assignment,
    validate_topic_name,
)
from odradek.controller.brokers import LiveBrokers
from odradek.controller.channel import BrokerRequest, ControllerChannel
from odradek.controller.controller import Controller
from odradek.controller.election import ControllerEpoch
from odradek.controller.leaders import LeaderAndIsr
from odradek.controller.partition_states import (
    PREFERRED_ELECTION,
    PartitionRecord,
    alter_partition,
    elect_leader_on_request,
    new_partition_state,
    offline_replicas,
    on_brokers_failed,
    on_brokers_started,
    on_controlled_shutdown,
)
from odradek.controller.reassignment import (
    ReassignmentStart,
    ReplicaAssignment,
    complete_reassignment,
    parse_reassignment_json,
    start_reassignment,
)
from odradek.controller.rebalance import RebalanceDecision, RebalanceSettings, plan_rebalance
from odradek.controller.store import CreateOp, DeleteOp, Op, SetOp, join_path
from odradek.controller.topics import (
    DELETE_TOPICS_PATH,
    PREFERRED_REPLICA_ELECTION_PATH,
    REASSIGN_PARTITIONS_PATH,
    TOPICS_PATH,
    BrokerRegistration,
    ClusterMetadata,
    decode_preferred_replica_election,
    encode_partition_state,
    partition_state_path,
)
from odradek.errors import (
    BadVersionError,
    CorruptMetadataError,
    ErrorCode,
    KafkaError,
    MetadataStoreError,
    NoNodeError,
    NotControllerError,
)
from odradek.protocol.inter_broker import (
    LEADER_AND_ISR,
    LEADER_AND_ISR_VERSION,
    STOP_REPLICA,
    STOP_REPLICA_VERSION,
    UPDATE_METADATA,
    UPDATE_METADATA_VERSION,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Partition states per fenced ``multi`` (ZooKeeper caps a request at ~1 MB).
_WRITE_CHUNK = 500
#: The leader Kafka sends in UpdateMetadata for a partition being deleted.
LEADER_DURING_DELETE = -2
UNCLEAN_CONFIG = "unclean.leader.election.enable"
#: Kafka's first leader-imbalance check comes 5 s after the election, then every interval.
_FIRST_REBALANCE_CHECK_S = 5.0


@dataclass(frozen=True, slots=True)
class TopicRequest:
    """One topic of a CreateTopics request (-1: the broker default)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignment: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicResult:
    """The outcome for one topic of a topic request."""

    name: str
    error_code: ErrorCode = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True, slots=True)
class IsrUpdate:
    """One partition of an AlterPartition request: the ISR its leader wants, with the leader
    epoch and partition epoch (state node version) it holds."""

    topic_partition: TopicPartition
    leader_epoch: int
    new_isr: tuple[int, ...]
    partition_epoch: int


@dataclass(frozen=True, slots=True)
class IsrUpdateResult:
    """The controller's answer for one partition of an AlterPartition request: an error, or
    the partition's state after the change."""

    topic_partition: TopicPartition
    error_code: ErrorCode = ErrorCode.NONE
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1
    message: str | None = None


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


class ClusterController:
    """See the module docstring."""

    def __init__(
        self,
        controller: Controller,
        metadata: ClusterMetadata,
        live: LiveBrokers,
        settings: ControllerSettings,
        *,
        channel_timeout_s: float = 10.0,
    ) -> None:
        self.controller = controller
        self.metadata = metadata
        self.live = live
        self.settings = settings
        self.broker_id = controller.broker_id
        self._channel_timeout_s = channel_timeout_s
        self._channel: ControllerChannel | None = None
        self._epoch: ControllerEpoch | None = None
        self._partitions: dict[TopicPartition, PartitionRecord] = {}
        self._unclean: dict[str, bool] = {}
        self._brokers: dict[int, BrokerRegistration] = {}
        #: Brokers in controlled shutdown: never elected again while they live.
        self._shutting_down: set[int] = set()
        #: Partitions being reassigned (their replicas in ``_partitions`` are RS).
        self._reassignments: dict[TopicPartition, ReplicaAssignment] = {}
        self._reassign_node_watched = False
        #: The automatic rebalance's timer; a check armed in another term is dropped.
        self._rebalance_timer: threading.Timer | None = None
        self._term = 0
        self._admin_watched = False
        self.rebalance_elections = 0

    # --- controller callbacks (controller thread) ------------------------------------------

    def on_elected(self, epoch: ControllerEpoch) -> None:
        self._epoch = epoch
        self._channel = ControllerChannel(self.broker_id, timeout_s=self._channel_timeout_s)
        self.live.refresh()
        self._brokers = {
            registration.broker_id: registration for registration in self.live.snapshot()
        }
        self._load()
        live = set(self._brokers)
        changes = on_brokers_failed(self._partitions, live, unclean=self._unclean_reader())
        changes.update(on_brokers_started(self._partitions, live, unclean=self._unclean_reader()))
        self._write_states(changes)
        everything = list(self._partitions)
        self._send_leader_and_isr(everything, live)
        self._send_update_metadata(everything)
        logger.info(
            "controller %d (epoch %d): %d partitions of %d topics on brokers %s; %d elected",
            self.broker_id,
            epoch.epoch,
            len(self._partitions),
            len(self._unclean),
            sorted(live),
            len(changes),
        )
        self._resume_reassignments()
        self._start_term()

    def on_resigned(self) -> None:
        self._end_term()
        self._epoch = None
        self._shutting_down.clear()
        self._reassignments.clear()
        self._partitions.clear()
        self._unclean.clear()
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def on_brokers_changed(self, added: list[int], removed: list[int]) -> None:
        """``LiveBrokers``' callback (its watch thread): queue a resync on the controller."""
        self.controller.submit(self._sync_brokers)

    @property
    def active(self) -> bool:
        return self._epoch is not None

    # --- requests (any thread) -------------------------------------------------------------

    def create_topics(
        self, requests: Sequence[TopicRequest], *, validate_only: bool = False
    ) -> concurrent.futures.Future[list[TopicResult]]:
        return self._submit(lambda: self._create_topics(requests, validate_only))

    def create_partitions(
        self,
        requests: Sequence[tuple[str, int, Sequence[Sequence[int]] | None]],
        *,
        validate_only: bool = False,
    ) -> concurrent.futures.Future[list[TopicResult]]:
        return self._submit(lambda: self._create_partitions(requests, validate_only))

    def delete_topics(self, names: Sequence[str]) -> concurrent.futures.Future[list[TopicResult]]:
        return self._submit(lambda: self._delete_topics(names))

    def controlled_shutdown(
        self, broker_id: int
    ) -> concurrent.futures.Future[list[TopicPartition]]:
        """Moves leadership off ``broker_id`` and keeps it out of later elections; the result
        is the partitions it still leads (those without another live ISR member)."""
        return self._submit(lambda: self._controlled_shutdown(broker_id))

    def elect_leaders(
        self, election_type: int, partitions: Sequence[TopicPartition] | None
    ) -> concurrent.futures.Future[dict[TopicPartition, tuple[ErrorCode, str | None]]]:
        """ElectLeaders: moves leadership to the preferred replica (type 0) or elects an
        unclean leader for partitions without a live one (type 1); ``None``: every
        partition. Per partition: NONE, ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
        ELIGIBLE_LEADERS_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION."""
        return self._submit(lambda: self._elect_leaders(election_type, partitions))

    def alter_partition(
        self, broker_id: int, updates: Sequence[IsrUpdate]
    ) -> concurrent.futures.Future[list[IsrUpdateResult]]:
        """AlterPartition from ``broker_id``: each partition's new ISR, written when its
        leader epoch and partition epoch are current (see the module docstring)."""
        return self._submit(lambda: self._alter_partition(broker_id, updates))

    def alter_partition_reassignments(
        self,
        targets: Mapping[TopicPartition, Sequence[int] | None],
        *,
        allow_replication_factor_change: bool = True,
    ) -> concurrent.futures.Future[dict[TopicPartition, tuple[ErrorCode, str | None]]]:
        """AlterPartitionReassignments (KIP-455): starts, re-targets or (``None``) cancels
        reassignments. Per partition: NONE, UNKNOWN_TOPIC_OR_PARTITION,
        NO_REASSIGNMENT_IN_PROGRESS, INVALID_REPLICA_ASSIGNMENT or INVALID_REPLICATION_FACTOR."""
        return self._submit(
            lambda: self._alter_reassignments(targets, allow_replication_factor_change)
        )

    def list_partition_reassignments(
        self, partitions: Sequence[TopicPartition] | None = None
    ) -> concurrent.futures.Future[dict[TopicPartition, ReplicaAssignment]]:
        """ListPartitionReassignments: the reassignments in progress (of ``partitions``, or
        all), sorted; partitions not being reassigned are left out."""
        return self._submit(lambda: self._list_reassignments(partitions))

    def leader_counts(self) -> concurrent.futures.Future[dict[int, int]]:
        def count() -> dict[int, int]:
            counts = dict.fromkeys(self._brokers, 0)
            for record in self._partitions.values():
                counts[record.state.leader] = counts.get(record.state.leader, 0) + 1
            return counts

        return self._submit(count)

    def _submit(self, work: Callable[[], T]) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                if not self.active:
                    raise NotControllerError(f"broker {self.broker_id} is not the controller")
                future.set_result(work())
            except BaseException as error:
                future.set_exception(error)

        self.controller.submit(run)
        return future

    # --- events ----------------------------------------------------------------------------

    def _sync_brokers(self) -> None:
        if not self.active:
            return
        before = set(self._brokers)
        self._brokers = {
            registration.broker_id: registration for registration in self.live.snapshot()
        }
        live = set(self._brokers)
        if live == before:
            return
        removed, added = before - live, live - before
        self._shutting_down &= live
        electable = live - self._shutting_down
        changes: dict[TopicPartition, LeaderAndIsr] = {}
        if removed:
            changes.update(
                on_brokers_failed(self._partitions, electable, unclean=self._unclean_reader())
            )
        changes.update(
            on_brokers_started(self._partitions, electable, unclean=self._unclean_reader())
        )
        self._write_states(changes)
        # The new brokers learn all their replicas; the others only what changed.
        targets = [
            tp
            for tp, record in self._partitions.items()
            if tp in changes or any(replica in added for replica in record.replicas)
        ]
        self._send_leader_and_isr(targets, live)
        self._send_update_metadata(list(self._partitions))
        logger.info(
            "controller %d: brokers added %s removed %s; %d partition states changed",
            self.broker_id,
            sorted(added),
            sorted(removed),
            len(changes),
        )
        self._complete_reassignments(list(self._reassignments))

    def _controlled_shutdown(self, broker_id: int) -> list[TopicPartition]:
        live = set(self._brokers)
        electable = live - self._shutting_down  # another broker stopping takes nothing
        self._shutting_down.add(broker_id)
        changes = on_controlled_shutdown(self._partitions, electable, broker_id)
        self._write_states(changes)
        self._send_leader_and_isr(list(changes), live)
        self._send_update_metadata(list(changes))
        remaining = sorted(
            tp for tp, record in self._partitions.items() if record.state.leader == broker_id
        )
        logger.info(
            "controller %d: controlled shutdown of broker %d moved %d partition states; "
            "%d leaderships stay",
            self.broker_id,
            broker_id,
            len(changes),
            len(remaining),
        )
        return remaining

    def _elect_leaders(
        self, election_type: int, partitions: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        live = set(self._brokers) - self._shutting_down
        wanted = sorted(self._partitions) if partitions is None else list(partitions)
        results: dict[TopicPartition, tuple[ErrorCode, str | None]] = {}
        changes: dict[TopicPartition, LeaderAndIsr] = {}
        for tp in wanted:
            record = self._partitions.get(tp)
            if record is None:
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {tp}")
                continue
            decision = elect_leader_on_request(election_type, record, live)
            if isinstance(decision, LeaderAndIsr):
                changes[tp] = decision
                results[tp] = (ErrorCode.NONE, None)
            else:
                results[tp] = decision
        self._write_states(changes)
        self._send_leader_and_isr(list(changes), live)
        self._send_update_metadata(list(changes))
        if changes:
            logger.info(
                "controller %d: %d leaders elected on request (type %d)",
                self.broker_id,
                len(changes),
                election_type,
            )
        return results

    def _alter_partition(
        self, broker_id: int, updates: Sequence[IsrUpdate]
    ) -> list[IsrUpdateResult]:
        live = set(self._brokers) - self._shutting_down
        refused: dict[TopicPartition, tuple[ErrorCode, str]] = {}
        changes: dict[TopicPartition, LeaderAndIsr] = {}
        for update in updates:
            tp = update.topic_partition
            record = self._partitions.get(tp)
            if record is None:
                refused[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {tp}")
                continue
            decision = alter_partition(
                record,
                broker_id,
                update.leader_epoch,
                update.new_isr,
                update.partition_epoch,
                live,
            )
            if not isinstance(decision, LeaderAndIsr):
                refused[tp] = decision
            elif decision != record.state:
                changes[tp] = decision
        try:
            self._write_states(changes)
        except BadVersionError as error:  # the node moved under us: nothing was written
            for tp in changes:
                refused[tp] = (ErrorCode.INVALID_UPDATE_VERSION, str(error))
            changes = {}
        if changes:
            # Told after the answer (the next event): the leader need not wait for every
            # broker, and a slow one delays no ISR change.
            changed = list(changes)
            self.controller.submit(lambda: self._update_metadata_if_active(changed))
            # A reassignment waiting for its target replicas in the ISR may complete now.
            for tp in changed:
                if tp in self._reassignments:
                    self.controller.submit(functools.partial(self._on_isr_changed, tp))
            logger.info(
                "controller %d: ISR changes from broker %d: %s",
                self.broker_id,
                broker_id,
                ", ".join(f"{tp}: {list(state.isr)}" for tp, state in sorted(changes.items())),
            )
        results = []
        for update in updates:
            tp = update.topic_partition
            if tp in refused:
                code, message = refused[tp]
                results.append(IsrUpdateResult(tp, code, message=message))
                continue
            record = self._partitions[tp]
            results.append(
                IsrUpdateResult(
                    tp,
                    ErrorCode.NONE,
                    record.state.leader,
                    record.state.leader_epoch,
                    tuple(record.state.isr),
                    record.zk_version,
                )
            )
        return results

    def _update_metadata_if_active(self, partitions: list[TopicPartition]) -> None:
        if self.active:
            self._send_update_metadata(partitions)

    def _create_topics(
        self, requests: Sequence[TopicRequest], validate_only: bool
    ) -> list[TopicResult]:
        results: list[TopicResult] = []
        created: list[TopicPartition] = []
        live = sorted(self._brokers)
        admission = self._admission(
            sum(_requested_partitions(r, self.settings.num_partitions) for r in requests),
            [request.name for request in requests],
        )
        if isinstance(admission, list):
            return admission
        for request in requests:
            try:
                assignment = self._plan_topic(request, live)
                admission.admit(assignment)
                if validate_only:
                    results.append(TopicResult(request.name))
                    continue
                self.metadata.create_topic(request.name, assignment, request.configs)
                created.extend(self._create_states(request.name, assignment))
                self._unclean[request.name] = _unclean_of(
                    request.configs, self.settings.unclean_leader_election_enable
                )
                results.append(TopicResult(request.name))
            except KafkaError as error:
                results.append(TopicResult(request.name, error.error_code, str(error)))
        if created:
            self._send_leader_and_isr(created, set(live), is_new=True)
            self._send_update_metadata(created)
        return results

    def _plan_topic(self, request: TopicRequest, live: Sequence[int]) -> dict[int, list[int]]:
        validate_topic_name(request.name)
        self.settings.validate_configs(request.configs)
        if request.assignment is not None:
            assignment = {int(p): list(replicas) for p, replicas in request.assignment.items()}
            validate_assignment(assignment)
            unknown = sorted({b for replicas in assignment.values() for b in replicas} - set(live))
            if unknown:
                raise KafkaError(
                    f"unknown broker(s) {unknown} in the replica assignment; live: {list(live)}",
                    code=ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                )
            return assignment
        partitions = request.num_partitions
        if partitions == -1:
            partitions = self.settings.num_partitions
        factor = request.replication_factor
        if factor == -1:
            factor = self.settings.default_replication_factor
        return assign_replicas(partitions, factor, live, racks=self._racks())

    def _create_states(
        self, topic: str, assignment: Mapping[int, Sequence[int]]
    ) -> list[TopicPartition]:
        epoch = self._require_epoch()
        live = set(self._brokers)
        ops: list[Op] = []
        if not self.metadata.store.exists(join_path(TOPICS_PATH, topic, "partitions")):
            ops.append(CreateOp(join_path(TOPICS_PATH, topic, "partitions")))
        states: dict[TopicPartition, PartitionRecord] = {}
        for index in sorted(assignment):
            replicas = tuple(assignment[index])
            state = new_partition_state(replicas, live)
            ops.append(CreateOp(join_path(TOPICS_PATH, topic, "partitions", str(index))))
            data = encode_partition_state(state.leader, state.leader_epoch, state.isr, epoch.epoch)
            ops.append(CreateOp(partition_state_path(topic, index), data))
            states[TopicPartition(topic, index)] = PartitionRecord(replicas, state, 0)
        for start in range(0, len(ops), _WRITE_CHUNK):
            self.controller.write(ops[start : start + _WRITE_CHUNK])
        self._partitions.update(states)
        return list(states)

    def _create_partitions(
        self,
        requests: Sequence[tuple[str, int, Sequence[Sequence[int]] | None]],
        validate_only: bool,
    ) -> list[TopicResult]:
        results: list[TopicResult] = []
        created: list[TopicPartition] = []
        live = sorted(self._brokers)
        counts = Counter(tp.topic for tp in self._partitions)
        admission = self._admission(
            sum(max(0, total - counts[name]) for name, total, _ in requests),
            [name for name, _, _ in requests],
        )
        if isinstance(admission, list):
            return admission
        for name, total, manual in requests:
            try:
                current = self.metadata.assignment(name)
                self._refuse_while_reassigning(name)
                if total <= len(current):
                    raise KafkaError(
                        f"topic {name!r} has {len(current)} partitions; the new count "
                        f"{total} must be larger",
                        code=ErrorCode.INVALID_PARTITIONS,
                    )
                first = len(current)
                if manual is not None:
                    if len(manual) != total - first:
                        raise KafkaError(
                            f"{len(manual)} assignments for {total - first} new partitions",
                            code=ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        )
                    new = {first + i: list(replicas) for i, replicas in enumerate(manual)}
                    validate_assignment(new, first_partition=first)
                else:
                    factor = len(next(iter(current.values()))) if current else 1
                    new = assign_replicas(
                        total - first,
                        factor,
                        live,
                        start_partition=first,
                        racks=self._racks(),
                    )
                admission.admit(new)
                if validate_only:
                    results.append(TopicResult(name))
                    continue
                self.metadata.add_partitions(name, new)
                created.extend(self._create_states(name, new))
                results.append(TopicResult(name))
            except KafkaError as error:
                results.append(TopicResult(name, error.error_code, str(error)))
        if created:
            self._send_leader_and_isr(created, set(live), is_new=True)
            self._send_update_metadata(created)
        return results

    def _delete_topics(self, names: Sequence[str]) -> list[TopicResult]:
        results: list[TopicResult] = []
        doomed: list[TopicPartition] = []
        for name in names:
            partitions = [tp for tp in self._partitions if tp.topic == name]
            if not partitions:
                results.append(
                    TopicResult(
                        name,
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"topic {name!r} does not exist",
                    )
                )
                continue
            if not self.settings.delete_topic_enable:
                results.append(
                    TopicResult(
                        name, ErrorCode.TOPIC_DELETION_DISABLED, "delete.topic.enable is false"
                    )
                )
                continue
            doomed.extend(partitions)
            results.append(TopicResult(name))
        if not doomed:
            return results
        self._send_update_metadata(doomed, deleting=True)
        self._send_stop_replica(doomed)
        for name in sorted({tp.topic for tp in doomed}):
            try:
                self.metadata.delete_topic(name)
            except KafkaError:
                logger.warning("controller: topic %s was already gone from the store", name)
            self._unclean.pop(name, None)
        for topic_partition in doomed:
            self._partitions.pop(topic_partition, None)
            self._reassignments.pop(topic_partition, None)
        return results

    # --- a term: automatic rebalance, the ZooKeeper tools' admin nodes ----------------------
    #
    # A term runs from ``on_elected`` to ``on_resigned``. Kafka's controller does the same on
    # election: it schedules the leader-imbalance check and acts on the admin nodes written
    # while there was no controller (a tool writes them whoever is controller).

    def _start_term(self) -> None:
        self._term += 1
        rebalance = self.settings.rebalance
        if rebalance.auto_leader_rebalance_enable:
            first_s = min(
                _FIRST_REBALANCE_CHECK_S, rebalance.leader_imbalance_check_interval_seconds
            )
            self._arm_rebalance(self._term, first_s)
        if not self._admin_watched:  # watches are persistent: set once, act while active
            self._admin_watched = True
            store = self.metadata.store
            store.watch_data(
                PREFERRED_REPLICA_ELECTION_PATH,
                lambda path: self.controller.submit(self._on_preferred_replica_election),
            )
            store.watch_children(
                DELETE_TOPICS_PATH,
                lambda path: self.controller.submit(self._on_delete_topics_requested),
            )
        self._on_preferred_replica_election()
        self._on_delete_topics_requested()

    def _end_term(self) -> None:
        self._term += 1
        timer, self._rebalance_timer = self._rebalance_timer, None
        if timer is not None:
            timer.cancel()

    def _arm_rebalance(self, term: int, delay_s: float) -> None:
        def fire() -> None:
            self.controller.submit(lambda: self._on_rebalance_timer(term))

        timer = threading.Timer(delay_s, fire)
        timer.name = f"odradek-leader-rebalance-{self.broker_id}"
        timer.daemon = True
        self._rebalance_timer = timer
        timer.start()

    def _on_rebalance_timer(self, term: int) -> None:
        if term != self._term or not self.active:
            return  # armed in an earlier term
        try:
            self._rebalance_leaders()
        finally:
            if term == self._term and self.active:
                interval_s = self.settings.rebalance.leader_imbalance_check_interval_seconds
                self._arm_rebalance(term, interval_s)

    def _rebalance_leaders(self) -> RebalanceDecision:
        """One leader-imbalance check (``controller.rebalance``) and its elections."""
        live = set(self._brokers) - self._shutting_down
        decision = plan_rebalance(
            self._partitions,
            live,
            self.settings.rebalance.leader_imbalance_per_broker_percentage,
            excluded=self._partitions_in_flight(),
        )
        if decision.elect:
            results = self._elect_leaders(PREFERRED_ELECTION, decision.elect)
            moved = sum(1 for code, _ in results.values() if code is ErrorCode.NONE)
            self.rebalance_elections += moved
            logger.info(
                "controller %d: leader imbalance %s; %d partitions moved back to their "
                "preferred replica, %d wait for theirs",
                self.broker_id,
                {broker: round(ratio, 3) for broker, ratio in decision.imbalance.items() if ratio},
                moved,
                len(decision.waiting),
            )
        return decision

    def _partitions_in_flight(self) -> frozenset[TopicPartition]:
        """Partitions no automatic election touches: those being reassigned, as Kafka's
        controller skips them."""
        return frozenset(self._reassignments)

    def _on_preferred_replica_election(self) -> None:
        """``/admin/preferred_replica_election`` (kafka-preferred-replica-election.sh's
        ``--zookeeper`` mode): a preferred election for the partitions it lists, then the node
        goes (a fenced delete). An unreadable node is logged and removed, so that it does not
        block the next request."""
        if not self.active:
            return
        try:
            data, _ = self.metadata.store.get(PREFERRED_REPLICA_ELECTION_PATH)
        except NoNodeError:
            return
        try:
            wanted = decode_preferred_replica_election(data)
        except CorruptMetadataError as error:
            logger.error("controller %d: ignoring %s", self.broker_id, error)
            wanted = []
        if wanted:
            results = self._elect_leaders(PREFERRED_ELECTION, wanted)
            outcome: dict[str, int] = {}
            for code, _ in results.values():
                outcome[code.name] = outcome.get(code.name, 0) + 1
            logger.info(
                "controller %d: preferred replica election of %d partitions requested in %s: %s",
                self.broker_id,
                len(wanted),
                PREFERRED_REPLICA_ELECTION_PATH,
                outcome,
            )
        with contextlib.suppress(NoNodeError):
            self.controller.write([DeleteOp(PREFERRED_REPLICA_ELECTION_PATH)])

    def _on_delete_topics_requested(self) -> None:
        """``/admin/delete_topics/<topic>`` (kafka-topics.sh ``--delete --zookeeper``): each
        topic is deleted across every broker as DeleteTopics does, then its node goes —
        an unknown topic's or, with ``delete.topic.enable`` false, every one's too (logged),
        as Kafka's controller does."""
        if not self.active:
            return
        try:
            names = sorted(self.metadata.store.children(DELETE_TOPICS_PATH))
        except NoNodeError:
            return
        if not names:
            return
        for result in self._delete_topics(names):
            if result.error_code is ErrorCode.NONE:
                logger.info("controller %d: deleted topic %s", self.broker_id, result.name)
            else:
                logger.warning(
                    "controller %d: request to delete topic %s ignored: %s",
                    self.broker_id,
                    result.name,
                    result.message,
                )
        for name in names:
            with contextlib.suppress(NoNodeError):
                self.controller.write([DeleteOp(join_path(DELETE_TOPICS_PATH, name))])

    # --- admission of new partitions (controller.admission) ------------------------------

    def _admission(
        self, requested: int, names: Sequence[str]
    ) -> PartitionAdmission | list[TopicResult]:
        """The request's admission, or every topic's POLICY_VIOLATION when the request asks
        for more than ``max.partitions.per.request`` partitions."""
        try:
            check_request_partitions(requested, self.settings.limits)
        except KafkaError as error:
            return [TopicResult(name, error.error_code, str(error)) for name in names]
        return PartitionAdmission(
            (record.replicas for record in self._partitions.values()), self.settings.limits
        )

    # --- partition reassignment (KIP-455; decisions in controller.reassignment) ---------------

    def _on_isr_changed(self, tp: TopicPartition) -> None:
        """Called on the controller thread after ``tp``'s ISR changed and was written
        (AlterPartition; best as the event after the answer, so the leader does not wait for
        the brokers): a reassignment waiting for its target replicas to join the ISR
        completes. Does nothing once this broker is no longer the controller."""
        if self.active and tp in self._reassignments:
            self._complete_reassignments([tp])

    def _alter_reassignments(
        self,
        targets: Mapping[TopicPartition, Sequence[int] | None],
        allow_replication_factor_change: bool,
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        live = set(self._brokers)
        results: dict[TopicPartition, tuple[ErrorCode, str | None]] = {}
        starts: dict[TopicPartition, ReassignmentStart] = {}
        for tp, target in targets.items():
            record = self._partitions.get(tp)
            if record is None:
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {tp}")
                continue
            current = self._reassignments.get(tp) or ReplicaAssignment(record.replicas)
            decision = start_reassignment(
                current,
                record.state,
                target,
                live,
                allow_replication_factor_change=allow_replication_factor_change,
            )
            if isinstance(decision, ReassignmentStart):
                starts[tp] = decision
                results[tp] = (ErrorCode.NONE, None)
            else:
                results[tp] = decision
        if not starts:
            return results
        self._write_reassignments({tp: (s.assignment, s.state) for tp, s in starts.items()})
        for tp, start in starts.items():
            if start.assignment.is_reassigning:
                self._reassignments[tp] = start.assignment
            else:
                self._reassignments.pop(tp, None)
        self._send_leader_and_isr(list(starts), live)
        self._send_stop_replicas({tp: start.stopped for tp, start in starts.items()})
        self._send_update_metadata(list(starts))
        logger.info(
            "controller %d: reassignment of %d partitions started: %s",
            self.broker_id,
            len(starts),
            ", ".join(f"{tp} -> {list(s.assignment.target)}" for tp, s in sorted(starts.items())),
        )
        self._complete_reassignments(list(starts))
        return results

    def _complete_reassignments(self, partitions: Sequence[TopicPartition]) -> None:
        """Completes the reassignments of ``partitions`` whose target replicas are in sync."""
        live = set(self._brokers)
        done = {}
        for tp in partitions:
            record = self._partitions.get(tp)
            if record is None:
                self._reassignments.pop(tp, None)
                continue
            assignment = self._reassignments.get(tp) or ReplicaAssignment(record.replicas)
            completion = complete_reassignment(assignment, record.state, live)
            if completion is not None:
                done[tp] = completion
        if not done:
            return
        self._write_reassignments(
            {tp: (ReplicaAssignment(c.replicas), c.state) for tp, c in done.items()}
        )
        for tp in done:
            self._reassignments.pop(tp, None)
        self._send_leader_and_isr(list(done), live)
        self._send_stop_replicas({tp: c.removed for tp, c in done.items()})
        self._send_update_metadata(list(done))
        logger.info(
            "controller %d: reassignment of %d partitions completed: %s",
            self.broker_id,
            len(done),
            ", ".join(f"{tp} = {list(c.replicas)}" for tp, c in sorted(done.items())),
        )

    def _list_reassignments(
        self, partitions: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        wanted = sorted(self._reassignments) if partitions is None else sorted(set(partitions))
        return {tp: self._reassignments[tp] for tp in wanted if tp in self._reassignments}

    def _write_reassignments(
        self, changes: Mapping[TopicPartition, tuple[ReplicaAssignment, LeaderAndIsr]]
    ) -> None:
        """Writes partitions' replica assignments (their topics' nodes) and states with
        fenced ``multi`` writes (the topics' nodes and the first ``_WRITE_CHUNK`` states in
        the first: ZooKeeper caps a request at ~1 MB), then holds them."""
        epoch = self._require_epoch()
        by_topic: dict[str, dict[int, ReplicaAssignment]] = {}
        for tp, (assignment, _state) in changes.items():
            by_topic.setdefault(tp.topic, {})[tp.partition] = assignment
        topic_ops: list[Op] = [
            self.metadata.reassignment_op(topic, assignments)
            for topic, assignments in sorted(by_topic.items())
        ]
        items = sorted(changes.items())
        for start in range(0, len(items), _WRITE_CHUNK):
            chunk = items[start : start + _WRITE_CHUNK]
            ops = list(topic_ops) if start == 0 else []
            for tp, (_assignment, state) in chunk:
                data = encode_partition_state(
                    state.leader, state.leader_epoch, state.isr, epoch.epoch
                )
                version = self._partitions[tp].zk_version
                ops.append(SetOp(partition_state_path(tp.topic, tp.partition), data, version))
            versions = self.controller.write(ops)[len(topic_ops) if start == 0 else 0 :]
            for (tp, (assignment, state)), version in zip(chunk, versions, strict=True):
                self._partitions[tp] = PartitionRecord(assignment.replicas, state, version)

    def _note_stored_reassignments(
        self, topic: str, stored: Mapping[int, ReplicaAssignment]
    ) -> None:
        for index, assignment in stored.items():
            if assignment.is_reassigning:
                self._reassignments[TopicPartition(topic, index)] = assignment

    def _resume_reassignments(self) -> None:
        """After an election: complete what can be, and take over ``/admin/reassign_partitions``
        (watched from now on)."""
        if self._reassignments:
            logger.info(
                "controller %d: resuming %d partition reassignments",
                self.broker_id,
                len(self._reassignments),
            )
        self._complete_reassignments(list(self._reassignments))
        if not self._reassign_node_watched:
            self._reassign_node_watched = True
            self.metadata.store.watch_data(
                REASSIGN_PARTITIONS_PATH,
                lambda _path: self.controller.submit(self._on_reassign_partitions_node),
            )
        self._on_reassign_partitions_node()

    def _on_reassign_partitions_node(self) -> None:
        """Starts the reassignments a tool wrote to ``/admin/reassign_partitions`` (Kafka's
        JSON) and deletes the node: they are the controller's from then on."""
        if not self.active:
            return
        try:
            data, version = self.metadata.store.get(REASSIGN_PARTITIONS_PATH)
        except NoNodeError:
            return
        try:
            targets = parse_reassignment_json(data)
        except KafkaError as error:
            logger.warning(
                "controller %d: ignoring %s: %s", self.broker_id, REASSIGN_PARTITIONS_PATH, error
            )
            targets = {}
        if targets:
            results = self._alter_reassignments(targets, True)
            for tp, (code, message) in sorted(results.items()):
                if code is not ErrorCode.NONE:
                    logger.warning(
                        "controller %d: reassignment of %s from %s refused: %s: %s",
                        self.broker_id,
                        tp,
                        REASSIGN_PARTITIONS_PATH,
                        code.name,
                        message,
                    )
        # Written again meanwhile (its watch brings us back here), or already gone.
        with contextlib.suppress(BadVersionError, NoNodeError):
            self.controller.write([DeleteOp(REASSIGN_PARTITIONS_PATH, version)])

    def _send_stop_replicas(self, stopped: Mapping[TopicPartition, Sequence[int]]) -> None:
        """StopReplica with delete to the given replicas of each partition (those live)."""
        epoch = self._require_epoch()
        per_broker: dict[int, list[dict[str, Any]]] = {}
        for tp, replicas in stopped.items():
            for replica in replicas:
                if replica in self._brokers:
                    per_broker.setdefault(replica, []).append(
                        {"topic_name": tp.topic, "partition_index": tp.partition}
                    )
        bodies = {
            broker_id: {
                "controller_id": self.broker_id,
                "controller_epoch": epoch.epoch,
                "delete_partitions": True,
                "ungrouped_partitions": entries,
            }
            for broker_id, entries in per_broker.items()
        }
        self._send(STOP_REPLICA, STOP_REPLICA_VERSION, bodies)

    def _refuse_while_reassigning(self, topic: str) -> None:
        """New partitions wait for the topic's reassignments (as Kafka: its replica sets are
        not one replication factor meanwhile).

        Raises:
            KafkaError: REASSIGNMENT_IN_PROGRESS.
        """
        moving = sorted(tp for tp in self._reassignments if tp.topic == topic)
        if moving:
            raise KafkaError(
                f"topic {topic!r} has reassignments in progress ({', '.join(map(str, moving))}): "
                "add partitions once they complete or are cancelled",
                code=ErrorCode.REASSIGNMENT_IN_PROGRESS,
            )

    def _racks(self) -> dict[int, str | None]:
        """Each live broker's ``broker.rack`` (for rack-aware assignment)."""
        return {broker_id: registration.rack for broker_id, registration in self._brokers.items()}

    # --- store -----------------------------------------------------------------------------

    def _load(self) -> None:
        self._partitions.clear()
        self._unclean.clear()
        self._reassignments.clear()
        default = self.settings.unclean_leader_election_enable
        live = set(self._brokers)
        missing: dict[str, dict[int, list[int]]] = {}
        for topic in self.metadata.topics():
            try:
                stored = self.metadata.replica_assignments(topic)
                configs = self.metadata.topic_configs(topic)
            except KafkaError:
                continue  # deleted meanwhile
            assignment = {index: list(stored[index].replicas) for index in stored}
            self._note_stored_reassignments(topic, stored)
            self._unclean[topic] = _unclean_of(configs, default)
            for index, replicas in assignment.items():
                state = self.metadata.partition_state(topic, index)
                tp = TopicPartition(topic, index)
                if state is None:
                    missing.setdefault(topic, {})[index] = replicas
                    continue
                self._partitions[tp] = PartitionRecord(
                    tuple(replicas),
                    LeaderAndIsr(state.leader, state.leader_epoch, state.isr),
                    state.zk_version,
                )
        for topic, assignment in missing.items():
            # Topics written by a broker before this controller (or half-created): states now.
            epoch = self._require_epoch()
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
                self._partitions[TopicPartition(topic, index)] = PartitionRecord(
                    tuple(replicas), first, written.zk_version
                )

    def _write_states(self, changes: Mapping[TopicPartition, LeaderAndIsr]) -> None:
        if not changes:
            return
        epoch = self._require_epoch()
        items = sorted(changes.items())
        for start in range(0, len(items), _WRITE_CHUNK):
            chunk = items[start : start + _WRITE_CHUNK]
            ops: list[Op] = []
            for tp, state in chunk:
                data = encode_partition_state(
                    state.leader, state.leader_epoch, state.isr, epoch.epoch
                )
                ops.append(
                    SetOp(
                        partition_state_path(tp.topic, tp.partition),
                        data,
                        self._partitions[tp].zk_version,
                    )
                )
            versions = self.controller.write(ops)
            for (tp, state), version in zip(chunk, versions, strict=True):
                record = self._partitions[tp]
                self._partitions[tp] = PartitionRecord(record.replicas, state, version)

    def _require_epoch(self) -> ControllerEpoch:
        epoch = self._epoch
        if epoch is None:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        return epoch

    def _is_unclean(self, topic: str) -> bool:
        return self._unclean.get(topic, self.settings.unclean_leader_election_enable)

    def _unclean_reader(self) -> Callable[[str], bool]:
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
                value = seen[topic] = _unclean_of(configs, default)
                self._unclean[topic] = value
            return value

        return unclean

    # --- propagation -----------------------------------------------------------------------

    def _address(self, broker_id: int) -> tuple[str, int] | None:
        registration = self._brokers.get(broker_id)
        if registration is None:
            return None
        endpoint = registration.endpoint(self.settings.listener_name)
        if endpoint is not None:
            return endpoint.host, endpoint.port
        if registration.host is None:
            return None
        return registration.host, registration.port

    def _send(
        self, api_key: int, version: int, bodies: Mapping[int, Mapping[str, Any]]
    ) -> dict[int, dict[str, Any] | None]:
        channel = self._channel
        if channel is None or not bodies:
            return {}
        requests = {}
        for broker_id, body in bodies.items():
            address = self._address(broker_id)
            if address is not None:
                requests[broker_id] = BrokerRequest(address[0], address[1], api_key, version, body)
        answers = channel.send(requests)
        for broker_id, answer in answers.items():
            if answer is not None and answer.get("error_code"):
                logger.warning(
                    "controller %d: broker %d answered api %d with error %d",
                    self.broker_id,
                    broker_id,
                    api_key,
                    answer["error_code"],
                )
        return answers

    def _send_leader_and_isr(
        self, partitions: Iterable[TopicPartition], live: set[int], *, is_new: bool = False
    ) -> None:
        epoch = self._require_epoch()
        per_broker: dict[int, list[dict[str, Any]]] = {}
        for tp in partitions:
            record = self._partitions.get(tp)
            if record is None:
                continue
            state = {
                "topic_name": tp.topic,
                "partition_index": tp.partition,
                "controller_epoch": epoch.epoch,
                "leader": record.state.leader,
                "leader_epoch": record.state.leader_epoch,
                "isr": list(record.state.isr),
                "zk_version": record.zk_version,
                "replicas": list(record.replicas),
                "is_new": is_new,
            }
            for replica in record.replicas:
                if replica in live:
                    per_broker.setdefault(replica, []).append(state)
        leaders = []
        for broker_id in sorted(self._brokers):
            address = self._address(broker_id)
            if address is not None:
                leaders.append(
                    {"broker_id": broker_id, "host_name": address[0], "port": address[1]}
                )
        bodies = {
            broker_id: {
                "controller_id": self.broker_id,
                "controller_epoch": epoch.epoch,
                "ungrouped_partition_states": states,
                "live_leaders": leaders,
            }
            for broker_id, states in per_broker.items()
        }
        self._send(LEADER_AND_ISR, LEADER_AND_ISR_VERSION, bodies)

    def _send_update_metadata(
        self, partitions: Iterable[TopicPartition], *, deleting: bool = False
    ) -> None:
        epoch = self._require_epoch()
        live = set(self._brokers)
        states = []
        for tp in partitions:
            record = self._partitions.get(tp)
            if record is None:
                continue
            states.append(
                {
                    "topic_name": tp.topic,
                    "partition_index": tp.partition,
                    "controller_epoch": epoch.epoch,
                    "leader": LEADER_DURING_DELETE if deleting else record.state.leader,
                    "leader_epoch": record.state.leader_epoch,
                    "isr": list(record.state.isr),
                    "zk_version": record.zk_version,
                    "replicas": list(record.replicas),
                    "offline_replicas": list(offline_replicas(record.replicas, live)),
                }
            )
        brokers = []
        for broker_id in sorted(self._brokers):
            address = self._address(broker_id)
            if address is None:
                continue
            brokers.append(
                {
                    "id": broker_id,
                    "endpoints": [
                        {
                            "port": address[1],
                            "host": address[0],
                            "listener": self.settings.listener_name,
                            "security_protocol": 0,
                        }
                    ],
                    "rack": self._brokers[broker_id].rack,
                }
            )
        body = {
            "controller_id": self.broker_id,
            "controller_epoch": epoch.epoch,
            "ungrouped_partition_states": states,
            "live_brokers": brokers,
        }
        self._send(UPDATE_METADATA, UPDATE_METADATA_VERSION, dict.fromkeys(self._brokers, body))

    def _send_stop_replica(self, partitions: Sequence[TopicPartition]) -> None:
        """StopReplica with delete to every live replica of each known partition."""
        self._send_stop_replicas(
            {tp: self._partitions[tp].replicas for tp in partitions if tp in self._partitions}
        )


def _requested_partitions(request: TopicRequest, default: int) -> int:
    """The partitions a CreateTopics entry asks for (-1: the broker's ``num.partitions``)."""
    if request.assignment is not None:
        return len(request.assignment)
    return max(0, default if request.num_partitions == -1 else request.num_partitions)


def _unclean_of(configs: Mapping[str, str], default: bool) -> bool:
    value = configs.get(UNCLEAN_CONFIG)
    if value is None:
        return default
    return value.strip().lower() == "true"
