"""A consumer group's lag per partition, in offsets and in seconds.

The lag in offsets is the log end offset minus the committed offset. The lag in seconds is how
old the group's next unconsumed record is: ``now_ms`` minus the timestamp of the record at the
committed offset (the first one the group has not consumed), 0 when the group has caught up.
Kafka reports only the offsets; the age of the oldest unread record says how far behind the
group is in time whatever the topic's rate.

``partition_lags`` is pure (values and ``now_ms`` in, rows out); ``read_group_lag`` asks the
broker for the inputs: committed offsets (OffsetFetch), log end offsets (ListOffsets latest) and
the next records (one Fetch of a few bytes per lagging partition, all in one round).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from odradek._types import TopicPartition
from odradek.client.admin import AdminClient
from odradek.client.admin_types import OffsetSpec
from odradek.client.simple_consumer import FetchRequest, SimpleConsumer

__all__ = ["GroupLag", "PartitionLag", "partition_lags", "read_group_lag"]

#: Bytes asked for when reading a partition's next record: the broker sends at least the whole
#: first batch anyway (KIP-74), so a small figure keeps the answer small.
NEXT_RECORD_BYTES: Final = 1_024


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One partition of a group: ``committed`` None when the group has no offset there,
    ``lag`` and ``lag_ms`` None when they cannot be known (no commit, no record found)."""

    topic: str
    partition: int
    committed: int | None
    log_end_offset: int
    lag: int | None
    next_timestamp_ms: int | None
    lag_ms: int | None

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class GroupLag:
    """A group's lag on the partitions asked about, in topic-partition order."""

    group_id: str
    partitions: tuple[PartitionLag, ...]

    @property
    def lag(self) -> int:
        """The sum of the known lags in offsets."""
        return sum(p.lag for p in self.partitions if p.lag is not None)

    @property
    def lag_ms(self) -> int | None:
        """The largest known lag in time (the group is as far behind as its slowest
        partition), None when none is known."""
        known = [p.lag_ms for p in self.partitions if p.lag_ms is not None]
        return max(known) if known else None


def partition_lags(
    partitions: Iterable[TopicPartition],
    committed: Mapping[TopicPartition, int],
    log_end_offsets: Mapping[TopicPartition, int],
    next_timestamps_ms: Mapping[TopicPartition, int],
    now_ms: int,
) -> list[PartitionLag]:
    """The lag rows of ``partitions`` (sorted), from the inputs the module docstring names.

    A partition missing from ``log_end_offsets`` is skipped (its leader did not answer). A
    committed offset past the log end (the log was truncated) counts as no lag. A record
    timestamp in the future (a producer's clock ahead of ours) counts as 0 s.
    """
    rows = []
    for tp in sorted(set(partitions)):
        end = log_end_offsets.get(tp)
        if end is None:
            continue
        offset = committed.get(tp)
        lag: int | None = None
        lag_ms: int | None = None
        timestamp = next_timestamps_ms.get(tp)
        if offset is not None:
            lag = max(end - offset, 0)
            if lag == 0:
                lag_ms = 0
            elif timestamp is not None:
                lag_ms = max(now_ms - timestamp, 0)
        rows.append(PartitionLag(tp.topic, tp.partition, offset, end, lag, timestamp, lag_ms))
    return rows


def read_group_lag(
    admin: AdminClient,
    consumer: SimpleConsumer,
    group_id: str,
    now_ms: int,
    partitions: Sequence[TopicPartition] | None = None,
) -> GroupLag:
    """Reads a group's lag on ``partitions`` (None: every partition it has an offset for).

    Raises:
        KafkaError: the group's coordinator or the partitions' leaders could not answer.
    """
    offsets = admin.list_group_offsets(group_id, partitions).values_by_item
    committed = {tp: meta.offset for tp, meta in offsets.items() if meta is not None}
    wanted = list(partitions) if partitions is not None else list(committed)
    if not wanted:
        return GroupLag(group_id, ())
    ends_answer = admin.list_offsets(dict.fromkeys(wanted, OffsetSpec.latest()))
    ends = {tp: info.offset for tp, info in ends_answer.values_by_item.items()}
    behind = [
        FetchRequest(tp.topic, tp.partition, committed[tp], NEXT_RECORD_BYTES)
        for tp in wanted
        if tp in committed and tp in ends and committed[tp] < ends[tp]
    ]
    timestamps: dict[TopicPartition, int] = {}
    for result in consumer.multifetch(behind) if behind else []:
        if result.error is None and result.messages:
            timestamps[result.request.topic_partition] = result.messages[0].timestamp
    rows = partition_lags(wanted, committed, ends, timestamps, now_ms)
    return GroupLag(group_id, tuple(rows))
