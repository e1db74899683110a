"""Topics on a single broker: creation, deletion, partitions, configs — the controller's
work for a one-node cluster, over the metadata store and the replica manager.

Every change goes to the metadata store first (Kafka's ZooKeeper layout, see
``controller.topics``) and then to the partitions this broker serves, so a restart rebuilds
the same state from the store (``startup``). Topic configs are validated against
``LogConfig`` before they are stored; a bad one answers INVALID_CONFIG naming the setting.

Bounded work. Every creation is checked whole before anything is written: the partition
counts against ``max.partitions`` / ``max.broker.partitions`` (``broker.limits``; the
partitions of creations under way are counted too), names, configs and assignments — the
checks and the counts are ``broker.topic_plans``' (``TopicPlanner``), this manager sequences
the change once planned. The handlers check ``max.partitions.per.request`` over a whole
request.

Off the event loop. The slow part of a creation or deletion — the store write, one log
directory (and its fsyncs) per partition — runs on this manager's worker thread (one, so
admin changes apply in the order they were asked), while the loop goes on serving other
clients. The ``start_*`` methods return a task; a handler waits for it as long as the
request's timeout allows and answers REQUEST_TIMED_OUT past it, while the work goes on.

Visibility. A topic, or a topic's new partitions, is published — listed by ``topic_names``
and ``describe``, so by Metadata — only once every log exists and the partitions are served.
The order is: store (assignment, partition states), logs, partitions served, published. A
failure on the way (a storage error) undoes it in reverse: logs deleted, store entries
removed, nothing published. A broker stopped mid-way (``stop``) leaves the store written and
some logs made: ``startup`` makes the rest, as the store is the truth. A deletion unpublishes
the topic at once, renames its logs for deletion, then removes it from the store.

Thread safety: public methods on the event loop thread only; the worker thread touches only
the store and the log manager (both thread-safe) and the plan it was given.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from odradek._types import TopicPartition
from odradek.broker.config import BrokerConfig
from odradek.broker.limits import MutationQuota
from odradek.broker.ports import TopicPlan
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.topic_logs import TopicChangeInterruptedError, TopicLogs, describe_change
from odradek.broker.topic_plans import TopicPlanner
from odradek.controller.assignment import validate_topic_name
from odradek.controller.topics import ClusterMetadata
from odradek.errors import ErrorCode, KafkaError, UnknownTopicOrPartitionError
from odradek.storage.config import UNIMPLEMENTED_TOPIC_CONFIGS, LogConfig, is_topic_config

logger = logging.getLogger(__name__)

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
CONTROLLER_EPOCH = 1
#: Partitions made servable per turn of the event loop when a creation is published.
PUBLISH_SLICE = 500
T = TypeVar("T")
#: Partitions auto-created inline per turn of the event loop (see ``maybe_auto_create``).
AUTO_CREATE_INLINE_PARTITIONS = 20
#: Passes over the logs to delete when a creation is undone.


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition as Metadata describes it."""

    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicConfigEntry:
    """One topic config as DescribeConfigs reports it; ``implemented`` false for a Kafka topic
    config odradek accepts without effect."""

    name: str
    value: str
    is_default: bool
    implemented: bool = True


