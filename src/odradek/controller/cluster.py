"""``ClusterController``: what the elected controller does — it owns every partition's state
(leader, leader epoch, ISR), writes it with epoch-fenced ``multi`` writes, and tells the
brokers with LeaderAndIsr / UpdateMetadata / StopReplica requests (Kafka's ZooKeeper-era
``KafkaController``; the decisions are ``controller.partition_states``',
``controller.leaders``', ``controller.reassignment``' and ``controller.rebalance``', pure).

This module owns the controller's event handling and its public request API; each duty is a
collaborator that gets the same ``ControllerContext`` (the held state and its fenced writes)
and ``BrokerUpdates`` (the requests to the brokers):

- ``controller.broker_changes`` (``BrokerChanges``): brokers lost and back, controlled
  shutdown;
- ``controller.topic_changes`` (``TopicChanges``): CreateTopics, CreatePartitions,
  DeleteTopics;
- ``controller.isr_updates`` (``IsrUpdates``): AlterPartition from partition leaders;
- ``controller.leader_elections`` (``LeaderElections``): ElectLeaders and the automatic
  leader-imbalance check;
- ``controller.reassigner`` (``Reassigner``): partition reassignment (KIP-455);
- ``controller.admin_nodes`` (``AdminNodes``): the ZooKeeper tools' ``/admin`` nodes.

Why collaborators over one shared context rather than one class or mixins: every duty reads
and writes the same state, so the state has one owner (``ControllerContext``) whose rule — a
partition's record changes only with its state node — is kept in one place; a duty's module
then reads on its own, and what crosses duties (an ISR change completing a reassignment,
brokers back completing reassignments) is sequenced here, in the events below, where the
order is visible.

Why requests rather than ZooKeeper watches on every broker: a ZooKeeper read from Python
costs ~0.5 ms, so re-reading 1,000 partition states on every broker after each failover would
cost ~0.5 s per broker; one batched request per broker carries the change in the controller's
order and lets each broker check the controller epoch itself (STALE_CONTROLLER_EPOCH for a
deposed controller's request) and the leader epochs. The only watches are ``/controller``
(``controller.controller``), ``/brokers/ids`` (``controller.brokers``) and the admin nodes.

Events (all on the ``Controller``'s thread, in order):

- elected: load the topics, assignments, reassignments and partition states from the store;
  give partitions without a state their first one; elect leaders for partitions led by
  brokers that are gone; send every live broker LeaderAndIsr for its replicas and the full
  UpdateMetadata; complete the reassignments that can be; take over the admin nodes; arm the
  leader-imbalance check.
- live brokers changed: ``BrokerChanges.sync``, then reassignments that can complete do.
- topic requests (forwarded by any broker): the result is returned once every live broker
  answered, so a client that gets it finds the topic on any broker.
- controlled shutdown of a broker: its leaderships move to other ISR members first.
- AlterPartition from a partition leader: answered at once; every live broker gets
  UpdateMetadata in the next event, and a reassignment waiting for its target replicas in the
  ISR is completed in the one after (``_on_isr_changed``).
- ElectLeaders, the reassignment APIs and the admin nodes: see their modules.

Thread safety: the public methods may be called from any thread; they queue an event and
return a ``concurrent.futures.Future``.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from odradek._types import TopicPartition
from odradek.controller.admin_nodes import AdminNodes
from odradek.controller.broker_changes import BrokerChanges
from odradek.controller.broker_updates import BrokerUpdates
from odradek.controller.brokers import LiveBrokers
from odradek.controller.context import ControllerContext, ControllerSettings
from odradek.controller.controller import Controller
from odradek.controller.election import ControllerEpoch
from odradek.controller.isr_updates import IsrUpdate, IsrUpdateResult, IsrUpdates
from odradek.controller.leader_elections import LeaderElections
from odradek.controller.reassigner import Reassigner
from odradek.controller.reassignment import ReplicaAssignment
from odradek.controller.topic_changes import TopicChanges, TopicRequest, TopicResult
from odradek.controller.topics import ClusterMetadata
from odradek.errors import ErrorCode, NotControllerError

# The values of the controller's requests are defined beside the duty they belong to and
# named here too, where the brokers meet the controller.
__all__ = [
    "ClusterController",
    "ControllerSettings",
    "IsrUpdate",
    "IsrUpdateResult",
    "TopicRequest",
    "TopicResult",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")


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
        self.context = ControllerContext(controller, metadata, live, settings)
        self.controller = controller
        self.broker_id = controller.broker_id
        self.updates = BrokerUpdates(self.context, channel_timeout_s=channel_timeout_s)
        self.broker_changes = BrokerChanges(self.context, self.updates)
        self.topic_changes = TopicChanges(self.context, self.updates)
        self.isr_updates = IsrUpdates(self.context)
        self.elections = LeaderElections(self.context, self.updates)
        self.reassigner = Reassigner(self.context, self.updates)
        self.admin_nodes = AdminNodes(
            self.context, self.reassigner, self.elections, self.topic_changes
        )

    # --- controller callbacks (controller thread) ------------------------------------------

    def on_elected(self, epoch: ControllerEpoch) -> None:
        context = self.context
        context.epoch = epoch
        self.updates.open()
        context.live.refresh()
        context.refresh_brokers()
        context.load()
        elected = self.broker_changes.on_elected()
        logger.info(
            "controller %d (epoch %d): %d partitions of %d topics on brokers %s; %d elected",
            self.broker_id,
            epoch.epoch,
            len(context.partitions),
            len(context.unclean),
            sorted(context.brokers),
            elected,
        )
        # A term: Kafka's controller acts on the admin nodes written while there was no
        # controller (a tool writes them whoever is controller) and schedules the
        # leader-imbalance check.
        self.reassigner.resume()
        self.admin_nodes.take_over_reassignments()
        self.elections.start_term()
        self.admin_nodes.take_over_requests()

    def on_resigned(self) -> None:
        self.elections.end_term()
        self.context.clear()
        self.updates.close()

    def on_brokers_changed(self, added: list[int], removed: list[int]) -> None:
        """``LiveBrokers``' callback (its watch thread): queue a resync on the controller."""
        self.controller.submit(self._sync_brokers)

    @property
    def active(self) -> bool:
        return self.context.active

    @property
    def rebalance_elections(self) -> int:
        """Partitions the automatic leader-imbalance check moved back to their preferred
        replica, in every term."""
        return self.elections.rebalance_elections

    # --- requests (any thread) -------------------------------------------------------------

    def create_topics(
        self, requests: Sequence[TopicRequest], *, validate_only: bool = False
    ) -> concurrent.futures.Future[list[TopicResult]]:
        return self._submit(lambda: self.topic_changes.create_topics(requests, validate_only))

    def create_partitions(
        self,
        requests: Sequence[tuple[str, int, Sequence[Sequence[int]] | None]],
        *,
        validate_only: bool = False,
    ) -> concurrent.futures.Future[list[TopicResult]]:
        return self._submit(lambda: self.topic_changes.create_partitions(requests, validate_only))

    def delete_topics(self, names: Sequence[str]) -> concurrent.futures.Future[list[TopicResult]]:
        return self._submit(lambda: self.topic_changes.delete_topics(names))

    def controlled_shutdown(
        self, broker_id: int
    ) -> concurrent.futures.Future[list[TopicPartition]]:
        """Moves leadership off ``broker_id`` and keeps it out of later elections; the result
        is the partitions it still leads (those without another live ISR member)."""
        return self._submit(lambda: self.broker_changes.controlled_shutdown(broker_id))

    def elect_leaders(
        self, election_type: int, partitions: Sequence[TopicPartition] | None
    ) -> concurrent.futures.Future[dict[TopicPartition, tuple[ErrorCode, str | None]]]:
        """ElectLeaders: moves leadership to the preferred replica (type 0) or elects an
        unclean leader for partitions without a live one (type 1); ``None``: every
        partition. Per partition: NONE, ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
        ELIGIBLE_LEADERS_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION."""
        return self._submit(lambda: self.elections.elect_leaders(election_type, partitions))

    def alter_partition(
        self, broker_id: int, updates: Sequence[IsrUpdate]
    ) -> concurrent.futures.Future[list[IsrUpdateResult]]:
        """AlterPartition from ``broker_id``: each partition's new ISR, written when its
        leader epoch and partition epoch are current (``controller.isr_updates``)."""
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
        return self._submit(lambda: self.reassigner.alter(targets, allow_replication_factor_change))

    def list_partition_reassignments(
        self, partitions: Sequence[TopicPartition] | None = None
    ) -> concurrent.futures.Future[dict[TopicPartition, ReplicaAssignment]]:
        """ListPartitionReassignments: the reassignments in progress (of ``partitions``, or
        all), sorted; partitions not being reassigned are left out."""
        return self._submit(lambda: self.reassigner.in_progress(partitions))

    def leader_counts(self) -> concurrent.futures.Future[dict[int, int]]:
        def count() -> dict[int, int]:
            counts = dict.fromkeys(self.context.brokers, 0)
            for record in self.context.partitions.values():
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

    # --- events that cross duties ------------------------------------------------------------

    def _sync_brokers(self) -> None:
        if self.active and self.broker_changes.sync():
            self.reassigner.complete_all()

    def _alter_partition(
        self, broker_id: int, updates: Sequence[IsrUpdate]
    ) -> list[IsrUpdateResult]:
        results, changed = self.isr_updates.alter_partition(broker_id, updates)
        if changed:
            # Told after the answer (the next event): the leader need not wait for every
            # broker, and a slow one delays no ISR change.
            self.controller.submit(lambda: self._update_metadata_if_active(changed))
            # A reassignment waiting for its target replicas in the ISR may complete now.
            for tp in changed:
                if tp in self.context.reassignments:
                    self.controller.submit(functools.partial(self._on_isr_changed, tp))
        return results

    def _update_metadata_if_active(self, partitions: list[TopicPartition]) -> None:
        if self.active:
            self.updates.send_update_metadata(partitions)

    def _on_isr_changed(self, tp: TopicPartition) -> None:
        """Called on the controller thread after ``tp``'s ISR changed and was written
        (AlterPartition; best as the event after the answer, so the leader does not wait for
        the brokers): a reassignment waiting for its target replicas to join the ISR
        completes. Does nothing once this broker is no longer the controller."""
        if self.active and tp in self.context.reassignments:
            self.reassigner.complete([tp])
