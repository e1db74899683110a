"""The broker assembled: configuration → metadata store, logs, partitions, topics, handlers,
server. ``BrokerApp.start``/``stop`` run on an event loop; ``odradek serve`` and the embedded
``odradek.Broker`` both drive one.

Start-up order: metadata store (cluster id), log
manager (recovery happens here), partitions from the stored topics, the listener, then the
broker registration with the bound port.
Shutdown order: stop accepting and finish requests in flight, then flush and close the logs
(writing the clean-shutdown marker), then the store.
"""

from __future__ import annotations

import logging

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek.broker.config import BrokerConfig
from odradek.broker.context import BrokerContext
from odradek.broker.group.runtime import GroupCoordinatorRuntime
from odradek.broker.handlers import (
    api_versions,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    produce,
    sync_group,
)
from odradek.broker.purgatory import FetchPurgatory
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.router import Router
from odradek.broker.server import BrokerServer
from odradek.broker.topic_manager import TopicManager
from odradek.controller.local import LocalMetadataStore
from odradek.controller.topics import ClusterMetadata, Endpoint
from odradek.storage.config import LogConfig
from odradek.storage.manager import LogManager

logger = logging.getLogger(__name__)

HANDLER_MODULES = (
    api_versions,
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
    delete_records,
    describe_cluster,
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
)


class BrokerApp:
    """One broker process's worth of parts."""

    def __init__(self, config: BrokerConfig, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self.server: BrokerServer | None = None
        self.log_manager: LogManager | None = None
        self.store: LocalMetadataStore | None = None
        self.ctx: BrokerContext | None = None
        self.topics: TopicManager | None = None
        self.groups: GroupCoordinatorRuntime | None = None

    def _log_config_for(self, topic: str) -> LogConfig:
        assert self.topics is not None
        return self.topics.log_config_for(topic)

    @property
    def port(self) -> int:
        """The bound port (after ``start``)."""
        assert self.server is not None, "the broker is not started"
        return self.server.port

    async def start(self) -> None:
        config = self.config
        self.store = LocalMetadataStore(config.log_dirs[0])
        metadata_store = ClusterMetadata(self.store, clock=self.clock)
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
            cleaner_config=config.cleaner_config,
        )
        replicas = ReplicaManager(
            config.broker_id,
            self.log_manager,
            self._log_config_for,
        )
        topics = TopicManager(config, metadata_store, replicas)
        self.topics = topics
        self.log_manager.startup()
        topics.startup()
        purgatory = FetchPurgatory()
        self.groups = GroupCoordinatorRuntime(
            config, topics, replicas, self.clock, purgatory=purgatory
        )
        self.groups.start()
        router = Router.from_modules(HANDLER_MODULES)
        listener = config.listeners[0]
        advertised = config.advertised_listeners[0]
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
        )
        self.server = BrokerServer(
            self.ctx,
            router,
            listener.host,
            listener.port,
            config.socket_request_max_bytes,
            limits=config.limits,
        )
        await self.server.start()
        if advertised.port == 0 or advertised == listener:
            self.ctx.port = self.server.port
        metadata_store.register_broker(
            config.broker_id,
            [Endpoint(listener.name, self.ctx.host, self.ctx.port)],
        )
        logger.info(
            "broker %d of cluster %s serving on %s:%d",
            config.broker_id,
            cluster_id,
            self.ctx.host,
            self.ctx.port,
        )

    async def stop(self) -> None:
        if self.groups is not None:
            await self.groups.stop()  # answers requests waiting in JoinGroup/SyncGroup
        if self.topics is not None:
            await self.topics.stop()  # topic changes under way stop; startup finishes them
        if self.server is not None:
            await self.server.stop()
        if self.log_manager is not None:
            self.log_manager.shutdown()
        if self.store is not None:
            self.store.close()
        logger.info("broker stopped")
