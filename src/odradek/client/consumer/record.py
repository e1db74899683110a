"""Value types the consumer hands out: ``ConsumerRecord``, ``OffsetAndMetadata``, and the
consumer's errors.

``ConsumerRecord`` is a named tuple (built once per record on the hot path, so it must be
cheap): topic, partition, offset, timestamp (ms), timestamp_type (``TimestampType``), key,
value (after the deserializers), headers (``(str, bytes | None)`` pairs), the serialized
sizes of key, value and headers (-1 when null / none), and the batch's leader epoch.
"""

from __future__ import annotations

from typing import NamedTuple

from odradek.errors import ErrorCode, KafkaError
from odradek.records.batch import TimestampType
from odradek.records.record import Header

__all__ = [
    "CommitFailedError",
    "ConsumerRecord",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
]


class ConsumerRecord(NamedTuple):
    """One record as ``poll`` returns it (see the module docstring)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: object
    value: object
    headers: tuple[Header, ...]
    serialized_key_size: int
    serialized_value_size: int
    serialized_header_size: int
    leader_epoch: int


class OffsetAndMetadata(NamedTuple):
    """A committed offset (the next offset to read) with its metadata string."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1


class NoOffsetForPartitionError(KafkaError):
    """A partition has no position and ``auto.offset.reset`` is ``none``."""

    code = ErrorCode.OFFSET_OUT_OF_RANGE


class CommitFailedError(KafkaError):
    """A commit the group refused because the member is no longer in the generation it
    committed for (a rebalance happened); the partitions may now belong to another member."""

    code = ErrorCode.REBALANCE_IN_PROGRESS
