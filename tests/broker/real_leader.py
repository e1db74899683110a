"""A leader broker's real replica manager and fetch purgatory over logs in a directory, and
the handler context around them: for tests of who wakes the fetches long-polling on a
partition (the Produce handler's, the replica fetcher's)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.broker.fakes import FakeTopics

from odradek._clock import MockClock
from odradek.broker.config import BrokerConfig
from odradek.broker.context import BrokerContext
from odradek.broker.purgatory import FetchPurgatory
from odradek.broker.replica_manager import ReplicaManager
from odradek.storage.config import LogConfig
from odradek.storage.manager import LogManager
from odradek.storage.scheduler import ManualScheduler


@contextmanager
def real_leader(directory: Path, broker_id: int) -> Iterator[tuple[ReplicaManager, FetchPurgatory]]:
    """The broker's replica manager (logs under ``directory``, a mock clock) and the fetch
    purgatory it wakes; the logs are shut down on exit."""
    clock = MockClock()
    logs = LogManager([str(directory)], LogConfig(), clock=clock, scheduler=ManualScheduler(clock))
    logs.startup()
    purgatory = FetchPurgatory()
    replicas = ReplicaManager(
        broker_id, logs, lambda _topic: LogConfig(), clock=clock, fetch_purgatory=purgatory
    )
    try:
        yield replicas, purgatory
    finally:
        logs.shutdown()


def leader_context(
    replicas: ReplicaManager, purgatory: FetchPurgatory, topics: set[str]
) -> BrokerContext:
    """A handler context over that broker, serving ``topics``."""
    return BrokerContext(
        config=BrokerConfig.from_mapping(
            {"broker.id": str(replicas.broker_id), "log.dirs": "/nonexistent"}
        ),
        cluster_id="real-leader",
        broker_id=replicas.broker_id,
        replicas=replicas,
        topics=FakeTopics(topics),
        purgatory=purgatory,
        clock=replicas.clock,
    )
