"""``SimpleConsumer``: the stateless, low-level consumer API of Kafka's early design.

The caller names the topic, partition and offset of every read; nothing is remembered between
calls but connections and metadata. The rules it keeps:

- ``fetch`` returns the records at or after ``offset`` that the partition's leader sends in one
  Fetch (at most about ``max_bytes`` of them), decoded, in offset order. Records before
  ``offset`` (a compressed batch may start earlier) and control batches (transaction markers)
  are skipped. A batch cut off at the end of the fetched bytes is dropped: the next fetch from
  the last offset + 1 gets it whole. A record larger than ``max_bytes`` is still delivered: the
  broker sends at least one whole batch to the first partition of a fetch (KIP-74).
- ``multifetch`` reads several partitions in one round: one Fetch per leader, all in flight
  together; each partition's outcome is its own (``FetchResult``).
- Errors: OFFSET_OUT_OF_RANGE raises ``OffsetOutOfRangeError`` (the caller picks a new offset,
  e.g. with ``offsets_before``); stale-leader errors (NOT_LEADER_OR_FOLLOWER,
  UNKNOWN_TOPIC_OR_PARTITION, ...) refresh metadata and retry until ``default.api.timeout.ms``;
  other codes raise their ``KafkaError`` subclass. A batch that fails its CRC raises
  ``CorruptRecordError`` when ``check.crcs`` is on.
- ``offsets_before`` answers with ListOffsets v1+ (KIP-79), which returns one offset per
  partition; the v0 form that listed several segment offsets is gone from Kafka 4, so
  ``max_offsets`` only caps the answer (0 gives ``[]``).

Defaults depart from the group consumer's in one place: ``fetch.max.wait.ms`` is 0, so a fetch
at the end of the log returns at once with nothing (the old SimpleConsumer's behaviour).

Thread-safety: calls are serialised by a lock (the client drives its own ``NetworkClient`` on
the calling thread); one instance may be shared.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek._types import TopicPartition
from odradek.client.closeable import Closeable
from odradek.client.cluster import Cluster, Metadata, MetadataUpdater, needs_metadata_refresh
from odradek.client.config import SIMPLE_CONSUMER, ClientConfig, ConfigKey, register_keys
from odradek.client.network import NetworkClient, RequestFuture
from odradek.errors import (
    ErrorCode,
    KafkaError,
    KafkaTimeoutError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from odradek.protocol.api_keys import ApiKey, VersionRange
from odradek.records.aborted import drop_aborted
from odradek.records.batch import LOG_OVERHEAD, TimestampType, parse_header, read_prefix
from odradek.records.codec import decode_batch, decode_records
from odradek.records.record import Header

__all__ = ["EARLIEST", "LATEST", "FetchRequest", "FetchResult", "Message", "SimpleConsumer"]

#: ``offsets_before`` times: the log start offset and the log end offset.
EARLIEST: Final = -2
LATEST: Final = -1
FETCH_VERSIONS: Final = VersionRange(4, 12)  # v13+ names topics by id
LIST_OFFSETS_VERSIONS: Final = VersionRange(1, 7)
_MAX_INT32: Final = 2**31 - 1

register_keys(
    SIMPLE_CONSUMER,
    (
        ConfigKey("fetch.max.wait.ms", int, 0, "how long a fetch may wait for data", 0),
        ConfigKey("fetch.min.bytes", int, 1, "bytes a fetch waits for (up to the wait)", 0),
        ConfigKey("fetch.max.bytes", int, 52_428_800, "bytes one Fetch response may hold", 0),
        ConfigKey("max.partition.fetch.bytes", int, 1_048_576, "default max_bytes of a fetch", 0),
        ConfigKey(
            "isolation.level",
            str,
            "read_uncommitted",
            "which records a fetch returns",
            choices=("read_uncommitted", "read_committed"),
        ),
        ConfigKey("check.crcs", bool, True, "verify each batch's CRC32C"),
        ConfigKey(
            "default.api.timeout.ms", int, 60_000, "timeout of one call, retries included", 1
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class Message:
    """One record as fetched, with where it was and when."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp: int
    timestamp_type: TimestampType

    @property
    def next_offset(self) -> int:
        """The offset to fetch from next."""
        return self.offset + 1


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """One partition to read in a ``multifetch``."""

    topic: str
    partition: int
    offset: int
    max_bytes: int = 1_048_576

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class FetchResult:
    """One partition's outcome: its messages, or the error it ended with."""

    request: FetchRequest
    messages: list[Message]
    error: KafkaError | None = None
    high_watermark: int = -1
    log_start_offset: int = -1
    #: The undecoded record batches, from ``multifetch_raw`` only (``b""`` otherwise).
    records: bytes = b""
    #: From ``multifetch_raw`` with read_committed only: the (producer id, first offset) of
    #: each aborted transaction the broker listed for ``records`` (KIP-98); the caller drops
    #: their batches (``odradek.records.aborted``). Empty otherwise.
    aborted_transactions: tuple[tuple[int, int], ...] = ()
    #: The partition's last stable offset as the broker answered (-1 when not known).
    last_stable_offset: int = -1

    def raise_for_error(self) -> list[Message]:
        """The messages, or raises the partition's error."""
        if self.error is not None:
            raise self.error
        return self.messages


