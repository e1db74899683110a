"""``ClusterMember``: a broker's side of the cluster — it applies the controller's LeaderAndIsr,
UpdateMetadata and StopReplica requests to the metadata cache, the partitions and the group
coordinator, and forwards the topic requests only the controller serves.

Applying (Kafka's ``ReplicaManager.becomeLeaderOrFollower`` / ``stopReplicas`` and
``MetadataCache.updateMetadata``):

- Every request carries the controller epoch; an older one than the newest seen is refused
  whole with STALE_CONTROLLER_EPOCH (a deposed controller).
- LeaderAndIsr: each partition whose leader epoch is newer than the one this broker has (or
  that it does not have yet) becomes led here or followed (its log is created either way, off
  the event loop on the admin worker; a log that cannot be made answers KAFKA_STORAGE_ERROR
  for its partition). An epoch not newer answers
  STALE_CONTROLLER_EPOCH for that partition, as Kafka 2.x does. Leading a
  ``__consumer_offsets`` partition loads its group coordinator shard; following it unloads it.
- UpdateMetadata: the live brokers and partition states replace the cache's.
- StopReplica: the partitions stop being served here (their logs deleted with
  ``delete_partitions``).

Forwarding: CreateTopics, CreatePartitions and DeleteTopics go to the controller (over the
same listener, as a client would) unless this broker is the controller, which runs them on its
controller thread; the answer comes once every live broker serves the result.

Thread safety: the event loop thread only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from odradek._types import TopicPartition
from odradek.broker.broker_connection import BrokerConnection, BrokerUnavailableError
from odradek.broker.group.records import partition_for_group
from odradek.broker.group.runtime import offsets_topic_configs
from odradek.broker.metadata_cache import LiveBroker, MetadataCache, PartitionMetadata
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.security.inter_broker import PLAINTEXT_INTER_BROKER, InterBrokerSecurity
from odradek.broker.txn.config import transaction_state_topic_configs
from odradek.broker.txn.records import TRANSACTION_STATE_TOPIC, partition_for_transactional_id
from odradek.controller.cluster import (
    ClusterController,
    IsrUpdate,
    IsrUpdateResult,
    TopicRequest,
)
from odradek.errors import ErrorCode, KafkaError, NotControllerError
from odradek.protocol import ApiKey
from odradek.protocol.inter_broker import ALTER_PARTITION_VERSION, CONTROLLED_SHUTDOWN_VERSION

if TYPE_CHECKING:
    from odradek.broker.group.runtime import GroupCoordinatorRuntime
    from odradek.broker.topic_manager import TopicManager
    from odradek.broker.txn.runtime import TransactionCoordinatorRuntime

logger = logging.getLogger(__name__)

T = TypeVar("T")

OFFSETS_TOPIC = "__consumer_offsets"
_FORWARD_TIMEOUT_S = 30.0
_CREATE_TOPICS_VERSION = 3
_SHUTDOWN_ATTEMPTS = 3
_SHUTDOWN_BACKOFF_S = 0.5
#: Partition states a LeaderAndIsr applies per turn of the event loop.
_APPLY_SLICE = 100


class ClusterMember:
    """See the module docstring.

    Args:
        broker_id: this broker.
        replicas: its partitions.
        topics: its topic manager (told which topics exist).
        controller: this broker's controller shell (active while it is the controller).
        cluster_id: the cluster's id.
        offsets_topic: ``offsets.topic.num.partitions`` and
            ``offsets.topic.replication.factor`` (capped by the live brokers).
        security: how to reach the controller (the inter-broker listener's); the metadata
            cache's brokers are at that listener's endpoints unless a client's listener is
            named.
    """

    def __init__(
        self,
        broker_id: int,
        replicas: ReplicaManager,
        topics: TopicManager,
        controller: ClusterController,
        cluster_id: str,
        *,
        offsets_topic: tuple[int, int] = (50, 3),
        security: InterBrokerSecurity = PLAINTEXT_INTER_BROKER,
    ) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self._offsets_topic = offsets_topic
        self._security = security
        self.cache = MetadataCache(broker_id, security.listener_name)
        self.replicas = replicas
        self.topics = topics
        self.controller = controller
        self.groups: GroupCoordinatorRuntime | None = None
        self.transactions: TransactionCoordinatorRuntime | None = None
        #: Topics whose creation this broker asked for and that the controller has not
        #: answered yet (a client retrying Metadata or FindCoordinator asks once).
        self._requested: set[str] = set()
        #: LeaderAndIsr and StopReplica apply one at a time, in arrival order (FIFO lock).
        self._state_changes = asyncio.Lock()

    # --- controller requests ---------------------------------------------------------------

    async def leader_and_isr(self, body: Any) -> dict[str, Any]:
        """Applies a LeaderAndIsr request; returns the response's fields.

        The logs of partitions new here are made first, on the admin worker thread (a request
        for 2,000 new partitions held the event loop 12 s); a partition is served only once
        its log exists. LeaderAndIsr and StopReplica requests apply one at a time, in arrival
        order: a later one waits for an earlier one's logs."""
        async with self._state_changes:
            return await self._leader_and_isr(body)

    async def _leader_and_isr(self, body: Any) -> dict[str, Any]:
        if not self.cache.accept_controller(int(body.controller_id), int(body.controller_epoch)):
            return {"error_code": ErrorCode.STALE_CONTROLLER_EPOCH, "partition_errors": []}
        errors = []
        states = []
        # Each topic is known (with its partitions) before its logs open: a log's config
        # reads the topic's overrides. Once per topic: a request may carry 1,000 partitions.
        assignments: dict[str, dict[int, tuple[int, ...]]] = {}
        for state in body.ungrouped_partition_states:
            topic = str(state.topic_name)
            if topic not in assignments:
                assignments[topic] = {p.partition: p.replicas for p in self.cache.partitions(topic)}
            replicas = tuple(int(replica) for replica in state.replicas)
            assignments[topic][int(state.partition_index)] = replicas
        for topic, assignment in assignments.items():
            self.topics.note_topic(topic, assignment)
        failed = await self._create_logs(body.ungrouped_partition_states)
        for count, state in enumerate(body.ungrouped_partition_states, 1):
            tp = TopicPartition(str(state.topic_name), int(state.partition_index))
            code = ErrorCode.KAFKA_STORAGE_ERROR if tp in failed else self._become(tp, state)
            if count % _APPLY_SLICE == 0:
                await asyncio.sleep(0)  # other clients in between slices
            errors.append(
                {"topic_name": tp.topic, "partition_index": tp.partition, "error_code": code}
            )
            if code is ErrorCode.NONE:  # a refused state changes nothing here
                states.append(_metadata_of(state, offline=()))
        # The partitions' new leaders are visible before UpdateMetadata follows.
        self._update_cache(states)
        return {"error_code": ErrorCode.NONE, "partition_errors": errors}

    async def _create_logs(self, states: Sequence[Any]) -> dict[TopicPartition, str]:
        """Makes the missing logs of the partitions ``states`` make this broker a replica of
        (a stale leader epoch changes nothing: no log), on the admin worker; returns the
        partitions whose log could not be made."""
        replicas = self.replicas
        wanted = []
        for state in states:
            tp = TopicPartition(str(state.topic_name), int(state.partition_index))
            current = replicas.get(tp)
            if current is None or int(state.leader_epoch) >= current.leader_epoch:
                wanted.append(tp)
        missing = replicas.logs_to_create(wanted)
        if not missing:
            return {}
        started = time.perf_counter()
        failed = await self.topics.run_on_worker(replicas.create_logs, missing)
        logger.info(
            "created %d logs for LeaderAndIsr in %.0f ms on the admin worker",
            len(missing) - len(failed),
            (time.perf_counter() - started) * 1e3,
        )
        return failed

    def _become(self, tp: TopicPartition, state: Any) -> ErrorCode:
        leader_epoch = int(state.leader_epoch)
        current = self.replicas.get(tp)
        if current is not None and leader_epoch < current.leader_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH  # an older leader epoch: ignored
        replicas = [int(replica) for replica in state.replicas]
        leader = int(state.leader)
        # LeaderAndIsr v1 carries no topic id: the one read from the store, once it is
        # (KIP-516: checked against the log's partition.metadata, or written there).
        topic_id = self.topics.topic_id(tp.topic)
        try:
            if leader == self.broker_id:
                isr = [int(replica) for replica in state.isr]
                self.replicas.become_leader(
                    tp,
                    replicas,
                    leader_epoch,
                    isr=isr,
                    partition_epoch=int(state.zk_version),
                    topic_id=topic_id,
                )
            else:
                self.replicas.become_follower(tp, replicas, leader_epoch, leader, topic_id=topic_id)
        except KafkaError as error:
            return error.error_code
        if leader == self.broker_id:
            if tp.topic == OFFSETS_TOPIC and self.groups is not None:
                self.groups.take_partition(tp.partition)
            if tp.topic == TRANSACTION_STATE_TOPIC and self.transactions is not None:
                self.transactions.take_partition(tp.partition)
        else:
            if tp.topic == OFFSETS_TOPIC and self.groups is not None:
                self.groups.release_partition(tp.partition)
            if tp.topic == TRANSACTION_STATE_TOPIC and self.transactions is not None:
                self.transactions.release_partition(tp.partition)
        return ErrorCode.NONE

    def update_metadata(self, body: Any) -> dict[str, Any]:
        """Applies an UpdateMetadata request; returns the response's fields."""
        if not self.cache.accept_controller(int(body.controller_id), int(body.controller_epoch)):
            return {"error_code": ErrorCode.STALE_CONTROLLER_EPOCH}
        self.cache.set_brokers(
            LiveBroker(
                int(broker.id),
                str(endpoint.host),
                int(endpoint.port),
                None if broker.rack is None else str(broker.rack),
                None if endpoint.listener is None else str(endpoint.listener),
            )
            for broker in body.live_brokers
            for endpoint in broker.endpoints
        )
        self._update_cache(
            [
                _metadata_of(state, offline=tuple(int(r) for r in state.offline_replicas))
                for state in body.ungrouped_partition_states
            ]
        )
        return {"error_code": ErrorCode.NONE}

    async def stop_replica(self, body: Any) -> dict[str, Any]:
        """Applies a StopReplica request (after the LeaderAndIsr requests before it); returns
        the response's fields."""
        async with self._state_changes:
            answer, doomed = self._stop_replica(body)
            if doomed:
                # Renames and directory fsyncs, one per log: never on the event loop (a
                # deleted topic of thousands of partitions would stall every client).
                await self.topics.run_on_worker(self._delete_logs, doomed)
            return answer

    def _delete_logs(self, doomed: list[TopicPartition]) -> None:
        log_manager = self.replicas.log_manager
        for tp in doomed:
            log_manager.delete_log(tp, checkpoint=False)
        log_manager.checkpoint_logs()  # once for the request: per log, N deletions cost N²

    def _stop_replica(self, body: Any) -> tuple[dict[str, Any], list[TopicPartition]]:
        """Stops serving the request's partitions; returns the answer and the partitions whose
        logs are to be deleted (by the caller, off the loop)."""
        if not self.cache.accept_controller(int(body.controller_id), int(body.controller_epoch)):
            return {"error_code": ErrorCode.STALE_CONTROLLER_EPOCH, "partition_errors": []}, []
        delete = bool(body.delete_partitions)
        doomed: list[TopicPartition] = []
        errors = []
        for entry in body.ungrouped_partitions:
            tp = TopicPartition(str(entry.topic_name), int(entry.partition_index))
            if tp.topic == OFFSETS_TOPIC and self.groups is not None:
                self.groups.release_partition(tp.partition)
            if tp.topic == TRANSACTION_STATE_TOPIC and self.transactions is not None:
                self.transactions.release_partition(tp.partition)
            if self.replicas.remove_partition(tp, delete=False) and delete:
                doomed.append(tp)
            if delete:
                self.cache.remove_partition(tp)
                if not self.cache.has_topic(tp.topic):
                    self.topics.forget_topic(tp.topic)
            errors.append(
                {"topic_name": tp.topic, "partition_index": tp.partition, "error_code": 0}
            )
        return {"error_code": ErrorCode.NONE, "partition_errors": errors}, doomed

    def _update_cache(self, states: list[PartitionMetadata]) -> None:
        for topic in self.cache.update_partitions(states):
            self.topics.forget_topic(topic)
        for topic in sorted({state.topic for state in states}):
            if self.cache.has_topic(topic):
                partitions = self.cache.partitions(topic)
                self.topics.note_topic(topic, {p.partition: p.replicas for p in partitions})

    # --- topic requests --------------------------------------------------------------------

    @property
    def is_controller(self) -> bool:
        return self.controller.active

    async def run_on_controller(self, start: Callable[[], concurrent.futures.Future[T]]) -> T:
        """Runs a topic request on this broker's controller and waits for its results.

        Raises:
            NotControllerError: this broker stopped being the controller meanwhile.
        """
        return await asyncio.wrap_future(start())

    async def forward(
        self, api_key: int, api_version: int, fields: dict[str, Any]
    ) -> dict[str, Any]:
        """Sends a request (its body as ``fields``) to the controller and returns its answer's
        fields.

        Raises:
            NotControllerError: no controller is known or it cannot be reached (retriable).
        """
        controller = self.cache.controller()
        if controller is None:
            raise NotControllerError("no controller is known yet")
        connection = BrokerConnection(
            f"forwarded-by-{self.broker_id}", timeout_s=_FORWARD_TIMEOUT_S, security=self._security
        )
        try:
            return await connection.request(
                controller.host, controller.port, api_key, api_version, fields
            )
        except BrokerUnavailableError as error:
            raise NotControllerError(
                f"the controller (broker {controller.broker_id}): {error}"
            ) from None
        finally:
            connection.close()

    def request_topic(
        self, topic: str, partitions: int, replication_factor: int, configs: dict[str, str]
    ) -> None:
        """Asks the controller to create ``topic`` (auto-creation, ``__consumer_offsets``)
        without waiting: the caller answers LEADER_NOT_AVAILABLE / COORDINATOR_NOT_AVAILABLE
        meanwhile and the client retries."""
        if topic in self._requested:
            return
        self._requested.add(topic)
        request = TopicRequest(topic, partitions, replication_factor, None, configs)
        if self.is_controller:
            future = self.controller.create_topics([request])
            loop = asyncio.get_running_loop()
            future.add_done_callback(
                lambda _: loop.call_soon_threadsafe(self._requested.discard, topic)
            )
            return
        asyncio.get_running_loop().create_task(self._forward_creation(request))

    async def _forward_creation(self, topic: TopicRequest) -> None:
        try:
            await self._forward_creation_once(topic)
        finally:
            self._requested.discard(topic.name)

    async def _forward_creation_once(self, topic: TopicRequest) -> None:
        fields = {
            "topics": [
                {
                    "name": topic.name,
                    "num_partitions": topic.num_partitions,
                    "replication_factor": topic.replication_factor,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in topic.configs.items()],
                }
            ],
            "timeout": 30000,
            "validate_only": False,
        }
        try:
            await self.forward(ApiKey.CREATE_TOPICS, _CREATE_TOPICS_VERSION, fields)
        except NotControllerError as error:
            logger.info("creating topic %s: %s", topic.name, error)

    # --- ISR changes -----------------------------------------------------------------------

    async def alter_partition(self, updates: Sequence[IsrUpdate]) -> list[IsrUpdateResult]:
        """Sends this leader's ISR changes to the controller (AlterPartition; on this broker's
        own controller thread when it is the controller) and returns its answers.

        Raises:
            KafkaError: NOT_CONTROLLER (no controller known or reachable, or it answered so).
        """
        if self.is_controller:
            return await self.run_on_controller(
                lambda: self.controller.alter_partition(self.broker_id, updates)
            )
        topics: dict[str, list[dict[str, Any]]] = {}
        for update in updates:
            topics.setdefault(update.topic_partition.topic, []).append(
                {
                    "partition_index": update.topic_partition.partition,
                    "leader_epoch": update.leader_epoch,
                    "new_isr": list(update.new_isr),
                    "leader_recovery_state": 0,
                    "partition_epoch": update.partition_epoch,
                }
            )
        answer = await self.forward(
            ApiKey.ALTER_PARTITION,
            ALTER_PARTITION_VERSION,
            {
                "broker_id": self.broker_id,
                "broker_epoch": -1,
                "topics": [{"topic_name": t, "partitions": p} for t, p in topics.items()],
            },
        )
        code = ErrorCode(int(answer["error_code"]))
        if code is not ErrorCode.NONE:
            raise KafkaError(f"AlterPartition answered {code.name}", code=code)
        return [
            IsrUpdateResult(
                TopicPartition(str(topic["topic_name"]), int(entry["partition_index"])),
                ErrorCode(int(entry["error_code"])),
                int(entry["leader_id"]),
                int(entry["leader_epoch"]),
                tuple(int(replica) for replica in entry["isr"]),
                int(entry["partition_epoch"]),
            )
            for topic in answer["topics"]
            for entry in topic["partitions"]
        ]

    # --- controlled shutdown ---------------------------------------------------------------

    async def controlled_shutdown(self) -> list[TopicPartition]:
        """Asks the controller to move leadership off this broker before it stops (Kafka's
        ``controlled.shutdown.enable``, ``controlled.shutdown.max.retries`` 3); returns the
        partitions it still leads (no other live ISR member), which go when it is gone."""
        remaining: list[TopicPartition] = []
        for attempt in range(_SHUTDOWN_ATTEMPTS):
            try:
                if self.is_controller:
                    remaining = await asyncio.wrap_future(
                        self.controller.controlled_shutdown(self.broker_id)
                    )
                else:
                    answer = await self.forward(
                        ApiKey.CONTROLLED_SHUTDOWN,
                        CONTROLLED_SHUTDOWN_VERSION,
                        {"broker_id": self.broker_id},
                    )
                    if answer["error_code"]:
                        raise NotControllerError(f"error {answer['error_code']}")
                    remaining = [
                        TopicPartition(str(p["topic_name"]), int(p["partition_index"]))
                        for p in answer["remaining_partitions"]
                    ]
            except NotControllerError as error:
                logger.info(
                    "controlled shutdown attempt %d of broker %d failed: %s",
                    attempt + 1,
                    self.broker_id,
                    error,
                )
                await asyncio.sleep(_SHUTDOWN_BACKOFF_S)
                continue
            logger.info(
                "controlled shutdown of broker %d: leadership moved; %d partitions stay led here",
                self.broker_id,
                len(remaining),
            )
            return remaining
        logger.warning("controlled shutdown of broker %d did not complete", self.broker_id)
        return remaining

    # --- queries ---------------------------------------------------------------------------

    def coordinator_for(self, group_id: str) -> LiveBroker | None:
        """The broker leading the group's ``__consumer_offsets`` partition (``None``: none yet;
        the topic is requested from the controller when missing)."""
        count = self.cache.partition_count(OFFSETS_TOPIC)
        if count == 0:
            partitions, factor = self._offsets_topic
            live = len(self.cache.brokers())
            self.request_topic(
                OFFSETS_TOPIC, partitions, max(1, min(factor, live)), offsets_topic_configs()
            )
            return None
        return self.cache.leader(
            TopicPartition(OFFSETS_TOPIC, partition_for_group(group_id, count))
        )

    def transaction_coordinator_for(self, transactional_id: str) -> LiveBroker | None:
        """The broker leading the id's ``__transaction_state`` partition (``None``: none
        yet; the topic is requested from the controller when missing)."""
        runtime = self.transactions
        if runtime is None:
            return None
        count = self.cache.partition_count(TRANSACTION_STATE_TOPIC)
        if count == 0:
            config = runtime.config
            factor = max(
                1, min(config.transaction_state_log_replication_factor, len(self.cache.brokers()))
            )
            self.request_topic(
                TRANSACTION_STATE_TOPIC,
                config.transaction_state_log_num_partitions,
                factor,
                transaction_state_topic_configs(config, factor),
            )
            return None
        return self.cache.leader(
            TopicPartition(
                TRANSACTION_STATE_TOPIC, partition_for_transactional_id(transactional_id, count)
            )
        )


def _metadata_of(state: Any, *, offline: tuple[int, ...]) -> PartitionMetadata:
    return PartitionMetadata(
        str(state.topic_name),
        int(state.partition_index),
        int(state.leader),
        int(state.leader_epoch),
        tuple(int(replica) for replica in state.replicas),
        tuple(int(replica) for replica in state.isr),
        offline,
    )
