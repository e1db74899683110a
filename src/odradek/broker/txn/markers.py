"""Transaction markers on their way to the partitions: written here when this broker leads the
partition, sent to its leader as WriteTxnMarkers otherwise (Kafka's
``TransactionMarkerChannelManager``).

``write_local_marker`` is the leader's side (the WriteTxnMarkers handler and the coordinator
use it): it appends the marker, waits until the ISR holds it (the marker's offset is below
the high watermark, as Kafka's acks=-1 marker append), and, for a ``__consumer_offsets``
partition, tells the group coordinator to apply or drop the transaction's pending offsets.

``MarkerWriter.write`` is the coordinator's side: it keeps sending until every partition of
the job answered NONE, or an answer that means there is nothing left to mark (the topic or
partition is gone, the producer has moved to a newer epoch there); retriable answers
(NOT_LEADER_OR_FOLLOWER, a broker that cannot be reached, NOT_ENOUGH_REPLICAS, timeouts) are
retried with ``retry_backoff_s`` after looking the leader up again. It stops when its
``alive`` callback says the coordinator lost the id's partition (the new coordinator resumes
the job from the log).

Thread safety: the event loop thread only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from odradek._types import TopicPartition
from odradek.broker.broker_connection import BrokerConnection, BrokerUnavailableError
from odradek.broker.ports import ReplicasPort
from odradek.broker.security.inter_broker import PLAINTEXT_INTER_BROKER, InterBrokerSecurity
from odradek.broker.txn.coordinator import MarkerJob
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey

__all__ = ["MarkerWriter", "TransactionalOffsets", "write_local_marker"]

logger = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
WRITE_TXN_MARKERS_VERSION = 1
#: Answers after which a partition needs no marker any more.
_FINAL = frozenset(
    {
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    }
)


class TransactionalOffsets(Protocol):
    """The group coordinator's side of a marker on ``__consumer_offsets``."""

    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> None: ...


class _MarkerPartition(Protocol):
    @property
    def is_leader(self) -> bool: ...
    @property
    def high_watermark(self) -> int: ...

    def append_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> Any: ...


async def write_local_marker(
    replicas: ReplicasPort,
    offsets: TransactionalOffsets | None,
    tp: TopicPartition,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timeout_ms: int,
) -> ErrorCode:
    """Appends a marker to a partition led here and waits for its replication (see the
    module docstring); returns the partition's answer."""
    partition = replicas.get(tp)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    marked: _MarkerPartition = partition  # type: ignore[assignment]  # a Partition
    if not marked.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    try:
        info = marked.append_marker(producer_id, producer_epoch, commit, coordinator_epoch)
    except KafkaError as error:
        return error.error_code
    except OSError as error:
        logger.warning("%s: cannot append a marker: %s", tp, error)
        return ErrorCode.KAFKA_STORAGE_ERROR
    if tp.topic == OFFSETS_TOPIC and offsets is not None:
        offsets.complete_transaction(tp.partition, producer_id, commit)
    errors = await replicas.delayed_produce.wait([(partition, info.last_offset + 1)], timeout_ms)
    return errors[0]


#: (broker id, host, port) of a partition's leader, or None when it has none.
LeaderLookup = Callable[[TopicPartition], "tuple[int, str, int] | None"]


