"""``AdminNodes``: the ZooKeeper-mode tools' requests, written as nodes under ``/admin``
whoever is controller, and carried out by the controller that reads them:

- ``/admin/reassign_partitions`` (kafka-reassign-partitions.sh ``--zookeeper``): the
  reassignments it lists start (``Reassigner.alter``, replication factor changes allowed);
- ``/admin/preferred_replica_election`` (kafka-preferred-replica-election.sh
  ``--zookeeper``): a preferred election for the partitions it lists
  (``LeaderElections.elect_leaders``);
- ``/admin/delete_topics/<topic>`` (kafka-topics.sh ``--delete --zookeeper``): each topic is
  deleted across every broker as DeleteTopics does (``TopicChanges.delete_topics``).

The rule: a node is acted on, then deleted with a fenced write, so a request is the
controller's once read; an unreadable or refused request is logged and its node removed all
the same, so that it does not block the next (as Kafka's controller does: an unknown topic's
deletion node, or every one with ``delete.topic.enable`` false, goes too). A
``/admin/reassign_partitions`` written again meanwhile keeps its node (the conditional delete
fails) and its watch brings the controller back.

``take_over`` runs at each election (Kafka acts on nodes written while there was no
controller); the watches are set once (they are persistent) and queue an event on the
controller's thread, which does nothing while this broker is not the controller.

Thread safety: the watch callbacks only call ``Controller.submit``; everything else runs on
the ``Controller``'s event thread.
"""

from __future__ import annotations

import contextlib
import logging

from odradek.controller.context import ControllerContext
from odradek.controller.layout import (
    DELETE_TOPICS_PATH,
    PREFERRED_REPLICA_ELECTION_PATH,
    REASSIGN_PARTITIONS_PATH,
    decode_preferred_replica_election,
)
from odradek.controller.leader_elections import LeaderElections
from odradek.controller.partition_states import PREFERRED_ELECTION
from odradek.controller.reassigner import Reassigner
from odradek.controller.reassignment import parse_reassignment_json
from odradek.controller.store import DeleteOp, join_path
from odradek.controller.topic_changes import TopicChanges
from odradek.errors import BadVersionError, CorruptMetadataError, ErrorCode, KafkaError, NoNodeError

logger = logging.getLogger(__name__)


class AdminNodes:
    """See the module docstring."""

    def __init__(
        self,
        context: ControllerContext,
        reassigner: Reassigner,
        elections: LeaderElections,
        topics: TopicChanges,
    ) -> None:
        self._context = context
        self._reassigner = reassigner
        self._elections = elections
        self._topics = topics
        self._reassign_node_watched = False
        self._admin_watched = False

    def take_over_reassignments(self) -> None:
        """After an election: watch ``/admin/reassign_partitions`` from now on and act on it."""
        if not self._reassign_node_watched:
            self._reassign_node_watched = True
            self._context.metadata.store.watch_data(
                REASSIGN_PARTITIONS_PATH,
                lambda _path: self._context.controller.submit(self.on_reassign_partitions),
            )
        self.on_reassign_partitions()

    def take_over_requests(self) -> None:
        """After an election: watch the election and deletion nodes from now on and act on
        them."""
        context = self._context
        if not self._admin_watched:  # watches are persistent: set once, act while active
            self._admin_watched = True
            store = context.metadata.store
            store.watch_data(
                PREFERRED_REPLICA_ELECTION_PATH,
                lambda path: context.controller.submit(self.on_preferred_replica_election),
            )
            store.watch_children(
                DELETE_TOPICS_PATH,
                lambda path: context.controller.submit(self.on_delete_topics),
            )
        self.on_preferred_replica_election()
        self.on_delete_topics()

    def on_reassign_partitions(self) -> None:
        """Starts the reassignments a tool wrote to ``/admin/reassign_partitions`` (Kafka's
        JSON) and deletes the node: they are the controller's from then on."""
        context = self._context
        node = self._read(REASSIGN_PARTITIONS_PATH)
        if node is None:
            return
        data, version = node
        try:
            targets = parse_reassignment_json(data)
        except KafkaError as error:
            logger.warning(
                "controller %d: ignoring %s: %s", context.broker_id, REASSIGN_PARTITIONS_PATH, error
            )
            targets = {}
        if targets:
            results = self._reassigner.alter(targets, True)
            for tp, (code, message) in sorted(results.items()):
                if code is not ErrorCode.NONE:
                    logger.warning(
                        "controller %d: reassignment of %s from %s refused: %s: %s",
                        context.broker_id,
                        tp,
                        REASSIGN_PARTITIONS_PATH,
                        code.name,
                        message,
                    )
        # Written again meanwhile (its watch brings us back here), or already gone.
        with contextlib.suppress(BadVersionError, NoNodeError):
            context.controller.write([DeleteOp(REASSIGN_PARTITIONS_PATH, version)])

    def on_preferred_replica_election(self) -> None:
        """A preferred election for the partitions ``/admin/preferred_replica_election``
        lists, then the node goes (a fenced delete)."""
        context = self._context
        node = self._read(PREFERRED_REPLICA_ELECTION_PATH)
        if node is None:
            return
        data = node[0]
        try:
            wanted = decode_preferred_replica_election(data)
        except CorruptMetadataError as error:
            logger.error("controller %d: ignoring %s", context.broker_id, error)
            wanted = []
        if wanted:
            results = self._elections.elect_leaders(PREFERRED_ELECTION, wanted)
            outcome: dict[str, int] = {}
            for code, _ in results.values():
                outcome[code.name] = outcome.get(code.name, 0) + 1
            logger.info(
                "controller %d: preferred replica election of %d partitions requested in %s: %s",
                context.broker_id,
                len(wanted),
                PREFERRED_REPLICA_ELECTION_PATH,
                outcome,
            )
        with contextlib.suppress(NoNodeError):
            context.controller.write([DeleteOp(PREFERRED_REPLICA_ELECTION_PATH)])

    def _read(self, path: str) -> tuple[bytes, int] | None:
        """The node's data and version while this broker is the controller; else ``None``
        (not the controller, or no request)."""
        if not self._context.active:
            return None
        try:
            return self._context.metadata.store.get(path)
        except NoNodeError:
            return None

    def on_delete_topics(self) -> None:
        """Deletes each topic under ``/admin/delete_topics``, then its node."""
        context = self._context
        if not context.active:
            return
        try:
            names = sorted(context.metadata.store.children(DELETE_TOPICS_PATH))
        except NoNodeError:
            return
        if not names:
            return
        for result in self._topics.delete_topics(names):
            if result.error_code is ErrorCode.NONE:
                logger.info("controller %d: deleted topic %s", context.broker_id, result.name)
            else:
                logger.warning(
                    "controller %d: request to delete topic %s ignored: %s",
                    context.broker_id,
                    result.name,
                    result.message,
                )
        for name in names:
            with contextlib.suppress(NoNodeError):
                context.controller.write([DeleteOp(join_path(DELETE_TOPICS_PATH, name))])
