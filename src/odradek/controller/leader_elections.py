"""``LeaderElections``: leader elections that no broker change causes — ElectLeaders on
request (preferred, or unclean for partitions without a live leader; KIP-460) and the
automatic leader-imbalance check (``auto.leader.rebalance.enable``, ``leader.imbalance.*``;
Kafka's ``checkAndTriggerAutoLeaderRebalance``).

Decisions: ``partition_states.elect_leader_on_request`` (one partition) and
``controller.rebalance.plan_rebalance`` (which partitions go back to their preferred
replica), both pure. This module writes the new states (``ControllerContext``) and tells the
replicas (LeaderAndIsr) and every broker (UpdateMetadata) through ``BrokerUpdates``. Brokers
in controlled shutdown are never elected; partitions being reassigned are left out of the
automatic check, as Kafka's controller skips them.

The imbalance check runs on a ``threading.Timer`` that only queues an event on the
controller's thread: first 5 s after the election (or the check interval, if shorter), then
every ``leader.imbalance.check.interval.seconds``. A timer belongs to one term (``start_term``
to ``end_term``); one that fires in a later term is dropped.

Thread safety: none, but for the timer, which only calls ``Controller.submit``; every other
method runs on the ``Controller``'s event thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from odradek._types import TopicPartition
from odradek.controller.broker_updates import BrokerUpdates
from odradek.controller.context import ControllerContext
from odradek.controller.leaders import LeaderAndIsr
from odradek.controller.partition_states import PREFERRED_ELECTION, elect_leader_on_request
from odradek.controller.rebalance import RebalanceDecision, plan_rebalance
from odradek.errors import ErrorCode

logger = logging.getLogger(__name__)

#: Kafka's first leader-imbalance check comes 5 s after the election, then every interval.
_FIRST_REBALANCE_CHECK_S = 5.0


class LeaderElections:
    """See the module docstring."""

    def __init__(self, context: ControllerContext, updates: BrokerUpdates) -> None:
        self._context = context
        self._updates = updates
        #: The automatic rebalance's timer; a check armed in another term is dropped.
        self._rebalance_timer: threading.Timer | None = None
        self._term = 0
        #: Partitions moved back to their preferred replica by the automatic check.
        self.rebalance_elections = 0

    def elect_leaders(
        self, election_type: int, partitions: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        """ElectLeaders of ``partitions`` (``None``: every partition); the result per partition
        as ``ClusterController.elect_leaders`` documents it."""
        context = self._context
        live = context.electable()
        wanted = sorted(context.partitions) if partitions is None else list(partitions)
        results: dict[TopicPartition, tuple[ErrorCode, str | None]] = {}
        changes: dict[TopicPartition, LeaderAndIsr] = {}
        for tp in wanted:
            record = context.partitions.get(tp)
            if record is None:
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {tp}")
                continue
            decision = elect_leader_on_request(election_type, record, live)
            if isinstance(decision, LeaderAndIsr):
                changes[tp] = decision
                results[tp] = (ErrorCode.NONE, None)
            else:
                results[tp] = decision
        context.write_states(changes)
        self._updates.send_leader_and_isr(list(changes), live)
        self._updates.send_update_metadata(list(changes))
        if changes:
            logger.info(
                "controller %d: %d leaders elected on request (type %d)",
                context.broker_id,
                len(changes),
                election_type,
            )
        return results

    # --- the automatic leader-imbalance check -------------------------------------------------

    def start_term(self) -> None:
        """A new term: arms the first imbalance check if ``auto.leader.rebalance.enable``."""
        self._term += 1
        rebalance = self._context.settings.rebalance
        if rebalance.auto_leader_rebalance_enable:
            first_s = min(
                _FIRST_REBALANCE_CHECK_S, rebalance.leader_imbalance_check_interval_seconds
            )
            self._arm_rebalance(self._term, first_s)

    def end_term(self) -> None:
        """The term ends: its timer is cancelled, and one already fired is dropped."""
        self._term += 1
        timer, self._rebalance_timer = self._rebalance_timer, None
        if timer is not None:
            timer.cancel()

    def rebalance_leaders(self) -> RebalanceDecision:
        """One leader-imbalance check (``controller.rebalance``) and its elections."""
        context = self._context
        decision = plan_rebalance(
            context.partitions,
            context.electable(),
            context.settings.rebalance.leader_imbalance_per_broker_percentage,
            excluded=frozenset(context.reassignments),
        )
        if decision.elect:
            results = self.elect_leaders(PREFERRED_ELECTION, decision.elect)
            moved = sum(1 for code, _ in results.values() if code is ErrorCode.NONE)
            self.rebalance_elections += moved
            logger.info(
                "controller %d: leader imbalance %s; %d partitions moved back to their "
                "preferred replica, %d wait for theirs",
                context.broker_id,
                {broker: round(ratio, 3) for broker, ratio in decision.imbalance.items() if ratio},
                moved,
                len(decision.waiting),
            )
        return decision

    def _arm_rebalance(self, term: int, delay_s: float) -> None:
        def fire() -> None:
            self._context.controller.submit(lambda: self._on_rebalance_timer(term))

        timer = threading.Timer(delay_s, fire)
        timer.name = f"odradek-leader-rebalance-{self._context.broker_id}"
        timer.daemon = True
        self._rebalance_timer = timer
        timer.start()

    def _on_rebalance_timer(self, term: int) -> None:
        if term != self._term or not self._context.active:
            return  # armed in an earlier term
        try:
            self.rebalance_leaders()
        finally:
            if term == self._term and self._context.active:
                interval_s = (
                    self._context.settings.rebalance.leader_imbalance_check_interval_seconds
                )
                self._arm_rebalance(term, interval_s)
