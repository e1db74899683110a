"""The records of ``__transaction_state``: one per change of a transactional id, keyed by the
id (the topic is compacted: the last value of each id is its state), and the transaction
states themselves.

Byte layouts (Kafka's ``TransactionLogKey`` v0 and ``TransactionLogValue`` v0, big-endian,
strings as int16 length + UTF-8)::

    key   = int16 version (0)  string transactional_id
    value = int16 version (0)  int64 producer_id  int16 producer_epoch
            int32 transaction_timeout_ms  int8 state
            int32 topic count, per topic: string topic  int32 count, per partition: int32
            int64 last_update_ms  int64 start_ms

A tombstone (value None) removes an id (``transactional.id.expiration.ms``).

Sans-I/O: values in, bytes out and back.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable
from dataclasses import dataclass, replace

from odradek._types import TopicPartition
from odradek.broker.group.records import partition_for_group
from odradek.errors import CorruptRecordError

__all__ = [
    "TRANSACTION_STATE_TOPIC",
    "TransactionMetadata",
    "TxnState",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
    "partition_for_transactional_id",
]

TRANSACTION_STATE_TOPIC = "__transaction_state"

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_HEAD = struct.Struct(">hqhib")
_TAIL = struct.Struct(">qq")


class TxnState(enum.IntEnum):
    """A transactional id's state (Kafka's ``TransactionState`` ids)."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions / ListTransactions report (``CompleteCommit``)."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @property
    def is_preparing(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def is_idle(self) -> bool:
        """No transaction in progress: a new one may begin."""
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


@dataclass(frozen=True, slots=True)
class TransactionMetadata:
    """A transactional id's state, as its last record says."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    last_update_ms: int
    start_ms: int = -1

    def moved(self, now_ms: int, **changes: object) -> TransactionMetadata:
        """A copy with ``changes`` and ``last_update_ms`` = ``now_ms``."""
        return replace(self, last_update_ms=now_ms, **changes)  # type: ignore[arg-type]


def partition_for_transactional_id(transactional_id: str, num_partitions: int) -> int:
    """The ``__transaction_state`` partition of an id (Kafka hashes it as a group id)."""
    return partition_for_group(transactional_id, num_partitions)


def _string(text: str) -> bytes:
    data = text.encode()
    return _H.pack(len(data)) + data


def encode_key(transactional_id: str) -> bytes:
    return _H.pack(0) + _string(transactional_id)


def encode_value(meta: TransactionMetadata) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(meta.partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    parts = [
        _HEAD.pack(0, meta.producer_id, meta.producer_epoch, meta.timeout_ms, int(meta.state)),
        _I.pack(len(by_topic)),
    ]
    for topic, indexes in by_topic.items():
        parts.append(_string(topic))
        parts.append(_I.pack(len(indexes)))
        parts.extend(_I.pack(index) for index in indexes)
    parts.append(_TAIL.pack(meta.last_update_ms, meta.start_ms))
    return b"".join(parts)


class _Reader:
    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        self.data = bytes(data)
        self.position = 0

    def take(self, fmt: struct.Struct) -> tuple[int, ...]:
        try:
            values = fmt.unpack_from(self.data, self.position)
        except struct.error:
            raise CorruptRecordError("truncated __transaction_state record") from None
        self.position += fmt.size
        return values

    def string(self) -> str:
        (size,) = self.take(_H)
        if size < 0 or self.position + size > len(self.data):
            raise CorruptRecordError("bad string in a __transaction_state record")
        text = self.data[self.position : self.position + size].decode(errors="replace")
        self.position += size
        return text


def decode_key(data: bytes | bytearray | memoryview) -> str | None:
    """The transactional id of a key; None for a key of a version this broker does not know.

    Raises:
        CorruptRecordError: a truncated key.
    """
    reader = _Reader(data)
    (version,) = reader.take(_H)
    if version != 0:
        return None
    return reader.string()


def decode_value(
    transactional_id: str, data: bytes | bytearray | memoryview
) -> TransactionMetadata:
    """The state a value holds.

    Raises:
        CorruptRecordError: a truncated value, an unknown version or state.
    """
    reader = _Reader(data)
    version, producer_id, epoch, timeout_ms, state = reader.take(_HEAD)
    if version != 0:
        raise CorruptRecordError(f"__transaction_state value version {version} is unknown")
    try:
        txn_state = TxnState(state)
    except ValueError:
        raise CorruptRecordError(f"unknown transaction state {state}") from None
    (topics,) = reader.take(_I)
    partitions: list[TopicPartition] = []
    for _ in range(max(topics, 0)):
        topic = reader.string()
        (count,) = reader.take(_I)
        partitions.extend(TopicPartition(topic, reader.take(_I)[0]) for _ in range(max(count, 0)))
    last_update_ms, start_ms = reader.take(_TAIL)
    return TransactionMetadata(
        transactional_id,
        producer_id,
        epoch,
        timeout_ms,
        txn_state,
        frozenset(partitions),
        last_update_ms,
        start_ms,
    )


def replay(
    records: Iterable[tuple[bytes | None, bytes | None]],
) -> dict[str, TransactionMetadata]:
    """The state of every id after ``records`` (key, value or None), in log order; records
    with another key version are skipped.

    Raises:
        CorruptRecordError: a record of ours that does not decode.
    """
    states: dict[str, TransactionMetadata] = {}
    for key, value in records:
        if key is None:
            continue
        transactional_id = decode_key(key)
        if transactional_id is None:
            continue
        if value is None:
            states.pop(transactional_id, None)
        else:
            states[transactional_id] = decode_value(transactional_id, value)
    return states
