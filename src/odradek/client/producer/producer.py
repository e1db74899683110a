"""``Producer``: the facade — configuration, the ``send`` path, ``flush`` and ``close``.

    with Producer({"bootstrap.servers": "127.0.0.1:9092"}, value_serializer="str") as producer:
        future = producer.send("orders", "hello", key=b"k", callback=on_delivery)
        producer.flush()
        metadata = future.result()     # RecordMetadata(topic, partition, offset, ...)

Threading model: any number of threads may call ``send``, ``flush`` and ``partitions_for``;
``send`` runs the interceptors' ``on_send``, the serializers and the partitioner *in the
calling thread*, then appends to the ``RecordAccumulator`` (blocking up to ``max.block.ms``
for metadata of a new topic or for ``buffer.memory``). One background thread, the ``Sender``,
owns the network: it sends batches and completes them, so per-record callbacks, interceptors'
``on_acknowledgement`` and futures' done-callbacks run on it (keep them short; calling
``flush`` or ``close`` from one of them would wait for the thread that runs it, so ``flush``
refuses and ``close`` does not wait there).

What ``send`` does with a record that cannot be sent — a serializer or partitioner exception, no
metadata for its topic within ``max.block.ms``, no memory within ``max.block.ms``, a record
larger than ``max.request.size`` or ``buffer.memory``, an invalid partition or timestamp — is
the same in every case: the record's future fails with the error, its callback and the
interceptors' ``on_acknowledgement`` see it (in the calling thread, before ``send`` returns),
and (for user code) it is logged with the topic. ``send`` itself raises only
``ProducerClosedError`` (after ``close``) and, with ``producer.type=sync``, the first failure of
the records it sent (all their futures are done then). Failures after ``send`` (broker errors,
``delivery.timeout.ms``) reach futures, callbacks and interceptors the same way, from the sender
thread.

Idempotent by default, as Kafka's producer since 3.0 (``enable.idempotence=true``,
``acks=all``): retries never duplicate nor reorder a partition's records (``producer.config``
has the rules of the settings, ``producer.sequences`` and ``producer.sender`` the rest).

``producer.type=sync`` makes ``send`` send at once (no lingering: the records' batches are
flushed) and wait for the acknowledgements.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, overload

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.client.closeable import Closeable
from odradek.client.cluster import Cluster, Metadata, MetadataUpdater, PartitionMetadata
from odradek.client.config import PRODUCER, ClientConfig
from odradek.client.network import NetworkClient
from odradek.client.partitioner import default_partition
from odradek.client.producer import produce_codec
from odradek.client.producer._plugins import close_quietly
from odradek.client.producer.accumulator import (
    BATCH_FULL,
    AccumulatorSettings,
    RecordAccumulator,
    estimate_record_size,
)
from odradek.client.producer.batch import Thunk
from odradek.client.producer.buffer_pool import BufferPool
from odradek.client.producer.config import ProducerSettings
from odradek.client.producer.future import BatchResult, RecordFuture
from odradek.client.producer.interceptors import ProducerInterceptors, resolve_interceptors
from odradek.client.producer.partitioners import DefaultPartitioner, resolve_partitioner
from odradek.client.producer.record import Header, ProducerRecord, RecordMetadata
from odradek.client.producer.sender import Sender
from odradek.client.producer.sequences import ProducerSequences
from odradek.client.producer.serializers import (
    BytesSerializer,
    Int32Serializer,
    Int64Serializer,
    JsonSerializer,
    StringSerializer,
    resolve_serializer,
)
from odradek.client.producer.transactions import TransactionManager
from odradek.errors import (
    ErrorCode,
    KafkaError,
    MessageTooLargeError,
    ProducerClosedError,
    SerializationError,
    UnknownTopicOrPartitionError,
)

__all__ = ["Callback", "Producer"]

logger = logging.getLogger(__name__)

#: A delivery callback: ``callback(metadata, exception)``; ``exception`` is None on success,
#: and ``metadata.offset`` is -1 on failure (Java's ``Callback.onCompletion``).
Callback = Callable[[RecordMetadata, BaseException | None], object]

#: Record headers as ``send`` takes them: ``(name, value)`` pairs, or a mapping of them.
Headers = Sequence[Header] | Mapping[str, bytes | None]

_client_ids = itertools.count(1)
#: Serializers known to pass ``None`` through (the hot path skips calling them for it).
_BUILTIN_SERIALIZER_TYPES: Final = frozenset(
    {BytesSerializer, StringSerializer, Int32Serializer, Int64Serializer, JsonSerializer}
)
_NO_PARTITION: Final = -1

produce_codec.register()


def _as_pairs(headers: Headers) -> Sequence[Header]:
    """A mapping's items, or the sequence itself."""
    if type(headers) is tuple or not isinstance(headers, Mapping):
        return headers
    return tuple(headers.items())


