"""``BrokerChanges``: what the controller does when brokers come and go — a broker lost, a
broker back, a broker in controlled shutdown (Kafka's ``onBrokerFailure``,
``onBrokerStartup`` and ``ControlledShutdown`` handling).

- Brokers changed (``LiveBrokers``' watch, queued by ``controller.cluster``): brokers gone →
  new leaders from the ISR and the dead replicas out of ISRs
  (``partition_states.on_brokers_failed``; ``unclean.leader.election.enable`` read per topic
  at that moment); brokers back → offline partitions elect again
  (``on_brokers_started``). A broker new to the controller gets LeaderAndIsr for every one of
  its replicas, the others only for what changed; every live broker gets UpdateMetadata.
- Controlled shutdown (SIGTERM on a broker): its leaderships move to other live ISR members
  (``on_controlled_shutdown``) and it stays out of every later election
  (``ControllerContext.shutting_down``) until it leaves the live brokers.

The decisions are ``controller.partition_states``' (pure); this module applies them: state
writes through the ``ControllerContext``, requests through ``BrokerUpdates``.

Thread safety: none; used on the ``Controller``'s event thread only.
"""

from __future__ import annotations

import logging

from odradek._types import TopicPartition
from odradek.controller.broker_updates import BrokerUpdates
from odradek.controller.context import ControllerContext
from odradek.controller.leaders import LeaderAndIsr
from odradek.controller.partition_states import (
    on_brokers_failed,
    on_brokers_started,
    on_controlled_shutdown,
)

logger = logging.getLogger(__name__)


class BrokerChanges:
    """See the module docstring."""

    def __init__(self, context: ControllerContext, updates: BrokerUpdates) -> None:
        self._context = context
        self._updates = updates

    def on_elected(self) -> int:
        """A new term: partitions led by brokers that are gone elect again, offline ones
        whose replicas are back elect too; every live broker gets LeaderAndIsr for its
        replicas and the full UpdateMetadata. Returns the partition states changed."""
        context = self._context
        live = set(context.brokers)
        changes = on_brokers_failed(context.partitions, live, unclean=context.unclean_reader())
        changes.update(
            on_brokers_started(context.partitions, live, unclean=context.unclean_reader())
        )
        context.write_states(changes)
        everything = list(context.partitions)
        self._updates.send_leader_and_isr(everything, live)
        self._updates.send_update_metadata(everything)
        return len(changes)

    def sync(self) -> bool:
        """Takes ``LiveBrokers``' current brokers and acts on the difference; returns whether
        the live brokers changed."""
        context = self._context
        before = context.refresh_brokers()
        live = set(context.brokers)
        if live == before:
            return False
        removed, added = before - live, live - before
        context.shutting_down &= live
        electable = live - context.shutting_down
        changes: dict[TopicPartition, LeaderAndIsr] = {}
        if removed:
            changes.update(
                on_brokers_failed(context.partitions, electable, unclean=context.unclean_reader())
            )
        changes.update(
            on_brokers_started(context.partitions, electable, unclean=context.unclean_reader())
        )
        context.write_states(changes)
        # The new brokers learn all their replicas; the others only what changed.
        targets = [
            tp
            for tp, record in context.partitions.items()
            if tp in changes or any(replica in added for replica in record.replicas)
        ]
        self._updates.send_leader_and_isr(targets, live)
        self._updates.send_update_metadata(list(context.partitions))
        logger.info(
            "controller %d: brokers added %s removed %s; %d partition states changed",
            context.broker_id,
            sorted(added),
            sorted(removed),
            len(changes),
        )
        return True

    def controlled_shutdown(self, broker_id: int) -> list[TopicPartition]:
        """Moves leadership off ``broker_id`` and keeps it out of later elections; returns
        the partitions it still leads (those without another live ISR member)."""
        context = self._context
        live = set(context.brokers)
        electable = live - context.shutting_down  # another broker stopping takes nothing
        context.shutting_down.add(broker_id)
        changes = on_controlled_shutdown(context.partitions, electable, broker_id)
        context.write_states(changes)
        self._updates.send_leader_and_isr(list(changes), live)
        self._updates.send_update_metadata(list(changes))
        remaining = sorted(
            tp for tp, record in context.partitions.items() if record.state.leader == broker_id
        )
        logger.info(
            "controller %d: controlled shutdown of broker %d moved %d partition states; "
            "%d leaderships stay",
            context.broker_id,
            broker_id,
            len(changes),
            len(remaining),
        )
        return remaining
