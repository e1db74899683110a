"""``TransactionAdmin``: the transaction calls of ``AdminClient`` (KIP-664, what Kafka's
``kafka-transactions.sh`` reads): list the transactional ids of the cluster, describe some,
and describe the producers a partition knows.

- ``list_transactions`` asks every broker (ListTransactions: each lists the ids it
  coordinates), filtered by state (Kafka's names: ``Ongoing``, ``PrepareCommit``,
  ``CompleteCommit``, ...), producer id, and having run at least ``duration_ms`` (v1);
- ``describe_transactions`` asks each id's coordinator (FindCoordinator key type 1, then
  DescribeTransactions), finding it again while the answer says it moved or is loading;
- ``describe_producers`` asks the partition's leader (DescribeProducers);
- ``abort_transaction`` sends the partition's leader WriteTxnMarkers with an ABORT marker for
  one producer (``AbortTransactionSpec``: what ``kafka-transactions.sh abort`` does for a
  hanging transaction, one its coordinator no longer knows, KIP-664). The marker ends that
  producer's open transaction on that partition only, whatever its coordinator thinks: the
  caller is expected to have checked that the transaction hangs.

Errors follow ``AdminClient``: network failures are retried until the call's deadline, then
raise; an id's error (TRANSACTIONAL_ID_NOT_FOUND) comes back in the ``AdminResult`` and raises
on lookup; a state filter no broker knows is an error (``ValueError``, naming it).
Thread safety: each call holds the client's lock (``AdminRequests.lock``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from odradek._types import TopicPartition
from odradek.client.admin_requests import AdminRequests
from odradek.client.admin_types import AdminResult
from odradek.client.admin_wire import constant_node, item_error, no_leader
from odradek.errors import ErrorCode, KafkaError
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = [
    "AbortTransactionSpec",
    "ProducerState",
    "TransactionAdmin",
    "TransactionDescription",
    "TransactionListing",
]

FIND_COORDINATOR_VERSIONS: Final = VersionRange(1, 3)
LIST_TRANSACTIONS_VERSIONS: Final = VersionRange(0, 1)
DESCRIBE_TRANSACTIONS_VERSIONS: Final = VersionRange(0, 0)
DESCRIBE_PRODUCERS_VERSIONS: Final = VersionRange(0, 0)
WRITE_TXN_MARKERS_VERSIONS: Final = VersionRange(1, 1)
TRANSACTION_KEY_TYPE: Final = 1
_COORDINATOR_CODES: Final = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)
_LEADER_CODES: Final = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE})


@dataclass(frozen=True, slots=True)
class TransactionListing:
    """A transactional id as ListTransactions reports it."""

    transactional_id: str
    producer_id: int
    state: str
    coordinator_id: int


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """A transactional id's state at its coordinator (``start_time_ms`` -1: no transaction)."""

    transactional_id: str
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class ProducerState:
    """A producer a partition knows (``current_txn_start_offset`` -1: no open transaction)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp_ms: int
    coordinator_epoch: int
    current_txn_start_offset: int


@dataclass(frozen=True, slots=True)
class AbortTransactionSpec:
    """The transaction ``abort_transaction`` ends: a producer's open transaction on one
    partition (Kafka's ``AbortTransactionSpec``)."""

    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int


class TransactionAdmin:
    """See the module docstring."""

    def __init__(self, requests: AdminRequests) -> None:
        self._requests = requests

    def list_transactions(
        self,
        *,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        duration_ms: int | None = None,
        timeout_ms: int | None = None,
    ) -> list[TransactionListing]:
        """Every transactional id of the cluster that passes the filters, sorted by id.

        Raises:
            ValueError: a state name the brokers do not know.
            KafkaError: a broker's error, once retries ran out.
        """
        deadline = self._requests.deadline(timeout_ms)
        fields = {
            "state_filters": list(states),
            "producer_id_filters": list(producer_ids),
            "duration_filter": -1 if duration_ms is None else duration_ms,
        }
        listings: dict[str, TransactionListing] = {}
        with self._requests.lock:
            for node in sorted(self._requests.refresh(deadline).brokers):
                while True:
                    body = self._requests.call(
                        constant_node(node),
                        ApiKey.LIST_TRANSACTIONS,
                        LIST_TRANSACTIONS_VERSIONS,
                        fields,
                        deadline,
                    )
                    code = int(body.get("error_code", 0))
                    if code in _COORDINATOR_CODES and self._requests.remaining(deadline) > 0:
                        self._requests.pause(deadline)
                        continue
                    break
                if code:
                    raise item_error(body, f"ListTransactions from broker {node}")
                unknown = [str(name) for name in body.get("unknown_state_filters") or ()]
                if unknown:
                    raise ValueError(f"unknown transaction state: {', '.join(unknown)}")
                for entry in body["transaction_states"]:
                    listing = TransactionListing(
                        str(entry["transactional_id"]),
                        int(entry["producer_id"]),
                        str(entry["transaction_state"]),
                        node,
                    )
                    listings[listing.transactional_id] = listing
        return [listings[key] for key in sorted(listings)]

    def describe_transactions(
        self, transactional_ids: Sequence[str], *, timeout_ms: int | None = None
    ) -> AdminResult[str, TransactionDescription]:
        """Each id's state at its coordinator.

        Returns:
            Per id: its ``TransactionDescription``, or its ``KafkaError`` on lookup
            (TRANSACTIONAL_ID_NOT_FOUND, ...).
        """
        deadline = self._requests.deadline(timeout_ms)
        ids = list(dict.fromkeys(transactional_ids))
        values: dict[str, TransactionDescription] = {}
        errors: dict[str, KafkaError] = {}
        with self._requests.lock:
            for transactional_id in ids:
                try:
                    values[transactional_id] = self._describe(transactional_id, deadline)
                except KafkaError as error:
                    errors[transactional_id] = error
        return AdminResult(ids, values, errors)

    def describe_producers(
        self, tp: TopicPartition, *, timeout_ms: int | None = None
    ) -> list[ProducerState]:
        """The producers ``tp``'s leader knows, by producer id.

        Raises:
            KafkaError: the partition's error (UNKNOWN_TOPIC_OR_PARTITION, ...), once leader
                errors were retried until the deadline.
        """
        deadline = self._requests.deadline(timeout_ms)
        fields = {"topics": [{"name": tp.topic, "partition_indexes": [tp.partition]}]}
        with self._requests.lock:
            # The topic is of interest only during the call.
            self._requests.metadata.set_topics({tp.topic})
            try:
                entry = self._leader_entry(
                    tp, ApiKey.DESCRIBE_PRODUCERS, DESCRIBE_PRODUCERS_VERSIONS, fields, deadline
                )
            finally:
                self._requests.metadata.set_topics((), refresh=False)
        producers = [
            ProducerState(
                int(p["producer_id"]),
                int(p["producer_epoch"]),
                int(p["last_sequence"]),
                int(p["last_timestamp"]),
                int(p["coordinator_epoch"]),
                int(p["current_txn_start_offset"]),
            )
            for p in entry["active_producers"]
        ]
        return sorted(producers, key=lambda p: p.producer_id)

    def abort_transaction(
        self, spec: AbortTransactionSpec, *, timeout_ms: int | None = None
    ) -> None:
        """Writes an ABORT marker for ``spec``'s producer to its partition's leader
        (WriteTxnMarkers v1) and waits until the marker is replicated.

        Raises:
            KafkaError: the partition's error (UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH
                when the partition knows a newer epoch of the producer, ...), once leader errors
                were retried until the deadline.
        """
        tp = spec.topic_partition
        deadline = self._requests.deadline(timeout_ms)
        fields = {
            "markers": [
                {
                    "producer_id": spec.producer_id,
                    "producer_epoch": spec.producer_epoch,
                    "transaction_result": False,  # ABORT
                    "topics": [{"name": tp.topic, "partition_indexes": [tp.partition]}],
                    "coordinator_epoch": spec.coordinator_epoch,
                }
            ]
        }
        with self._requests.lock:
            self._requests.metadata.set_topics({tp.topic})
            try:
                self._leader_entry(
                    tp, ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSIONS, fields, deadline
                )
            finally:
                self._requests.metadata.set_topics((), refresh=False)

    def _leader(self, tp: TopicPartition, deadline: int) -> int:
        """``tp``'s leader, waiting while it has none (until the deadline)."""
        while True:
            cluster = self._requests.refresh(deadline)
            leader = cluster.leader_for(tp)
            if leader is not None:
                return leader
            error = no_leader(cluster, tp)
            if error.error_code in _LEADER_CODES and self._requests.remaining(deadline):
                self._requests.pause(deadline)
                continue
            raise error

    def _leader_entry(
        self,
        tp: TopicPartition,
        api_key: ApiKey,
        versions: VersionRange,
        fields: dict[str, Any],
        deadline: int,
    ) -> dict[str, Any]:
        """Sends ``api_key`` about ``tp`` to its leader and answers ``tp``'s entry of the
        answer, asking the new leader again while the answer is a leader error (until the
        deadline).

        Raises:
            KafkaError: the entry's error.
        """
        while True:
            leader = self._leader(tp, deadline)
            body = self._requests.call(constant_node(leader), api_key, versions, fields, deadline)
            if api_key is ApiKey.WRITE_TXN_MARKERS:
                entry = _marker_entry(body, tp)
            else:
                entry = _partition_entry(body, tp)
            code = int(entry["error_code"])
            if code in _LEADER_CODES and self._requests.remaining(deadline) > 0:
                self._requests.metadata.request_update()
                self._requests.pause(deadline)
                continue
            if code:
                raise item_error(entry, str(tp))
            return entry

    def _describe(self, transactional_id: str, deadline: int) -> TransactionDescription:
        while True:
            coordinator = self._find_coordinator(transactional_id, deadline)
            body = self._requests.call(
                constant_node(coordinator),
                ApiKey.DESCRIBE_TRANSACTIONS,
                DESCRIBE_TRANSACTIONS_VERSIONS,
                {"transactional_ids": [transactional_id]},
                deadline,
            )
            states = body["transaction_states"]
            if not states:
                raise KafkaError(f"{transactional_id!r}: not in the response")
            entry = states[0]
            code = int(entry["error_code"])
            if code in _COORDINATOR_CODES and self._requests.remaining(deadline) > 0:
                self._requests.pause(deadline)
                continue
            if code:
                raise item_error(entry, f"transactional id {transactional_id!r}")
            return TransactionDescription(
                transactional_id,
                coordinator,
                str(entry["transaction_state"]),
                int(entry["producer_id"]),
                int(entry["producer_epoch"]),
                int(entry["transaction_timeout"]),
                int(entry["transaction_start_time"]),
                tuple(
                    TopicPartition(str(topic["topic"]), int(partition))
                    for topic in entry["topics"]
                    for partition in topic["partitions"]
                ),
            )

    def _find_coordinator(self, transactional_id: str, deadline: int) -> int:
        while True:
            body = self._requests.call(
                self._requests.any_node,
                ApiKey.FIND_COORDINATOR,
                FIND_COORDINATOR_VERSIONS,
                {"key": transactional_id, "key_type": TRANSACTION_KEY_TYPE},
                deadline,
            )
            code = int(body.get("error_code", 0))
            if not code:
                node = int(body["node_id"])
                if node in self._requests.refresh(deadline).brokers:
                    return node
            elif code not in _COORDINATOR_CODES or self._requests.remaining(deadline) <= 0:
                raise item_error(body, f"coordinator of transactional id {transactional_id!r}")
            self._requests.pause(deadline)


def _partition_entry(body: dict[str, Any], tp: TopicPartition) -> dict[str, Any]:
    for topic in body["topics"]:
        for entry in topic["partitions"]:
            if str(topic["name"]) == tp.topic and int(entry["partition_index"]) == tp.partition:
                result: dict[str, Any] = entry
                return result
    raise KafkaError(f"{tp}: not in the response")


def _marker_entry(body: dict[str, Any], tp: TopicPartition) -> dict[str, Any]:
    for marker in body["markers"]:
        for topic in marker["topics"]:
            for entry in topic["partitions"]:
                if str(topic["name"]) == tp.topic and int(entry["partition_index"]) == tp.partition:
                    result: dict[str, Any] = entry
                    return result
    raise KafkaError(f"{tp}: not in the WriteTxnMarkers response")
