"""``TopicChanges``: the controller's topic requests — CreateTopics, CreatePartitions and
DeleteTopics, forwarded by any broker (Kafka's ``AdminZkClient`` calls made by the controller,
plus its ``TopicDeletionManager`` without the retry queue).

Creation: the assignment is the request's own (checked against the live brokers) or spread
over the live brokers, rack-aware (``controller.assignment.assign_replicas``); the whole
request passes the partition limits first (``controller.admission``: a request over
``max.partitions.per.request`` gets POLICY_VIOLATION for every topic); the topic node is
written (``ClusterMetadata.create_topic`` / ``add_partitions``), then the first partition
states (``ControllerContext.create_states``); the new partitions' replicas get LeaderAndIsr
(``is_new``) and every live broker UpdateMetadata before the results are returned, so a
client that gets them finds the topic on any broker. ``validate_only`` checks everything and
writes nothing. New partitions wait while any partition of the topic is reassigned
(REASSIGNMENT_IN_PROGRESS), as Kafka's controller does.

Deletion: every live broker gets UpdateMetadata with leader -2 and the replicas StopReplica
with delete, then the topic leaves the store and the held state; ``delete.topic.enable``
false refuses it (TOPIC_DELETION_DISABLED).

Errors are per topic, in the results (``TopicResult``), never raised for one topic.

Thread safety: none; used on the ``Controller``'s event thread only.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from odradek._types import TopicPartition
from odradek.controller.admission import PartitionAdmission, check_request_partitions
from odradek.controller.assignment import (
    assign_replicas,
    validate_assignment,
    validate_topic_name,
)
from odradek.controller.broker_updates import BrokerUpdates
from odradek.controller.context import ControllerContext, unclean_of
from odradek.errors import ErrorCode, KafkaError

logger = logging.getLogger(__name__)


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


class TopicChanges:
    """See the module docstring."""

    def __init__(self, context: ControllerContext, updates: BrokerUpdates) -> None:
        self._context = context
        self._updates = updates

    def create_topics(
        self, requests: Sequence[TopicRequest], validate_only: bool
    ) -> list[TopicResult]:
        context = self._context
        settings = context.settings
        results: list[TopicResult] = []
        created: list[TopicPartition] = []
        live = sorted(context.brokers)
        admission = self._admission(
            sum(_requested_partitions(r, settings.num_partitions) for r in requests),
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
                context.metadata.create_topic(request.name, assignment, request.configs)
                created.extend(context.create_states(request.name, assignment))
                context.unclean[request.name] = unclean_of(
                    request.configs, settings.unclean_leader_election_enable
                )
                results.append(TopicResult(request.name))
            except KafkaError as error:
                results.append(TopicResult(request.name, error.error_code, str(error)))
        self._announce(created, live)
        return results

    def create_partitions(
        self,
        requests: Sequence[tuple[str, int, Sequence[Sequence[int]] | None]],
        validate_only: bool,
    ) -> list[TopicResult]:
        context = self._context
        results: list[TopicResult] = []
        created: list[TopicPartition] = []
        live = sorted(context.brokers)
        counts = Counter(tp.topic for tp in context.partitions)
        admission = self._admission(
            sum(max(0, total - counts[name]) for name, total, _ in requests),
            [name for name, _, _ in requests],
        )
        if isinstance(admission, list):
            return admission
        for name, total, manual in requests:
            try:
                current = context.metadata.assignment(name)
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
                        racks=context.racks(),
                    )
                admission.admit(new)
                if validate_only:
                    results.append(TopicResult(name))
                    continue
                context.metadata.add_partitions(name, new)
                created.extend(context.create_states(name, new))
                results.append(TopicResult(name))
            except KafkaError as error:
                results.append(TopicResult(name, error.error_code, str(error)))
        self._announce(created, live)
        return results

    def delete_topics(self, names: Sequence[str]) -> list[TopicResult]:
        context = self._context
        results: list[TopicResult] = []
        doomed: list[TopicPartition] = []
        for name in names:
            partitions = [tp for tp in context.partitions if tp.topic == name]
            if not partitions:
                results.append(
                    TopicResult(
                        name,
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"topic {name!r} does not exist",
                    )
                )
                continue
            if not context.settings.delete_topic_enable:
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
        self._updates.send_update_metadata(doomed, deleting=True)
        self._updates.send_stop_replica(doomed)
        for name in sorted({tp.topic for tp in doomed}):
            try:
                context.metadata.delete_topic(name)
            except KafkaError:
                logger.warning("controller: topic %s was already gone from the store", name)
            context.unclean.pop(name, None)
        for topic_partition in doomed:
            context.partitions.pop(topic_partition, None)
            context.reassignments.pop(topic_partition, None)
        return results

    def _announce(self, created: list[TopicPartition], live: Sequence[int]) -> None:
        """LeaderAndIsr (``is_new``) to the new partitions' replicas, UpdateMetadata to all."""
        if created:
            self._updates.send_leader_and_isr(created, set(live), is_new=True)
            self._updates.send_update_metadata(created)

    def _plan_topic(self, request: TopicRequest, live: Sequence[int]) -> dict[int, list[int]]:
        settings = self._context.settings
        validate_topic_name(request.name)
        settings.validate_configs(request.configs)
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
            partitions = settings.num_partitions
        factor = request.replication_factor
        if factor == -1:
            factor = settings.default_replication_factor
        return assign_replicas(partitions, factor, live, racks=self._context.racks())

    def _admission(
        self, requested: int, names: Sequence[str]
    ) -> PartitionAdmission | list[TopicResult]:
        """The request's admission, or every topic's POLICY_VIOLATION when the request asks
        for more than ``max.partitions.per.request`` partitions."""
        limits = self._context.settings.limits
        try:
            check_request_partitions(requested, limits)
        except KafkaError as error:
            return [TopicResult(name, error.error_code, str(error)) for name in names]
        return PartitionAdmission(
            (record.replicas for record in self._context.partitions.values()), limits
        )

    def _refuse_while_reassigning(self, topic: str) -> None:
        """New partitions wait for the topic's reassignments (as Kafka: its replica sets are
        not one replication factor meanwhile).

        Raises:
            KafkaError: REASSIGNMENT_IN_PROGRESS.
        """
        moving = sorted(tp for tp in self._context.reassignments if tp.topic == topic)
        if moving:
            raise KafkaError(
                f"topic {topic!r} has reassignments in progress ({', '.join(map(str, moving))}): "
                "add partitions once they complete or are cancelled",
                code=ErrorCode.REASSIGNMENT_IN_PROGRESS,
            )


def _requested_partitions(request: TopicRequest, default: int) -> int:
    """The partitions a CreateTopics entry asks for (-1: the broker's ``num.partitions``)."""
    if request.assignment is not None:
        return len(request.assignment)
    return max(0, default if request.num_partitions == -1 else request.num_partitions)
