"""In-memory fakes of the broker's ports (``odradek.broker.ports``) for socket-free handler
tests, and helpers that build decoded requests from kio request objects.

The fakes keep the ports' contracts (offsets assigned from the log end offset, reads capped
at the high watermark, out-of-range reads raising) with bytes in memory: a read returns a
``MemoryRegion``, a ``FileRegion`` over a bytes buffer (``fd`` -1: never sent with sendfile).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from odradek._clock import MockClock
from odradek._types import TopicPartition
from odradek.broker.config import BrokerConfig
from odradek.broker.context import BrokerContext
from odradek.broker.ports import LogDirDescription, ReplicaLogDescription
from odradek.broker.replication.delayed_produce import DelayedProducePurgatory, Schedule
from odradek.errors import ErrorCode, KafkaError, OffsetOutOfRangeError
from odradek.protocol import Request, decode_request
from odradek.protocol.client_codec import encode_request_body
from odradek.records.batch import parse_header


@dataclass(frozen=True)
class MemoryRegion:
    """Bytes standing in for a range of a segment file."""

    data: bytes
    fd: int = -1
    position: int = 0

    @property
    def length(self) -> int:
        return len(self.data)

    def read(self) -> bytes:
        return self.data


@dataclass(frozen=True)
class Appended:
    first_offset: int
    log_append_time_ms: int = -1
    log_start_offset: int = 0


@dataclass(frozen=True)
class Read:
    records: MemoryRegion | None
    log_start_offset: int


@dataclass(frozen=True)
class Found:
    """A timestamp and offset (ListOffsets), or an epoch and its end offset
    (OffsetForLeaderEpoch)."""

    timestamp: int
    offset: int

    @property
    def epoch(self) -> int:
        return self.timestamp

    @property
    def end_offset(self) -> int:
        return self.offset


@dataclass
class FakeFollowerState:
    """A leader's view of a follower (``FollowerStateLike``)."""

    log_end_offset: int
    last_caught_up_ms: int


