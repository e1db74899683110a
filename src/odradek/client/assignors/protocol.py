"""The consumer protocol's bytes: what JoinGroup and SyncGroup carry between Kafka clients.

This module owns the byte forms that must match every other Kafka client in a group (the
Java consumer, librdkafka, kafka-python, aiokafka): the group coordinator never looks inside
them, the members do. All integers are big-endian; strings are int16 length + UTF-8; bytes are
int32 length + data (-1 = null); arrays are an int32 count (never null here) + elements.

``ConsumerProtocolSubscription`` (JoinGroup member metadata, protocol type ``consumer``)::

    version           int16    0..3 (this module writes 3 by default)
    topics            [string]
    user_data         nullable bytes
    owned_partitions  [topic string, partitions [int32]]      v1+
    generation_id     int32                                   v2+ (-1 = unknown)
    rack_id           nullable string                         v3+

``ConsumerProtocolAssignment`` (SyncGroup member assignment; versions 0..3 share a layout)::

    version              int16
    assigned_partitions  [topic string, partitions [int32]]
    user_data            nullable bytes

Kafka's compatibility rule, kept here: a newer version than 3 is read with the version-3 layout
(later versions may only append fields) and bytes after the known fields are ignored; fields
that a lower version cannot hold are dropped when encoding (they are "ignorable" in Kafka's
schema). Partitions are grouped by topic in order of first appearance.

Assignor user data, carried opaquely inside the two structures above:

- ``StickyAssignor`` (``sticky``), no version prefix: v0 is ``[topic, [int32]]`` (the member's
  previous assignment); v1, which Kafka writes, appends ``generation int32``. Readers try v1,
  then v0, then ignore the data.
- ``CooperativeStickyAssignor`` (``cooperative-sticky``): ``generation int32``, for leaders
  that read subscriptions older than v2.

Malformed peer bytes raise ``ProtocolError``; bad local values raise ``ValueError``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Final

from odradek._types import ReadableBuffer, TopicPartition
from odradek.client.assignors.assignor import DEFAULT_GENERATION_ID, Assignment, Subscription
from odradek.errors import ProtocolError

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "LATEST_ASSIGNMENT_VERSION",
    "LATEST_SUBSCRIPTION_VERSION",
    "decode_assignment",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "decode_subscription",
    "decode_version",
    "encode_assignment",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
    "encode_subscription",
]

#: The JoinGroup ``protocol_type`` of consumer groups.
CONSUMER_PROTOCOL_TYPE: Final = "consumer"
LATEST_SUBSCRIPTION_VERSION: Final = 3
LATEST_ASSIGNMENT_VERSION: Final = 3

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_NULL_INT16: Final = _INT16.pack(-1)
_NULL_INT32: Final = _INT32.pack(-1)
_INT16_MAX: Final = 0x7FFF


# --- writing ---------------------------------------------------------------------------------


def _int32(value: int, what: str) -> bytes:
    try:
        return _INT32.pack(value)
    except struct.error:
        raise ValueError(f"{what} {value} does not fit in an int32") from None


def _string(value: str, what: str) -> bytes:
    data = value.encode()
    if len(data) > _INT16_MAX:
        raise ValueError(f"{what} is {len(data)} bytes long; a Kafka string holds at most 32767")
    return _INT16.pack(len(data)) + data


def _nullable_string(value: str | None, what: str) -> bytes:
    return _NULL_INT16 if value is None else _string(value, what)


def _nullable_bytes(value: bytes | None) -> bytes:
    return _NULL_INT32 if value is None else _INT32.pack(len(value)) + bytes(value)


def _topic_partitions(partitions: Iterable[TopicPartition]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = [_INT32.pack(len(by_topic))]
    for topic, numbers in by_topic.items():
        out.append(_string(topic, "topic name"))
        out.append(_INT32.pack(len(numbers)))
        out.extend(_int32(number, "partition") for number in numbers)
    return b"".join(out)


def _check_version(version: int, latest: int, what: str) -> None:
    if not 0 <= version <= latest:
        raise ValueError(f"{what} version {version} is not in 0..{latest}")


def encode_subscription(
    subscription: Subscription, version: int = LATEST_SUBSCRIPTION_VERSION
) -> bytes:
    """``ConsumerProtocolSubscription`` bytes for JoinGroup's member metadata.

    Fields the version cannot hold (owned partitions below v1, generation below v2, rack below
    v3) are dropped; ``group_instance_id`` is never encoded.

    Raises:
        ValueError: ``version`` is not 0..3, or a value does not fit its wire type.
    """
    _check_version(version, LATEST_SUBSCRIPTION_VERSION, "subscription")
    out = [_INT16.pack(version), _INT32.pack(len(subscription.topics))]
    out.extend(_string(topic, "topic name") for topic in subscription.topics)
    out.append(_nullable_bytes(subscription.user_data))
    if version >= 1:
        out.append(_topic_partitions(subscription.owned_partitions))
    if version >= 2:
        out.append(_int32(subscription.generation_id, "generation id"))
    if version >= 3:
        out.append(_nullable_string(subscription.rack_id, "rack id"))
    return b"".join(out)


def encode_assignment(assignment: Assignment, version: int = LATEST_ASSIGNMENT_VERSION) -> bytes:
    """``ConsumerProtocolAssignment`` bytes for SyncGroup's member assignment.

    Raises:
        ValueError: ``version`` is not 0..3, or a value does not fit its wire type.
    """
    _check_version(version, LATEST_ASSIGNMENT_VERSION, "assignment")
    return b"".join(
        (
            _INT16.pack(version),
            _topic_partitions(assignment.partitions),
            _nullable_bytes(assignment.user_data),
        )
    )


def encode_sticky_user_data(
    partitions: Sequence[TopicPartition], generation_id: int = DEFAULT_GENERATION_ID
) -> bytes:
    """``StickyAssignor`` user data v1: the member's previous assignment and its generation."""
    return _topic_partitions(partitions) + _int32(generation_id, "generation id")


