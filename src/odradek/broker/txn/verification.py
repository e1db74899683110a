"""Transaction verification on the produce path (KIP-890 part 1; Kafka's
``AddPartitionsToTxnManager``): a partition leader asks a transactional id's coordinator whether
a partition is part of the producer's ongoing transaction before it takes the producer's first
transactional batch there.

``verify`` answers one produce's question: the error of each partition (NONE: the partition is
in the producer's ongoing transaction). When this broker is the id's coordinator it asks it
directly; otherwise the question joins the batch for that coordinator's broker, sent as one
AddPartitionsToTxn v4 request with ``verify_only`` over the inter-broker connection (one
request in flight per broker, as Kafka's send thread; the questions that arrive meanwhile go
in the next request). The produce waits for its answer; other requests go on.

Answers as the Produce response carries them (Kafka's mapping):

- NONE: in the transaction;
- INVALID_TXN_STATE: not in it (no ongoing transaction, or the partition was never added —
  the late batch of an aborted transaction), or another state error;
- INVALID_PRODUCER_EPOCH: the coordinator has a newer epoch (PRODUCER_FENCED there);
- NOT_ENOUGH_REPLICAS: the coordinator could not answer now (not known, moved, loading,
  unreachable, a concurrent transaction ending): retriable, the producer sends again.

Thread safety: the event loop thread only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from odradek._types import TopicPartition
from odradek.broker.broker_connection import BrokerConnection, BrokerUnavailableError
from odradek.broker.ports import TransactionsPort
from odradek.broker.security.inter_broker import PLAINTEXT_INTER_BROKER, InterBrokerSecurity
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol import ApiKey

__all__ = ["TransactionVerifier", "produce_error"]

logger = logging.getLogger(__name__)

#: The first AddPartitionsToTxn version with the brokers' batched form and ``verify_only``.
ADD_PARTITIONS_VERIFY_VERSION = 4

#: (broker id, host, port) of an id's coordinator, or None when it has none now.
CoordinatorLookup = Callable[[str], "tuple[int, str, int] | None"]

#: Coordinator answers the producer should retry: the Produce carries NOT_ENOUGH_REPLICAS.
_RETRIABLE = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)


def produce_error(code: ErrorCode) -> ErrorCode:
    """A coordinator's verification answer as the Produce response carries it."""
    if code is ErrorCode.NONE or code is ErrorCode.INVALID_PRODUCER_EPOCH:
        return code
    if code is ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code in _RETRIABLE:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return ErrorCode.INVALID_TXN_STATE


@dataclass(eq=False)
class _Question:
    producer_id: int
    producer_epoch: int
    partitions: set[TopicPartition]
    waiters: list[asyncio.Future[dict[TopicPartition, ErrorCode]]] = field(default_factory=list)