@dataclass
class FakePartition:
    """A leader partition whose log is a list of (base offset, batch bytes).

    ``committed`` False keeps the high watermark where it is on append (a follower lagging).
    ``fail_with`` makes the next appends raise that error.
    """

    topic_partition: TopicPartition
    batches: list[tuple[int, bytes]] = field(default_factory=list)
    log_start_offset: int = 0
    high_watermark: int = 0
    leader_epoch: int = 0
    committed: bool = True
    fail_with: Exception | None = None
    #: False: a follower (in a cluster another broker leads it).
    is_leader: bool = True
    isr: list[int] = field(default_factory=lambda: [1])
    min_insync_replicas: int = 1
    #: The leader-epoch cache: epoch → start offset (OffsetForLeaderEpoch).
    epochs: dict[int, int] = field(default_factory=dict)
    appends: list[bytes] = field(default_factory=list)
    reads: list[tuple[int, int, bool]] = field(default_factory=list)
    #: The brokers that may fetch as followers; their fetches are recorded.
    followers: tuple[int, ...] = (2, 3)
    follower_fetches: list[tuple[int, int]] = field(default_factory=list)
    #: Every replica (this broker is 1); the leader when ``is_leader`` is False.
    replicas: list[int] = field(default_factory=lambda: [1, 2, 3])
    other_leader: int = 2
    follower_reads: int = 0
    #: What the leader knows of each follower: broker → (log end offset, last caught up ms).
    follower_positions: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def leader_id(self) -> int:
        return 1 if self.is_leader else self.other_leader

    def follower_state(self, replica_id: int) -> FakeFollowerState | None:
        position = self.follower_positions.get(replica_id)
        return None if position is None else FakeFollowerState(*position)

    @property
    def log_end_offset(self) -> int:
        if not self.batches:
            return self.log_start_offset
        base, data = self.batches[-1]
        return base + parse_header(data).last_offset_delta + 1

    def append_as_leader(self, data: bytes | bytearray) -> Appended:
        self.appends.append(bytes(data))
        if self.fail_with is not None:
            raise self.fail_with
        first = self.log_end_offset
        self.batches.append((first, bytes(data)))
        if self.committed:
            self.high_watermark = self.log_end_offset
        return Appended(first, log_start_offset=self.log_start_offset)

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        min_one_message: bool = True,
        committed_only: bool = True,
        read_committed: bool = False,
    ) -> Read:
        self.reads.append((fetch_offset, max_bytes, min_one_message))
        if not self.log_start_offset <= fetch_offset <= self.log_end_offset:
            raise OffsetOutOfRangeError(f"{fetch_offset} outside the log")
        limit = self.high_watermark if committed_only else self.log_end_offset
        out = b""
        for base, data in self.batches:
            last = base + parse_header(data).last_offset_delta
            if last < fetch_offset or base >= limit:
                continue
            if len(out) + len(data) > max_bytes and not (min_one_message and not out):
                break
            out += data
        return Read(MemoryRegion(out) if out else None, self.log_start_offset)

    @property
    def last_stable_offset(self) -> int:
        return self.high_watermark

    def aborted_transactions(self, start: int, end: int) -> list[object]:
        return []

    def update_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int) -> None:
        if replica_id not in self.followers:
            raise KafkaError(f"{replica_id} is no follower", code=ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self.follower_fetches.append((replica_id, fetch_offset))

    def end_offset_for_epoch(self, leader_epoch: int) -> Found:
        """From ``epochs`` (epoch → start offset, as the log's leader-epoch cache): the
        largest epoch at or below ``leader_epoch`` and where it ends; (-1, -1) if unknown."""
        known = sorted(self.epochs.items())
        if not known or leader_epoch < 0 or leader_epoch > known[-1][0]:
            return Found(-1, -1)
        below = [(e, o) for e, o in known if e <= leader_epoch]
        above = [o for e, o in known if e > leader_epoch]
        epoch = below[-1][0] if below else leader_epoch
        return Found(epoch, above[0] if above else self.log_end_offset)

    def delete_records_before(self, offset: int) -> int:
        target = self.high_watermark if offset == -1 else offset
        if target > self.high_watermark:
            raise OffsetOutOfRangeError(f"{offset} past the high watermark")
        self.log_start_offset = max(self.log_start_offset, target)
        return self.log_start_offset

    def offset_of_max_timestamp(self) -> Found | None:
        """The first batch below the high watermark with the largest timestamp."""
        best: Found | None = None
        for base, data in self.batches:
            header = parse_header(data)
            if base < self.high_watermark and (
                best is None or header.max_timestamp > best.timestamp
            ):
                best = Found(header.max_timestamp, base)
        return best

    def offset_for_timestamp(self, timestamp_ms: int) -> Found | None:
        """The first batch below the high watermark whose largest timestamp reaches it."""
        for base, data in self.batches:
            header = parse_header(data)
            if base < self.high_watermark and header.max_timestamp >= timestamp_ms:
                return Found(header.max_timestamp, base)
        return None


class FakeReplicas:
    """The partitions, and a real delayed-produce purgatory over them (timers from the
    running loop unless ``schedule`` is given)."""

    def __init__(self, *partitions: FakePartition, schedule: Schedule | None = None) -> None:
        self.partitions = {p.topic_partition: p for p in partitions}
        self.delayed_produce = DelayedProducePurgatory(schedule)

    def get(self, topic_partition: TopicPartition) -> FakePartition | None:
        return self.partitions.get(topic_partition)

    def describe_log_dirs(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> list[LogDirDescription]:
        """One log dir, ``/fake/log``, of 1000 bytes (500 usable), holding every partition;
        a log's size is its batches' bytes."""
        wanted = self.partitions.keys() if partitions is None else set(partitions)
        replicas = [
            ReplicaLogDescription(
                tp,
                size=sum(len(data) for _offset, data in p.batches),
                offset_lag=max(0, p.high_watermark - p.log_end_offset),
            )
            for tp, p in self.partitions.items()
            if tp in wanted
        ]
        return [LogDirDescription("/fake/log", ErrorCode.NONE, replicas, 1000, 500)]


class FakePurgatory:
    """Records notifications; ``wait`` runs ``on_wait`` (e.g. an append) and reports whether
    it was told of data for one of the partitions (no wall-clock waiting)."""

    def __init__(self) -> None:
        self.notified: list[TopicPartition] = []
        self.waits: list[tuple[list[TopicPartition], int]] = []
        self.on_wait: list[Any] = []

    def notify(self, topic_partition: TopicPartition) -> None:
        self.notified.append(topic_partition)

    def notify_appended(self, topic_partition: TopicPartition) -> None:
        self.notified.append(topic_partition)

    async def wait(
        self, partitions: Iterable[TopicPartition], timeout_ms: int, *, replica: bool = False
    ) -> bool:
        return await self.wait_watched(self.watch(partitions, timeout_ms, replica=replica))

    def watch(
        self, partitions: Iterable[TopicPartition], timeout_ms: int, *, replica: bool = False
    ) -> tuple[list[TopicPartition], int]:
        return list(partitions), timeout_ms

    async def wait_watched(self, watch: tuple[list[TopicPartition], int]) -> bool:
        keys, timeout_ms = watch
        self.waits.append((keys, timeout_ms))
        before = len(self.notified)
        if self.on_wait:
            self.on_wait.pop(0)()
        await asyncio.sleep(0)
        return any(tp in keys for tp in self.notified[before:])


class FakeTopics:
    """Topics as names; the internal ones are Kafka's."""

    def __init__(self, names: Iterable[str] = (), *, auto_create: bool = False) -> None:
        self.names = set(names)
        self.auto_create = auto_create
        self.created: list[str] = []
        self.metadata = self

    def topic_id(self, topic: str) -> str | None:
        return None

    def exists(self, topic: str) -> bool:
        return topic in self.names

    def topic_names(self) -> list[str]:
        return sorted(self.names)

    def is_internal(self, topic: str) -> bool:
        return topic.startswith("__")

    def describe(self, topic: str) -> Sequence[Any]:
        return []

    def topic_config_entries(self, topic: str) -> Sequence[Any]:
        return []

    def maybe_auto_create(self, topic: str) -> bool:
        if not self.auto_create:
            return False
        self.create_topic(topic)
        return True

    def create_topic(self, topic: str, *args: Any, **kwargs: Any) -> None:
        if topic in self.names:
            raise KafkaError(topic, code=ErrorCode.TOPIC_ALREADY_EXISTS)
        self.names.add(topic)
        self.created.append(topic)

    def delete_topic(self, topic: str) -> None:
        self.names.discard(topic)

    def create_partitions(self, topic: str, total_count: int, **kwargs: Any) -> None:
        raise NotImplementedError

    def alter_topic_configs(
        self, topic: str, set_configs: Mapping[str, str], *args: Any, **kwargs: Any
    ) -> None:
        raise NotImplementedError


def context(
    *partitions: FakePartition,
    topics: FakeTopics | None = None,
    purgatory: FakePurgatory | None = None,
    clock: MockClock | None = None,
    schedule: Schedule | None = None,
) -> BrokerContext:
    """A broker context over fakes (broker 1 of cluster ``fake``); ``schedule`` gives the
    delayed-produce purgatory's timers (default: the running loop's)."""
    return BrokerContext(
        config=BrokerConfig.from_mapping({"broker.id": "1", "log.dirs": "/nonexistent"}),
        cluster_id="fake",
        broker_id=1,
        replicas=FakeReplicas(*partitions, schedule=schedule),
        topics=topics or FakeTopics({p.topic_partition.topic for p in partitions}),
        purgatory=purgatory or FakePurgatory(),
        clock=clock or MockClock(),
    )


def request(body: Any, correlation_id: int = 1) -> Request:
    """``body`` (a kio request object) encoded and decoded as the broker receives it."""
    return decode_request(encode_request_body(body, correlation_id, "fake"))
