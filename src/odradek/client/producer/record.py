"""Value types of the producer's API: ``ProducerRecord`` (what the caller sends) and
``RecordMetadata`` (what the broker's acknowledgement tells about it).

Both are frozen, slotted dataclasses with no behaviour. Names and meanings follow the Java
client's classes of the same names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from odradek.records.record import Header

__all__ = ["Header", "ProducerRecord", "RecordMetadata"]


@dataclass(frozen=True, slots=True)
class ProducerRecord:
    """One record to send.

    Args:
        topic: the topic.
        value: the value, before serialization (``None``: a null value, a tombstone).
        key: the key, before serialization (``None``: no key; the partitioner spreads such
            records).
        partition: the partition (``None``: the partitioner picks one).
        timestamp_ms: the create timestamp in ms since the epoch (``None``: now, when sent).
        headers: ``(name, value)`` pairs, the name a ``str``, the value ``bytes`` or ``None``;
            names may repeat, order is kept.
    """

    topic: str
    value: Any = None
    key: Any = None
    partition: int | None = None
    timestamp_ms: int | None = None
    headers: Sequence[Header] = ()


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where a sent record landed.

    ``offset`` is -1 when the send failed or with ``acks=0`` (the broker does not answer);
    ``timestamp`` is the record's create time, or the broker's append time when the topic uses
    ``LogAppendTime``. ``serialized_key_size`` and ``serialized_value_size`` are -1 for a null
    key or value. ``partition`` is -1 when the send failed before a partition was chosen.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int
    serialized_value_size: int
