"""``IsrUpdates``: AlterPartition on the controller — ISR changes proposed by partition
leaders (KIP-497), and the values of its requests and answers (``IsrUpdate``,
``IsrUpdateResult``, which ``broker.replication.isr_changes`` sends and reads).

The rule: a change is accepted only from the partition's current leader at the current
leader epoch and partition epoch (``partition_states.alter_partition``, pure), and written
with the state node's version as the compare-and-set token inside the controller's
epoch-fenced ``multi`` (``ControllerContext.write_states``). If the node moved under the
controller, nothing of that write is held and each of its partitions is answered
INVALID_UPDATE_VERSION. The answer carries the partition's state after the change: its
partition epoch is the node's new version. The leader epoch does not change, so no
LeaderAndIsr is sent; telling every broker (UpdateMetadata) and completing reassignments that
waited for the ISR are the caller's next events (``controller.cluster``), so the leader does
not wait for every broker.

Thread safety: none; used on the ``Controller``'s event thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from odradek._types import TopicPartition
from odradek.controller.context import ControllerContext
from odradek.controller.leaders import LeaderAndIsr
from odradek.controller.partition_states import alter_partition
from odradek.errors import BadVersionError, ErrorCode

logger = logging.getLogger(__name__)


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


class IsrUpdates:
    """See the module docstring."""

    def __init__(self, context: ControllerContext) -> None:
        self._context = context

    def alter_partition(
        self, broker_id: int, updates: Sequence[IsrUpdate]
    ) -> tuple[list[IsrUpdateResult], list[TopicPartition]]:
        """Applies ``broker_id``'s AlterPartition.

        Returns:
            the answer, one result per update in order; and the partitions whose ISR changed
            (written and held).
        """
        context = self._context
        live = context.electable()
        refused: dict[TopicPartition, tuple[ErrorCode, str]] = {}
        changes: dict[TopicPartition, LeaderAndIsr] = {}
        for update in updates:
            tp = update.topic_partition
            record = context.partitions.get(tp)
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
            context.write_states(changes)
        except BadVersionError as error:  # the node moved under us: nothing was written
            for tp in changes:
                refused[tp] = (ErrorCode.INVALID_UPDATE_VERSION, str(error))
            changes = {}
        if changes:
            logger.info(
                "controller %d: ISR changes from broker %d: %s",
                context.broker_id,
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
            record = context.partitions[tp]
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
        return results, list(changes)