class SimpleConsumer(Closeable):
    """Reads partitions at offsets the caller names (see the module docstring).

    Args:
        bootstrap_servers: ``host:port[,...]``, or a configuration mapping.
        clock: the time source.
        **kwargs: more settings, underscores for dots.

    Raises:
        ConfigError: an unknown setting (named) or a bad value.
    """

    def __init__(
        self,
        bootstrap_servers: str | Mapping[str, Any] | ClientConfig | None = None,
        /,
        *,
        clock: Clock = SYSTEM_CLOCK,
        **kwargs: Any,
    ) -> None:
        settings: Mapping[str, Any] | ClientConfig | None
        if isinstance(bootstrap_servers, str):
            settings = {"bootstrap.servers": bootstrap_servers}
        else:
            settings = bootstrap_servers
        self._config = ClientConfig(settings, client_type=SIMPLE_CONSUMER, **kwargs)
        self._clock = clock
        self._timeout_ms = self._config.get_int("default.api.timeout.ms")
        self._request_timeout_ms = self._config.get_int("request.timeout.ms")
        self._retry_backoff_ms = self._config.get_int("retry.backoff.ms")
        self._max_wait_ms = self._config.get_int("fetch.max.wait.ms")
        self._min_bytes = self._config.get_int("fetch.min.bytes")
        self._fetch_max_bytes = self._config.get_int("fetch.max.bytes")
        self._default_max_bytes = self._config.get_int("max.partition.fetch.bytes")
        self._isolation = 1 if self._config.get_str("isolation.level") == "read_committed" else 0
        self._check_crcs = self._config.get_bool("check.crcs")
        self._network = NetworkClient(self._config, clock=clock)
        self._metadata = Metadata.from_config(self._config, allow_auto_topic_creation=False)
        self._updater = MetadataUpdater(self._network, self._metadata)
        self._lock = threading.RLock()

    @property
    def config(self) -> ClientConfig:
        return self._config

    # ------------------------------------------------------------------ reads

    def fetch(
        self, topic: str, partition: int, offset: int, max_bytes: int | None = None
    ) -> list[Message]:
        """The messages at and after ``offset`` that one Fetch returns (see the module
        docstring); ``[]`` at the end of the log.

        Raises:
            OffsetOutOfRangeError: ``offset`` is before the log start or after the log end.
            UnknownTopicOrPartitionError: no such partition (after retries).
            KafkaError: other failures; KafkaTimeoutError when retries ran out of time.
        """
        size = self._default_max_bytes if max_bytes is None else max_bytes
        [result] = self.multifetch([FetchRequest(topic, partition, offset, size)])
        return result.raise_for_error()

    def multifetch(self, requests: Sequence[FetchRequest]) -> list[FetchResult]:
        """Reads several partitions at once; one result per request, in request order.

        Raises:
            KafkaTimeoutError: no answer within ``default.api.timeout.ms``.
        """
        return self._multifetch(requests, raw=False)

    def multifetch_raw(self, requests: Sequence[FetchRequest]) -> list[FetchResult]:
        """Like ``multifetch``, but leaves the records undecoded: each result's ``records`` holds
        the partition's record batches exactly as fetched (possibly starting before the asked
        offset, possibly ending in a partial batch) and ``messages`` is empty. For callers with
        their own decoder (``odradek.records.columns``). No CRC check is made here.

        With ``isolation.level=read_committed`` the aborted transactions' batches are still in
        ``records``: the caller must drop those listed in ``aborted_transactions`` (with
        ``odradek.records.aborted.drop_aborted_batches``) before decoding.
        """
        return self._multifetch(requests, raw=True)

    def _multifetch(self, requests: Sequence[FetchRequest], *, raw: bool) -> list[FetchResult]:
        deadline = self._clock.monotonic_ms() + self._timeout_ms
        results: dict[int, FetchResult] = {}
        pending = dict(enumerate(requests))
        with self._lock:
            self._metadata.add_topics({r.topic for r in requests})
            cluster = self._cluster(deadline)
            while pending:
                retry = self._fetch_round(pending, cluster, results, deadline, raw)
                if not retry:
                    break
                pending = retry
                self._pause(deadline)
                cluster = self._refresh(deadline)
        return [results[index] for index in range(len(requests))]

    def _fetch_round(
        self,
        pending: Mapping[int, FetchRequest],
        cluster: Cluster,
        results: dict[int, FetchResult],
        deadline: int,
        raw: bool = False,
    ) -> dict[int, FetchRequest]:
        """Sends one Fetch per leader and files the answers; returns the requests to retry."""
        # One Fetch per leader; a partition asked twice goes in a second Fetch (a request
        # names each partition once).
        groups: list[tuple[int, dict[int, FetchRequest]]] = []
        for index, request in pending.items():
            leader = cluster.leader_for(request.topic_partition)
            if leader is None:
                results[index] = FetchResult(request, [], _unknown(cluster, request))
                continue
            for node, group in groups:
                if node == leader and all(
                    r.topic_partition != request.topic_partition for r in group.values()
                ):
                    group[index] = request
                    break
            else:
                groups.append((leader, {index: request}))
        futures: list[tuple[RequestFuture, dict[int, FetchRequest]]] = []
        timeout = self._request_timeout_ms + self._max_wait_ms
        for leader, group in groups:
            body = self._fetch_body(group.values())
            future = self._network.send(
                leader, ApiKey.FETCH, body, versions=FETCH_VERSIONS, timeout_ms=timeout
            )
            futures.append((future, group))
        self._network.wait([f for f, _ in futures], deadline)
        retry: dict[int, FetchRequest] = {}
        for future, group in futures:
            if not future.done():
                raise KafkaTimeoutError(f"no Fetch response from broker {future.node_id} in time")
            failure = future.exception()
            if failure is not None:
                if not (isinstance(failure, KafkaError) and failure.retriable):
                    raise failure
                for index, request in group.items():
                    results[index] = FetchResult(request, [], failure)
                    retry[index] = request
                continue
            by_partition = _partitions(future.result())
            for index, request in group.items():
                entry = by_partition.get(request.topic_partition)
                result = self._result(request, entry, raw)
                results[index] = result
                error = result.error
                if (
                    error is not None
                    and needs_metadata_refresh(error.error_code)
                    and cluster.partition(request.topic_partition) is not None
                ):
                    retry[index] = request
        if retry and self._clock.monotonic_ms() >= deadline:
            return {}
        return retry

    def _fetch_body(self, requests: Iterable[FetchRequest]) -> dict[str, Any]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for request in requests:
            topics.setdefault(request.topic, []).append(
                {
                    "partition": request.partition,
                    "current_leader_epoch": -1,
                    "fetch_offset": request.offset,
                    "log_start_offset": -1,
                    "partition_max_bytes": min(max(request.max_bytes, 0), _MAX_INT32),
                }
            )
        return {
            "replica_id": -1,
            "max_wait": self._max_wait_ms,
            "min_bytes": self._min_bytes,
            "max_bytes": self._fetch_max_bytes,
            "isolation_level": self._isolation,
            "session_id": 0,
            "session_epoch": -1,  # no fetch session (KIP-227)
            "topics": [{"topic": name, "partitions": parts} for name, parts in topics.items()],
            "forgotten_topics_data": [],
            "rack_id": "",
        }

    def _result(
        self, request: FetchRequest, entry: Mapping[str, Any] | None, raw: bool = False
    ) -> FetchResult:
        if entry is None:
            error = KafkaError(
                f"{request.topic_partition}: missing from the Fetch response",
                code=ErrorCode.UNKNOWN_SERVER_ERROR,
            )
            return FetchResult(request, [], error)
        high_watermark = int(entry.get("high_watermark", -1))
        log_start = int(entry.get("log_start_offset", -1))
        code = int(entry["error_code"])
        if code:
            detail = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
            message = f"{request.topic_partition} at offset {request.offset}: {detail}"
            if code == ErrorCode.OFFSET_OUT_OF_RANGE and high_watermark >= 0:
                message += f" (log start offset {log_start}, high watermark {high_watermark})"
            return FetchResult(
                request, [], error_for_code(code, message), high_watermark, log_start
            )
        aborted = tuple(
            (int(a["producer_id"]), int(a["first_offset"]))
            for a in entry.get("aborted_transactions") or ()
        )
        stable = int(entry.get("last_stable_offset", -1))
        if raw:
            records = entry.get("records") or b""
            return FetchResult(
                request, [], None, high_watermark, log_start, bytes(records), aborted, stable
            )
        try:
            records = entry.get("records") or b""
            if aborted:  # read_committed: drop the aborted transactions' batches
                records = drop_aborted(records, aborted)
            messages = decode_messages(
                request.topic,
                request.partition,
                records,
                request.offset,
                check_crcs=self._check_crcs,
            )
        except KafkaError as error:
            return FetchResult(request, [], error, high_watermark, log_start)
        return FetchResult(
            request, messages, None, high_watermark, log_start, last_stable_offset=stable
        )

    def offsets_before(
        self, topic: str, partition: int, time: int, max_offsets: int = 1
    ) -> list[int]:
        """The offset of the first record at or after ``time`` (ms), or with ``EARLIEST`` (-2)
        the log start offset and with ``LATEST`` (-1) the log end offset; ``[]`` when no
        record is that recent. At most ``max_offsets`` (see the module docstring).

        Raises:
            UnknownTopicOrPartitionError: no such partition (after retries).
            KafkaError: other failures.
        """
        if max_offsets <= 0:
            return []
        deadline = self._clock.monotonic_ms() + self._timeout_ms
        tp = TopicPartition(topic, partition)
        with self._lock:
            self._metadata.add_topics([topic])
            cluster = self._cluster(deadline)
            while True:
                leader = cluster.leader_for(tp)
                if leader is None:
                    raise _unknown(cluster, FetchRequest(topic, partition, 0))
                body = {
                    "replica_id": -1,
                    "isolation_level": self._isolation,
                    "topics": [
                        {
                            "name": topic,
                            "partitions": [
                                {
                                    "partition_index": partition,
                                    "current_leader_epoch": -1,
                                    "timestamp": time,
                                }
                            ],
                        }
                    ],
                }
                future = self._network.send(
                    leader, ApiKey.LIST_OFFSETS, body, versions=LIST_OFFSETS_VERSIONS
                )
                self._network.wait([future], deadline)
                if not future.done():
                    raise KafkaTimeoutError(f"{tp}: no ListOffsets response in time")
                failure = future.exception()
                code: int = ErrorCode.NONE
                if failure is None:
                    entry = future.result()["topics"][0]["partitions"][0]
                    code = int(entry["error_code"])
                    if not code:
                        offset = int(entry["offset"])
                        return [offset] if offset >= 0 else []
                    error: BaseException = error_for_code(code, f"{tp}: {ErrorCode(code).name}")
                else:
                    error = failure
                retriable = needs_metadata_refresh(code) or (
                    isinstance(error, KafkaError) and error.retriable
                )
                if not retriable or self._clock.monotonic_ms() >= deadline:
                    raise error
                self._pause(deadline)
                cluster = self._refresh(deadline)

    def earliest_offset(self, topic: str, partition: int) -> int:
        """The partition's log start offset."""
        return self.offsets_before(topic, partition, EARLIEST)[0]

    def latest_offset(self, topic: str, partition: int) -> int:
        """The partition's log end offset (the offset the next record will get)."""
        return self.offsets_before(topic, partition, LATEST)[0]

    # ------------------------------------------------------------------ plumbing

    def _cluster(self, deadline: int) -> Cluster:
        cluster = self._metadata.cluster
        wanted = self._metadata.topics or frozenset()
        if cluster.brokers and all(topic in cluster.topics for topic in wanted):
            return cluster
        return self._refresh(deadline)

    def _refresh(self, deadline: int) -> Cluster:
        remaining = max(0, deadline - self._clock.monotonic_ms())
        return self._updater.update_now(remaining)

    def _pause(self, deadline: int) -> None:
        until = min(deadline, self._clock.monotonic_ms() + self._retry_backoff_ms)
        while (remaining := until - self._clock.monotonic_ms()) > 0:
            self._network.poll(remaining)

    def close(self) -> None:
        """Closes the connections; idempotent."""
        with self._lock:
            self._metadata.close()
            self._network.close()


