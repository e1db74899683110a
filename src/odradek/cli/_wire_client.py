"""The console consumer's stand-in for ``odradek.Consumer`` (``odradek produce`` already uses
``odradek.Producer``).

``odradek consume`` owns its options and its output formatting; this module owns everything it
says to a broker (Metadata, ListOffsets, Fetch over one ``client._wire.BlockingConnection``),
behind two small classes shaped like the calls of the client to come:
``WireSession.partitions_for`` and ``WireConsumer.assign``/``seek*``/``poll``. Switching the
tool to ``odradek.client`` replaces this module and leaves its option handling alone.

Rules kept (Kafka's):

- A consumer's position is the next offset to return. Records before it (a compressed batch
  may start earlier) and control batches are skipped; a partial batch at the end of a
  partition's data (cut at ``max.partition.fetch.bytes``) is dropped and fetched again from its
  start next time. The broker always returns at least one whole batch to the first partition
  with data, so a record larger than the fetch sizes still arrives.
- OFFSET_OUT_OF_RANGE resets the partition to its earliest offset
  (``auto.offset.reset=earliest``) and tells ``on_note``.

Errors: every failure is an ``OdradekError``, a ``KafkaError`` with Kafka's error code and a
message naming the topic (and partition). Not thread-safe; one owner.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Self

from odradek.client._wire import BlockingConnection
from odradek.errors import ErrorCode, KafkaError, UnknownTopicOrPartitionError, error_for_code
from odradek.protocol.api_keys import ApiKey, VersionRange
from odradek.records.batch import LOG_OVERHEAD, TimestampType, read_prefix
from odradek.records.codec import decode_batch
from odradek.records.record import Header

__all__ = [
    "ConsumedRecord",
    "FetchSettings",
    "WireConsumer",
    "WireSession",
]

#: The versions each API is sent at (field names as ``protocol.client_codec`` takes them).
#: Metadata v4 is the first with ``allow_auto_topic_creation``: the console consumer creates none.
USABLE_VERSIONS: Final = {
    ApiKey.METADATA: VersionRange(4, 4),
    ApiKey.LIST_OFFSETS: VersionRange(1, 2),
    ApiKey.FETCH: VersionRange(4, 11),
}
EARLIEST_TIMESTAMP: Final = -2
LATEST_TIMESTAMP: Final = -1


class WireSession:
    """One connection to a broker, for a consumer.

    Args:
        bootstrap_server: ``host:port[,host:port...]``.
        client_id: sent in every request header.
        software_version: reported in ApiVersions.

    Raises:
        KafkaError: NETWORK_EXCEPTION when no address accepts a connection.
    """

    def __init__(self, bootstrap_server: str, *, client_id: str, software_version: str) -> None:
        self.connection = BlockingConnection(
            bootstrap_server, client_id=client_id, software_version=software_version
        )

    def call(self, api_key: ApiKey, fields: dict[str, Any]) -> dict[str, Any]:
        """Sends ``fields`` at the highest usable version and returns the response body."""
        version = self.connection.pick_version(api_key, USABLE_VERSIONS[api_key])
        return self.connection.request(api_key, version, fields)

    def partitions_for(self, topic: str) -> list[int]:
        """The topic's partition numbers, sorted; the topic is never created.

        Raises:
            UnknownTopicOrPartitionError: the topic does not exist.
            KafkaError: the broker's error for the topic, or as ``BlockingConnection.request``.
        """
        body = self.call(
            ApiKey.METADATA, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
        )
        for entry in body["topics"]:
            if entry["name"] != topic:
                continue
            code = int(entry["error_code"])
            if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
            if code:
                raise error_for_code(code, f"cannot use topic {topic!r}")
            return sorted(int(p["partition_index"]) for p in entry["partitions"])
        raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


# --- consuming --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FetchSettings:
    """The consumer's fetch settings, by Kafka's consumer config names."""

    #: ``fetch.max.wait.ms``: the longest a fetch waits on the broker for ``min_bytes``.
    max_wait_ms: int = 500
    #: ``fetch.min.bytes``.
    min_bytes: int = 1
    #: ``fetch.max.bytes``: for the whole response.
    max_bytes: int = 52_428_800
    #: ``max.partition.fetch.bytes``.
    max_partition_bytes: int = 1_048_576


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    """One record as the consumer returns it."""

    partition: int
    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


class WireConsumer:
    """Fetches a topic's assigned partitions from their positions (no group, no commits).

    Legal call order: ``assign``, then a ``seek*`` for every assigned partition, then ``poll``
    any number of times.

    Args:
        session: the connection.
        topic: the topic to read.
        settings: fetch sizes and wait.
        on_note: told (one line) when a position is reset after OFFSET_OUT_OF_RANGE.
    """

    def __init__(
        self,
        session: WireSession,
        topic: str,
        settings: FetchSettings = FetchSettings(),
        on_note: Callable[[str], None] = lambda _note: None,
    ) -> None:
        self._session = session
        self.topic = topic
        self._settings = settings
        self._on_note = on_note
        self._positions: dict[int, int] = {}
        self._order: list[int] = []

    def assign(self, partitions: Sequence[int]) -> None:
        """Reads these partitions (positions unknown until a ``seek*``)."""
        self._order = list(dict.fromkeys(partitions))
        self._positions = {}

    def seek(self, partition: int, offset: int) -> None:
        """The next ``poll`` reads ``partition`` from ``offset``."""
        self._positions[partition] = offset

    def seek_to_beginning(self) -> None:
        """Every assigned partition starts at its log start offset."""
        self._positions.update(self._list_offsets(self._order, EARLIEST_TIMESTAMP))

    def seek_to_end(self) -> None:
        """Every assigned partition starts at its high watermark (only new records)."""
        self._positions.update(self._list_offsets(self._order, LATEST_TIMESTAMP))

    def position(self, partition: int) -> int:
        return self._positions[partition]

    def poll(self, max_wait_ms: int) -> list[ConsumedRecord]:
        """One Fetch of every assigned partition, waiting up to ``max_wait_ms`` for data.

        Returns:
            The records after each position, partition by partition; positions move past
            them.

        Raises:
            KafkaError: a partition error other than OFFSET_OUT_OF_RANGE, or the connection
                failed.
            CorruptRecordError: a batch fails its CRC or does not decode.
        """
        missing = [p for p in self._order if p not in self._positions]
        if missing:
            raise RuntimeError(f"no position for partitions {missing}: seek first")
        order = self._order
        settings = self._settings
        body = self._session.call(
            ApiKey.FETCH,
            {
                "replica_id": -1,
                "max_wait": max(0, max_wait_ms),
                "min_bytes": settings.min_bytes,
                "max_bytes": settings.max_bytes,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,  # no fetch session (KIP-227): a full fetch every time
                "topics": [
                    {
                        "topic": self.topic,
                        "partitions": [
                            {
                                "partition": partition,
                                "current_leader_epoch": -1,
                                "fetch_offset": self._positions[partition],
                                "log_start_offset": -1,
                                "partition_max_bytes": settings.max_partition_bytes,
                            }
                            for partition in order
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )
        # Rotate, so a busy first partition cannot starve the others of fetch.max.bytes.
        self._order = order[1:] + order[:1]
        if body.get("error_code"):
            raise error_for_code(int(body["error_code"]), f"cannot fetch from {self.topic!r}")
        records: list[ConsumedRecord] = []
        for topic in body["responses"]:
            for data in topic["partitions"]:
                partition = int(data["partition_index"])
                if partition not in self._positions:
                    continue
                code = int(data["error_code"])
                if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    self._reset(partition)
                elif code:
                    raise error_for_code(code, f"cannot fetch {self.topic}-{partition}")
                else:
                    records.extend(self._records(partition, data["records"] or b""))
        return records

    def _records(self, partition: int, data: bytes) -> list[ConsumedRecord]:
        position = self._positions[partition]
        records: list[ConsumedRecord] = []
        pos = 0
        while len(data) - pos >= LOG_OVERHEAD:
            _base_offset, size = read_prefix(data, pos)
            if pos + size > len(data):
                break  # a partial batch: fetched whole next time
            batch = decode_batch(data, pos)
            pos += size
            header = batch.header
            if not header.is_control:
                records.extend(
                    ConsumedRecord(
                        partition,
                        record.offset,
                        record.timestamp,
                        batch.timestamp_type,
                        record.key,
                        record.value,
                        record.headers,
                    )
                    for record in batch.records
                    if record.offset >= position
                )
            position = max(position, header.next_offset)
        self._positions[partition] = position
        return records

    def _reset(self, partition: int) -> None:
        old = self._positions[partition]
        [(_, new)] = self._list_offsets([partition], EARLIEST_TIMESTAMP).items()
        self._positions[partition] = new
        self._on_note(
            f"offset {old} is out of range for {self.topic}-{partition}; "
            f"resetting to the earliest offset {new}"
        )

    def _list_offsets(self, partitions: Sequence[int], timestamp: int) -> dict[int, int]:
        body = self._session.call(
            ApiKey.LIST_OFFSETS,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": self.topic,
                        "partitions": [
                            {"partition_index": p, "timestamp": timestamp} for p in partitions
                        ],
                    }
                ],
            },
        )
        offsets: dict[int, int] = {}
        for topic in body["topics"]:
            for result in topic["partitions"]:
                partition = int(result["partition_index"])
                code = int(result["error_code"])
                if code:
                    raise error_for_code(
                        code, f"cannot list the offsets of {self.topic}-{partition}"
                    )
                offsets[partition] = int(result["offset"])
        missing = [p for p in partitions if p not in offsets]
        if missing:
            raise KafkaError(
                f"the broker listed no offset for {self.topic}-{missing[0]}",
                code=ErrorCode.UNKNOWN_SERVER_ERROR,
            )
        return offsets
