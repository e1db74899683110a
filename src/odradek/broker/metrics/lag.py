"""Consumer lag per group and partition, in offsets and in seconds.

For each offset a group committed on a partition this broker leads: the lag in offsets is the
high watermark minus the committed offset (0 when the group is at or past it), and the lag in
seconds is how long ago the next unconsumed record — the one at the committed offset — was
written: ``now`` minus its timestamp (the batch's base timestamp when the offset starts its
batch, the batch's max timestamp under LogAppendTime, else the record's own timestamp, which
takes decoding that one batch). A group with nothing to read lags 0 seconds. An offset below
the log start offset is read at the log start offset (the records before it are gone).

The broker never decodes records on its request paths; this reads one batch per lagging
partition per scrape, and remembers the timestamp per (partition, offset): a group that does
not move costs no read at the next scrape. Only the entries the last scrape used are kept.

In a cluster a group's lag is exported by its coordinator — the one broker that knows its
commits — for every partition it has committed on, wherever that partition's leader is, so a
(group, partition) series comes from one broker only. For the partitions led elsewhere the
caller passes ``remote``: each (partition, committed offset) pair's ``LeaderPosition`` (the
leader's high watermark and the timestamp of the record at the offset), which
``broker.leader_positions`` asks the leaders for at each scrape; a pair it could not learn (no
leader, no answer, an offset out of range) is left out of the scrape, never guessed.
``remote_pairs`` names the pairs to ask for. Followers of a partition are not asked: their
high watermark trails the leader's.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Protocol

from odradek._types import TopicPartition
from odradek.errors import KafkaError
from odradek.records.batch import TimestampType, iter_batches
from odradek.records.codec import decode_records


class RecordsSlice(Protocol):
    def read(self) -> bytes: ...


class ReadResult(Protocol):
    @property
    def records(self) -> RecordsSlice | None: ...


class LaggingPartition(Protocol):
    """What lag reads of a partition (``broker.replication.partition.Partition``)."""

    @property
    def high_watermark(self) -> int: ...

    @property
    def log_start_offset(self) -> int: ...

    @property
    def is_leader(self) -> bool: ...

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        min_one_message: bool = ...,
        committed_only: bool = ...,
    ) -> ReadResult: ...


@dataclass(frozen=True, slots=True)
class LeaderPosition:
    """What a partition's leader told about an offset: its high watermark, and the timestamp
    of the record at the offset (None: below the high watermark but not read)."""

    high_watermark: int
    timestamp_ms: int | None


@dataclass(frozen=True, slots=True)
class GroupLag:
    """One group's lag on one partition; ``lag_seconds`` is None when the record at the
    committed offset could not be read (the snapshot then omits it)."""

    group_id: str
    topic: str
    partition: int
    committed_offset: int
    high_watermark: int
    lag_offsets: int
    lag_seconds: float | None


class LagReader:
    """Computes ``GroupLag``s, caching record timestamps between scrapes."""

    def __init__(self) -> None:
        self._timestamps: dict[tuple[TopicPartition, int], int | None] = {}

    def lags(
        self,
        committed: Mapping[str, Mapping[TopicPartition, int]],
        partitions: Mapping[TopicPartition, LaggingPartition],
        now_ms: int,
        remote: Mapping[tuple[TopicPartition, int], LeaderPosition] | None = None,
    ) -> tuple[GroupLag, ...]:
        """The lag of every (group, partition) with a commit on a partition led here, or on
        one led elsewhere whose position ``remote`` holds."""
        used: dict[tuple[TopicPartition, int], int | None] = {}
        result: list[GroupLag] = []
        for group_id in sorted(committed):
            for tp, offset in sorted(committed[group_id].items()):
                partition = partitions.get(tp)
                if partition is None or not partition.is_leader:
                    position = None if remote is None else remote.get((tp, offset))
                    if position is not None:
                        result.append(_remote_lag(group_id, tp, offset, position, now_ms))
                    continue
                high_watermark = partition.high_watermark
                lag = max(0, high_watermark - offset)
                seconds: float | None = 0.0
                if lag > 0:
                    at = max(offset, partition.log_start_offset)
                    key = (tp, at)
                    if key in used:
                        timestamp = used[key]
                    elif key in self._timestamps:
                        timestamp = self._timestamps[key]
                    else:
                        timestamp = _timestamp_at(partition, at)
                    used[key] = timestamp
                    seconds = None if timestamp is None else max(0, now_ms - timestamp) / 1000
                result.append(
                    GroupLag(group_id, tp.topic, tp.partition, offset, high_watermark, lag, seconds)
                )
        self._timestamps = used
        return tuple(result)


def remote_pairs(
    committed: Mapping[str, Mapping[TopicPartition, int]],
    partitions: Mapping[TopicPartition, LaggingPartition],
) -> Set[tuple[TopicPartition, int]]:
    """The (partition, committed offset) pairs on partitions not led here."""
    return {
        (tp, offset)
        for offsets in committed.values()
        for tp, offset in offsets.items()
        if (partition := partitions.get(tp)) is None or not partition.is_leader
    }


def _remote_lag(
    group_id: str, tp: TopicPartition, offset: int, position: LeaderPosition, now_ms: int
) -> GroupLag:
    lag = max(0, position.high_watermark - offset)
    seconds: float | None = 0.0
    if lag > 0:
        timestamp = position.timestamp_ms
        seconds = None if timestamp is None else max(0, now_ms - timestamp) / 1000
    return GroupLag(group_id, tp.topic, tp.partition, offset, position.high_watermark, lag, seconds)


def _timestamp_at(partition: LaggingPartition, offset: int) -> int | None:
    """The timestamp of the record at ``offset`` (None: unreadable or not there)."""
    try:
        # committed_only=False: the offset is below the high watermark anyway, and a
        # consumer's read would be counted as bytes out.
        info = partition.read(offset, 1, min_one_message=True, committed_only=False)
        if info.records is None:
            return None
        return timestamp_in(info.records.read(), offset)
    except (KafkaError, OSError):
        return None


def timestamp_in(data: bytes, offset: int) -> int | None:
    """The timestamp of the record at ``offset`` in the record batches ``data`` (as a read
    answers: maybe starting before the offset, maybe ending in a partial batch): the batch's
    base timestamp when the offset starts its batch, its max timestamp under LogAppendTime,
    else the record's own (decoding that one batch). None when it is not there or not
    readable."""
    try:
        for position, header in iter_batches(data):
            if header.last_offset < offset:
                continue
            if header.timestamp_type is TimestampType.LOG_APPEND_TIME:
                return header.max_timestamp
            if header.base_offset >= offset:
                return header.base_timestamp
            for record in decode_records(data, header, position):
                if record.offset >= offset:
                    return record.timestamp
            return None
    except (KafkaError, ValueError):
        return None
    return None