class TopicManager:
    """Creates, deletes and describes topics. See the module docstring."""

    def __init__(
        self, config: BrokerConfig, metadata: ClusterMetadata, replicas: ReplicaManager
    ) -> None:
        self.config = config
        self.limits = config.limits
        self.metadata = metadata
        self.replicas = replicas
        self.broker_id = config.broker_id
        self.quota = MutationQuota(config.limits)
        self._log_configs: dict[str, LogConfig] = {}
        self._known: set[str] = set()
        #: Topic ids (KIP-516) read from the store, once per published topic.
        self._topic_ids: dict[str, str | None] = {}
        self._topic_id_reads: set[str] = set()
        #: Topics whose config node this broker watches (a cluster: another broker may alter).
        self._config_watched: set[str] = set()
        #: The published partitions of each known topic (the store may hold more while
        #: partitions are being added).
        self._assignments: dict[str, dict[int, list[int]]] = {}
        self._jobs: dict[str, asyncio.Task[None]] = {}
        #: The checks of a change before it is written, and the partition limits' counts.
        self.planner = TopicPlanner(
            config, metadata, known=self._known, published=self._assignments, busy=self._jobs
        )
        self._background: set[asyncio.Task[None]] = set()
        self._store_queue: list[tuple[TopicPlan, asyncio.Future[None]]] = []
        self._inline_budget_used = 0
        self._stopping = threading.Event()
        self._executor: ThreadPoolExecutor | None = None

    # ----------------------------------------------------------------- start-up, stop

    def startup(self, *, serve: bool = True) -> None:
        """Serves every partition the store assigns to this broker (creating the logs a
        creation interrupted by a stop or a crash had not made yet). In a cluster ``serve`` is
        false: the controller writes the partition states and its LeaderAndIsr requests say
        which partitions this broker leads or follows."""
        topics = sorted(self.metadata.topics())
        with self.metadata.store.batched():
            for topic in topics:
                assignment = self.metadata.assignment(topic)
                if serve:
                    self._write_states(topic, assignment, only_missing=True)
                    for index, replicas in sorted(assignment.items()):
                        self._serve_partition(topic, index, replicas)
                self._assignments[topic] = assignment
                self._known.add(topic)
                self.planner.count_published(assignment)

    async def stop(self) -> None:
        """Stops the work under way (what was stored is finished by the next ``startup``),
        waits for it, and stops the worker thread."""
        self._stopping.set()
        jobs = [*self._jobs.values(), *self._background]
        if jobs:
            await asyncio.gather(*jobs, return_exceptions=True)
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def _serve_partition(self, topic: str, index: int, replicas: Sequence[int]) -> None:
        if self.broker_id not in replicas:
            return
        state = self.metadata.partition_state(topic, index)
        leader_epoch = state.leader_epoch if state is not None else 0
        self.replicas.become_leader(TopicPartition(topic, index), list(replicas), leader_epoch)

    def _write_states(
        self, topic: str, assignment: Mapping[int, Sequence[int]], *, only_missing: bool
    ) -> None:
        led = [p for p, replicas in assignment.items() if self.broker_id in replicas]
        if only_missing:
            led = [p for p in led if self.metadata.partition_state(topic, p) is None]
        if led:
            self.metadata.create_partition_states(
                topic, led, leader=self.broker_id, isr=[self.broker_id], controller_epoch=1
            )

    # ----------------------------------------------------------------- queries

    def log_config_for(self, topic: str) -> LogConfig:
        """The broker's log defaults with the topic's overrides applied."""
        config = self._log_configs.get(topic)
        if config is None:
            overrides = self.metadata.topic_configs(topic) if topic in self._known else {}
            config = self.config.log_config.with_overrides(overrides)
            self._log_configs[topic] = config
        return config

    def exists(self, topic: str) -> bool:
        """Whether ``topic`` is published (a topic being created is not, yet)."""
        return topic in self._known

    def note_topic(self, topic: str, assignment: Mapping[int, Sequence[int]]) -> None:
        """Records a topic and its partitions as the cluster controller published them, and
        from then on follows its config overrides, wherever they are altered. Call on the
        event loop."""
        if topic not in self._known:
            self._known.add(topic)
            self._log_configs.pop(topic, None)
            self._prefetch_topic_id(topic)
            self._watch_config(topic)
        self._assignments[topic] = {index: list(replicas) for index, replicas in assignment.items()}

    def _watch_config(self, topic: str) -> None:
        if topic in self._config_watched:
            return  # a topic deleted and created again: the watch outlived it
        self._config_watched.add(topic)
        loop = asyncio.get_running_loop()
        self.metadata.watch_topic_config(
            topic, lambda name: loop.call_soon_threadsafe(self.refresh_topic_config, name)
        )

    def refresh_topic_config(self, topic: str) -> None:
        """Reads the topic's overrides again and applies them to its partitions' logs (after
        another broker altered them); nothing for a topic this broker no longer knows."""
        if topic not in self._known:
            return
        self._log_configs.pop(topic, None)
        self.replicas.update_topic_config(topic)

    def forget_topic(self, topic: str) -> None:
        """Forgets a topic the cluster controller deleted."""
        self._known.discard(topic)
        self._topic_ids.pop(topic, None)
        self._assignments.pop(topic, None)
        self._log_configs.pop(topic, None)

    def topic_names(self) -> list[str]:
        return sorted(self._known)

    def topic_id(self, topic: str) -> str | None:
        """A published topic's id as the store keeps it (``None``: written without one, by
        Kafka < 2.8, not published, or — in a cluster — not read yet).

        Read once per topic, then kept until the topic is deleted. On the embedded store the
        read is a memory lookup and happens at once; in a cluster the store is ZooKeeper and
        the event loop never waits on it: the read runs on the worker thread (started when
        the controller publishes the topic) and this answers ``None`` until it is done.
        """
        if topic in self._topic_ids:
            return self._topic_ids[topic]
        if topic not in self._known:
            return None
        if self.config.zookeeper_connect is None:
            topic_id = self._read_topic_id(topic)
            self._topic_ids[topic] = topic_id
            return topic_id
        self._prefetch_topic_id(topic)
        return None

    def _read_topic_id(self, topic: str) -> str | None:
        try:
            return self.metadata.topic_id(topic)
        except UnknownTopicOrPartitionError:
            return None  # deleted meanwhile

    def _prefetch_topic_id(self, topic: str) -> None:
        """Reads the topic's id off the event loop (a cluster's store is ZooKeeper)."""
        if topic in self._topic_id_reads or self._stopping.is_set():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not on the loop (start-up): the first Metadata request reads it
        self._topic_id_reads.add(topic)
        future = loop.run_in_executor(self._worker(), self._read_topic_id, topic)

        def done(read: asyncio.Future[str | None]) -> None:
            self._topic_id_reads.discard(topic)
            if read.cancelled() or read.exception() is not None:
                return
            if topic in self._known:
                topic_id = self._topic_ids[topic] = read.result()
                if topic_id is not None:  # partitions made replicas before it was read
                    self.replicas.note_topic_id(topic, topic_id)

        future.add_done_callback(done)

    def is_internal(self, topic: str) -> bool:
        return topic in INTERNAL_TOPICS

    def is_busy(self, topic: str) -> bool:
        """Whether a creation, growth or deletion of ``topic`` is under way."""
        return topic in self._jobs

    def describe(self, topic: str) -> list[PartitionInfo]:
        """The topic's published partitions, in order (each has its log)."""
        result = []
        for index, replicas in sorted(self._published(topic).items()):
            partition = self.replicas.get(TopicPartition(topic, index))
            leader_epoch = partition.leader_epoch if partition is not None else 0
            isr = tuple(partition.isr) if partition is not None else ()
            leader = self.broker_id if partition is not None else -1
            result.append(PartitionInfo(index, leader, leader_epoch, tuple(replicas), isr))
        return result

    def partition_count(self, topic: str) -> int:
        return len(self._published(topic))

    def _published(self, topic: str) -> dict[int, list[int]]:
        assignment = self._assignments.get(topic)
        if assignment is None:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        return assignment

    def topic_config_entries(self, topic: str) -> list[TopicConfigEntry]:
        """Every topic config with its effective value and whether it is the default (Kafka's
        topic configs odradek does not implement: the override, else Kafka's default)."""
        if topic not in self._known:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        overrides = self.metadata.topic_configs(topic)
        entries = [
            TopicConfigEntry(name, value, name not in overrides)
            for name, value in self.log_config_for(topic).topic_configs().items()
        ]
        entries.extend(
            TopicConfigEntry(name, overrides.get(name, default), name not in overrides, False)
            for name, (_kind, default) in UNIMPLEMENTED_TOPIC_CONFIGS.items()
        )
        return sorted(entries, key=lambda entry: entry.name)

    def statistics(self) -> dict[str, int]:
        return {
            "topics": len(self._known),
            "partitions": sum(map(len, self._assignments.values())),
            "jobs": len(self._jobs),
            "reserved_partitions": self.planner.reserved_partitions,
        }

    # ----------------------------------------------------------------- checks (TopicPlanner)

    def plan_topic(
        self,
        topic: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        *,
        assignment: Mapping[int, Sequence[int]] | None = None,
        configs: Mapping[str, str] | None = None,
    ) -> TopicPlan:
        """``TopicPlanner.plan_topic``: checks a creation; writes nothing."""
        return self.planner.plan_topic(
            topic, num_partitions, replication_factor, assignment=assignment, configs=configs
        )

    def plan_partitions(
        self,
        topic: str,
        total_count: int,
        *,
        assignment: Sequence[Sequence[int]] | None = None,
    ) -> TopicPlan:
        """``TopicPlanner.plan_partitions``: checks a growth; writes nothing."""
        return self.planner.plan_partitions(topic, total_count, assignment=assignment)

    def check_capacity(self, adding: int, adding_here: int) -> None:
        """``TopicPlanner.check_capacity``: POLICY_VIOLATION past the partition limits."""
        self.planner.check_capacity(adding, adding_here)

    def validate_configs(self, overrides: Mapping[str, str]) -> None:
        """Raises KafkaError (INVALID_CONFIG) for topic config overrides the broker refuses
        (the cluster controller's check before it creates a topic)."""
        self.planner.log_config(overrides)

    # ----------------------------------------------------------------- changes, inline

    def maybe_auto_create(self, topic: str) -> bool:
        """Creates ``topic`` with the defaults when ``auto.create.topics.enable`` allows;
        returns whether it exists now.

        The first ``AUTO_CREATE_INLINE_PARTITIONS`` partitions auto-created in one turn of the
        event loop (one Metadata request, as a rule) are created inline, so a producer's first
        send finds its topic at once; past them a creation runs off the loop like CreateTopics
        and this answers LEADER_NOT_AVAILABLE, which clients retry (as Kafka answers while it
        creates the topic): a Metadata naming thousands of new topics cannot hold the loop.

        Raises:
            KafkaError: INVALID_TOPIC_EXCEPTION for an illegal name; LEADER_NOT_AVAILABLE
                while a creation of it is under way; POLICY_VIOLATION past a limit.
        """
        if not self.config.auto_create_topics_enable or topic in INTERNAL_TOPICS:
            return False  # internal topics are created by their coordinators, with their configs
        validate_topic_name(topic)
        if topic in self._jobs:
            raise KafkaError(
                f"topic {topic!r} is being created or deleted",
                code=ErrorCode.LEADER_NOT_AVAILABLE,
            )
        plan = self.plan_topic(topic)
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # called off a loop: nothing to hold up, create it here
            loop = None
        if loop is not None and not self._inline_budget_used:
            loop.call_soon(self._reset_inline_budget)
        self._inline_budget_used += len(plan.assignment) if loop is not None else 0
        if self._inline_budget_used > AUTO_CREATE_INLINE_PARTITIONS:
            self.start_create(plan)
            logger.info("auto-creating topic %s off the event loop", topic)
            raise KafkaError(
                f"topic {topic!r} is being created", code=ErrorCode.LEADER_NOT_AVAILABLE
            )
        self.create_topic(topic)
        logger.info("auto-created topic %s", topic)
        return True

    def _reset_inline_budget(self) -> None:
        self._inline_budget_used = 0

    def create_topic(
        self,
        topic: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        *,
        assignment: Mapping[int, Sequence[int]] | None = None,
        configs: Mapping[str, str] | None = None,
        validate_only: bool = False,
    ) -> None:
        """Creates a topic on the calling thread (for the broker's own topics and
        auto-creation, with few partitions; handlers use ``start_create``).

        Raises:
            KafkaError: as ``plan_topic``; KAFKA_STORAGE_ERROR when a log cannot be made.
        """
        plan = self.plan_topic(
            topic, num_partitions, replication_factor, assignment=assignment, configs=configs
        )
        if validate_only:
            return
        self._reserve(plan)
        try:
            self._apply(plan)
            for index, replicas in sorted(plan.assignment.items()):
                self._serve_partition(topic, index, replicas)
            self._publish(plan)
        except BaseException:
            self._log_configs.pop(topic, None)
            raise
        finally:
            self.planner.unreserve(topic)

    def create_partitions(
        self,
        topic: str,
        total_count: int,
        *,
        assignment: Sequence[Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> None:
        """Grows ``topic`` on the calling thread (handlers use ``start_create``).

        Raises:
            KafkaError: as ``plan_partitions``; KAFKA_STORAGE_ERROR when a log cannot be made.
        """
        plan = self.plan_partitions(topic, total_count, assignment=assignment)
        if validate_only:
            return
        self._reserve(plan)
        try:
            self._apply(plan)
            for index, replicas in sorted(plan.assignment.items()):
                self._serve_partition(topic, index, replicas)
            self._publish(plan)
        finally:
            self.planner.unreserve(topic)

    def delete_topic(self, topic: str) -> None:
        """Deletes ``topic`` on the calling thread (handlers use ``start_delete``).

        Raises:
            KafkaError: UNKNOWN_TOPIC_OR_PARTITION, TOPIC_DELETION_DISABLED.
        """
        self._remove(topic, self._unpublish(topic))

    def alter_topic_configs(
        self,
        topic: str,
        set_configs: Mapping[str, str],
        delete_configs: Sequence[str] = (),
        *,
        validate_only: bool = False,
    ) -> None:
        """Sets and removes topic config overrides (IncrementalAlterConfigs).

        Raises:
            KafkaError: UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG.
        """
        if topic not in self._known:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        overrides = dict(self.metadata.topic_configs(topic))
        overrides.update(set_configs)
        for name in delete_configs:
            if not is_topic_config(name):
                raise KafkaError(f"unknown topic config {name!r}", code=ErrorCode.INVALID_CONFIG)
            overrides.pop(name, None)
        self.planner.log_config(overrides)
        if validate_only:
            return
        self.metadata.set_topic_configs(topic, overrides)
        self._log_configs.pop(topic, None)
        self.replicas.update_topic_config(topic)

    # ----------------------------------------------------------------- changes, off the loop

    def start_create(self, plan: TopicPlan) -> asyncio.Task[None]:
        """Starts a planned creation (a new topic, or partitions added to one) and returns
        its task: done when the new partitions are published, or failed with the
        ``KafkaError`` that undid it. Call right after planning, on the loop."""
        self._reserve(plan)
        return self._start(plan.topic, self._create(plan))

    def start_delete(self, topic: str) -> asyncio.Task[None]:
        """Unpublishes ``topic`` at once and starts deleting its logs and metadata.

        Raises:
            KafkaError: UNKNOWN_TOPIC_OR_PARTITION, TOPIC_DELETION_DISABLED.
        """
        return self._start(topic, self._delete(topic, self._unpublish(topic)))

    def _unpublish(self, topic: str) -> list[TopicPartition]:
        """Checks a deletion, takes the topic out of Metadata and detaches its partitions.

        Raises:
            KafkaError: UNKNOWN_TOPIC_OR_PARTITION, TOPIC_DELETION_DISABLED.
        """
        if topic not in self._known:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        if not self.config.delete_topic_enable:
            raise KafkaError("delete.topic.enable is false", code=ErrorCode.TOPIC_DELETION_DISABLED)
        self._known.discard(topic)
        self._topic_ids.pop(topic, None)
        self.planner.uncount_published(self._assignments.pop(topic, {}))
        self._log_configs.pop(topic, None)
        return self.replicas.detach_topic(topic)

    def keep(self, work: Coroutine[object, object, None]) -> asyncio.Task[None]:
        """Runs ``work`` (a handler's wait-then-change) as a task the manager holds until it
        ends, so it goes on after its request stopped waiting; ``stop`` waits for it."""
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(_retrieve)
        return task

    async def wait_idle(self, topic: str) -> None:
        """Returns once no change of ``topic`` is under way (whatever its outcome)."""
        while (job := self._jobs.get(topic)) is not None:
            await asyncio.wait([job])

    def _start(self, topic: str, work: Coroutine[object, object, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._jobs[topic] = task

        def finished(done: asyncio.Task[None]) -> None:
            if self._jobs.get(topic) is done:
                del self._jobs[topic]

        task.add_done_callback(finished)
        task.add_done_callback(_retrieve)
        return task

    def _reserve(self, plan: TopicPlan) -> None:
        self.planner.reserve(plan)
        if plan.new_topic:  # checked by plan_topic
            self._log_configs[plan.topic] = self.config.log_config.with_overrides(plan.configs)

    async def _create(self, plan: TopicPlan) -> None:
        loop = asyncio.get_running_loop()
        try:
            if self._stopping.is_set():
                raise TopicChangeInterruptedError
            await self._store(plan)
            await loop.run_in_executor(self._worker(), self._make_logs, plan)
            items = sorted(plan.assignment.items())
            for start in range(0, len(items), PUBLISH_SLICE):
                for index, replicas in items[start : start + PUBLISH_SLICE]:
                    self._serve_partition(plan.topic, index, replicas)
                await asyncio.sleep(0)  # let other clients in between slices
            self._publish(plan)
        except TopicChangeInterruptedError:
            logger.info("%s of topic %s interrupted by shutdown", describe_change(plan), plan.topic)
            raise KafkaError(
                "the broker is shutting down", code=ErrorCode.REQUEST_TIMED_OUT
            ) from None
        except BaseException:
            if plan.new_topic:
                self._log_configs.pop(plan.topic, None)
            raise
        finally:
            self.planner.unreserve(plan.topic)

    async def _store(self, plan: TopicPlan) -> None:
        """Writes ``plan`` to the store on the worker, in one batch (one file write) with the
        plans of the same loop turn — the topics of one request — instead of one each: the
        local store rewrites its whole file per batch, so 500 one-partition topics took 46 s
        one by one."""
        loop = asyncio.get_running_loop()
        written: asyncio.Future[None] = loop.create_future()
        self._store_queue.append((plan, written))
        if len(self._store_queue) == 1:
            loop.call_soon(self._write_queued_plans)  # after the other tasks' first steps
        await written

    def _write_queued_plans(self) -> None:
        queued, self._store_queue = self._store_queue, []
        plans = [plan for plan, _ in queued]
        loop = asyncio.get_running_loop()
        work = loop.run_in_executor(self._worker(), self._write_plans, plans)

        def settle(done: asyncio.Future[list[BaseException | None]]) -> None:
            failure = None if done.cancelled() else done.exception()
            outcomes = done.result() if failure is None and not done.cancelled() else None
            for index, (_, written) in enumerate(queued):
                if written.done():
                    continue
                error = failure if outcomes is None else outcomes[index]
                if outcomes is None and error is None:
                    written.cancel()
                elif error is None:
                    written.set_result(None)
                else:
                    written.set_exception(error)

        work.add_done_callback(settle)

    async def _delete(self, topic: str, detached: list[TopicPartition]) -> None:
        if self._stopping.is_set():  # the worker is gone: finish here (renames, small)
            self._remove(topic, detached)
            return
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._worker(), self._remove, topic, detached)

    def _publish(self, plan: TopicPlan) -> None:
        published = self._assignments.setdefault(plan.topic, {})
        published.update({p: list(r) for p, r in sorted(plan.assignment.items())})
        self.planner.count_published(plan.assignment)
        self._known.add(plan.topic)
        if plan.new_topic:
            logger.info("created topic %s with %d partitions", plan.topic, len(plan.assignment))
        else:
            logger.info("topic %s now has %d partitions", plan.topic, len(published))

    async def run_on_worker(self, work: Callable[..., T], *args: Any) -> T:
        """Runs ``work(*args)`` on the admin worker thread, after the topic changes already
        queued there (one thread: storage work in the order it was asked for); on the event
        loop itself once the broker stops (the worker is gone)."""
        if self._stopping.is_set():
            return work(*args)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker(), work, *args)

    def _worker(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="odradek-admin")
        return self._executor

    # ----------------------------------------------------------------- the worker's part

    def _apply(self, plan: TopicPlan) -> None:
        """Writes the plan to the store, then makes its logs (see ``_make_logs``).

        Raises:
            KafkaError: the store's refusal (TOPIC_ALREADY_EXISTS, ...), or as ``_make_logs``.
        """
        with self.metadata.store.batched():  # one metadata write for the whole change
            self._write_plan(plan)
        self._make_logs(plan)

    def _write_plans(self, plans: Sequence[TopicPlan]) -> list[BaseException | None]:
        """Writes plans to the store in one batch; returns each one's failure (or None)."""
        outcomes: list[BaseException | None] = []
        with self.metadata.store.batched():
            for plan in plans:
                try:
                    self._write_plan(plan)
                except Exception as error:
                    outcomes.append(error)
                else:
                    outcomes.append(None)
        return outcomes

    def _write_plan(self, plan: TopicPlan) -> None:
        if plan.new_topic:
            self.metadata.create_topic(plan.topic, plan.assignment, plan.configs)
        else:
            self.metadata.add_partitions(plan.topic, plan.assignment)
        self._write_states(plan.topic, plan.assignment, only_missing=False)

    def _logs(self) -> TopicLogs:
        return TopicLogs(self.broker_id, self.replicas.log_manager, self.metadata, self._stopping)

    def _make_logs(self, plan: TopicPlan) -> None:
        """Makes the logs of a stored plan (see ``TopicLogs.make``)."""
        log_config = self._log_configs.get(plan.topic) or self.log_config_for(plan.topic)
        self._logs().make(plan, log_config)

    def _remove(self, topic: str, detached: Sequence[TopicPartition]) -> None:
        self._logs().remove(topic, detached)


def _retrieve(task: asyncio.Task[None]) -> None:
    """Marks a task's exception retrieved: a handler that timed out no longer awaits it
    (the outcome was logged where it happened)."""
    if not task.cancelled():
        task.exception()
