"""Value types of single records: ``Record`` (decoded) and ``SimpleRecord`` (to be written).

Both are frozen, slotted dataclasses with no behaviour; the codec (``records.codec``) turns
bytes into ``Record`` and ``SimpleRecord`` into bytes. Names follow Kafka's: a ``Record`` knows
its absolute offset and timestamp, a ``SimpleRecord`` (Kafka's class of that name) is the
timestamp, key, value and headers a producer hands over, before any offset exists.

A header is a ``(key, value)`` pair: the key a ``str`` (UTF-8 on the wire, never null), the
value ``bytes`` or ``None``. Header keys may repeat; their order is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

#: One record header: ``(key, value)``.
Header: TypeAlias = tuple[str, bytes | None]


@dataclass(frozen=True, slots=True)
class Record:
    """One decoded record.

    ``timestamp`` is in milliseconds since the epoch: the batch's base timestamp plus the
    record's delta for CreateTime batches, the batch's max timestamp for LogAppendTime batches.
    The timestamp type itself belongs to the batch (``DecodedBatch.timestamp_type``).
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


@dataclass(frozen=True, slots=True)
class SimpleRecord:
    """A record to write: what a producer supplies, before the log assigns an offset."""

    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[Header] = ()
