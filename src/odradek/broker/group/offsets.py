"""Committed offsets of a group: storing commits, serving fetches, expiry and deletion.

Owns what happens to ``ClassicGroup.offsets`` once a request is admitted (membership fencing
is the coordinator's): every change is a record for ``__consumer_offsets`` — a value for a
commit, a tombstone for an expired or deleted offset. Offsets are served from memory.

Expiry (``offsets.retention.minutes``, KIP-211):

- an Empty group with members in its past: all its offsets, once the retention has passed
  since the group became Empty (since the commit, if that time is unknown);
- a group that only commits (no protocol type): each offset, the retention after its commit;
- a Stable consumer group: offsets of topics no member subscribes to, after the retention
  since their commit;
- any offset committed with an explicit retention time (OffsetCommit v2-v4): at its expire
  timestamp.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from odradek._types import TopicPartition
from odradek.broker.group.group import CONSUMER_PROTOCOL_TYPE, ClassicGroup
from odradek.broker.group.records import CoordinatorRecord, OffsetCommitKey, OffsetCommitValue
from odradek.broker.group.results import FetchedOffset, OffsetCommitPartition, OffsetFetchResult
from odradek.broker.group.state import GroupState
from odradek.errors import ErrorCode

NO_OFFSET = FetchedOffset(committed_offset=-1)


class OffsetHolder(Protocol):
    """A group of either protocol: its id and committed offsets."""

    @property
    def group_id(self) -> str: ...
    @property
    def offsets(self) -> dict[TopicPartition, OffsetCommitValue]: ...


def java_string_length(text: str) -> int:
    """``String.length()`` in Java: UTF-16 code units (``offset.metadata.max.bytes`` counts
    them, as Kafka does)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _key(group: OffsetHolder, partition: TopicPartition) -> OffsetCommitKey:
    return OffsetCommitKey(group.group_id, partition.topic, partition.partition)


def commit(
    group: OffsetHolder,
    partitions: Sequence[OffsetCommitPartition],
    now_ms: int,
    *,
    retention_time_ms: int,
    metadata_max_bytes: int,
    records: list[CoordinatorRecord],
) -> dict[TopicPartition, ErrorCode]:
    """Stores the commits of an admitted OffsetCommit; returns the error per partition.

    A metadata string longer than ``metadata_max_bytes`` fails its partition only
    (OFFSET_METADATA_TOO_LARGE). ``retention_time_ms`` >= 0 (OffsetCommit v2-v4) gives the
    offsets an explicit expire timestamp (written as value version 1, without leader epoch).
    """
    errors: dict[TopicPartition, ErrorCode] = {}
    for requested in partitions:
        partition = TopicPartition(requested.topic, requested.partition)
        metadata = requested.committed_metadata or ""
        if java_string_length(metadata) > metadata_max_bytes:
            errors[partition] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            continue
        explicit = retention_time_ms >= 0
        value = OffsetCommitValue(
            offset=requested.committed_offset,
            leader_epoch=-1 if explicit else requested.committed_leader_epoch,
            metadata=metadata,
            commit_timestamp_ms=now_ms,
            expire_timestamp_ms=now_ms + retention_time_ms if explicit else -1,
        )
        group.offsets[partition] = value
        records.append(CoordinatorRecord(_key(group, partition), value))
        errors[partition] = ErrorCode.NONE
    return errors


def fetch(
    group: OffsetHolder | None, partitions: Sequence[TopicPartition] | None
) -> OffsetFetchResult:
    """The committed offsets asked for (-1 where none), or all of them (``partitions`` None)."""
    offsets = {} if group is None else group.offsets
    if partitions is None:
        chosen: Iterable[TopicPartition] = sorted(offsets)
    else:
        chosen = partitions
    fetched: dict[TopicPartition, FetchedOffset] = {}
    for partition in chosen:
        value = offsets.get(partition)
        if value is None:
            fetched[partition] = NO_OFFSET
        else:
            fetched[partition] = FetchedOffset(value.offset, value.leader_epoch, value.metadata)
    return OffsetFetchResult(ErrorCode.NONE, fetched)


def remove(
    group: OffsetHolder, partitions: Iterable[TopicPartition], records: list[CoordinatorRecord]
) -> int:
    """Removes these offsets (those committed), with a tombstone each; returns how many."""
    removed = 0
    for partition in partitions:
        if group.offsets.pop(partition, None) is not None:
            records.append(CoordinatorRecord.tombstone(_key(group, partition)))
            removed += 1
    return removed


def expired(group: ClassicGroup, now_ms: int, retention_ms: int) -> list[TopicPartition]:
    """The offsets of ``group`` that have expired at ``now_ms`` (see the module docstring)."""
    if not group.offsets:
        return []
    subscribed: frozenset[str] = frozenset()
    empty_since: int | None = None
    if group.protocol_type is None:
        pass  # only commits: each offset from its commit
    elif group.is_in(GroupState.EMPTY):
        empty_since = group.state_timestamp_ms
    elif group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.is_in(GroupState.STABLE):
        topics = group.subscribed_topics()
        if topics is None:
            return []
        subscribed = topics
    else:
        return []
    result = []
    for partition, value in group.offsets.items():
        if partition.topic in subscribed:
            continue
        if value.expire_timestamp_ms != -1:
            if now_ms >= value.expire_timestamp_ms:
                result.append(partition)
            continue
        base_ms = value.commit_timestamp_ms if empty_since is None else empty_since
        if now_ms - base_ms >= retention_ms:
            result.append(partition)
    return result
