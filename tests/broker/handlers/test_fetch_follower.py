"""Fetch and follower fetching (KIP-392) over fakes: a follower serves consumers' v11+ fetches
up to its own high watermark and answers OFFSET_NOT_AVAILABLE past it; a broker that holds no
replica of a partition the cluster has answers NOT_LEADER_OR_FOLLOWER; the leader with the
rack-aware selector names the follower in the client's rack as ``preferred_read_replica``."""

from __future__ import annotations

import dataclasses
from typing import Any

from kio.serial import entity_reader
from tests.broker.fakes import FakePartition, context, request
from tests.broker.handlers.test_fetch import TP, batch, decoded, fetch_request, filled

from odradek.broker.config import BrokerConfig
from odradek.broker.context import BrokerContext
from odradek.broker.handlers import fetch
from odradek.broker.metadata_cache import LiveBroker, MetadataCache, PartitionMetadata
from odradek.broker.replica_selector import RACK_AWARE_SELECTOR
from odradek.errors import ErrorCode
from odradek.protocol import RecordsSlot, response_class

#: Broker 1 (this one) in rack a, 2 in rack b, 3 in rack c.
RACKS = {1: "a", 2: "b", 3: "c"}


@dataclasses.dataclass
class FakeCluster:
    """The part of ``ClusterPort`` the Fetch handler reads: the metadata cache."""

    cache: MetadataCache


def cluster_context(*partitions: FakePartition, selector: str = RACK_AWARE_SELECTOR) -> Any:
    cache = MetadataCache(1)
    cache.set_brokers(LiveBroker(b, "127.0.0.1", 9000 + b, rack) for b, rack in RACKS.items())
    cache.update_partitions([PartitionMetadata(TP.topic, TP.partition, 1, 0, (1, 2, 3), (1, 2, 3))])
    config = BrokerConfig.from_mapping(
        {
            "broker.id": "1",
            "log.dirs": "/nonexistent",
            "broker.rack": RACKS[1],
            "replica.selector.class": selector,
        }
    )
    ctx: BrokerContext = context(*partitions)
    return dataclasses.replace(ctx, config=config, cluster=FakeCluster(cache))  # type: ignore[arg-type]


def follower(batches: int, high_watermark: int) -> FakePartition:
    partition = filled(TP, batches)
    partition.high_watermark = high_watermark  # what the leader's fetch answers told it
    partition.is_leader = False
    return partition


def test_a_follower_serves_a_consumer_up_to_its_high_watermark() -> None:
    partition = follower(3, high_watermark=2)

    answer = decoded(fetch.handle(context(partition), fetch_request({TP: 0})))[TP]

    assert answer.error_code == ErrorCode.NONE
    assert answer.records == batch(0) + batch(1)  # not batch 2: above its high watermark
    assert answer.high_watermark == 2
    assert partition.follower_reads == 1


def test_a_follower_answers_offset_not_available_past_its_high_watermark() -> None:
    partition = follower(3, high_watermark=1)

    answer = decoded(fetch.handle(context(partition), fetch_request({TP: 2})))[TP]

    assert answer.error_code == ErrorCode.OFFSET_NOT_AVAILABLE
    assert answer.high_watermark == 1
    assert partition.reads == []


def test_a_follower_without_a_leader_answers_not_leader_or_follower() -> None:
    partition = follower(2, high_watermark=2)
    partition.other_leader = -1

    answer = decoded(fetch.handle(context(partition), fetch_request({TP: 0})))[TP]

    assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_broker_no_longer_a_replica_sends_the_client_back_to_the_leader() -> None:
    answer = decoded(fetch.handle(cluster_context(), fetch_request({TP: 0})))[TP]

    assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # A partition the cluster does not have at all stays unknown.
    unknown = decoded(fetch.handle(context(), fetch_request({TP: 0})))[TP]
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _leader() -> FakePartition:
    partition = filled(TP, 3, isr=[1, 2, 3])
    partition.follower_positions = {2: (3, 1_000), 3: (3, 1_000)}
    return partition


def test_the_leader_names_the_follower_in_the_clients_rack() -> None:
    partition = _leader()

    result = fetch.handle(cluster_context(partition), fetch_request({TP: 1}, rack_id="c"))
    answer = decoded(result)[TP]

    assert answer.error_code == ErrorCode.NONE
    assert answer.preferred_read_replica == 3
    assert answer.records is None or answer.records == b""
    assert answer.high_watermark == 3
    assert partition.reads == []


def test_the_leader_serves_its_own_rack_clients_without_a_rack_and_with_leader_selector() -> None:
    for selector, rack in ((RACK_AWARE_SELECTOR, "a"), (RACK_AWARE_SELECTOR, ""), ("", "c")):
        partition = _leader()
        chosen = selector or "org.apache.kafka.common.replica.LeaderSelector"
        ctx = cluster_context(partition, selector=chosen)

        answer = decoded(fetch.handle(ctx, fetch_request({TP: 1}, rack_id=rack)))[TP]

        assert answer.preferred_read_replica == -1, (selector, rack)
        assert answer.records == batch(1) + batch(2)


def test_a_follower_that_lags_the_fetch_offset_is_not_preferred() -> None:
    partition = _leader()
    partition.follower_positions = {2: (3, 1_000), 3: (1, 1_000)}

    answer = decoded(fetch.handle(cluster_context(partition), fetch_request({TP: 2}, rack_id="c")))[
        TP
    ]

    assert answer.preferred_read_replica == -1
    assert answer.records == batch(2)


def test_an_incremental_session_fetch_keeps_the_preferred_read_replica() -> None:
    # A session's incremental answer drops partitions with no news; a redirect is news.
    partition = _leader()
    ctx = cluster_context(partition)

    def session_fetch(session_id: int, epoch: int) -> Any:
        body = fetch_request({TP: 1}, rack_id="c").body
        return request(dataclasses.replace(body, session_id=session_id, session_epoch=epoch))

    first = fetch.handle(ctx, session_fetch(0, 0))
    session_id = _session_id(first)
    assert session_id != 0
    assert decoded(first)[TP].preferred_read_replica == 3

    again = decoded(fetch.handle(ctx, session_fetch(session_id, 1)))

    assert again[TP].preferred_read_replica == 3


def _session_id(frame: Any) -> int:
    wire = b"".join(
        part.records.read() if isinstance(part, RecordsSlot) else part for part in frame.parts
    )
    response_type: Any = response_class(1, 11)
    _, header_size = entity_reader(response_type.__header_schema__)(wire[4:], 0)
    response, _ = entity_reader(response_type)(wire[4:], header_size)
    return int(response.session_id)