class MarkerWriter:
    """See the module docstring.

    Args:
        broker_id: this broker.
        replicas: its partitions.
        leader_of: where a partition's leader is.
        offsets: the group coordinator (markers on ``__consumer_offsets``).
        timeout_ms: how long one marker waits for its replication.
        security: how to reach the other leaders (the inter-broker listener's).
    """

    def __init__(
        self,
        broker_id: int,
        replicas: ReplicasPort,
        leader_of: LeaderLookup,
        *,
        offsets: TransactionalOffsets | None = None,
        timeout_ms: int = 5_000,
        retry_backoff_s: float = 0.1,
        security: InterBrokerSecurity = PLAINTEXT_INTER_BROKER,
    ) -> None:
        self._broker_id = broker_id
        self._security = security
        self._replicas = replicas
        self._leader_of = leader_of
        self.offsets = offsets
        self._timeout_ms = timeout_ms
        self._backoff_s = retry_backoff_s
        self._connections: dict[int, BrokerConnection] = {}
        self.markers_written = 0

    async def write(
        self, job: MarkerJob, coordinator_epoch: int, alive: Callable[[], bool]
    ) -> bool:
        """Writes every marker of ``job``; returns False when ``alive`` turned False first."""
        remaining = set(job.partitions)
        while remaining:
            if not alive():
                return False
            by_leader: dict[tuple[int, str, int] | None, list[TopicPartition]] = {}
            for tp in sorted(remaining):
                by_leader.setdefault(self._leader_of(tp), []).append(tp)
            results: dict[TopicPartition, ErrorCode] = {}
            sends = []
            for leader, tps in by_leader.items():
                if leader is None:
                    results.update(dict.fromkeys(tps, ErrorCode.LEADER_NOT_AVAILABLE))
                elif leader[0] == self._broker_id:
                    sends.append(self._write_here(job, tps, coordinator_epoch))
                else:
                    sends.append(self._send(leader, job, tps, coordinator_epoch))
            for answer in await asyncio.gather(*sends):
                results.update(answer)
            for tp, code in results.items():
                if code in _FINAL:
                    remaining.discard(tp)
                    self.markers_written += 1
                    if code is not ErrorCode.NONE:
                        logger.info("marker of %s for %s: %s", job.transactional_id, tp, code.name)
            if remaining:
                logger.debug(
                    "markers of %s: retrying %s (%s)",
                    job.transactional_id,
                    sorted(remaining),
                    {str(tp): results.get(tp) for tp in remaining},
                )
                await asyncio.sleep(self._backoff_s)
        return True

    async def _write_here(
        self, job: MarkerJob, tps: Iterable[TopicPartition], coordinator_epoch: int
    ) -> dict[TopicPartition, ErrorCode]:
        answers = {}
        for tp in tps:
            answers[tp] = await write_local_marker(
                self._replicas,
                self.offsets,
                tp,
                job.producer_id,
                job.producer_epoch,
                job.commit,
                coordinator_epoch,
                self._timeout_ms,
            )
        return answers

    async def _send(
        self,
        leader: tuple[int, str, int],
        job: MarkerJob,
        tps: list[TopicPartition],
        coordinator_epoch: int,
    ) -> dict[TopicPartition, ErrorCode]:
        broker_id, host, port = leader
        connection = self._connections.get(broker_id)
        if connection is None:
            connection = self._connections[broker_id] = BrokerConnection(
                f"txn-marker-sender-{self._broker_id}",
                timeout_s=self._timeout_ms / 1000 + 5,
                security=self._security,
            )
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        fields = {
            "markers": [
                {
                    "producer_id": job.producer_id,
                    "producer_epoch": job.producer_epoch,
                    "transaction_result": job.commit,
                    "topics": [
                        {"name": name, "partition_indexes": indexes}
                        for name, indexes in by_topic.items()
                    ],
                    "coordinator_epoch": coordinator_epoch,
                }
            ]
        }
        try:
            answer = await connection.request(
                host, port, ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, fields
            )
        except BrokerUnavailableError as error:
            logger.info("WriteTxnMarkers to broker %d: %s", broker_id, error)
            return dict.fromkeys(tps, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        results: dict[TopicPartition, ErrorCode] = {}
        for marker in answer.get("markers", ()):
            for topic in marker.get("topics", ()):
                for entry in topic.get("partitions", ()):
                    tp = TopicPartition(str(topic["name"]), int(entry["partition_index"]))
                    results[tp] = ErrorCode(int(entry["error_code"]))
        return results

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()