def _check_headers(headers: Sequence[Header]) -> None:
    """Raises TypeError, naming the entry, unless every header is a ``(str, bytes | None)``
    pair (the codec would fail on it later, with a less helpful message)."""
    for item in headers:
        if (
            not isinstance(item, tuple)
            or len(item) != 2
            or not isinstance(item[0], str)
            or not (item[1] is None or isinstance(item[1], bytes))
        ):
            raise TypeError(f"a header is a (str, bytes | None) pair, got {item!r}")


class _ClusterView:
    """A partitioner's view of one immutable ``Cluster`` (``partitioners.ClusterView``)."""

    __slots__ = ("_available", "cluster", "counts")

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._available: dict[str, list[int]] = {}
        #: Partition counts the producer looked up in this cluster view (its cache).
        self.counts: dict[str, int] = {}

    def partition_count(self, topic: str) -> int:
        return self.cluster.partition_count(topic) or 0

    def partitions_for_topic(self, topic: str) -> Sequence[int]:
        return range(self.partition_count(topic))

    def available_partitions_for_topic(self, topic: str) -> Sequence[int]:
        available = self._available.get(topic)
        if available is None:
            available = [p.partition for p in self.cluster.available_partitions_for(topic)]
            self._available[topic] = available
        return available


class Producer(Closeable):
    """A Kafka producer (see the module docstring).

    Args:
        config: settings by Kafka name (``bootstrap.servers`` is required); see
            ``producer.config`` for the producer's keys and defaults.
        partitioner: a partitioner object (same as ``partitioner.class``).
        **kwargs: more settings, underscores for dots (``linger_ms=10``).

    Raises:
        ConfigError: an unknown key, a bad value, or a broken cross-key rule (named).
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        /,
        *,
        partitioner: object | None = None,
        _clock: Clock = SYSTEM_CLOCK,
        **kwargs: Any,
    ) -> None:
        client_config = ClientConfig(config, client_type=PRODUCER, **kwargs)
        if partitioner is not None:
            client_config = client_config.with_overrides({"partitioner.class": partitioner})
        if not client_config.get_str("client.id"):
            client_config = client_config.with_overrides(
                {"client.id": f"producer-{next(_client_ids)}"}
            )
        settings = ProducerSettings.from_config(client_config)
        self.config = client_config
        self._settings = settings
        self._clock = clock = _clock
        configs = dict(client_config)
        self._key_serializer = resolve_serializer(
            client_config["key.serializer"], "key.serializer", configs
        )
        self._value_serializer = resolve_serializer(
            client_config["value.serializer"], "value.serializer", configs
        )
        # Plain bytes through the bytes serializer (and None through any built-in one) are
        # used as they are: what the serializer would return anyway.
        self._builtin_key = type(self._key_serializer) in _BUILTIN_SERIALIZER_TYPES
        self._builtin_value = type(self._value_serializer) in _BUILTIN_SERIALIZER_TYPES
        self._bytes_key = type(self._key_serializer) is BytesSerializer
        self._bytes_value = type(self._value_serializer) is BytesSerializer
        self._max_record_bytes = min(settings.max_request_size, settings.buffer_memory)
        self._partitioner = resolve_partitioner(client_config["partitioner.class"], configs)
        on_new_batch = getattr(self._partitioner, "on_new_batch", None)
        self._on_new_batch = on_new_batch if callable(on_new_batch) else None
        self._interceptors: ProducerInterceptors = resolve_interceptors(
            client_config["interceptor.classes"], configs
        )
        self._metadata = Metadata.from_config(client_config)
        network = NetworkClient(client_config, clock=clock)
        MetadataUpdater(network, self._metadata)
        self._pool = BufferPool(settings.buffer_memory, clock)
        self._accumulator = RecordAccumulator(
            AccumulatorSettings(
                batch_size=settings.batch_size,
                linger_ms=settings.linger_ms,
                compression=settings.compression,
                delivery_timeout_ms=settings.delivery_timeout_ms,
                retry_backoff_ms=settings.retry_backoff_ms,
                retry_backoff_max_ms=settings.retry_backoff_max_ms,
            ),
            self._pool,
            clock,
        )
        self._sender = Sender(network, self._metadata, self._accumulator, settings, clock)
        self._transactions: TransactionManager | None = None
        sequences: ProducerSequences | None = None
        if settings.transactional:
            self._transactions = self._sender.transactions = TransactionManager(
                client_config, clock
            )
            sequences = self._transactions.sequences
        elif settings.idempotent:
            sequences = ProducerSequences()
        if sequences is not None:
            self._sender.sequences = sequences
            self._accumulator.drain_gate = sequences.may_drain
        self._view = _ClusterView(self._metadata.cluster)
        self._tps: dict[str, list[TopicPartition]] = {}
        self._closed = False
        self._close_lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._sender.run,
            name=f"odradek-producer-network-thread | {settings.client_id}",
            daemon=True,
        )
        self._thread.start()

    # -- sending

    @overload
    def send(
        self,
        record: str,
        value: Any = None,
        key: Any = None,
        *,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Headers = (),
        callback: Callback | None = None,
    ) -> RecordFuture: ...

    @overload
    def send(self, record: ProducerRecord, *, callback: Callback | None = None) -> RecordFuture: ...

    @overload
    def send(
        self, record: Iterable[ProducerRecord], *, callback: Callback | None = None
    ) -> list[RecordFuture]: ...

    def send(
        self,
        record: str | ProducerRecord | Iterable[ProducerRecord],
        value: Any = None,
        key: Any = None,
        *,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Headers = (),
        callback: Callback | None = None,
    ) -> RecordFuture | list[RecordFuture]:
        """Sends one record (``send(topic, value, key, ...)`` or ``send(ProducerRecord)``)
        or several (``send([ProducerRecord, ...])``: a list of futures, in order).

        ``callback(metadata, exception)`` is called once per record (see ``Callback``).

        Raises:
            ProducerClosedError: the producer is closed.
            Exception: with ``producer.type=sync`` only, the first record's failure.
        """
        if isinstance(record, str):
            future = self._send(record, value, key, partition, timestamp_ms, headers, callback)
            if self._settings.sync:
                self._await_sync((future,))
            return future
        if isinstance(record, ProducerRecord):
            future = self._send(
                record.topic,
                record.value,
                record.key,
                record.partition,
                record.timestamp_ms,
                record.headers,
                callback,
            )
            if self._settings.sync:
                self._await_sync((future,))
            return future
        futures = []
        for item in record:
            if not isinstance(item, ProducerRecord):
                raise TypeError(f"send() takes ProducerRecord items, got {type(item).__name__}")
            futures.append(
                self._send(
                    item.topic,
                    item.value,
                    item.key,
                    item.partition,
                    item.timestamp_ms,
                    item.headers,
                    callback,
                )
            )
        if self._settings.sync:
            self._await_sync(futures)
        return futures

    def _send(
        self,
        topic: str,
        value: Any,
        key: Any,
        partition: int | None,
        timestamp_ms: int | None,
        headers: Headers,
        callback: Callback | None,
    ) -> RecordFuture:
        # The hot path: one call per record. Shortcuts (plain bytes with the bytes
        # serializer, a cached partition count per cluster view) keep it lean; every
        # shortcut gives exactly what the general path gives.
        if self._closed:
            raise ProducerClosedError("cannot send: the producer is closed")
        record_headers = _as_pairs(headers) if headers else ()
        interceptors = self._interceptors
        if interceptors:
            intercepted = interceptors.on_send(
                ProducerRecord(topic, value, key, partition, timestamp_ms, record_headers)
            )
            topic, value, key = intercepted.topic, intercepted.value, intercepted.key
            partition, timestamp_ms = intercepted.partition, intercepted.timestamp_ms
            record_headers = intercepted.headers
        thunk: Thunk | None = None
        if callback is not None or interceptors.has_on_acknowledgement:
            thunk = self._thunk(callback)
        key_bytes: bytes | None = None
        value_bytes: bytes | None = None
        try:
            block_ms = self._settings.max_block_ms
            cluster = self._metadata.cluster
            view = self._view
            if view.cluster is not cluster:
                view = self._view = _ClusterView(cluster)
            count = view.counts.get(topic)
            if count is None:
                count = cluster.partition_count(topic)
                if count is None:
                    started = self._clock.monotonic_ms()
                    self._metadata.wait_for_topic(
                        topic, block_ms, monotonic_ms=self._clock.monotonic_ms
                    )
                    block_ms = max(0, block_ms - (self._clock.monotonic_ms() - started))
                    cluster = self._metadata.cluster
                    view = self._cluster_view(cluster)
                    count = cluster.partition_count(topic) or 0
                view.counts[topic] = count
            if type(key) is bytes and self._bytes_key:
                key_bytes = key
            elif key is not None or not self._builtin_key:
                key_bytes = self._serialize(self._key_serializer, "key", topic, key)
            if type(value) is bytes and self._bytes_value:
                value_bytes = value
            elif value is not None or not self._builtin_value:
                value_bytes = self._serialize(self._value_serializer, "value", topic, value)
            if record_headers:
                _check_headers(record_headers)
            if timestamp_ms is None:
                timestamp_ms = self._clock.now_ms()
            elif timestamp_ms < 0:
                raise ValueError(f"invalid timestamp {timestamp_ms}: must be >= 0 (or None)")
            size = estimate_record_size(key_bytes, value_bytes, record_headers)
            if size > self._max_record_bytes:
                raise self._too_large(topic, size)
            chosen = partition is None
            if partition is None:
                partition = self._partition(view, topic, key, key_bytes, value, value_bytes)
            if not 0 <= partition < count:
                raise UnknownTopicOrPartitionError(
                    f"partition {partition} of {topic} does not exist (it has {count}"
                    f" partitions{', as the partitioner was told' if chosen else ''})"
                )
            tps = self._tps.get(topic)
            if tps is None or len(tps) < count:
                tps = self._tps[topic] = [TopicPartition(topic, p) for p in range(count)]
            if self._transactions is not None:
                self._transactions.add_partition(tps[partition])
            future, flags = self._accumulator.append(
                tps[partition],
                timestamp_ms,
                key_bytes,
                value_bytes,
                record_headers,
                thunk,
                block_ms,
                abort_on_new_batch=chosen and self._on_new_batch is not None,
            )
            if future is None:
                # KIP-480: the sticky partition's batch is full or gone: move on, ask again.
                assert self._on_new_batch is not None
                self._on_new_batch(topic, view, partition)
                partition = self._partition(view, topic, key, key_bytes, value, value_bytes)
                if not 0 <= partition < count:
                    raise UnknownTopicOrPartitionError(
                        f"the partitioner chose partition {partition} of {topic}, which has "
                        f"{count} partitions"
                    )
                if self._transactions is not None:
                    self._transactions.add_partition(tps[partition])
                future, flags = self._accumulator.append(
                    tps[partition],
                    timestamp_ms,
                    key_bytes,
                    value_bytes,
                    record_headers,
                    thunk,
                    block_ms,
                )
                assert future is not None
            if flags:
                if flags & BATCH_FULL:
                    self._sender.notify(0)
                else:
                    self._sender.notify(self._clock.monotonic_ms() + self._settings.linger_ms)
            return future
        except ProducerClosedError:
            raise
        except Exception as error:
            return self._fail(topic, partition, timestamp_ms, key_bytes, value_bytes, error, thunk)

    def send_encoded(
        self,
        tp: TopicPartition,
        records: bytes,
        count: int,
        base_timestamp_ms: int,
        max_timestamp_ms: int,
    ) -> BatchResult:
        """Sends ``count`` records encoded by the caller as one batch to ``tp`` (the path of a
        caller that encodes whole runs at once, as the Spark sink does from Arrow columns).

        ``records`` is the records section of a v2 batch, uncompressed: each record with its
        length prefix, offset deltas 0..count-1, timestamp deltas from ``base_timestamp_ms``.
        The producer adds the header, compresses with ``compression.type`` and checks the CRC
        as for any batch; serializers, partitioner and interceptors are not involved (the
        caller has applied what it needs), nor ``batch.size`` (the caller keeps it).

        Returns:
            The batch's outcome (``wait``, then ``error`` or the base offset).
        Raises:
            ProducerClosedError: the producer is closed.
            KafkaTimeoutError: no ``buffer.memory`` for the batch within ``max.block.ms``.
            ValueError: ``count`` below 1.
        """
        if self._closed:
            raise ProducerClosedError("cannot send: the producer is closed")
        if self._transactions is not None:
            self._transactions.add_partition(tp)  # stamped with its sequence when drained
        batch = self._accumulator.append_encoded(
            tp,
            records,
            count,
            base_timestamp_ms,
            max_timestamp_ms,
            self._settings.max_block_ms,
        )
        self._sender.notify(0)
        return batch.result

    @property
    def max_record_bytes(self) -> int:
        """The largest record ``send`` takes (``max.request.size`` within
        ``buffer.memory``), by ``estimate_record_size``."""
        return self._max_record_bytes

    @property
    def batch_size_bytes(self) -> int:
        """``batch.size``."""
        return self._settings.batch_size

    @property
    def takes_encoded(self) -> bool:
        """Whether ``send_encoded`` of records encoded as ``send`` would encode them loses
        nothing ``send`` does: no interceptors, and the default partitioner (a caller picks
        partitions with ``key_partition`` and its own sticky choice). In a transaction the
        batch's partition joins it and the sender stamps the producer id and sequence, as
        for ``send``'s batches."""
        return type(self._partitioner) is DefaultPartitioner and not self._interceptors

    @staticmethod
    def key_partition(key: bytes, partition_count: int) -> int:
        """The default partitioner's partition for a keyed record (murmur2)."""
        return default_partition(key, partition_count)

    #: ``estimate_record_size``: what ``send`` holds against ``max_record_bytes``.
    estimated_record_size = staticmethod(estimate_record_size)

    def _too_large(self, topic: str, size: int) -> MessageTooLargeError:
        settings = self._settings
        limit = (
            f"max.request.size ({settings.max_request_size})"
            if size > settings.max_request_size
            else f"buffer.memory ({settings.buffer_memory})"
        )
        return MessageTooLargeError(
            f"the record to {topic} is {size} bytes when serialized, larger than {limit}"
        )

    def _serialize(self, serializer: Any, what: str, topic: str, data: Any) -> bytes | None:
        try:
            serialized = serializer.serialize(topic, data)
        except Exception as error:
            logger.exception(
                "the %s serializer %r failed for a record to %s", what, serializer, topic
            )
            raise SerializationError(
                f"cannot serialize the {what} of a record to {topic} with {serializer!r}: {error!r}"
            ) from error
        if serialized is not None and type(serialized) is not bytes:
            if not isinstance(serialized, bytes | bytearray | memoryview):
                logger.error(
                    "the %s serializer %r returned %s for a record to %s, not bytes",
                    what,
                    serializer,
                    type(serialized).__name__,
                    topic,
                )
                raise SerializationError(
                    f"the {what} serializer {serializer!r} returned "
                    f"{type(serialized).__name__}, not bytes"
                )
            serialized = bytes(serialized)
        return serialized  # type: ignore[no-any-return]

    def _partition(
        self,
        view: _ClusterView,
        topic: str,
        key: Any,
        key_bytes: bytes | None,
        value: Any,
        value_bytes: bytes | None,
    ) -> int:
        try:
            partition: object = self._partitioner.partition(
                topic, key, key_bytes, value, value_bytes, view
            )
        except Exception:
            logger.exception(
                "the partitioner %r failed for a record to %s", self._partitioner, topic
            )
            raise
        if type(partition) is not int and not isinstance(partition, int):
            logger.error(
                "the partitioner %r returned %r for a record to %s, not an int",
                self._partitioner,
                partition,
                topic,
            )
            raise TypeError(f"the partitioner returned {partition!r}, not a partition number")
        return partition

    def _cluster_view(self, cluster: Cluster) -> _ClusterView:
        view = self._view
        if view.cluster is not cluster:
            view = self._view = _ClusterView(cluster)
        return view

    def _thunk(self, callback: Callback | None) -> Thunk:
        interceptors = self._interceptors if self._interceptors.has_on_acknowledgement else None
        if interceptors is None:
            assert callback is not None
            return callback
        if callback is None:
            return interceptors.on_acknowledgement

        def both(metadata: RecordMetadata, error: BaseException | None) -> None:
            interceptors.on_acknowledgement(metadata, error)
            callback(metadata, error)

        return both

    def _fail(
        self,
        topic: str,
        partition: int | None,
        timestamp_ms: int | None,
        key_bytes: bytes | None,
        value_bytes: bytes | None,
        error: Exception,
        thunk: Thunk | None,
    ) -> RecordFuture:
        future = RecordFuture.failed(
            topic,
            _NO_PARTITION if partition is None else partition,
            error,
            -1 if timestamp_ms is None else timestamp_ms,
            -1 if key_bytes is None else len(key_bytes),
            -1 if value_bytes is None else len(value_bytes),
        )
        if thunk is not None:
            try:
                thunk(future.metadata(), error)
            except Exception:
                logger.exception("a delivery callback of a record to %s raised", topic)
        return future

    def _await_sync(self, futures: Sequence[RecordFuture]) -> None:
        self._accumulator.begin_flush()
        self._sender.wakeup()
        try:
            errors = [future.exception() for future in futures]
        finally:
            self._accumulator.end_flush()
        for error in errors:
            if error is not None:
                raise error

    # -- flush, metadata, statistics

    def flush(self, timeout: float | None = None) -> None:
        """Sends every record sent so far at once (no lingering) and waits until each is
        acknowledged or failed.

        Args:
            timeout: the longest wait in seconds (``None``: until done; ``delivery.timeout.ms``
                bounds that).

        Raises:
            KafkaTimeoutError: records are still pending after ``timeout``.
            RuntimeError: called from a delivery callback (it would wait for itself).
        """
        if threading.current_thread() is self._thread:
            raise RuntimeError("flush() cannot be called from a delivery callback")
        self._accumulator.begin_flush()
        self._sender.wakeup()
        try:
            self._accumulator.await_completion(
                self._accumulator.incomplete_batches(),
                None if timeout is None else int(timeout * 1000),
            )
        finally:
            self._accumulator.end_flush()

    # -- transactions (KIP-98; with ``transactional.id``)

    def _manager(self) -> TransactionManager:
        if self._transactions is None:
            raise KafkaError("transactions need transactional.id", code=ErrorCode.INVALID_TXN_STATE)
        return self._transactions

    def init_transactions(self) -> None:
        """Gets the producer id and epoch of ``transactional.id`` (fencing any older producer
        of that id and aborting its open transaction); call once, before the first
        transaction."""
        self._manager().init()

    def begin_transaction(self) -> None:
        """Starts a transaction: every record sent until it ends belongs to it."""
        self._manager().begin()

    def send_offsets_to_transaction(
        self, offsets: Mapping[TopicPartition, int], group_id: str
    ) -> None:
        """Commits a consumer group's offsets (the next offset to read, per partition) as
        part of the transaction: they take effect only if it commits."""
        self._manager().send_offsets(offsets, group_id)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Sends every record, then commits the transaction.

        Raises:
            KafkaError: a record of the transaction failed (abort it), or the coordinator's
                error (PRODUCER_FENCED: another producer took the id over).
        """
        manager = self._manager()
        self.flush(timeout)
        failed = manager.take_failure()
        if failed is not None:
            raise KafkaError(
                f"a record of the transaction failed ({failed}); abort the transaction",
                code=ErrorCode.INVALID_TXN_STATE,
            )
        manager.end(commit=True)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Waits for the records sent, then aborts the transaction: read_committed readers
        never see them."""
        manager = self._manager()
        self.flush(timeout)
        manager.take_failure()
        manager.end(commit=False)

    def partitions_for(self, topic: str) -> list[PartitionMetadata]:
        """The topic's partitions (leader, replicas, ISR), waiting up to ``max.block.ms``.

        Raises:
            KafkaTimeoutError: no metadata for ``topic`` in time.
            KafkaError: the broker refused the topic (invalid name, authorization).
        """
        entry = self._metadata.wait_for_topic(
            topic, self._settings.max_block_ms, monotonic_ms=self._clock.monotonic_ms
        )
        return list(entry.partitions)

    def statistics(self) -> dict[str, Any]:
        """A snapshot: the accumulator's queues and memory, the sender's counters."""
        return {
            "accumulator": self._accumulator.statistics(),
            "sender": self._sender.statistics(),
        }

    # -- closing

    def close(self, timeout: float | None = None) -> None:
        """Sends what is pending, waiting up to ``timeout`` seconds (``None``: until done,
        which ``delivery.timeout.ms`` bounds), then fails what is still pending with
        ``ProducerClosedError`` and releases everything. Idempotent; later ``send`` calls
        raise ``ProducerClosedError``. From a delivery callback it does not wait."""
        with self._close_lock:
            if self._closed:
                already = True
            else:
                already = False
                self._closed = True
        if already:
            if threading.current_thread() is not self._thread:
                self._thread.join(timeout)
            return
        in_sender = threading.current_thread() is self._thread
        if in_sender:
            logger.warning("close() called from a delivery callback: not waiting for pending sends")
            timeout = 0
        self._sender.initiate_close()
        if not in_sender:
            self._thread.join(timeout)
        if self._thread.is_alive():
            pending = self._accumulator.statistics()["incomplete_batches"]
            if pending:
                logger.warning(
                    "closing the producer with %d batches still incomplete after %s s; "
                    "failing them",
                    pending,
                    timeout,
                )
            self._sender.force_close(
                ProducerClosedError(
                    f"the producer was closed (timeout {timeout} s) before this record was "
                    "acknowledged"
                )
            )
            self._pool.close()
            if not in_sender:
                self._thread.join()
        self._pool.close()
        self._metadata.close()
        if self._transactions is not None:
            self._transactions.close()
        self._interceptors.close()
        close_quietly(self._key_serializer, "the key serializer", logger)
        close_quietly(self._value_serializer, "the value serializer", logger)
        close_quietly(self._partitioner, "the partitioner", logger)

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Producer {self._settings.client_id} {state}>"
