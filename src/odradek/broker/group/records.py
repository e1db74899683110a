"""The records of ``__consumer_offsets``: byte-compatible keys and values, and the partition of
a group.

Owns the on-disk formats the group coordinator appends and replays. They are Kafka's, byte for
byte, so a log written here reads in Kafka's tools and the reverse. Every key and value starts
with an int16 *version*; the key's version says which kind of record it is.

Byte layout (big-endian; ``string`` = int16 length + UTF-8, ``nullable string`` = the same with
length -1 for null, ``bytes`` = int32 length + bytes, ``[T]`` = int32 count + items)::

    OffsetCommitKey      version 0|1  group string, topic string, partition int32
    GroupMetadataKey     version 2    group string
    OffsetCommitValue    version 0|2  offset int64, metadata string, commit_timestamp int64
                         version 1    offset int64, metadata string, commit_timestamp int64,
                                      expire_timestamp int64
                         version 3    offset int64, leader_epoch int32, metadata string,
                                      commit_timestamp int64
    GroupMetadataValue   version 0-3  protocol_type string, generation int32,
                                      protocol nullable string, leader nullable string,
                                      current_state_timestamp int64 (v2+), members [Member]
    Member               version 0-3  member_id string, group_instance_id nullable string (v3+),
                                      client_id string, client_host string,
                                      rebalance_timeout int32 (v1+), session_timeout int32,
                                      subscription bytes, assignment bytes

A null value (a tombstone) deletes the key: an expired or deleted offset, a deleted group.
Keys of other versions (KIP-848 consumer-group records, 3 and up) are not ours: ``decode_record``
returns None for them so a replay skips them.

Written versions: key 1 for offsets, key 2 for groups, value 3 for both (value 1 only when an
offset carries an explicit expire timestamp, as Kafka writes for OffsetCommit v2-v4 with a
retention time). Values of versions 0-3 are read; flexible version 4 is not.

The partition of a group is ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``:
Java's ``String.hashCode`` over UTF-16 code units (int32 arithmetic), and Kafka's ``Utils.abs``,
which maps ``Integer.MIN_VALUE`` to 0 and is otherwise ``Math.abs`` (it is *not* the
``& 0x7fffffff`` of the producer's partitioner: the two differ for every negative hash).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from odradek.broker.group.consumer_records import (
    ConsumerGroupKey,
    ConsumerRecordValue,
    encode_consumer_key,
    encode_consumer_value,
)
from odradek.errors import CoordinatorRecordError

#: The key version of an offset commit record (versions 0 and 1 share the layout).
OFFSET_COMMIT_KEY_VERSION = 1
#: The key version of a group metadata record.
GROUP_METADATA_KEY_VERSION = 2
#: The value versions written.
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_MAX_STRING_BYTES = 0x7FFF
_INT32_MIN = -(1 << 31)


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """The key of a committed offset: Kafka's OffsetCommitKey (group, topic, partition)."""

    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed offset: Kafka's OffsetCommitValue.

    ``leader_epoch`` is -1 when unknown; ``expire_timestamp_ms`` is -1 unless the commit asked
    for an explicit retention (then version 1 is written, which has no leader epoch).
    """

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = 0
    expire_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """The key of a group's metadata: Kafka's GroupMetadataKey (group)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """One member as a GroupMetadataValue stores it; ``subscription`` is the member's metadata
    for the group's selected protocol, ``assignment`` what the leader gave it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """A group's membership at a generation: Kafka's GroupMetadataValue.

    ``protocol`` and ``leader`` are None for a group without members;
    ``current_state_timestamp_ms`` is -1 when unknown (values before version 2).
    """

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberMetadata, ...]


RecordKey = OffsetCommitKey | GroupMetadataKey | ConsumerGroupKey
RecordValue = OffsetCommitValue | GroupMetadataValue | ConsumerRecordValue


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """One record of ``__consumer_offsets``: a key and its value, or None for a tombstone.

    An offset key goes with an ``OffsetCommitValue``, a group key with a ``GroupMetadataValue``,
    a ``ConsumerGroupKey`` with the value of its kind (``consumer_records``).
    """

    key: RecordKey
    value: RecordValue | None

    def encode(self) -> tuple[bytes, bytes | None]:
        """Returns ``(key bytes, value bytes or None)`` for the record batch builder."""
        if isinstance(self.key, ConsumerGroupKey):
            return encode_consumer_key(self.key), (
                None if self.value is None else encode_consumer_value(self.value)  # type: ignore[arg-type]
            )
        key = encode_key(self.key)
        if self.value is None:
            return key, None
        if isinstance(self.value, OffsetCommitValue):
            return key, encode_offset_commit_value(self.value)
        assert isinstance(self.value, GroupMetadataValue)
        return key, encode_group_metadata_value(self.value)

    @classmethod
    def tombstone(cls, key: RecordKey) -> CoordinatorRecord:
        return cls(key, None)


# --- encoding -----------------------------------------------------------------------------------


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) > _MAX_STRING_BYTES:
        raise ValueError(f"string of {len(data)} bytes is longer than 32767")
    return _INT16.pack(len(data)) + data


def _nullable_string(text: str | None) -> bytes:
    return _INT16.pack(-1) if text is None else _string(text)


def _bytes(data: bytes) -> bytes:
    return _INT32.pack(len(data)) + data


def encode_key(key: OffsetCommitKey | GroupMetadataKey) -> bytes:
    """Encodes an offset commit key (version 1) or a group metadata key (version 2)."""
    if isinstance(key, OffsetCommitKey):
        return b"".join(
            (
                _INT16.pack(OFFSET_COMMIT_KEY_VERSION),
                _string(key.group_id),
                _string(key.topic),
                _INT32.pack(key.partition),
            )
        )
    return _INT16.pack(GROUP_METADATA_KEY_VERSION) + _string(key.group_id)


def encode_offset_commit_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    """Encodes a committed offset; by default version 3, or 1 when it has an expire timestamp.

    Raises:
        ValueError: ``version`` is not 0-3, or version 1 is asked without an expire timestamp
            or another version with one, or a leader epoch is given to a version without it.
    """
    if version is None:
        version = 1 if value.expire_timestamp_ms != -1 else OFFSET_COMMIT_VALUE_VERSION
    if version not in (0, 1, 2, 3):
        raise ValueError(f"offset commit value version {version} is not written")
    if (version == 1) != (value.expire_timestamp_ms != -1):
        raise ValueError("only offset commit value version 1 carries an expire timestamp")
    if version < 3 and value.leader_epoch != -1:
        raise ValueError(f"offset commit value version {version} has no leader epoch")
    parts = [_INT16.pack(version), _INT64.pack(value.offset)]
    if version >= 3:
        parts.append(_INT32.pack(value.leader_epoch))
    parts.append(_string(value.metadata))
    parts.append(_INT64.pack(value.commit_timestamp_ms))
    if version == 1:
        parts.append(_INT64.pack(value.expire_timestamp_ms))
    return b"".join(parts)


def encode_group_metadata_value(
    value: GroupMetadataValue, version: int = GROUP_METADATA_VALUE_VERSION
) -> bytes:
    """Encodes a group's metadata at ``version`` (0-3; fields a version lacks are dropped).

    Raises:
        ValueError: ``version`` is not 0-3, or a string is longer than 32767 bytes.
    """
    if version not in (0, 1, 2, 3):
        raise ValueError(f"group metadata value version {version} is not written")
    parts = [
        _INT16.pack(version),
        _string(value.protocol_type),
        _INT32.pack(value.generation),
        _nullable_string(value.protocol),
        _nullable_string(value.leader),
    ]
    if version >= 2:
        parts.append(_INT64.pack(value.current_state_timestamp_ms))
    parts.append(_INT32.pack(len(value.members)))
    for member in value.members:
        parts.append(_string(member.member_id))
        if version >= 3:
            parts.append(_nullable_string(member.group_instance_id))
        parts.append(_string(member.client_id))
        parts.append(_string(member.client_host))
        if version >= 1:
            parts.append(_INT32.pack(member.rebalance_timeout_ms))
        parts.append(_INT32.pack(member.session_timeout_ms))
        parts.append(_bytes(member.subscription))
        parts.append(_bytes(member.assignment))
    return b"".join(parts)


# --- decoding -----------------------------------------------------------------------------------


class _Reader:
    """A cursor over one key or value; every short read raises CoordinatorRecordError."""

    __slots__ = ("_data", "_pos", "_what")

    def __init__(self, data: bytes | bytearray | memoryview, what: str) -> None:
        self._data = bytes(data)
        self._pos = 0
        self._what = what

    def _fail(self, problem: str) -> CoordinatorRecordError:
        return CoordinatorRecordError(f"{self._what}: {problem} at byte {self._pos}")

    def _unpack(self, fmt: struct.Struct) -> int:
        if self._pos + fmt.size > len(self._data):
            raise self._fail("truncated")
        (value,) = fmt.unpack_from(self._data, self._pos)
        self._pos += fmt.size
        return int(value)

    def int16(self) -> int:
        return self._unpack(_INT16)

    def int32(self) -> int:
        return self._unpack(_INT32)

    def int64(self) -> int:
        return self._unpack(_INT64)

    def _take(self, size: int) -> bytes:
        if self._pos + size > len(self._data):
            raise self._fail("truncated")
        chunk = self._data[self._pos : self._pos + size]
        self._pos += size
        return chunk

    def nullable_string(self) -> str | None:
        size = self.int16()
        if size == -1:
            return None
        if size < 0:
            raise self._fail(f"string length {size}")
        try:
            return self._take(size).decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail("invalid UTF-8") from None

    def string(self) -> str:
        text = self.nullable_string()
        if text is None:
            raise self._fail("null string")
        return text

    def bytes_(self) -> bytes:
        size = self.int32()
        if size < 0:
            raise self._fail(f"bytes length {size}")
        return self._take(size)

    def done(self) -> None:
        if self._pos != len(self._data):
            raise self._fail(f"{len(self._data) - self._pos} trailing bytes")


def decode_key(data: bytes | bytearray | memoryview) -> RecordKey | None:
    """Decodes a record key; None for a key version that is not a classic group's (3 and up).

    Raises:
        CoordinatorRecordError: the key is truncated, has trailing bytes, or a negative version.
    """
    reader = _Reader(data, "__consumer_offsets key")
    version = reader.int16()
    if version in (0, 1):
        key: RecordKey = OffsetCommitKey(reader.string(), reader.string(), reader.int32())
    elif version == GROUP_METADATA_KEY_VERSION:
        key = GroupMetadataKey(reader.string())
    elif version > GROUP_METADATA_KEY_VERSION:
        return None
    else:
        raise CoordinatorRecordError(f"__consumer_offsets key version {version}")
    reader.done()
    return key


def decode_offset_commit_value(data: bytes | bytearray | memoryview) -> OffsetCommitValue:
    """Decodes a committed offset of version 0-3.

    Raises:
        CoordinatorRecordError: another version, truncated, or trailing bytes.
    """
    reader = _Reader(data, "offset commit value")
    version = reader.int16()
    if version not in (0, 1, 2, 3):
        raise CoordinatorRecordError(f"offset commit value version {version} is not read")
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else -1
    metadata = reader.string()
    commit_timestamp_ms = reader.int64()
    expire_timestamp_ms = reader.int64() if version == 1 else -1
    reader.done()
    return OffsetCommitValue(
        offset, leader_epoch, metadata, commit_timestamp_ms, expire_timestamp_ms
    )


def decode_group_metadata_value(data: bytes | bytearray | memoryview) -> GroupMetadataValue:
    """Decodes a group's metadata of version 0-3.

    Fields a version lacks take Kafka's defaults: ``current_state_timestamp_ms`` -1,
    ``group_instance_id`` None, and (version 0) ``rebalance_timeout_ms`` = the session timeout.

    Raises:
        CoordinatorRecordError: another version, truncated, a negative count, trailing bytes.
    """
    reader = _Reader(data, "group metadata value")
    version = reader.int16()
    if version not in (0, 1, 2, 3):
        raise CoordinatorRecordError(f"group metadata value version {version} is not read")
    protocol_type = reader.string()
    generation = reader.int32()
    protocol = reader.nullable_string()
    leader = reader.nullable_string()
    current_state_timestamp_ms = reader.int64() if version >= 2 else -1
    count = reader.int32()
    if count < 0:
        raise CoordinatorRecordError(f"group metadata value: member count {count}")
    members = []
    for _ in range(count):
        member_id = reader.string()
        group_instance_id = reader.nullable_string() if version >= 3 else None
        client_id = reader.string()
        client_host = reader.string()
        rebalance_timeout_ms = reader.int32() if version >= 1 else None
        session_timeout_ms = reader.int32()
        subscription = reader.bytes_()
        assignment = reader.bytes_()
        members.append(
            MemberMetadata(
                member_id,
                group_instance_id,
                client_id,
                client_host,
                session_timeout_ms if rebalance_timeout_ms is None else rebalance_timeout_ms,
                session_timeout_ms,
                subscription,
                assignment,
            )
        )
    reader.done()
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, current_state_timestamp_ms, tuple(members)
    )


def decode_record(
    key: bytes | bytearray | memoryview, value: bytes | bytearray | memoryview | None
) -> CoordinatorRecord | None:
    """Decodes one ``__consumer_offsets`` record; None when its key is not a classic group's.

    Raises:
        CoordinatorRecordError: the key or value cannot be decoded.
    """
    decoded_key = decode_key(key)
    if decoded_key is None:
        return None
    if value is None:
        return CoordinatorRecord(decoded_key, None)
    decode: Callable[[bytes | bytearray | memoryview], RecordValue]
    if isinstance(decoded_key, OffsetCommitKey):
        decode = decode_offset_commit_value
    else:
        decode = decode_group_metadata_value
    return CoordinatorRecord(decoded_key, decode(value))


# --- the partition of a group -------------------------------------------------------------------


def java_string_hashcode(text: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, in
    int32 arithmetic (a character outside the BMP counts as its two surrogates)."""
    units = text.encode("utf-16-be", "surrogatepass")
    value = 0
    for (unit,) in struct.iter_unpack(">H", units):
        value = (31 * value + unit) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def kafka_abs(value: int) -> int:
    """Kafka's ``Utils.abs`` of an int32: ``Math.abs``, except that ``Integer.MIN_VALUE``
    (whose ``Math.abs`` is itself) maps to 0."""
    return 0 if value == _INT32_MIN else abs(value)


def partition_for_group(group_id: str, offsets_topic_num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition that holds ``group_id`` (and whose leader is its
    coordinator).

    Raises:
        ValueError: ``offsets_topic_num_partitions`` is below 1.
    """
    if offsets_topic_num_partitions < 1:
        raise ValueError("offsets.topic.num.partitions must be at least 1")
    return kafka_abs(java_string_hashcode(group_id)) % offsets_topic_num_partitions