class TransactionVerifier:
    """See the module docstring.

    Args:
        broker_id: this broker.
        coordinator_of: where an id's coordinator is.
        local: this broker's coordinator (None: it runs none).
        timeout_ms: how long a request to another broker may take.
        security: how to reach the other brokers (the inter-broker listener's).
    """

    def __init__(
        self,
        broker_id: int,
        coordinator_of: CoordinatorLookup,
        local: TransactionsPort | None,
        *,
        timeout_ms: int = 5_000,
        security: InterBrokerSecurity = PLAINTEXT_INTER_BROKER,
    ) -> None:
        self._broker_id = broker_id
        self._coordinator_of = coordinator_of
        self._local = local
        self._timeout_s = timeout_ms / 1000
        self._security = security
        #: Per broker: the questions waiting for its next request, by transactional id.
        self._pending: dict[int, dict[str, _Question]] = {}
        self._senders: dict[int, asyncio.Task[None]] = {}
        self._connections: dict[int, BrokerConnection] = {}
        self.requests_sent = 0

    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """Each partition's answer (see the module docstring); never raises for the
        coordinator's or the network's failures."""
        where = self._coordinator_of(transactional_id)
        if where is None:
            return dict.fromkeys(partitions, ErrorCode.NOT_ENOUGH_REPLICAS)
        if where[0] == self._broker_id:
            answers = await self._ask_here(
                transactional_id, producer_id, producer_epoch, partitions
            )
        else:
            answers = await self._ask_there(
                where, transactional_id, producer_id, producer_epoch, partitions
            )
        return {
            tp: produce_error(answers.get(tp, ErrorCode.INVALID_TXN_STATE)) for tp in partitions
        }

    async def _ask_here(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        local = self._local
        if local is None:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        try:
            return await local.run(
                transactional_id,
                lambda coordinator, now_ms: coordinator.add_partitions(
                    now_ms,
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    partitions,
                    verify_only=True,
                ),
            )
        except KafkaError as error:
            return dict.fromkeys(partitions, error.error_code)

    async def _ask_there(
        self,
        where: tuple[int, str, int],
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        broker_id = where[0]
        batch = self._pending.setdefault(broker_id, {})
        question = batch.get(transactional_id)
        if question is None:
            question = batch[transactional_id] = _Question(
                producer_id, producer_epoch, set(partitions)
            )
        elif (question.producer_id, question.producer_epoch) != (producer_id, producer_epoch):
            # Another producer of the id (an older or newer epoch) asks in the same
            # request: this one tries again (Kafka answers one of the two a retriable error).
            return dict.fromkeys(partitions, ErrorCode.CONCURRENT_TRANSACTIONS)
        else:
            question.partitions.update(partitions)
        waiter: asyncio.Future[dict[TopicPartition, ErrorCode]] = (
            asyncio.get_running_loop().create_future()
        )
        question.waiters.append(waiter)
        sender = self._senders.get(broker_id)
        if sender is None or sender.done():
            self._senders[broker_id] = asyncio.get_running_loop().create_task(
                self._send_while_pending(where)
            )
        return await waiter

    async def _send_while_pending(self, where: tuple[int, str, int]) -> None:
        broker_id = where[0]
        while batch := self._pending.pop(broker_id, None):
            try:
                answers = await self._send(where, batch)
            except asyncio.CancelledError:
                for question in batch.values():
                    for waiter in question.waiters:
                        waiter.cancel()
                raise
            except Exception:  # a malformed answer: the producers retry
                logger.exception("AddPartitionsToTxn (verify) to broker %d failed", broker_id)
                answers = {}
            for transactional_id, question in batch.items():
                answer = answers.get(transactional_id, {})
                result = {
                    tp: answer.get(tp, ErrorCode.NETWORK_EXCEPTION) for tp in question.partitions
                }
                for waiter in question.waiters:
                    if not waiter.done():
                        waiter.set_result(result)

    async def _send(
        self, where: tuple[int, str, int], batch: dict[str, _Question]
    ) -> dict[str, dict[TopicPartition, ErrorCode]]:
        broker_id, host, port = where
        connection = self._connections.get(broker_id)
        if connection is None:
            connection = self._connections[broker_id] = BrokerConnection(
                f"txn-verifier-{self._broker_id}",
                timeout_s=self._timeout_s,
                security=self._security,
            )
        transactions = []
        for transactional_id, question in batch.items():
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(question.partitions):
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            transactions.append(
                {
                    "transactional_id": transactional_id,
                    "producer_id": question.producer_id,
                    "producer_epoch": question.producer_epoch,
                    "verify_only": True,
                    "topics": [
                        {"name": name, "partitions": indexes} for name, indexes in by_topic.items()
                    ],
                }
            )
        self.requests_sent += 1
        try:
            answer = await connection.request(
                host,
                port,
                ApiKey.ADD_PARTITIONS_TO_TXN,
                ADD_PARTITIONS_VERIFY_VERSION,
                {"transactions": transactions},
            )
        except BrokerUnavailableError as error:
            logger.info("AddPartitionsToTxn (verify) to broker %d: %s", broker_id, error)
            return {}
        top = ErrorCode(int(answer.get("error_code", 0)))
        results: dict[str, dict[TopicPartition, ErrorCode]] = {}
        if top is not ErrorCode.NONE:
            for transactional_id, question in batch.items():
                results[transactional_id] = dict.fromkeys(question.partitions, top)
            return results
        for txn in answer.get("results_by_transaction", ()):
            found = results.setdefault(str(txn["transactional_id"]), {})
            for topic in txn.get("topic_results", ()):
                for entry in topic.get("results_by_partition", ()):
                    tp = TopicPartition(str(topic["name"]), int(entry["partition_index"]))
                    found[tp] = ErrorCode(int(entry["partition_error_code"]))
        return results

    async def stop(self) -> None:
        senders = list(self._senders.values())
        for sender in senders:
            sender.cancel()
        if senders:
            await asyncio.gather(*senders, return_exceptions=True)
        self._senders.clear()
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()
