"""``TransactionManager``: the producer's side of transactions (KIP-98) — its producer id and
epoch, the sequence numbers of its batches, and the requests to the transaction and group
coordinators.

Life cycle (the facade's ``init_transactions`` → ``begin_transaction`` → sends →
``send_offsets_to_transaction`` → ``commit_transaction`` / ``abort_transaction``):

- ``init`` finds the id's coordinator (FindCoordinator key type 1) and asks for a producer id
  and epoch (InitProducerId with ``transactional.id`` and ``transaction.timeout.ms``); a
  previous producer with the same id is fenced, and its open transaction aborted, by that;
- ``add_partition`` registers a partition with the transaction before the first record is
  appended to it (AddPartitionsToTxn, one request per new partition);
- the sender stamps each batch, once, when it first drains it, with the producer id, epoch
  and the partition's next sequence, and the transactional attribute (``sequences``, the
  ``ProducerSequences`` an idempotent producer uses too); a retried batch keeps its
  sequence. The producer sends one request per partition at a time
  (``max.in.flight.requests.per.connection`` is 1 for a transactional producer);
- ``send_offsets`` adds the group's offsets partition (AddOffsetsToTxn) and commits the
  offsets at the group coordinator inside the transaction (TxnOffsetCommit);
- ``end`` (after the facade flushed every record) commits or aborts (EndTxn).

Retriable answers (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
CONCURRENT_TRANSACTIONS, a lost connection) are retried after ``retry.backoff.ms`` until
``max.block.ms``, finding the coordinator again when it moved; any other error code is raised
as its ``KafkaError`` (PRODUCER_FENCED: another producer took the id over — this one must be
closed).

Thread safety: the requests run on the calling thread under one lock (the manager's own
``NetworkClient``); the sender thread stamps through ``sequences``, which has its own lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from odradek._clock import Clock
from odradek._types import TopicPartition
from odradek.client.cluster import Metadata, MetadataUpdater
from odradek.client.config import ClientConfig
from odradek.client.network import NetworkClient
from odradek.client.producer.sequences import ProducerSequences
from odradek.errors import ErrorCode, KafkaError, KafkaTimeoutError, error_for_code
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = ["TransactionManager"]

_FIND_COORDINATOR: Final = VersionRange(1, 3)
_INIT_PRODUCER_ID: Final = VersionRange(0, 4)
_ADD_PARTITIONS: Final = VersionRange(0, 3)
_ADD_OFFSETS: Final = VersionRange(0, 3)
_END_TXN: Final = VersionRange(0, 3)
_TXN_OFFSET_COMMIT: Final = VersionRange(0, 3)
_RETRIABLE: Final = frozenset(
    {
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.CONCURRENT_TRANSACTIONS,
    }
)
_MOVED: Final = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})


class TransactionManager:
    """See the module docstring.

    Args:
        config: the producer's configuration (``transactional.id``,
            ``transaction.timeout.ms``, ``max.block.ms``, ``retry.backoff.ms``).
        clock: the time source.
    """

    def __init__(self, config: ClientConfig, clock: Clock) -> None:
        transactional_id = config["transactional.id"]
        assert transactional_id, "a transaction manager needs transactional.id"
        self.transactional_id = str(transactional_id)
        self._timeout_ms = config.get_int("transaction.timeout.ms")
        self._block_ms = config.get_int("max.block.ms")
        self._backoff_ms = config.get_int("retry.backoff.ms")
        self._clock = clock
        self._network = NetworkClient(config, clock=clock)
        self._metadata = Metadata.from_config(config, allow_auto_topic_creation=False)
        self._updater = MetadataUpdater(self._network, self._metadata)
        self._lock = threading.RLock()
        self.producer_id = -1
        self.epoch = -1
        #: The producer id, epoch and sequences the sender stamps batches with.
        self.sequences = ProducerSequences(transactional=True)
        self._partitions: set[TopicPartition] = set()
        self._coordinator: int | None = None
        self.in_transaction = False
        self._failure: BaseException | None = None

    # --- requests -------------------------------------------------------------------------

    def init(self) -> None:
        """InitProducerId for the transactional id (fences older producers of the id)."""
        with self._lock:
            body = self._call_coordinator(
                ApiKey.INIT_PRODUCER_ID,
                _INIT_PRODUCER_ID,
                {
                    "transactional_id": self.transactional_id,
                    "transaction_timeout": self._timeout_ms,
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
                lambda body: int(body["error_code"]),
            )
            self.producer_id = int(body["producer_id"])
            self.epoch = int(body["producer_epoch"])
            self.sequences.set_producer(self.producer_id, self.epoch)
            self._partitions.clear()
            self.in_transaction = False

    def begin(self) -> None:
        with self._lock:
            if self.producer_id < 0:
                raise KafkaError("init_transactions() first", code=ErrorCode.INVALID_TXN_STATE)
            if self.in_transaction:
                raise KafkaError("a transaction is open", code=ErrorCode.INVALID_TXN_STATE)
            self.in_transaction = True
            self._partitions.clear()

    def add_partition(self, tp: TopicPartition) -> None:
        """Registers ``tp`` with the open transaction (once per transaction)."""
        with self._lock:
            if not self.in_transaction:
                raise KafkaError(
                    "send() outside a transaction (begin_transaction() first)",
                    code=ErrorCode.INVALID_TXN_STATE,
                )
            if tp in self._partitions:
                return
            self._call_coordinator(
                ApiKey.ADD_PARTITIONS_TO_TXN,
                _ADD_PARTITIONS,
                {
                    "v3_and_below_transactional_id": self.transactional_id,
                    "v3_and_below_producer_id": self.producer_id,
                    "v3_and_below_producer_epoch": self.epoch,
                    "v3_and_below_topics": [{"name": tp.topic, "partitions": [tp.partition]}],
                },
                lambda body: int(
                    body["results_by_topic_v3_and_below"][0]["results_by_partition"][0][
                        "partition_error_code"
                    ]
                ),
            )
            self._partitions.add(tp)

    def send_offsets(self, offsets: Mapping[TopicPartition, int], group_id: str) -> None:
        """AddOffsetsToTxn, then TxnOffsetCommit at the group's coordinator."""
        with self._lock:
            if not self.in_transaction:
                raise KafkaError("no open transaction", code=ErrorCode.INVALID_TXN_STATE)
            self._call_coordinator(
                ApiKey.ADD_OFFSETS_TO_TXN,
                _ADD_OFFSETS,
                {
                    "transactional_id": self.transactional_id,
                    "producer_id": self.producer_id,
                    "producer_epoch": self.epoch,
                    "group_id": group_id,
                },
                lambda body: int(body["error_code"]),
            )
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for tp, offset in offsets.items():
                by_topic.setdefault(tp.topic, []).append(
                    {
                        "partition_index": tp.partition,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                )
            fields = {
                "transactional_id": self.transactional_id,
                "group_id": group_id,
                "producer_id": self.producer_id,
                "producer_epoch": self.epoch,
                "generation_id": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()],
            }

            def first_error(body: dict[str, Any]) -> int:
                codes = [int(p["error_code"]) for t in body["topics"] for p in t["partitions"]]
                return next((code for code in codes if code), 0)

            self._call(
                lambda deadline: self._find(group_id, 0, deadline),
                ApiKey.TXN_OFFSET_COMMIT,
                _TXN_OFFSET_COMMIT,
                fields,
                first_error,
            )

    def end(self, commit: bool) -> None:
        """EndTxn (the facade flushed every record of the transaction first)."""
        with self._lock:
            if not self.in_transaction:
                raise KafkaError("no open transaction", code=ErrorCode.INVALID_TXN_STATE)
            if self._partitions:  # nothing was added: nothing to end (as Kafka's clients)
                self._call_coordinator(
                    ApiKey.END_TXN,
                    _END_TXN,
                    {
                        "transactional_id": self.transactional_id,
                        "producer_id": self.producer_id,
                        "producer_epoch": self.epoch,
                        "committed": commit,
                    },
                    lambda body: int(body["error_code"]),
                )
            self.in_transaction = False
            self._partitions.clear()

    def record_failure(self, error: BaseException) -> None:
        """A batch failed (sender thread): the open transaction cannot commit."""
        with self._lock:
            if self._failure is None:
                self._failure = error

    def take_failure(self) -> BaseException | None:
        """The first batch failure since the last call (then forgotten)."""
        with self._lock:
            failure, self._failure = self._failure, None
            return failure

    def close(self) -> None:
        with self._lock:
            self._metadata.close()
            self._network.close()

    # --- plumbing -------------------------------------------------------------------------

    def _call_coordinator(
        self,
        api_key: ApiKey,
        versions: VersionRange,
        fields: Mapping[str, Any],
        code_of: Callable[[dict[str, Any]], int],
    ) -> dict[str, Any]:
        def coordinator(deadline: int) -> int:
            if self._coordinator is None:
                self._coordinator = self._find(self.transactional_id, 1, deadline)
            return self._coordinator

        return self._call(coordinator, api_key, versions, fields, code_of)

    def _call(
        self,
        node_of: Callable[[int], int],
        api_key: ApiKey,
        versions: VersionRange,
        fields: Mapping[str, Any],
        code_of: Callable[[dict[str, Any]], int],
    ) -> dict[str, Any]:
        deadline = self._clock.monotonic_ms() + self._block_ms
        while True:
            node = node_of(deadline)
            body = self._request(node, api_key, versions, fields, deadline)
            code = ErrorCode.NETWORK_EXCEPTION if body is None else code_of(body)
            if body is not None and not code:
                return body
            if code not in _RETRIABLE and code != ErrorCode.NETWORK_EXCEPTION:
                raise error_for_code(code, f"{ApiKey(api_key).name}: {ErrorCode(code).name}")
            if code in _MOVED or code == ErrorCode.NETWORK_EXCEPTION:
                self._coordinator = None
            if self._clock.monotonic_ms() >= deadline:
                raise KafkaTimeoutError(f"{ApiKey(api_key).name}: {ErrorCode(code).name}")
            self._pause(deadline)

    def _find(self, key: str, key_type: int, deadline: int) -> int:
        """The coordinator's node id (FindCoordinator, retried; in metadata afterwards)."""
        while True:
            if not self._metadata.cluster.brokers:
                self._updater.update_now(max(0, deadline - self._clock.monotonic_ms()))
            node = self._network.least_loaded_node()
            body = None
            if node is not None:
                body = self._request(
                    node,
                    ApiKey.FIND_COORDINATOR,
                    _FIND_COORDINATOR,
                    {"key": key, "key_type": key_type},
                    deadline,
                )
            if body is not None and not int(body["error_code"]):
                found = int(body["node_id"])
                if found not in self._metadata.cluster.brokers:
                    self._updater.update_now(max(0, deadline - self._clock.monotonic_ms()))
                if found in self._metadata.cluster.brokers:
                    return found
            elif body is not None and int(body["error_code"]) not in _RETRIABLE:
                code = int(body["error_code"])
                raise error_for_code(code, f"FindCoordinator of {key!r}: {ErrorCode(code).name}")
            if self._clock.monotonic_ms() >= deadline:
                raise KafkaTimeoutError(f"no coordinator for {key!r} in time")
            self._pause(deadline)

    def _request(
        self,
        node: int,
        api_key: ApiKey,
        versions: VersionRange,
        fields: Mapping[str, Any],
        deadline: int,
    ) -> dict[str, Any] | None:
        """The answer's body, or None when the request failed on the network."""
        remaining = max(1, deadline - self._clock.monotonic_ms())
        future = self._network.send(node, api_key, fields, versions=versions, timeout_ms=remaining)
        self._network.wait([future], deadline)
        if not future.done() or future.exception() is not None:
            return None
        body: dict[str, Any] = future.result()
        return body

    def _pause(self, deadline: int) -> None:
        until = min(deadline, self._clock.monotonic_ms() + self._backoff_ms)
        while (remaining := until - self._clock.monotonic_ms()) > 0:
            self._network.poll(remaining)