def encode_cooperative_user_data(generation_id: int) -> bytes:
    """``CooperativeStickyAssignor`` user data: the member's generation as an int32."""
    return _int32(generation_id, "generation id")


# --- reading ---------------------------------------------------------------------------------


class _Reader:
    """A cursor over peer bytes; every read checks bounds and raises ``ProtocolError``."""

    __slots__ = ("_data", "_what", "offset")

    def __init__(self, data: ReadableBuffer, what: str) -> None:
        self._data = memoryview(data).cast("B")
        self._what = what
        self.offset = 0

    def error(self, reason: str) -> ProtocolError:
        return ProtocolError(f"malformed {self._what} at byte {self.offset}: {reason}")

    def _take(self, size: int) -> memoryview:
        end = self.offset + size
        if end > len(self._data):
            raise self.error(f"needs {size} bytes, {len(self._data) - self.offset} left")
        view = self._data[self.offset : end]
        self.offset = end
        return view

    def int16(self) -> int:
        value: int = _INT16.unpack(self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = _INT32.unpack(self._take(4))[0]
        return value

    def count(self, field: str) -> int:
        count = self.int32()
        if count < 0:
            raise self.error(f"{field} is null or has a negative count ({count})")
        return count

    def string(self, field: str) -> str:
        length = self.int16()
        if length < 0:
            raise self.error(f"{field} is null")
        return self._text(length, field)

    def nullable_string(self, field: str) -> str | None:
        length = self.int16()
        if length < 0:
            return None
        return self._text(length, field)

    def _text(self, length: int, field: str) -> str:
        data = self._take(length)
        try:
            return str(data, "utf-8")
        except UnicodeDecodeError:
            raise self.error(f"{field} is not UTF-8") from None

    def nullable_bytes(self) -> bytes | None:
        length = self.int32()
        if length < 0:
            return None
        return bytes(self._take(length))

    def topic_partitions(self, field: str) -> list[TopicPartition]:
        partitions: list[TopicPartition] = []
        for _ in range(self.count(field)):
            topic = self.string("topic name")
            numbers = self._take(4 * self.count("partitions"))
            partitions.extend(
                TopicPartition(topic, number) for (number,) in _INT32.iter_unpack(numbers)
            )
        return partitions

    @property
    def remaining(self) -> int:
        return len(self._data) - self.offset


def _read_version(reader: _Reader, latest: int) -> int:
    version = reader.int16()
    if version < 0:
        raise reader.error(f"unsupported version {version}")
    # Kafka reads a newer version with the newest layout it knows: versions only append fields.
    return min(version, latest)


def decode_version(data: ReadableBuffer) -> int:
    """The version (int16 prefix) of consumer protocol bytes, as written by the peer.

    Raises:
        ProtocolError: fewer than 2 bytes.
    """
    return _Reader(data, "consumer protocol header").int16()


def decode_subscription(data: ReadableBuffer) -> Subscription:
    """A ``Subscription`` from JoinGroup member metadata (any version; newer read as v3).

    Fields the version lacks take their defaults (no owned partitions, generation -1, no rack).

    Raises:
        ProtocolError: the bytes are truncated or malformed, or the version is negative.
    """
    reader = _Reader(data, "consumer protocol subscription")
    version = _read_version(reader, LATEST_SUBSCRIPTION_VERSION)
    topics = [reader.string("topic name") for _ in range(reader.count("topics"))]
    user_data = reader.nullable_bytes()
    owned = reader.topic_partitions("owned partitions") if version >= 1 else []
    generation_id = reader.int32() if version >= 2 else DEFAULT_GENERATION_ID
    rack_id = reader.nullable_string("rack id") if version >= 3 else None
    return Subscription(topics, user_data, owned, generation_id, rack_id)


def decode_assignment(data: ReadableBuffer) -> Assignment:
    """An ``Assignment`` from a SyncGroup member assignment (any version).

    Empty bytes are an empty assignment: the coordinator sends them to a member the leader's
    assignment left out.

    Raises:
        ProtocolError: the bytes are truncated or malformed, or the version is negative.
    """
    reader = _Reader(data, "consumer protocol assignment")
    if reader.remaining == 0:
        return Assignment([])
    _read_version(reader, LATEST_ASSIGNMENT_VERSION)
    partitions = reader.topic_partitions("assigned partitions")
    return Assignment(partitions, reader.nullable_bytes())


def decode_sticky_user_data(
    data: ReadableBuffer | None,
) -> tuple[list[TopicPartition], int] | None:
    """The previous assignment and generation in ``StickyAssignor`` user data.

    Returns:
        ``(partitions, generation_id)`` from v1, ``(partitions, -1)`` from v0, or ``None`` for
        absent, empty or unreadable data (Kafka then treats the member as owning nothing).
    """
    if data is None or len(memoryview(data)) == 0:
        return None
    try:
        reader = _Reader(data, "sticky assignor user data")
        partitions = reader.topic_partitions("previous assignment")
    except ProtocolError:
        return None
    try:
        return partitions, reader.int32()
    except ProtocolError:
        return partitions, DEFAULT_GENERATION_ID  # v0: no generation


def decode_cooperative_user_data(data: ReadableBuffer | None) -> int | None:
    """The generation in ``CooperativeStickyAssignor`` user data, or ``None`` if absent/short."""
    if data is None or len(memoryview(data)) < 4:
        return None
    return _Reader(data, "cooperative sticky assignor user data").int32()
