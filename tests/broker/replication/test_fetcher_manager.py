"""The fetcher manager: partitions spread over ``num.replica.fetchers`` fetchers per leader by a
stable hash, moved when the leader changes, not fetched when led here or leaderless, and idle
fetchers stopped."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.config import FetcherSettings
from odradek.broker.replication.fetcher_manager import ReplicaFetcherManager, fetcher_id_for
from odradek.broker.replication.partition import Partition
from odradek.storage.config import LogConfig
from odradek.storage.log import Log


def test_fetcher_ids_are_stable_and_spread() -> None:
    ids = [fetcher_id_for(TopicPartition("orders", p), 4) for p in range(40)]
    assert ids == [fetcher_id_for(TopicPartition("orders", p), 4) for p in range(40)]
    assert set(ids) == {0, 1, 2, 3}
    assert fetcher_id_for(TopicPartition("orders", 3), 1) == 0


def test_partitions_go_to_their_leaders_fetchers(tmp_path: Path) -> None:
    async def scenario() -> None:
        config = dataclasses.replace(LogConfig(), segment_bytes=1 << 20)
        manager = ReplicaFetcherManager(
            5, FetcherSettings(num_replica_fetchers=2), lambda broker: None, MockClock()
        )
        partitions = []
        for index in range(6):
            tp = TopicPartition("t", index)
            partition = Partition(
                tp, Log.open(str(tmp_path / f"t-{index}"), tp, config), broker_id=5, replicas=[1, 5]
            )
            partition.leader_id = 1 if index < 4 else 2
            partitions.append(partition)
            assert manager.add_partition(partition)
        stats = manager.statistics()
        assert stats["partitions"] == 6
        assert stats["fetchers"] <= 4
        for partition in partitions:
            fetcher = manager.fetcher_of(partition.topic_partition)
            assert fetcher is not None
            assert fetcher.source_id == partition.leader_id
            assert fetcher.fetcher_id == fetcher_id_for(partition.topic_partition, 2)
        # Led here, or no leader: not fetched (and taken off its fetcher).
        partitions[0].leader_id = 5
        assert not manager.add_partition(partitions[0])
        assert not manager.is_fetching(partitions[0].topic_partition)
        partitions[1].leader_id = -1
        assert not manager.add_partition(partitions[1])
        # The leader changes: the partition moves to the new leader's fetcher.
        partitions[2].leader_id = 2
        assert manager.add_partition(partitions[2])
        moved = manager.fetcher_of(partitions[2].topic_partition)
        assert moved is not None
        assert moved.source_id == 2
        for partition in partitions[2:]:
            assert manager.remove_partition(partition.topic_partition)
        assert manager.statistics()["fetchers"] == 0  # idle fetchers stop
        assert not manager.remove_partition(partitions[2].topic_partition)
        await manager.shutdown()

    asyncio.run(scenario())
