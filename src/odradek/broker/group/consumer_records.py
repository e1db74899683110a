"""The ``__consumer_offsets`` records of KIP-848 consumer groups, in Kafka's layouts.

Owns the keys and values a consumer group is rebuilt from. They follow the record types Kafka
4.x's group coordinator writes (same key versions, same value layouts, value version 0), so a
log written here replays in Kafka and the reverse, as far as these fields go:

::

    key (not flexible: int16 version, then strings of int16 length)
      3  ConsumerGroupMetadataKey            group
      5  ConsumerGroupMemberMetadataKey      group, member_id
      6  ConsumerGroupTargetAssignmentMetadataKey  group
      7  ConsumerGroupTargetAssignmentMemberKey    group, member_id
      8  ConsumerGroupCurrentMemberAssignmentKey   group, member_id

    value (flexible, version 0: int16 0, then the fields, then tagged fields)
      ConsumerGroupMetadataValue             epoch int32
      ConsumerGroupMemberMetadataValue       instance_id nullable compact string,
            rack_id nullable compact string, client_id compact string,
            client_host compact string, subscribed_topic_names compact [string],
            subscribed_topic_regex nullable compact string, rebalance_timeout_ms int32,
            server_assignor nullable compact string
      ConsumerGroupTargetAssignmentMetadataValue   assignment_epoch int32
      ConsumerGroupTargetAssignmentMemberValue     topic_partitions compact [TopicPartitions]
      ConsumerGroupCurrentMemberAssignmentValue    member_epoch int32,
            previous_member_epoch int32, state int8, assigned compact [TopicPartitions],
            pending_revocation compact [TopicPartitions]
      TopicPartitions = topic_id uuid (16 bytes), partitions compact [int32], tagged fields

Compact lengths are unsigned varints of length + 1 (0 for null); tagged fields are written as
an empty set and skipped when read. Kafka's ConsumerGroupPartitionMetadata (key 4) is not
written: the subscribed topics' metadata is recomputed from the cluster after a load (see
``consumer_group``); key 4 and the regular-expression records are skipped on replay.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from odradek.errors import CoordinatorRecordError

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT8 = struct.Struct(">b")

METADATA_KEY_VERSION = 3
PARTITION_METADATA_KEY_VERSION = 4
MEMBER_METADATA_KEY_VERSION = 5
TARGET_METADATA_KEY_VERSION = 6
TARGET_MEMBER_KEY_VERSION = 7
CURRENT_ASSIGNMENT_KEY_VERSION = 8

#: An assignment: topic id → partitions.
Assignment = Mapping[uuid.UUID, frozenset[int]]


@dataclass(frozen=True, slots=True)
class ConsumerGroupKey:
    """A key of one KIP-848 record kind (``version``) for a group, or a group's member."""

    version: int
    group_id: str
    member_id: str = ""


@dataclass(frozen=True, slots=True)
class ConsumerGroupEpochValue:
    """ConsumerGroupMetadataValue (key 3) or ConsumerGroupTargetAssignmentMetadataValue
    (key 6): one epoch."""

    epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerMemberMetadataValue:
    """ConsumerGroupMemberMetadataValue: what the member asked for."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


@dataclass(frozen=True, slots=True)
class TargetAssignmentValue:
    """ConsumerGroupTargetAssignmentMemberValue: the member's target partitions."""

    partitions: Assignment


@dataclass(frozen=True, slots=True)
class CurrentAssignmentValue:
    """ConsumerGroupCurrentMemberAssignmentValue: where the member's reconciliation is."""

    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Assignment
    pending_revocation: Assignment


ConsumerRecordValue = (
    ConsumerGroupEpochValue
    | ConsumerMemberMetadataValue
    | TargetAssignmentValue
    | CurrentAssignmentValue
)

_MEMBER_KEYS = (
    MEMBER_METADATA_KEY_VERSION,
    TARGET_MEMBER_KEY_VERSION,
    CURRENT_ASSIGNMENT_KEY_VERSION,
)
#: The key versions ``decode_consumer_key`` reads.
KEY_VERSIONS = (METADATA_KEY_VERSION, TARGET_METADATA_KEY_VERSION, *_MEMBER_KEYS)


# --- encoding -----------------------------------------------------------------------------------


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) > 0x7FFF:
        raise ValueError(f"string of {len(data)} bytes is longer than 32767")
    return _INT16.pack(len(data)) + data


