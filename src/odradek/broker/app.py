"""The broker assembled: configuration → metadata store, logs, partitions, topics, handlers,
server. ``BrokerApp.start``/``stop`` run on an event loop; ``odradek serve`` and the embedded
``odradek.Broker`` both drive one.

The metadata store: without ``zookeeper.connect``, the embedded ``LocalMetadataStore`` in the
first log directory (a one-broker cluster); with it, ``ZooKeeperMetadataStore`` — and a
ZooKeeper that cannot be reached within ``zookeeper.connection.timeout.ms`` fails the start
(``StoreConnectionError``), never a silent fallback to the local store. Both run the same
controller code.

Start-up order: metadata store (cluster id; a broker id already registered by a live broker
fails here, before any log is opened), log manager (recovery happens here), partitions from
the stored topics, the listener, the broker registration with the bound port
(``/brokers/ids/<id>``), then the controller election.
Shutdown order: controlled shutdown (leaderships move away), the follower fetchers, the
controller, stop accepting and finish requests in
flight, then flush and close the logs (writing the clean-shutdown marker), then the store (its
session: the registration and, on the controller, ``/controller`` vanish).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.broker.auth.acl_store import AclStore
from odradek.broker.auth.authorizer import AclAuthorizer, AuthorizerConfig
from odradek.broker.auth.quota_store import QuotaStore
from odradek.broker.auth.quotas import ClientQuotas
from odradek.broker.cluster_member import ClusterMember
from odradek.broker.config import BrokerConfig, Listener
from odradek.broker.context import BrokerContext
from odradek.broker.fetch_session import FetchSessionCache
from odradek.broker.group.runtime import GroupCoordinatorRuntime
from odradek.broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_partition,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_topic_partitions,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leader_and_isr,
    leave_group,
    list_config_resources,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    stop_replica,
    sync_group,
    txn_offset_commit,
    update_metadata,
    write_txn_markers,
)
from odradek.broker.leader_positions import LeaderPositions
from odradek.broker.metrics import (
    BrokerParts,
    LagReader,
    MetricsServer,
    RequestMetrics,
    gather_snapshot,
    metrics_endpoint,
)
from odradek.broker.producer_ids import ProducerIdManager
from odradek.broker.purgatory import FetchPurgatory
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.replication.fetcher_manager import ReplicaFetcherManager
from odradek.broker.replication.isr_changes import IsrChangeManager
from odradek.broker.router import Router
from odradek.broker.security.credentials import ScramCredentialStore
from odradek.broker.security.inter_broker import PLAINTEXT_INTER_BROKER, InterBrokerSecurity
from odradek.broker.security.tls import server_ssl_context
from odradek.broker.server import BrokerServer
from odradek.broker.server_listener import ServerListener
from odradek.broker.topic_manager import TopicManager
from odradek.broker.txn.markers import MarkerWriter
from odradek.broker.txn.records import TRANSACTION_STATE_TOPIC
from odradek.broker.txn.runtime import TransactionCoordinatorRuntime
from odradek.broker.txn.verification import TransactionVerifier
from odradek.controller.admission import PartitionLimits
from odradek.controller.brokers import LiveBrokers
from odradek.controller.cluster import ClusterController, ControllerSettings
from odradek.controller.controller import Controller
from odradek.controller.election import ControllerEpoch
from odradek.controller.local import LocalMetadataStore
from odradek.controller.rebalance import RebalanceSettings
from odradek.controller.store import MetadataStore, join_path
from odradek.controller.topics import BROKER_IDS_PATH, ClusterMetadata, Endpoint
from odradek.controller.zookeeper import ZooKeeperMetadataStore
from odradek.errors import KafkaError, NodeExistsError
from odradek.storage.config import LogConfig
from odradek.storage.manager import LogManager

logger = logging.getLogger(__name__)

HANDLER_MODULES = (
    api_versions,
    consumer_group_heartbeat,
    consumer_group_describe,
    metadata,
    produce,
    fetch,
    list_offsets,
    find_coordinator,
    create_topics,
    delete_topics,
    init_producer_id,
    create_partitions,
    describe_configs,
    incremental_alter_configs,
    alter_configs,
    delete_records,
    describe_cluster,
    list_config_resources,
    join_group,
    sync_group,
    heartbeat,
    leave_group,
    offset_commit,
    offset_fetch,
    describe_groups,
    list_groups,
    delete_groups,
    offset_delete,
    leader_and_isr,
    update_metadata,
    stop_replica,
    controlled_shutdown,
    elect_leaders,
    describe_log_dirs,
    describe_topic_partitions,
    alter_replica_log_dirs,
    alter_partition,
    alter_partition_reassignments,
    list_partition_reassignments,
    offset_for_leader_epoch,
    sasl_handshake,
    sasl_authenticate,
    describe_user_scram_credentials,
    alter_user_scram_credentials,
    add_partitions_to_txn,
    add_offsets_to_txn,
    end_txn,
    write_txn_markers,
    txn_offset_commit,
    describe_transactions,
    list_transactions,
    describe_producers,
    describe_acls,
    create_acls,
    delete_acls,
    describe_client_quotas,
    alter_client_quotas,
)


class BrokerApp:
    """One broker process's worth of parts."""

    def __init__(self, config: BrokerConfig, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self.server: BrokerServer | None = None
        self.log_manager: LogManager | None = None
        self.store: MetadataStore | None = None
        self.controller: Controller | None = None
        #: Why the broker cannot go on (its ZooKeeper session expired), once it happened.
        self.fatal_error: str | None = None
        self._fatal = asyncio.Event()
        self.ctx: BrokerContext | None = None
        self.topics: TopicManager | None = None
        self.groups: GroupCoordinatorRuntime | None = None
        self.transactions: TransactionCoordinatorRuntime | None = None
        self.txn_verifier: TransactionVerifier | None = None
        self.cluster: ClusterMember | None = None
        self.live_brokers: LiveBrokers | None = None
        self.isr_changes: IsrChangeManager | None = None
        self.fetchers: ReplicaFetcherManager | None = None
        self.metrics: MetricsServer | None = None
        self.leader_positions: LeaderPositions | None = None
        self.inter_broker = PLAINTEXT_INTER_BROKER

    def _log_config_for(self, topic: str) -> LogConfig:
        assert self.topics is not None
        return self.topics.log_config_for(topic)

    @property
    def port(self) -> int:
        """The bound port (after ``start``)."""
        assert self.server is not None, "the broker is not started"
        return self.server.port

    async def _open_store(self) -> MetadataStore:
        config = self.config
        if config.zookeeper_connect is None:
            return LocalMetadataStore(config.log_dirs[0])
        # Connecting blocks for up to zookeeper.connection.timeout.ms: off the event loop.
        return await asyncio.to_thread(
            ZooKeeperMetadataStore,
            config.zookeeper_connect,
            session_timeout_ms=config.zookeeper_session_timeout_ms,
            connection_timeout_ms=config.zookeeper_connection_timeout_ms,
        )

    async def wait_fatal(self) -> str:
        """Returns (the reason) once the broker cannot go on: its ZooKeeper session expired,
        so its registration and ephemeral nodes are gone and other brokers may have taken
        over its roles. Its owner stops it (``odradek serve`` then starts it again: a new
        session, a new registration)."""
        await self._fatal.wait()
        assert self.fatal_error is not None
        return self.fatal_error

    def _on_session_lost(self) -> None:
        self.fatal_error = (
            f"the ZooKeeper session of broker {self.config.broker_id} expired: its "
            "registration is gone, so it stops serving (odradek serve then rejoins the cluster)"
        )
        logger.error("%s", self.fatal_error)
        self._fatal.set()

    async def start(self) -> None:
        config = self.config
        for warning in config.unimplemented_warnings():
            logger.warning("%s", warning)
        self.store = await self._open_store()
        if isinstance(self.store, ZooKeeperMetadataStore):
            loop = asyncio.get_running_loop()

            def session_lost() -> None:  # on a kazoo thread
                loop.call_soon_threadsafe(self._on_session_lost)

            self.store.add_session_lost_listener(session_lost)
        metadata_store = ClusterMetadata(self.store, clock=self.clock)
        if metadata_store.broker(config.broker_id) is not None:
            raise NodeExistsError(_already_registered(config.broker_id))
        metadata_store.ensure_top_level_paths()
        cluster_id = metadata_store.get_or_create_cluster_id()
        self.log_manager = LogManager(
            list(config.log_dirs),
            config.log_config,
            topic_config=self._log_config_for,
            clock=self.clock,
            flush_check_interval_ms=config.log_flush_scheduler_interval_ms,
            retention_check_interval_ms=config.log_retention_check_interval_ms,
            checkpoint_interval_ms=config.log_flush_offset_checkpoint_interval_ms,
            high_watermark_checkpoint_interval_ms=(
                config.replica_high_watermark_checkpoint_interval_ms
            ),
            cleaner_config=config.cleaner_config,
        )
        purgatory = FetchPurgatory()
        replicas = ReplicaManager(
            config.broker_id,
            self.log_manager,
            self._log_config_for,
            clock=self.clock,
            fetch_purgatory=purgatory,
            producer_id_expiration_ms=config.producer_id_expiration_ms,
        )
        topics = TopicManager(config, metadata_store, replicas)
        self.topics = topics
        self.log_manager.startup()
        clustered = config.zookeeper_connect is not None
        if clustered:  # how this broker reaches the others (a lone broker reaches none)
            self.inter_broker = InterBrokerSecurity.from_config(config.security)
        # In a cluster the controller's LeaderAndIsr requests say which partitions to serve.
        topics.startup(serve=not clustered)
        store = self.store
        self.groups = GroupCoordinatorRuntime(
            config,
            topics,
            replicas,
            self.clock,
            purgatory=purgatory,
            in_touch=(lambda: store.connected)
            if isinstance(store, ZooKeeperMetadataStore)
            else None,
        )
        self.groups.start()
        producer_ids = ProducerIdManager(self.store, config.broker_id)
        self.transactions = TransactionCoordinatorRuntime(
            config.broker_id,
            config.transaction_config,
            topics,
            replicas,
            self.clock,
            MarkerWriter(
                config.broker_id,
                replicas,
                self._partition_leader,
                offsets=self.groups,
                security=self.inter_broker,
            ),
            producer_ids=producer_ids,
            live_brokers=lambda: len(topics.metadata.registered_brokers()) or 1,
            in_touch=(lambda: store.connected)
            if isinstance(store, ZooKeeperMetadataStore)
            else None,
        )
        self.transactions.start()
        if config.transaction_partition_verification_enable:
            self.txn_verifier = TransactionVerifier(
                config.broker_id,
                self._transaction_coordinator,
                self.transactions,
                security=self.inter_broker,
            )
        router = Router.from_modules(HANDLER_MODULES)
        security = config.security
        inter_broker = security.inter_broker_listener_name
        listener = next(item for item in config.listeners if item.name == inter_broker)
        advertised = _advertised_of(config, inter_broker) or listener
        self.ctx = BrokerContext(
            config=config,
            cluster_id=cluster_id,
            broker_id=config.broker_id,
            replicas=replicas,
            topics=topics,
            purgatory=purgatory,
            clock=self.clock,
            host=advertised.host or "127.0.0.1",
            port=advertised.port,
            supported_versions=router.supported_versions,
            groups=self.groups,
            producer_ids=producer_ids,
            transactions=self.transactions,
            txn_verifier=self.txn_verifier,
            fetch_sessions=FetchSessionCache(config.max_incremental_fetch_session_cache_slots),
            scram_credentials=ScramCredentialStore(self.store),
        )
        authorizer_config = AuthorizerConfig.from_settings(dict(config.originals))
        if authorizer_config.enabled:
            # Before the listener: no request is decided on ACLs not yet loaded.
            self.ctx.authorizer = AclAuthorizer(authorizer_config)
            self.ctx.acl_store = AclStore(self.store, self.ctx.authorizer)
            await asyncio.to_thread(self.ctx.acl_store.start)
        self.ctx.quotas = ClientQuotas(
            window_size_ms=1000 * int(dict(config.originals).get("quota.window.size.seconds", 1))
        )
        self.ctx.quota_store = QuotaStore(self.store, self.ctx.quotas)
        await asyncio.to_thread(self.ctx.quota_store.start)
        self.server = BrokerServer(
            self.ctx,
            router,
            listener.host,
            listener.port,
            config.socket_request_max_bytes,
            limits=config.limits,
            listeners=_server_listeners(config),
        )
        # Before the listener: a metrics.port that cannot be bound fails the start early.
        self._start_metrics(replicas)
        await self.server.start()
        if advertised.port == 0 or advertised == listener:
            self.ctx.port = self.server.ports[inter_broker]
        endpoints = []
        for item in config.listeners:
            host, port = self.server.advertised(
                next(s for s in self.server.listeners if s.name == item.name)
            )
            protocol = security.for_listener(item.name).security_protocol
            endpoints.append(Endpoint(item.name, host, port, protocol))
        try:
            metadata_store.register_broker(config.broker_id, endpoints, rack=config.broker_rack)
        except NodeExistsError:
            raise NodeExistsError(_already_registered(config.broker_id)) from None
        if clustered:
            self._start_cluster(metadata_store, cluster_id, replicas)
        else:
            self.controller = Controller(self.store, config.broker_id, clock=self.clock)
            self.controller.start()
        logger.info(
            "broker %d of cluster %s serving on %s:%d",
            config.broker_id,
            cluster_id,
            self.ctx.host,
            self.ctx.port,
        )

    def _start_cluster(
        self, metadata: ClusterMetadata, cluster_id: str, replicas: ReplicaManager
    ) -> None:
        """The controller election with the cluster controller hanging off it, the live
        brokers watch, and this broker's side of the cluster (``ClusterMember``)."""
        config = self.config
        assert self.store is not None
        assert self.ctx is not None
        assert self.topics is not None
        topics = self.topics
        # The controller shell needs the Controller and the Controller its callbacks.
        shell: list[ClusterController] = []

        def elected(epoch: ControllerEpoch) -> None:
            shell[0].on_elected(epoch)

        def resigned() -> None:
            shell[0].on_resigned()

        def brokers_changed(added: list[int], removed: list[int]) -> None:
            shell[0].on_brokers_changed(added, removed)

        controller = Controller(
            self.store,
            config.broker_id,
            on_elected=elected,
            on_resigned=resigned,
            clock=self.clock,
        )
        live = LiveBrokers(metadata, on_change=brokers_changed)
        settings = ControllerSettings(
            listener_name=config.security.inter_broker_listener_name,
            num_partitions=config.num_partitions,
            default_replication_factor=config.default_replication_factor,
            unclean_leader_election_enable=config.log_config.unclean_leader_election_enable,
            delete_topic_enable=config.delete_topic_enable,
            validate_configs=topics.validate_configs,
            limits=PartitionLimits(
                config.limits.max_partitions,
                config.limits.max_broker_partitions,
                config.limits.max_partitions_per_request,
            ),
            rebalance=RebalanceSettings(
                config.auto_leader_rebalance_enable,
                config.leader_imbalance_check_interval_seconds,
                config.leader_imbalance_per_broker_percentage,
            ),
            connect=self.inter_broker.connector(f"controller-{config.broker_id}"),
        )
        shell.append(ClusterController(controller, metadata, live, settings))
        # Followers fetch from leaders found in the metadata cache's live brokers.
        self.fetchers = ReplicaFetcherManager(
            config.broker_id,
            config.replica_fetchers,
            self._broker_endpoint,
            self.clock,
            security=self.inter_broker,
        )
        replicas.fetchers = self.fetchers
        self.cluster = ClusterMember(
            config.broker_id,
            replicas,
            topics,
            shell[0],
            cluster_id,
            security=self.inter_broker,
            offsets_topic=(
                config.offsets_topic_num_partitions,
                config.offsets_topic_replication_factor,
            ),
        )
        self.cluster.groups = self.groups
        self.cluster.transactions = self.transactions
        self.ctx.cluster = self.cluster
        self.isr_changes = IsrChangeManager(
            replicas,
            self.cluster.alter_partition,
            replica_lag_time_max_ms=config.replica_lag_time_max_ms,
        )
        replicas.on_isr_change = self.isr_changes.submit
        self.isr_changes.start()
        self.controller = controller
        self.live_brokers = live
        live.start()
        controller.start()

    def _partition_leader(self, tp: TopicPartition) -> tuple[int, str, int] | None:
        """Where a partition's leader is, for transaction markers: this broker when it leads
        it (or holds it, without a cluster), else the metadata cache's leader."""
        assert self.topics is not None
        partition = self.topics.replicas.get(tp)
        if self.cluster is None:
            return None if partition is None else (self.config.broker_id, "", 0)
        if partition is not None and partition.is_leader:
            return (self.config.broker_id, "", 0)
        leader = self.cluster.cache.leader(tp)
        return None if leader is None else (leader.broker_id, leader.host, leader.port)

    def _transaction_coordinator(self, transactional_id: str) -> tuple[int, str, int] | None:
        """Where a transactional id's coordinator is (its ``__transaction_state``
        partition's leader), for the produce path's verification."""
        assert self.transactions is not None
        index = self.transactions.partition_for(transactional_id)
        return self._partition_leader(TopicPartition(TRANSACTION_STATE_TOPIC, index))

    def _start_metrics(self, replicas: ReplicaManager) -> None:
        """The Prometheus endpoint (``broker.metrics``), when the settings turn it on."""
        config = self.config
        endpoint = metrics_endpoint(
            config.metrics_port,
            config.metrics_host,
            config.metric_reporters,
            config.listeners[0].host,
        )
        if endpoint is None:
            return
        assert self.server is not None
        assert self.groups is not None
        assert self.ctx is not None
        server, groups = self.server, self.groups
        requests = server.request_metrics = RequestMetrics()

        def isr_changes() -> tuple[int, int]:
            changes = self.isr_changes
            return (0, 0) if changes is None else (changes.isr_shrinks, changes.isr_expands)

        def offline_partitions() -> int:
            if self.cluster is None or self.controller is None or not self.controller.active:
                return 0
            cache = self.cluster.cache
            return sum(
                1
                for topic in cache.topic_names()
                for partition in cache.partitions(topic)
                if partition.leader < 0
            )

        parts = BrokerParts(
            broker_id=config.broker_id,
            partitions=replicas.partitions,
            coordinators=groups.coordinators,
            controller_active=lambda: self.controller is not None and self.controller.active,
            offline_partitions=offline_partitions,
            isr_changes=isr_changes,
            connections=lambda: len(server._connections),
        )
        # The lag of partitions led elsewhere, from their leaders (none without a cluster; the
        # cluster joins after this: the leader is looked up at each scrape).
        self.leader_positions = LeaderPositions(
            config.broker_id, self._partition_leader, security=self.inter_broker
        )
        parts.leader_positions = self.leader_positions.positions
        lag_reader = LagReader()

        def rebalances(group_id: str) -> list[dict[str, object]] | None:
            try:
                records = groups.rebalance_history(group_id)
            except KafkaError:
                return None
            return None if records is None else [record.to_json() for record in records]

        self.metrics = MetricsServer(
            asyncio.get_running_loop(),
            lambda: gather_snapshot(parts, lag_reader, requests.snapshot, self.clock.now_ms),
            rebalances,
            *endpoint,
        )
        self.metrics.start()
        if config.metrics_port == 0:
            # As with listeners: DescribeConfigs tells the bound port (tools find it there).
            originals = {**dict(config.originals), "metrics.port": str(self.metrics.port)}
            self.ctx.config = dataclasses.replace(
                config, metrics_port=self.metrics.port, originals=tuple(sorted(originals.items()))
            )

    def _broker_endpoint(self, broker_id: int) -> tuple[str, int] | None:
        broker = None if self.cluster is None else self.cluster.cache.broker(broker_id)
        return None if broker is None else (broker.host, broker.port)

    async def stop(self) -> None:
        if self.metrics is not None:
            await asyncio.to_thread(self.metrics.stop)
        if self.leader_positions is not None:
            self.leader_positions.close()
        if self.cluster is not None and self.fatal_error is None:
            # Leadership moves to other ISR members before this broker stops serving.
            await self.cluster.controlled_shutdown()
        if self.fetchers is not None:
            # Followers stop at once: a broker shutting down must not keep asking to rejoin
            # ISRs the controller keeps it out of. Before the logs they append to close.
            await self.fetchers.shutdown()
        if self.isr_changes is not None:
            await self.isr_changes.stop()
        if self.controller is not None:
            await asyncio.to_thread(self.controller.stop)
        if self.txn_verifier is not None:
            await self.txn_verifier.stop()
        if self.transactions is not None:
            await self.transactions.stop()
        if self.groups is not None:
            await self.groups.stop()  # answers requests waiting in JoinGroup/SyncGroup
        if self.topics is not None:
            await self.topics.stop()  # topic changes under way stop; startup finishes them
        if self.server is not None:
            await self.server.stop()
        if self.topics is not None:
            self.topics.replicas.write_producer_snapshots()
        if self.log_manager is not None:
            self.log_manager.shutdown()
        if self.store is not None:
            self.store.close()
        logger.info("broker stopped")


def _advertised_of(config: BrokerConfig, name: str) -> Listener | None:
    return next((item for item in config.advertised_listeners if item.name == name), None)


def _server_listeners(config: BrokerConfig) -> list[ServerListener]:
    """One ``ServerListener`` per ``listeners`` entry, with its TLS context and advertised
    address (``advertised.listeners`` by name; port 0 there: the bound port).

    Raises:
        ConfigError: a listener's TLS key or certificates cannot be loaded.
    """
    listeners = []
    for item in config.listeners:
        security = config.security.for_listener(item.name)
        advertised = _advertised_of(config, item.name)
        listeners.append(
            ServerListener(
                security,
                item.host,
                item.port,
                ssl_context=None if security.ssl is None else server_ssl_context(security.ssl),
                advertised_host=advertised.host if advertised is not None else item.host,
                advertised_port=advertised.port if advertised is not None else 0,
            )
        )
    return listeners


def _already_registered(broker_id: int) -> str:
    path = join_path(BROKER_IDS_PATH, str(broker_id))
    return (
        f"broker.id {broker_id} is already registered at {path} by another live broker "
        "(choose another broker.id, or wait for that broker's session to end)"
    )
