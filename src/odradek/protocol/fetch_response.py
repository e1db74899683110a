"""The hot-path Fetch response encoder: framing bytes with gaps for the partitions' records.

This module owns the bytes of Fetch responses v4-v11 *around* the records. The broker never
copies record bytes into a response: ``encode_fetch_response`` returns a ``FetchResponseFrame``
whose ``parts`` alternate framing ``bytes`` and ``RecordsSlot`` gaps, so the broker writes the
framing with one write and sends each slot's records (for example with ``os.sendfile`` from a
segment file) in order. The rules it keeps:

- the frame's size prefix counts every records slot (``RecordsSlot.size``);
- ``records`` is never null on the wire: a partition with nothing to return gets an empty
  records field (librdkafka rejects null records, docs/WIRE-NOTES.md);
- spliced with its records, the frame equals kio's encoding of the same response, byte for byte
  (tests/protocol/test_fetch_response.py checks it with hypothesis).

Fetch response body, by version (Kafka's ``FetchResponse.json``; none of v4-v11 is flexible,
so the response header is v0, the correlation id alone)::

    throttle_time_ms: int32
    error_code: int16                          # v7+ (fetch sessions, KIP-227)
    session_id: int32                          # v7+
    responses: array of
        topic: string
        partitions: array of
            partition_index: int32
            error_code: int16
            high_watermark: int64
            last_stable_offset: int64
            log_start_offset: int64            # v5+
            aborted_transactions: nullable array of (producer_id: int64, first_offset: int64)
            preferred_read_replica: int32      # v11+ (KIP-392)
            records: int32 length + bytes      # <- the gap a RecordsSlot fills
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Final, Generic, NamedTuple, TypeVar

from odradek.protocol.api_keys import VersionRange
from odradek.protocol.wire import string

#: The Fetch versions ``encode_fetch_response`` writes.
FETCH_RESPONSE_VERSIONS: Final = VersionRange(4, 11)

R = TypeVar("R")

_INT32 = struct.Struct(">i")
_SIZE = struct.Struct(">i")
_PREFIX_V4 = struct.Struct(">iii")  # correlation_id, throttle_time_ms, responses count
_PREFIX_V7 = struct.Struct(">iihii")  # + error_code, session_id
_PARTITION_V4 = struct.Struct(">ihqq")
_PARTITION_V5 = struct.Struct(">ihqqq")
# The partition fields through the records length, with aborted_transactions null (-1).
_PARTITION_V4_NOT_ABORTED = struct.Struct(">ihqqii")
_PARTITION_V5_NOT_ABORTED = struct.Struct(">ihqqqii")
_PARTITION_V11_NOT_ABORTED = struct.Struct(">ihqqqiii")
_MIN_VERSION: Final = FETCH_RESPONSE_VERSIONS.min_version
_MAX_VERSION: Final = FETCH_RESPONSE_VERSIONS.max_version
# NamedTuple.__new__ is a Python function; tuple.__new__ builds the same value 10x faster.
_new_tuple = tuple.__new__
_ABORTED = struct.Struct(">qq")


class AbortedTransaction(NamedTuple):
    """An aborted transaction overlapping the returned records (read_committed fetches)."""

    producer_id: int
    first_offset: int


class FetchPartitionData(NamedTuple, Generic[R]):
    """What the broker returns for one partition, with its records as an opaque handle.

    Field order is wire order (the encoder unpacks it), ``records`` and its size last.

    ``records`` is whatever the broker will write into the slot (a file region, or bytes);
    this module never looks at it. ``records_size`` is its length in bytes; with 0 no slot is
    made and ``records`` is ignored. ``aborted_transactions`` is ``None`` (null on the wire,
    as Kafka sends for read_uncommitted) or a tuple. ``log_start_offset`` is written from v5,
    ``preferred_read_replica`` from v11, and dropped before. (The values here are
    NamedTuples, not frozen dataclasses: they are built per partition per request, and a
    frozen dataclass costs more to build than the encoding does.)
    """

    partition_index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None
    preferred_read_replica: int = -1
    records: R | None = None
    records_size: int = 0


class FetchableTopicResponse(NamedTuple, Generic[R]):
    """The partitions returned for one topic."""

    topic: str
    partitions: Sequence[FetchPartitionData[R]]


class RecordsSlot(NamedTuple, Generic[R]):
    """A gap in a response frame: write exactly ``size`` bytes of ``records`` here."""

    topic: str
    partition_index: int
    records: R
    size: int


class FetchResponseFrame(NamedTuple, Generic[R]):
    """A whole Fetch response frame as framing bytes interleaved with records slots.

    ``parts`` starts with ``bytes`` (the size prefix and header) and never holds two
    ``bytes`` in a row; ``size`` is the frame's length on the wire, size prefix included.
    """

    correlation_id: int
    parts: tuple[bytes | RecordsSlot[R], ...]
    size: int

    @property
    def framing_bytes(self) -> int:
        """Bytes of the frame that are not records."""
        return sum(len(part) for part in self.parts if isinstance(part, bytes))

    @property
    def slots(self) -> tuple[RecordsSlot[R], ...]:
        return tuple(part for part in self.parts if isinstance(part, RecordsSlot))

    def to_bytes(self, read: Callable[[RecordsSlot[R]], bytes]) -> bytes:
        """Returns the frame with every slot filled by ``read(slot)`` (tests, small frames).

        Raises:
            ValueError: ``read`` returned a different number of bytes than the slot's size.
        """
        chunks: list[bytes] = []
        for part in self.parts:
            if isinstance(part, bytes):
                chunks.append(part)
                continue
            data = read(part)
            if len(data) != part.size:
                raise ValueError(
                    f"{part.topic}-{part.partition_index}: slot of {part.size} bytes "
                    f"filled with {len(data)}"
                )
            chunks.append(data)
        return b"".join(chunks)


def encode_fetch_response(
    api_version: int,
    correlation_id: int,
    responses: Sequence[FetchableTopicResponse[R]],
    *,
    throttle_time_ms: int = 0,
    error_code: int = 0,
    session_id: int = 0,
) -> FetchResponseFrame[R]:
    """Returns a Fetch response frame with a ``RecordsSlot`` for each non-empty records field.

    ``error_code`` and ``session_id`` (fetch sessions) are written from v7, dropped before.

    Raises:
        ValueError: ``api_version`` is outside ``FETCH_RESPONSE_VERSIONS``, or a partition has
            a negative ``records_size`` or ``records`` missing while ``records_size > 0``.
        struct.error: a number does not fit its field.
    """
    if not _MIN_VERSION <= api_version <= _MAX_VERSION:
        raise ValueError(
            f"Fetch response v{api_version} is not encoded here "
            f"(supported: {FETCH_RESPONSE_VERSIONS})"
        )
    with_log_start_offset = api_version >= 5
    with_preferred_read_replica = api_version >= 11
    # Partition fields up to the records length, for the usual null aborted_transactions.
    if with_preferred_read_replica:
        partition_tail = _PARTITION_V11_NOT_ABORTED
    elif with_log_start_offset:
        partition_tail = _PARTITION_V5_NOT_ABORTED
    else:
        partition_tail = _PARTITION_V4_NOT_ABORTED
    if api_version >= 7:
        head = _PREFIX_V7.pack(
            correlation_id, throttle_time_ms, error_code, session_id, len(responses)
        )
    else:
        head = _PREFIX_V4.pack(correlation_id, throttle_time_ms, len(responses))
    parts: list[bytes | RecordsSlot[R]] = []
    framing: list[bytes] = [head]
    size = 0
    # Unpacking relies on the input types' field order (see FetchPartitionData).
    for topic, partitions in responses:
        framing.append(string(topic) + _INT32.pack(len(partitions)))
        for (
            index,
            partition_error_code,
            high_watermark,
            last_stable_offset,
            log_start_offset,
            aborted,
            preferred_read_replica,
            records,
            records_size,
        ) in partitions:
            if records_size < 0:
                raise ValueError(f"{topic}-{index}: negative records_size {records_size}")
            if aborted is None:
                if with_preferred_read_replica:
                    framing.append(
                        partition_tail.pack(
                            index,
                            partition_error_code,
                            high_watermark,
                            last_stable_offset,
                            log_start_offset,
                            -1,
                            preferred_read_replica,
                            records_size,
                        )
                    )
                elif with_log_start_offset:
                    framing.append(
                        partition_tail.pack(
                            index,
                            partition_error_code,
                            high_watermark,
                            last_stable_offset,
                            log_start_offset,
                            -1,
                            records_size,
                        )
                    )
                else:
                    framing.append(
                        partition_tail.pack(
                            index,
                            partition_error_code,
                            high_watermark,
                            last_stable_offset,
                            -1,
                            records_size,
                        )
                    )
            else:
                if with_log_start_offset:
                    framing.append(
                        _PARTITION_V5.pack(
                            index,
                            partition_error_code,
                            high_watermark,
                            last_stable_offset,
                            log_start_offset,
                        )
                    )
                else:
                    framing.append(
                        _PARTITION_V4.pack(
                            index, partition_error_code, high_watermark, last_stable_offset
                        )
                    )
                framing.append(_INT32.pack(len(aborted)))
                framing.extend(_ABORTED.pack(*txn) for txn in aborted)
                if with_preferred_read_replica:
                    framing.append(_INT32.pack(preferred_read_replica))
                framing.append(_INT32.pack(records_size))
            if records_size:
                if records is None:
                    raise ValueError(
                        f"{topic}-{index}: records_size {records_size} without records"
                    )
                chunk = b"".join(framing)
                parts.append(chunk)
                parts.append(_new_tuple(RecordsSlot, (topic, index, records, records_size)))
                size += len(chunk) + records_size
                framing = []
    if framing:
        chunk = b"".join(framing)
        parts.append(chunk)
        size += len(chunk)
    # The size prefix goes in front of the first framing chunk (small: header + one topic).
    first = parts[0]
    assert isinstance(first, bytes)
    parts[0] = _SIZE.pack(size) + first
    return FetchResponseFrame(correlation_id, tuple(parts), size + 4)