def decode_messages(
    topic: str, partition: int, records: bytes, fetch_offset: int, *, check_crcs: bool = True
) -> list[Message]:
    """The messages at or after ``fetch_offset`` in a Fetch response's records bytes.

    A partial batch at the end is dropped; control batches and records before
    ``fetch_offset`` are skipped.

    Raises:
        CorruptRecordError: a whole batch fails its checks (its CRC when ``check_crcs``).
        UnsupportedForMessageFormatError: a batch of message format v0/v1.
    """
    messages: list[Message] = []
    end = len(records)
    pos = 0
    while end - pos >= LOG_OVERHEAD:
        _base_offset, size = read_prefix(records, pos)
        if size <= LOG_OVERHEAD or pos + size > end:
            break  # cut off at the fetch size: fetched whole next time
        if check_crcs:
            batch = decode_batch(records, pos)
            header, decoded = batch.header, batch.records
        else:
            header = parse_header(records, pos)
            decoded = decode_records(records, header, pos)
        pos += size
        if header.is_control or header.last_offset < fetch_offset:
            continue
        timestamp_type = header.timestamp_type
        messages.extend(
            Message(
                topic,
                partition,
                record.offset,
                record.key,
                record.value,
                record.headers,
                record.timestamp,
                timestamp_type,
            )
            for record in decoded
            if record.offset >= fetch_offset
        )
    return messages


def _partitions(body: Mapping[str, Any]) -> dict[TopicPartition, Mapping[str, Any]]:
    found: dict[TopicPartition, Mapping[str, Any]] = {}
    for topic in body.get("responses") or ():
        for entry in topic.get("partitions") or ():
            found[TopicPartition(topic["topic"], int(entry["partition_index"]))] = entry
    return found


def _unknown(cluster: Cluster, request: FetchRequest) -> KafkaError:
    tp = request.topic_partition
    if cluster.partition(tp) is None:
        return UnknownTopicOrPartitionError(f"{tp}: unknown topic or partition")
    return KafkaError(f"{tp}: no leader", code=ErrorCode.LEADER_NOT_AVAILABLE)
