"""``LeaderPositions``: where a group stands on partitions another broker leads — their high
watermark and the timestamp of the record at an offset — asked of their leaders, for the
consumer lag metric of the group coordinator (``broker.metrics.lag``).

The contract of the lag metric in a cluster: **a group's lag is exported by its coordinator,
for every partition the group has committed an offset on**, wherever that partition's leader
is (so each (group, partition) series comes from exactly one broker, the one that knows the
commits). Partitions led here are read from the local log; for the others a scrape calls
``positions`` with the (partition, committed offset) pairs, which sends one Fetch per leader
— as a consumer would (``replica_id`` -1, so the leader's follower state is never touched),
read-uncommitted, ``max_wait`` 0, a few bytes per partition — and takes from each answer the
partition's high watermark and the timestamp of the record at the offset
(``metrics.lag.timestamp_in``). A partition asked at several offsets (several groups) goes
in one more Fetch per extra offset. Those reads count as bytes out on the leader, one small
batch per partition per scrape.

What is not known is left out, never guessed: a leader that does not answer within
``timeout_s``, a partition it no longer leads or has no leader, an offset out of its range
(below the log start: the records are gone). The scrape then has no lag for those pairs
(``lags`` skips them) and the next scrape asks again.

Its connections are ``BrokerConnection``s through the inter-broker listener's security (TLS
and SASL when it has them), as replication's. Thread safety: the event loop thread only.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable, Collection
from typing import Any, Final

from odradek._types import TopicPartition
from odradek.broker.broker_connection import BrokerConnection, BrokerUnavailableError
from odradek.broker.metrics import LeaderPosition, timestamp_in
from odradek.broker.security.inter_broker import PLAINTEXT_INTER_BROKER, InterBrokerSecurity
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey

__all__ = ["FETCH_VERSION", "LeaderPositions"]

logger = logging.getLogger(__name__)

#: Fetch v11: topics by name, no fetch session needed (session id 0, epoch -1: a full fetch).
FETCH_VERSION: Final = 11
#: Bytes asked per partition: the leader sends at least the first batch anyway (KIP-74).
RECORD_BYTES: Final = 1_024

LeaderOf = Callable[[TopicPartition], "tuple[int, str, int] | None"]


class LeaderPositions:
    """See the module docstring.

    Args:
        broker_id: this broker (a partition whose leader is this broker is not asked).
        leader_of: a partition's leader as (broker id, host, port), None when it has none.
        timeout_s: how long one scrape waits for the leaders' answers.
        security: how to reach the other brokers (the inter-broker listener's).
    """

    def __init__(
        self,
        broker_id: int,
        leader_of: LeaderOf,
        *,
        timeout_s: float = 2.0,
        security: InterBrokerSecurity = PLAINTEXT_INTER_BROKER,
    ) -> None:
        self._broker_id = broker_id
        self._security = security
        self._leader_of = leader_of
        self._timeout_s = timeout_s
        self._connections: dict[int, BrokerConnection] = {}

    async def positions(
        self, wanted: Collection[tuple[TopicPartition, int]]
    ) -> dict[tuple[TopicPartition, int], LeaderPosition]:
        """The position of each (partition, offset) of ``wanted`` its leader told."""
        by_leader: dict[tuple[int, str, int], dict[TopicPartition, set[int]]] = defaultdict(
            lambda: defaultdict(set)
        )
        for tp, offset in wanted:
            leader = self._leader_of(tp)
            if leader is not None and leader[0] != self._broker_id:
                by_leader[leader][tp].add(offset)
        found: dict[tuple[TopicPartition, int], LeaderPosition] = {}
        if not by_leader:
            return found
        try:
            async with asyncio.timeout(self._timeout_s):
                answers = await asyncio.gather(
                    *(self._ask(leader, asked) for leader, asked in by_leader.items())
                )
        except TimeoutError:
            logger.info(
                "lag: the partitions' leaders did not answer within %.1f s", self._timeout_s
            )
            for connection in self._connections.values():
                connection.close()  # an answer may still come on it: start afresh
            return found
        for answer in answers:
            found.update(answer)
        return found

    async def _ask(
        self, leader: tuple[int, str, int], asked: dict[TopicPartition, set[int]]
    ) -> dict[tuple[TopicPartition, int], LeaderPosition]:
        broker_id, host, port = leader
        connection = self._connections.get(broker_id)
        if connection is None:
            connection = self._connections[broker_id] = BrokerConnection(
                f"lag-reader-{self._broker_id}", timeout_s=self._timeout_s, security=self._security
            )
        rounds: list[dict[TopicPartition, int]] = []
        for tp, offsets in asked.items():
            for index, offset in enumerate(sorted(offsets)):
                if index == len(rounds):
                    rounds.append({})
                rounds[index][tp] = offset
        found: dict[tuple[TopicPartition, int], LeaderPosition] = {}
        for fetch in rounds:
            try:
                answer = await connection.request(
                    host, port, ApiKey.FETCH, FETCH_VERSION, _fetch_fields(fetch)
                )
            except BrokerUnavailableError as error:
                logger.info("lag: broker %d: %s", broker_id, error)
                break
            found.update(_read_answer(answer, fetch))
        return found

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()


def _fetch_fields(fetch: dict[TopicPartition, int]) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for tp, offset in sorted(fetch.items()):
        topics[tp.topic].append(
            {
                "partition": tp.partition,
                "current_leader_epoch": -1,
                "fetch_offset": offset,
                "log_start_offset": -1,
                "partition_max_bytes": RECORD_BYTES,
            }
        )
    return {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": RECORD_BYTES * max(1, len(fetch)),
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": name, "partitions": parts} for name, parts in topics.items()],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def _read_answer(
    answer: dict[str, Any], fetch: dict[TopicPartition, int]
) -> dict[tuple[TopicPartition, int], LeaderPosition]:
    found: dict[tuple[TopicPartition, int], LeaderPosition] = {}
    if int(answer.get("error_code", 0)) != ErrorCode.NONE:
        return found
    for topic in answer.get("responses", ()):
        for data in topic.get("partitions", ()):
            tp = TopicPartition(str(topic["topic"]), int(data["partition_index"]))
            offset = fetch.get(tp)
            if offset is None or int(data["error_code"]) != ErrorCode.NONE:
                continue
            high_watermark = int(data["high_watermark"])
            records = data.get("records") or b""
            timestamp = timestamp_in(bytes(records), offset) if offset < high_watermark else None
            found[tp, offset] = LeaderPosition(high_watermark, timestamp)
    return found
