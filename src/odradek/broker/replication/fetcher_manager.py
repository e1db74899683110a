"""``ReplicaFetcherManager``: which fetcher task copies which followed partition (Kafka's
``ReplicaFetcherManager``).

A partition this broker follows is fetched by the fetcher of its leader broker and fetcher id,
``hash(topic, partition) mod num.replica.fetchers`` (a stable hash: the same partition lands on
the same fetcher in every process). Fetchers start with their first partition and stop when
their last one leaves (Kafka's idle-fetcher shutdown), so a broker holds at most
``num.replica.fetchers`` connections per leader broker.

The replica manager calls ``add_partition`` when it makes this broker a follower (the fetcher
truncates the log to the divergence point before fetching) and ``remove_partition`` when the
broker becomes the leader, stops the replica or deletes it; the broker's shutdown calls
``shutdown``.

Thread safety: the event loop thread only.
"""

from __future__ import annotations

import asyncio
import logging
import zlib

from odradek._clock import Clock
from odradek._types import TopicPartition
from odradek.broker.config import FetcherSettings
from odradek.broker.replication.fetcher import EndpointLookup, ReplicaFetcher
from odradek.broker.replication.partition import Partition
from odradek.broker.security.inter_broker import PLAINTEXT_INTER_BROKER, InterBrokerSecurity

__all__ = ["ReplicaFetcherManager", "fetcher_id_for"]

logger = logging.getLogger(__name__)


def fetcher_id_for(topic_partition: TopicPartition, num_fetchers: int) -> int:
    """The fetcher id of a partition: a stable hash of its topic and index (Python's ``hash``
    of a string changes per process)."""
    topic_hash = zlib.crc32(topic_partition.topic.encode())
    return (31 * topic_hash + topic_partition.partition) % num_fetchers


class ReplicaFetcherManager:
    """See the module docstring.

    Args:
        broker_id: this broker.
        settings: ``num.replica.fetchers`` and ``replica.fetch.*``.
        endpoint_for: the address of a broker id (None while unknown).
        clock: for the fetchers' back-offs.
        security: how the fetchers reach leaders (the inter-broker listener's).
    """

    def __init__(
        self,
        broker_id: int,
        settings: FetcherSettings,
        endpoint_for: EndpointLookup,
        clock: Clock,
        security: InterBrokerSecurity = PLAINTEXT_INTER_BROKER,
    ) -> None:
        self.broker_id = broker_id
        self._security = security
        self._settings = settings
        self._endpoint_for = endpoint_for
        self._clock = clock
        self._fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._assigned: dict[TopicPartition, tuple[int, int]] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    def add_partition(self, partition: Partition) -> bool:
        """Starts fetching ``partition`` from its leader (``partition.leader_id``) at its
        leader epoch, truncating first; moves it off the fetcher it had. Returns False (and
        fetches nothing) when it has no leader or this broker leads it."""
        tp = partition.topic_partition
        self.remove_partition(tp)
        source = partition.leader_id
        if source < 0 or source == self.broker_id:
            return False
        key = (source, fetcher_id_for(tp, self._settings.num_replica_fetchers))
        fetcher = self._fetchers.get(key)
        if fetcher is None:
            fetcher = ReplicaFetcher(
                self.broker_id,
                source,
                key[1],
                self._settings,
                self._endpoint_for,
                self._clock,
                security=self._security,
            )
            self._fetchers[key] = fetcher
            fetcher.start()
            logger.info("started %s", fetcher.name)
        fetcher.add_partition(partition)
        self._assigned[tp] = key
        return True

    def remove_partition(self, topic_partition: TopicPartition) -> bool:
        """Stops fetching it; whether it was fetched. A fetcher left without partitions
        stops."""
        key = self._assigned.pop(topic_partition, None)
        if key is None:
            return False
        fetcher = self._fetchers[key]
        fetcher.remove_partition(topic_partition)
        if not fetcher.partitions():
            del self._fetchers[key]
            task = asyncio.get_running_loop().create_task(fetcher.stop())
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)
            logger.info("stopping idle %s", fetcher.name)
        return True

    def fetcher_of(self, topic_partition: TopicPartition) -> ReplicaFetcher | None:
        key = self._assigned.get(topic_partition)
        return None if key is None else self._fetchers.get(key)

    def is_fetching(self, topic_partition: TopicPartition) -> bool:
        return topic_partition in self._assigned

    def statistics(self) -> dict[str, int]:
        totals = {"fetchers": len(self._fetchers), "partitions": len(self._assigned)}
        for fetcher in self._fetchers.values():
            for name, value in fetcher.statistics().items():
                if name != "partitions":
                    totals[name] = totals.get(name, 0) + value
        return totals

    async def shutdown(self) -> None:
        """Stops every fetcher (the broker is stopping)."""
        fetchers = list(self._fetchers.values())
        self._fetchers.clear()
        self._assigned.clear()
        for fetcher in fetchers:
            await fetcher.stop()
        if self._stopping:
            await asyncio.gather(*self._stopping, return_exceptions=True)
