"""``Reassigner``: partition reassignment on the controller (KIP-455;
AlterPartitionReassignments, ListPartitionReassignments, and the ``/admin/reassign_partitions``
node through ``controller.admin_nodes``).

A partition moving from its replicas OR to the target TR gets RS = TR + (OR − TR), with the
adding / removing replicas written beside the assignment in ``/brokers/topics/<t>`` (one
fenced ``multi`` with the partition state: ``ControllerContext.write_reassignments``); every
replica is told (LeaderAndIsr: the new ones start as followers), replicas a re-targeted or
cancelled reassignment drops are stopped and deleted, and every broker gets UpdateMetadata.
Once the target replicas are all in the ISR (``complete``: called when the ISR grows, when
brokers change, and on election) the replicas become TR, a leader outside TR gives way (the
leader epoch goes up), and the removed replicas are stopped and deleted. A new controller
resumes from the stored adding / removing replicas (``ControllerContext.load``).

Decisions: ``controller.reassignment`` (pure). The reassignments in progress are the
context's ``reassignments``; automatic leader elections leave them alone.

Thread safety: none; used on the ``Controller``'s event thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from odradek._types import TopicPartition
from odradek.controller.broker_updates import BrokerUpdates
from odradek.controller.context import ControllerContext
from odradek.controller.reassignment import (
    ReassignmentStart,
    ReplicaAssignment,
    complete_reassignment,
    start_reassignment,
)
from odradek.errors import ErrorCode

logger = logging.getLogger(__name__)


class Reassigner:
    """See the module docstring."""

    def __init__(self, context: ControllerContext, updates: BrokerUpdates) -> None:
        self._context = context
        self._updates = updates

    def alter(
        self,
        targets: Mapping[TopicPartition, Sequence[int] | None],
        allow_replication_factor_change: bool,
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        """Starts, re-targets or (``None``) cancels the reassignments of ``targets``; the
        result per partition as ``ClusterController.alter_partition_reassignments`` documents
        it. Completes at once those whose target replicas are already in sync."""
        context = self._context
        live = set(context.brokers)
        results: dict[TopicPartition, tuple[ErrorCode, str | None]] = {}
        starts: dict[TopicPartition, ReassignmentStart] = {}
        for tp, target in targets.items():
            record = context.partitions.get(tp)
            if record is None:
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {tp}")
                continue
            current = context.reassignments.get(tp) or ReplicaAssignment(record.replicas)
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
        context.write_reassignments({tp: (s.assignment, s.state) for tp, s in starts.items()})
        for tp, start in starts.items():
            if start.assignment.is_reassigning:
                context.reassignments[tp] = start.assignment
            else:
                context.reassignments.pop(tp, None)
        self._tell(live, {tp: start.stopped for tp, start in starts.items()})
        logger.info(
            "controller %d: reassignment of %d partitions started: %s",
            context.broker_id,
            len(starts),
            ", ".join(f"{tp} -> {list(s.assignment.target)}" for tp, s in sorted(starts.items())),
        )
        self.complete(list(starts))
        return results

    def complete(self, partitions: Sequence[TopicPartition]) -> None:
        """Completes the reassignments of ``partitions`` whose target replicas are in sync."""
        context = self._context
        live = set(context.brokers)
        done = {}
        for tp in partitions:
            record = context.partitions.get(tp)
            if record is None:
                context.reassignments.pop(tp, None)
                continue
            assignment = context.reassignments.get(tp) or ReplicaAssignment(record.replicas)
            completion = complete_reassignment(assignment, record.state, live)
            if completion is not None:
                done[tp] = completion
        if not done:
            return
        context.write_reassignments(
            {tp: (ReplicaAssignment(c.replicas), c.state) for tp, c in done.items()}
        )
        for tp in done:
            context.reassignments.pop(tp, None)
        self._tell(live, {tp: c.removed for tp, c in done.items()})
        logger.info(
            "controller %d: reassignment of %d partitions completed: %s",
            context.broker_id,
            len(done),
            ", ".join(f"{tp} = {list(c.replicas)}" for tp, c in sorted(done.items())),
        )

    def complete_all(self) -> None:
        """Completes every reassignment in progress whose target replicas are in sync."""
        self.complete(list(self._context.reassignments))

    def resume(self) -> None:
        """After an election: completes what the stored reassignments allow."""
        context = self._context
        if context.reassignments:
            logger.info(
                "controller %d: resuming %d partition reassignments",
                context.broker_id,
                len(context.reassignments),
            )
        self.complete_all()

    def in_progress(
        self, partitions: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        """The reassignments in progress (of ``partitions``, or all), sorted."""
        held = self._context.reassignments
        wanted = sorted(held) if partitions is None else sorted(set(partitions))
        return {tp: held[tp] for tp in wanted if tp in held}

    def _tell(self, live: set[int], stopped: Mapping[TopicPartition, Sequence[int]]) -> None:
        """The brokers learn the partitions' new replica sets and states: LeaderAndIsr to the
        live replicas, StopReplica with delete to the ``stopped`` ones (in that order, so a
        leader knows its new followers before the old ones go), UpdateMetadata to all."""
        partitions = list(stopped)
        self._updates.send_leader_and_isr(partitions, live)
        self._updates.send_stop_replicas(stopped)
        self._updates.send_update_metadata(partitions)