def _compact_string(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    data = text.encode("utf-8")
    return _uvarint(len(data) + 1) + data


def _topic_partitions(assignment: Assignment) -> bytes:
    parts = [_uvarint(len(assignment) + 1)]
    for topic_id in sorted(assignment):
        partitions = sorted(assignment[topic_id])
        parts.append(topic_id.bytes)
        parts.append(_uvarint(len(partitions) + 1))
        parts.extend(_INT32.pack(p) for p in partitions)
        parts.append(b"\x00")
    return b"".join(parts)


def encode_consumer_key(key: ConsumerGroupKey) -> bytes:
    """The key's bytes (its version, the group, and the member for member records)."""
    data = _INT16.pack(key.version) + _string(key.group_id)
    if key.version in _MEMBER_KEYS:
        data += _string(key.member_id)
    return data


def encode_consumer_value(value: ConsumerRecordValue) -> bytes:
    """The value's bytes at version 0."""
    parts = [_INT16.pack(0)]
    if isinstance(value, ConsumerGroupEpochValue):
        parts.append(_INT32.pack(value.epoch))
    elif isinstance(value, ConsumerMemberMetadataValue):
        parts.append(_compact_string(value.instance_id))
        parts.append(_compact_string(value.rack_id))
        parts.append(_compact_string(value.client_id))
        parts.append(_compact_string(value.client_host))
        parts.append(_uvarint(len(value.subscribed_topic_names) + 1))
        parts.extend(_compact_string(name) for name in value.subscribed_topic_names)
        parts.append(_compact_string(value.subscribed_topic_regex))
        parts.append(_INT32.pack(value.rebalance_timeout_ms))
        parts.append(_compact_string(value.server_assignor))
    elif isinstance(value, TargetAssignmentValue):
        parts.append(_topic_partitions(value.partitions))
    else:
        parts.append(_INT32.pack(value.member_epoch))
        parts.append(_INT32.pack(value.previous_member_epoch))
        parts.append(_INT8.pack(value.state))
        parts.append(_topic_partitions(value.assigned))
        parts.append(_topic_partitions(value.pending_revocation))
    parts.append(b"\x00")  # no tagged fields
    return b"".join(parts)


# --- decoding -----------------------------------------------------------------------------------


class _Reader:
    """A cursor over one key or value; every malformed read raises CoordinatorRecordError."""

    __slots__ = ("_data", "_pos", "_what")

    def __init__(self, data: bytes | bytearray | memoryview, what: str) -> None:
        self._data = bytes(data)
        self._pos = 0
        self._what = what

    def fail(self, problem: str) -> CoordinatorRecordError:
        return CoordinatorRecordError(f"{self._what}: {problem} at byte {self._pos}")

    def take(self, size: int) -> bytes:
        if size < 0 or self._pos + size > len(self._data):
            raise self.fail("truncated")
        chunk = self._data[self._pos : self._pos + size]
        self._pos += size
        return chunk

    def unpack(self, fmt: struct.Struct) -> int:
        (value,) = fmt.unpack(self.take(fmt.size))
        return int(value)

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise self.fail("varint too long")

    def string(self) -> str:
        size = self.unpack(_INT16)
        try:
            return self.take(size).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("invalid UTF-8") from None

    def compact_string(self) -> str | None:
        size = self.uvarint()
        if size == 0:
            return None
        try:
            return self.take(size - 1).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("invalid UTF-8") from None

    def compact_count(self) -> int:
        count = self.uvarint() - 1
        if count < 0:
            raise self.fail("null array")
        if count > len(self._data):
            raise self.fail(f"array of {count} items")
        return count

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.take(self.uvarint())

    def topic_partitions(self) -> dict[uuid.UUID, frozenset[int]]:
        result = {}
        for _ in range(self.compact_count()):
            topic_id = uuid.UUID(bytes=self.take(16))
            partitions = frozenset(self.unpack(_INT32) for _ in range(self.compact_count()))
            self.skip_tagged_fields()
            result[topic_id] = partitions
        return result

    def done(self) -> None:
        if self._pos != len(self._data):
            raise self.fail(f"{len(self._data) - self._pos} trailing bytes")


def decode_consumer_key(data: bytes | bytearray | memoryview) -> ConsumerGroupKey | None:
    """A KIP-848 key; None for a key version this does not read (4, regex records, later).

    Raises:
        CoordinatorRecordError: the key is truncated or has trailing bytes.
    """
    reader = _Reader(data, "consumer group key")
    version = reader.unpack(_INT16)
    if version not in KEY_VERSIONS:
        return None
    group_id = reader.string()
    member_id = reader.string() if version in _MEMBER_KEYS else ""
    reader.done()
    return ConsumerGroupKey(version, group_id, member_id)


def decode_consumer_value(
    key: ConsumerGroupKey, data: bytes | bytearray | memoryview
) -> ConsumerRecordValue:
    """The value of a record with ``key``.

    Raises:
        CoordinatorRecordError: a value version other than 0, truncated, trailing bytes.
    """
    reader = _Reader(data, f"consumer group value (key {key.version})")
    version = reader.unpack(_INT16)
    if version != 0:
        raise reader.fail(f"value version {version} is not read")
    value: ConsumerRecordValue
    if key.version in (METADATA_KEY_VERSION, TARGET_METADATA_KEY_VERSION):
        value = ConsumerGroupEpochValue(reader.unpack(_INT32))
    elif key.version == MEMBER_METADATA_KEY_VERSION:
        instance_id = reader.compact_string()
        rack_id = reader.compact_string()
        client_id = reader.compact_string() or ""
        client_host = reader.compact_string() or ""
        names = tuple(reader.compact_string() or "" for _ in range(reader.compact_count()))
        value = ConsumerMemberMetadataValue(
            instance_id,
            rack_id,
            client_id,
            client_host,
            names,
            reader.compact_string(),
            reader.unpack(_INT32),
            reader.compact_string(),
        )
    elif key.version == TARGET_MEMBER_KEY_VERSION:
        value = TargetAssignmentValue(reader.topic_partitions())
    else:
        value = CurrentAssignmentValue(
            reader.unpack(_INT32),
            reader.unpack(_INT32),
            reader.unpack(_INT8),
            reader.topic_partitions(),
            reader.topic_partitions(),
        )
    reader.skip_tagged_fields()
    reader.done()
    return value
